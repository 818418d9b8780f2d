//! Hostile input from the outside world (issue 31's findings), one regression test each:
//! command lines and driver strings that carry terminal escapes, and the rest below.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command as StdCommand};
use std::time::Duration;

use crate::common::{gpumon_fake, scenario, stdout_json};

/// An argv[0] that retitles the window (OSC 0), clears the screen through the one-byte CSI
/// (U+009B), reverses the rest of the line (U+202E) and breaks the row.
const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{9b}2J\u{202e}evil\nsecond-line";

/// Lines of `out` with an unsafe character (line breaks between lines are the output's own).
fn unsafe_lines(out: &str) -> Vec<String> {
    out.split('\n')
        .filter(|l| l.chars().any(gpumon::text::is_unsafe))
        .map(|l| format!("{l:?}"))
        .collect()
}

/// A live `sleep` whose command line is [`HOSTILE`] and "60", and a scenario that lists it on
/// a GPU whose name is hostile too.
fn hostile_process() -> (Child, tempfile::TempPath) {
    let child = StdCommand::new("sleep")
        .arg0(HOSTILE)
        .arg("60")
        .spawn()
        .expect("spawn sleep");
    // Until the exec, /proc shows this test's own command line: wait for sleep's.
    let cmdline = format!("/proc/{}/cmdline", child.id());
    for _ in 0..400 {
        if std::fs::read(&cmdline).is_ok_and(|c| c.ends_with(b"60\0")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let json = format!(
        r#"{{"version":1,"devices":[{{"name":"GPU\u001b[2J\u009b31m\u202eX","memory_total_mib":1024,
            "processes":[{{"pid":{},"memory_mib":64}}]}}]}}"#,
        child.id()
    );
    (child, scenario(&json))
}

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Finding 2: every output of a command line and a GPU name is free of terminal escapes:
/// `once` (text and JSON, which stays lossless), `log` (CSV, table, JSON lines), `serve`
/// (`/metrics` labels and `/api/v1/sample`).
#[test]
fn no_output_carries_a_process_or_driver_escape_sequence() {
    let (child, s) = hostile_process();
    let _child = Killed(child);
    let run = |args: &[&str]| {
        let out = gpumon_fake(&s, 0.0)
            .env("COLUMNS", "200")
            .args(args)
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let text = run(&["once"]);
    assert!(
        text.contains("\\u{1b}]0;pwned"),
        "the command is shown, escaped:\n{text}"
    );
    assert!(unsafe_lines(&text).is_empty(), "{:?}", unsafe_lines(&text));
    let json = run(&["once", "--json"]);
    assert!(unsafe_lines(&json).is_empty(), "{:?}", unsafe_lines(&json));
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(
        v["devices"][0]["processes"][0]["command"],
        format!("{HOSTILE} 60"),
        "JSON keeps the value exactly"
    );
    assert_eq!(v["devices"][0]["name"], "GPU\u{1b}[2J\u{9b}31m\u{202e}X");
    for format in ["csv", "table", "jsonl"] {
        let out = run(&[
            "log",
            "--processes",
            "--count",
            "1",
            "--format",
            format,
            "--fields",
            "gpu_index,pid,user,process_name,command",
        ]);
        assert!(out.contains("pwned"), "{format}: {out}");
        assert!(
            unsafe_lines(&out).is_empty(),
            "{format}: {:?}",
            unsafe_lines(&out)
        );
        let out = run(&[
            "log",
            "--count",
            "1",
            "--format",
            format,
            "--fields",
            "index,name",
        ]);
        assert!(
            unsafe_lines(&out).is_empty(),
            "{format}: {:?}",
            unsafe_lines(&out)
        );
    }
    // serve: labels when asked for, and the JSON endpoint.
    let (_serve, addr) = crate::serve::serve(&s, "0", &["--process-labels", "user,command"]);
    let metrics = crate::serve::wait_for(&format!("http://{addr}/metrics"), "a sample", |b| {
        b.contains("gpumon_process_memory_bytes")
    });
    assert!(metrics.contains("pwned"), "{metrics}");
    assert!(
        unsafe_lines(&metrics).is_empty(),
        "{:?}",
        unsafe_lines(&metrics)
    );
    let (_, body) = crate::serve::get(&format!("http://{addr}/api/v1/sample"));
    assert!(unsafe_lines(&body).is_empty(), "{:?}", unsafe_lines(&body));
}

/// Finding 1: `/api/v1/sample` serves no user or command unless `--process-labels` asks for
/// them, as `/metrics` does; asked for, the command is cut as its label is.
#[test]
fn the_json_endpoint_keeps_users_and_command_lines_private_unless_asked() {
    let mut secret = StdCommand::new("sleep");
    secret.arg0("python serve.py --hf-token hf_SECRETSECRET --db-password hunter2 ".repeat(4));
    let child = secret.arg("60").spawn().expect("spawn");
    let cmdline = format!("/proc/{}/cmdline", child.id());
    for _ in 0..400 {
        if std::fs::read(&cmdline).is_ok_and(|c| c.ends_with(b"60\0")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _child = Killed(child);
    let s = scenario(&format!(
        r#"{{"version":1,"devices":[{{"name":"G","memory_total_mib":1024,
            "processes":[{{"pid":{},"memory_mib":64}}]}}]}}"#,
        _child.0.id()
    ));
    let sample = |labels: &[&str]| {
        let (_serve, addr) = crate::serve::serve(&s, "0", labels);
        let body = crate::serve::wait_for(
            &format!("http://{addr}/api/v1/sample"),
            "a sample with the process",
            |b| b.contains("\"pid\""),
        );
        let v: serde_json::Value = serde_json::from_str(&body).expect("json");
        v["devices"][0]["processes"][0].clone()
    };
    let p = sample(&[]);
    assert!(p["command"].is_null() && p["user"].is_null(), "{p}");
    assert!(!p.to_string().contains("hunter2"), "{p}");
    assert_eq!(p["gpu_memory_bytes"], 64 << 20, "the rest is there: {p}");
    let p = sample(&["--process-labels", "user,command"]);
    let command = p["command"].as_str().expect("asked for");
    assert!(command.starts_with("python serve.py --hf-token"), "{p}");
    assert_eq!(command.chars().count(), 128, "cut as the label is");
    assert!(p["user"].is_string(), "{p}");
    let p = sample(&["--process-labels", "user"]);
    assert!(p["command"].is_null() && p["user"].is_string(), "{p}");
    // The once view is the user's own, on their own terminal: it shows everything.
    let v = stdout_json(gpumon_fake(&s, 0.0).args(["once", "--json"]));
    assert!(v["devices"][0]["processes"][0]["command"]
        .as_str()
        .is_some_and(|c| c.contains("hunter2")));
}
