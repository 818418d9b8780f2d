//! Per-process peaks from NVML's accounting mode, on the fake library: each process's peak in
//! `once --json` and `log`, the exited processes' peaks in the text views, the per-user view,
//! a recording and the post-mortem, the dashboard's PEAK column, `run`'s driver-side peak;
//! accounting off (one note, N/A), refused or unsupported (not measured), and the exited list
//! bounded.

use std::fs;
use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{fake_lib, gpumon, gpumon_fake, scenario, stdout_json, MIB};

/// GPU 0 with accounting on: pid 4612100 spikes for 30 ms at 1 s to 31 GiB and exits at 2 s;
/// pid 4620000 runs on, 9000 MiB with a 30 ms spike to 10000 MiB. GPU 1 has accounting off,
/// GPU 2 none at all (NOT_SUPPORTED).
const ACCOUNTING: &str = r#"{"version":1,"devices":[
  {"name":"Acct","memory_total_mib":81920,"accounting":{"enabled":true},
   "processes":[
     {"pid":4612100,"memory_mib":{"points":[[0,20000]],
       "spikes":[{"at_s":1.0,"len_s":0.03,"value":11744}]},"end_s":2},
     {"pid":4620000,"memory_mib":{"points":[[0,9000]],
       "spikes":[{"at_s":0.5,"len_s":0.03,"value":1000}]}}]},
  {"name":"Off","memory_total_mib":81920,"accounting":{"enabled":false},
   "processes":[{"pid":4650000,"memory_mib":1000}]},
  {"name":"None","memory_total_mib":81920,"processes":[{"pid":4651000,"memory_mib":1000}]}]}"#;

fn device(v: &Value, i: usize) -> &Value {
    &v["devices"][i]
}

#[test]
fn once_json_has_each_processs_peak_and_the_exited_ones_and_never_a_peak_not_measured() {
    let scn = scenario(ACCOUNTING);
    let v = stdout_json(gpumon_fake(&scn, 3.0).args(["once", "--json"]));
    let (_, validator) = crate::docs::schema_pub("once.schema.json");
    crate::docs::assert_valid(&validator, &v, "once --json with accounting");
    let d0 = device(&v, 0);
    assert_eq!(d0["accounting"]["enabled"], true, "{d0:#}");
    assert_eq!(d0["accounting"]["buffer_size"], 4000);
    let running = &d0["processes"][0];
    assert_eq!(running["pid"], 4620000);
    assert_eq!(running["gpu_memory_bytes"], 9000 * MIB);
    assert_eq!(
        running["peak_bytes"],
        10000 * MIB,
        "the 30 ms spike that no sample saw"
    );
    let exited = &d0["accounting"]["exited"];
    assert_eq!(exited.as_array().map(Vec::len), Some(1), "{exited:#}");
    assert_eq!(exited[0]["pid"], 4612100);
    assert_eq!(exited[0]["peak_bytes"], 31744 * MIB);
    // Off: said so, no peak. Unsupported: unknown, with the reason; never a 0.
    let d1 = device(&v, 1);
    assert_eq!(d1["accounting"]["enabled"], false);
    assert_eq!(d1["processes"][0]["peak_bytes"], Value::Null);
    let d2 = device(&v, 2);
    assert_eq!(d2["accounting"]["enabled"], Value::Null);
    assert_eq!(d2["accounting"]["error"], "not supported");
    assert_eq!(d2["processes"][0]["peak_bytes"], Value::Null);
}

#[test]
fn the_text_views_name_the_exited_peak_and_say_once_how_to_turn_accounting_on() {
    let scn = scenario(ACCOUNTING);
    let out = gpumon_fake(&scn, 3.0).arg("once").output().expect("once");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("pid 4612100 on GPU 0 peaked at 31.0 GiB and exited"),
        "{text}"
    );
    assert_eq!(text.matches("nvidia-smi").count(), 1, "said once: {text}");
    assert!(
        text.contains("off on GPU 1;"),
        "GPU 1 only (GPU 2 has none): {text}"
    );
    // The per-user view, text and JSON.
    let by = gpumon_fake(&scn, 3.0)
        .args(["once", "--by", "user"])
        .output()
        .expect("once --by");
    let by_text = String::from_utf8_lossy(&by.stdout);
    assert!(
        by_text.contains("pid 4612100 on GPU 0 peaked at 31.0 GiB and exited"),
        "{by_text}"
    );
    assert_eq!(by_text.matches("nvidia-smi").count(), 1, "{by_text}");
    let v = stdout_json(gpumon_fake(&scn, 3.0).args(["once", "--by", "user", "--json"]));
    let (_, validator) = crate::docs::schema_pub("by.schema.json");
    crate::docs::assert_valid(&validator, &v, "once --by user --json with accounting");
    assert_eq!(v["exited"][0]["pid"], 4612100, "{v:#}");
    assert_eq!(v["exited"][0]["peak_bytes"], 31744 * MIB);
    // log: the driver's peak per process, empty where not measured.
    let log = gpumon_fake(&scn, 3.0)
        .args(["log", "--processes", "--count", "1", "--fields"])
        .arg("gpu_index,pid,used_memory,peak_memory")
        .output()
        .expect("log");
    let csv = String::from_utf8_lossy(&log.stdout);
    assert!(
        csv.contains(&format!("0,4620000,{},{}", 9000 * MIB, 10000 * MIB)),
        "{csv}"
    );
    assert!(
        csv.contains(&format!("1,4650000,{},\n", 1000 * MIB)),
        "{csv}"
    );
}

/// Accounting calls the driver refuses (NO_PERMISSION, NOT_SUPPORTED) are "not measured": no
/// peak, the reason kept, no note telling root to turn on what may already be on, and every
/// other figure as usual.
#[test]
fn refused_or_unsupported_accounting_is_not_measured() {
    for (fault, reason) in [
        ("no_permission", "no permission"),
        ("not_supported", "not supported"),
    ] {
        let body = ACCOUNTING.trim_end().trim_end_matches('}');
        let scn = scenario(&format!(
            r#"{body},"faults":[{{"kind":"{fault}","field":"accounting","device":0}}]}}"#
        ));
        let v = stdout_json(gpumon_fake(&scn, 3.0).args(["once", "--json"]));
        let d0 = device(&v, 0);
        assert_eq!(d0["accounting"]["error"], reason, "{d0:#}");
        assert_eq!(d0["accounting"]["enabled"], Value::Null);
        assert_eq!(d0["processes"][0]["peak_bytes"], Value::Null);
        assert_eq!(d0["processes"][0]["gpu_memory_bytes"], 9000 * MIB);
        assert_eq!(d0["accounting"]["exited"], serde_json::json!([]));
        let text = gpumon_fake(&scn, 3.0).arg("once").output().expect("once");
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(!text.contains("off on GPU 0"), "{text}");
    }
}

/// A buffer of thousands of ended processes: a sample carries at most 16, the newest.
#[test]
fn the_exited_list_never_grows_without_bound() {
    let procs: Vec<String> = (0..400)
        .map(|i| {
            format!(
                r#"{{"pid":{},"memory_mib":{},"start_s":{},"end_s":{}}}"#,
                4700000 + i,
                100 + i,
                f64::from(i) * 0.01,
                f64::from(i) * 0.01 + 0.005
            )
        })
        .collect();
    let scn = scenario(&format!(
        r#"{{"version":1,"devices":[{{"name":"Busy","memory_total_mib":81920,
            "accounting":{{"enabled":true,"buffer":300}},"processes":[{}]}}]}}"#,
        procs.join(",")
    ));
    let v = stdout_json(gpumon_fake(&scn, 5.0).args(["once", "--json"]));
    let exited = v["devices"][0]["accounting"]["exited"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(exited.len(), 16, "{exited:?}");
    assert_eq!(exited[0]["pid"], 4700399, "the newest first");
    assert_eq!(exited[0]["peak_bytes"], 499 * MIB);
}

/// Recorded with the scenario clock running: the recording keeps each process's peak and the
/// exited ones, and the post-mortem of an OOM just after the exit names the neighbour that
/// peaked and left.
#[test]
fn a_recording_keeps_the_peaks_and_the_post_mortem_names_the_neighbour_that_exited() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("acct.rec.zst");
    let scn = scenario(ACCOUNTING);
    let mut rec = crate::recording::start_record(&scn, &file, "200ms");
    // 15 samples of 3 GPUs: 3 s, past the exit at 2 s.
    let start = Instant::now();
    while crate::recording::replayed_count(&file) < 45 && start.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    // Stopped before anything is asserted: a failing test leaves no recorder behind.
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(rec.id() as i32, libc::SIGTERM) };
    let _ = rec.wait();
    assert!(
        crate::recording::replayed_count(&file) >= 45,
        "too few samples recorded"
    );
    let last = stdout_json(gpumon().args(["once", "--json", "--replay"]).arg(&file));
    let d0 = &last["devices"][0];
    assert_eq!(d0["processes"][0]["peak_bytes"], 10000 * MIB, "{d0:#}");
    assert_eq!(d0["accounting"]["exited"][0]["peak_bytes"], 31744 * MIB);
    assert_eq!(last["devices"][1]["accounting"]["enabled"], false);
    let at = last["timestamp"].as_str().expect("time").to_owned();
    let message = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 \
        has a total capacity of 80.00 GiB of which 1.00 GiB is free. Including non-PyTorch \
        memory, this process has 9.00 GiB memory in use. Of the allocated memory 8.50 GiB is \
        allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.";
    let out = gpumon()
        .args(["explain", "--offline", "--recording"])
        .arg(&file)
        .args(["--at", &at])
        .write_stdin(message)
        .output()
        .expect("explain");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("pid 4612100 peaked at 31.0 GiB and exited"),
        "{text}"
    );
}

/// The dashboard, the real binary on the fake library in tmux: a PEAK column where accounting
/// is on, with the spike no frame saw, N/A where it is off, and the note in the header.
#[test]
fn end_to_end_the_dashboard_shows_a_peak_column() {
    let scn = scenario(ACCOUNTING);
    let env = vec![
        ("GPUMON_NVML_LIB", fake_lib().display().to_string()),
        ("FAKE_NVML_SCENARIO", scn.display().to_string()),
        ("FAKE_NVML_TIME", "3".into()),
        ("FAKE_NVML_SPEED", "0".into()),
        ("PS1", "$ ".into()),
    ];
    let tmux = crate::dashboard::Tmux::new(140, 40, &env);
    let bin = env!("CARGO_BIN_EXE_gpumon");
    tmux.type_line(&format!("{bin} --interval 200ms; echo EXIT=$?"));
    let screen = tmux.wait_for("the process table", |s| {
        s.contains("4620000") && s.contains("4650000")
    });
    assert!(screen.contains("PEAK"), "{screen}");
    let row = crate::dashboard::line_with(&screen, "4620000").unwrap_or_default();
    assert!(
        row.contains("9.8 GiB"),
        "its peak, 10000 MiB: {row}\n{screen}"
    );
    let off = crate::dashboard::line_with(&screen, "4650000").unwrap_or_default();
    assert!(off.contains("N/A"), "{off}");
    assert!(screen.contains("accounting off"), "the note: {screen}");
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    tmux.assert_restored("EXIT=0");
}

/// `gpumon run`: the job's own peak from the driver's accounting beside the allocator's, each
/// named. The stand-in job holds 13722 MiB; its curve spiked to 14722 MiB before the frozen
/// clock's time, which no sample saw.
#[test]
fn run_names_the_drivers_peak_of_its_job_from_accounting() {
    let dir = tempfile::tempdir().expect("dir");
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).expect("chmod");
    }
    let path = |n: &str| dir.path().join(n);
    fs::write(
        path("scenario.json"),
        format!(
            r#"{{"version":1,"devices":[{{"name":"Fake V100","memory_total_mib":16384,
                "uuid":"GPU-aaaaaaaa-0000-0000-0000-000000000000","accounting":{{"enabled":true}},
                "processes":[{{"pid_file":"{}","memory_mib":{{"points":[[0,13722]],
                  "spikes":[{{"at_s":5,"len_s":0.03,"value":1000}}]}}}}]}}]}}"#,
            path("pid").display()
        ),
    )
    .expect("scenario");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/python");
    let child = StdCommand::new(env!("CARGO_BIN_EXE_gpumon"))
        .args(["run", "--interval", "100ms", "--", "python3"])
        .arg(fixtures.join("train.py"))
        .args(["train", "0"])
        .env("XDG_RUNTIME_DIR", dir.path())
        .env("XDG_STATE_HOME", path("state"))
        .env("GPUMON_NVML_LIB", fake_lib())
        .env("FAKE_NVML_SCENARIO", path("scenario.json"))
        .env("FAKE_NVML_TIME", "10")
        .env("FAKE_NVML_SPEED", "0")
        .env("FAKE_TORCH_STATE", path("state.json"))
        .env("PID_FILE", path("pid"))
        .env("DONE_FILE", path("done"))
        .env("PYTHONPATH", &fixtures)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gpumon run");
    let start = Instant::now();
    while !path("pid").exists() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(800));
    fs::write(path("done"), "").expect("done");
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let pid = fs::read_to_string(path("pid")).unwrap_or_default();
    assert!(
        stderr.contains(&format!(
            "the driver's accounting: pid {} peaked at 14.4 GiB",
            pid.trim()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("peak allocated 1.0 GiB"),
        "the allocator's beside it: {stderr}"
    );
}

/// The PEAK column on TestBackend: GPU 0's accounting is on (a measured peak; a process the
/// driver does not know is N/A), GPU 1's is off (N/A, and the note in the header).
#[test]
fn snapshot_the_peak_column_where_accounting_is_on() {
    use gpumon::model::accounting::Accounting;
    use gpumon::model::{Device, Memory, Process, ProcessKind, Sample};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use std::sync::Arc;
    use std::time::SystemTime;
    const GIB: u64 = 1 << 30;
    let device = |index: u32, on: bool, procs: &[(u32, u64, Option<u64>)]| Device {
        index,
        name: Some("NVIDIA H100 80GB HBM3".into()),
        memory: Memory {
            total_bytes: Some(80 * GIB),
            used_bytes: Some(procs.iter().map(|p| p.1).sum()),
            free_bytes: Some(80 * GIB - procs.iter().map(|p| p.1).sum::<u64>()),
            reserved_bytes: Some(0),
        },
        processes: procs
            .iter()
            .map(|&(pid, used, peak)| {
                let mut p = Process::from_nvml(pid, ProcessKind::Compute, Some(used));
                p.peak_bytes = peak;
                p.user = Some("alice".into());
                p.command = Some(format!("python train.py --rank {pid}"));
                p
            })
            .collect(),
        accounting: Some(Accounting {
            enabled: Some(on),
            buffer_size: on.then_some(4000),
            ..Accounting::default()
        }),
        ..Device::default()
    };
    let sample = Arc::new(Sample {
        timestamp: SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000),
        hostname: Some("gpu-node-7".into()),
        source: "nvml",
        driver_version: Some("550.54.15".into()),
        cuda_version: Some("12.4".into()),
        devices: vec![
            device(
                0,
                true,
                &[(4121, 20 * GIB, Some(31 * GIB)), (4122, 2 * GIB, None)],
            ),
            device(1, false, &[(4200, 9 * GIB, None)]),
        ],
        error: None,
        host: None,
    });
    let mut terminal = Terminal::new(TestBackend::new(120, 30)).expect("terminal");
    let mut app = gpumon::tui::app::App::new(&crate::common::dashboard_settings(
        Duration::from_secs(1),
        Duration::from_secs(600),
    ));
    gpumon::tui::render_once(&mut terminal, &mut app, sample).expect("draw");
    let text = terminal.backend().to_string();
    assert!(text.contains("PEAK"), "{text}");
    let row = text
        .lines()
        .find(|l| l.contains("4121") && l.contains("alice"))
        .unwrap_or_default();
    assert!(row.contains("31.0 GiB"), "{row}");
    insta::assert_snapshot!(terminal.backend());
}

/// The per-user view (Tab) with the driver's accounting: below the rows, each user's highest
/// peak among their exited processes, with pid, GPU and how long ago (a hostile user name
/// escaped); GPU 1's accounting is off, so its exited peaks are N/A, never 0; tiny
/// terminals draw without panicking.
#[test]
fn snapshot_the_per_user_view_names_each_users_highest_exited_peak() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use gpumon::model::accounting::{Accounting, ExitedProcess};
    use gpumon::model::{Device, Memory, Process, ProcessKind, Sample};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use std::sync::Arc;
    use std::time::SystemTime;
    const GIB: u64 = 1 << 30;
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    let gone = |pid: u32, user: &str, peak: Option<u64>, ago: u64| ExitedProcess {
        pid,
        peak_bytes: peak,
        started_at: None,
        ended_at: Some(now - Duration::from_secs(ago)),
        user: Some(user.into()),
        name: Some("python".into()),
    };
    let device = |index: u32, on: bool, procs: &[(u32, &str)], exited: Vec<ExitedProcess>| {
        let used = 10 * GIB * procs.len() as u64;
        Device {
            index,
            name: Some("NVIDIA H100 80GB HBM3".into()),
            memory: Memory {
                total_bytes: Some(80 * GIB),
                used_bytes: Some(used),
                free_bytes: Some(80 * GIB - used),
                reserved_bytes: Some(0),
            },
            processes: procs
                .iter()
                .map(|&(pid, user)| {
                    let mut p = Process::from_nvml(pid, ProcessKind::Compute, Some(10 * GIB));
                    p.user = Some(user.into());
                    p.command = Some("python train.py".into());
                    p
                })
                .collect(),
            accounting: Some(Accounting {
                enabled: Some(on),
                exited,
                ..Accounting::default()
            }),
            ..Device::default()
        }
    };
    let sample = Arc::new(Sample {
        timestamp: now,
        hostname: Some("gpu-node-7".into()),
        source: "nvml",
        driver_version: Some("550.54.15".into()),
        cuda_version: Some("12.4".into()),
        devices: vec![
            device(
                0,
                true,
                &[(4200, "alice"), (4201, "bob")],
                vec![
                    gone(4121, "alice", Some(31 * GIB), 2),
                    gone(4122, "alice", Some(2 * GIB), 40),
                    gone(4123, "carol", None, 75),
                    gone(4124, "eve\x1b]0;pwned\x07", Some(GIB), 5),
                ],
            ),
            device(1, false, &[(4300, "bob")], Vec::new()),
        ],
        error: None,
        host: None,
    });
    let settings =
        crate::common::dashboard_settings(Duration::from_secs(1), Duration::from_secs(600));
    let mut app = gpumon::tui::app::App::new(&settings);
    let mut terminal = Terminal::new(TestBackend::new(120, 30)).expect("terminal");
    gpumon::tui::render_once(&mut terminal, &mut app, sample.clone()).expect("draw");
    app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    let text = terminal.backend().to_string();
    let line = |what: &str| {
        text.lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no line with {what}:\n{text}"))
            .to_owned()
    };
    assert!(
        line("exited in the last 10m").contains("highest peak"),
        "{text}"
    );
    let alice = line("pid 4121");
    assert!(
        alice.contains("alice") && alice.contains("31.0 GiB") && alice.contains("exited 2s ago"),
        "alice's highest, not her newest or her last: {alice}"
    );
    assert!(alice.contains("· 2 exited"), "{alice}");
    assert!(!text.contains("pid 4122"), "one line per user:\n{text}");
    assert!(line("pid 4123").contains("peak        N/A"), "{text}");
    assert!(
        line("pid 4124").contains("eve\\u{1b}]0;pwned\\u{7}"),
        "{text}"
    );
    assert!(!text.contains('\x1b'), "escaped:\n{text}");
    assert!(
        line("N/A on GPU 1").contains("accounting off"),
        "off is N/A, not 0: {text}"
    );
    assert!(
        !text.contains("… "),
        "the table's area makes room for it:\n{text}"
    );
    insta::assert_snapshot!(terminal.backend());

    // Small terminals: never a panic, and the rows keep their place before the section.
    for (w, h) in [(1, 1), (20, 5), (40, 8), (80, 12), (80, 14), (120, 16)] {
        let mut small = Terminal::new(TestBackend::new(w, h)).expect("terminal");
        let mut app = gpumon::tui::app::App::new(&settings);
        gpumon::tui::render_once(&mut small, &mut app, sample.clone()).expect("draw");
        app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
        small
            .draw(|f| gpumon::tui::ui::draw(f, &mut app))
            .expect("draw");
    }
}

/// `serve`'s `/api/v1/sample` carries each process's `peak_bytes` and the exited processes
/// with theirs (never a peak where accounting is off).
#[test]
fn the_sample_endpoint_carries_the_peaks_and_the_exited_processes() {
    let scn = scenario(ACCOUNTING);
    let (_serve, addr) = crate::serve::serve(&scn, "1", &[]);
    let body = crate::serve::wait_for(
        &format!("http://{addr}/api/v1/sample"),
        "a sample with an exited process",
        |b| b.contains("\"exited\":[{"),
    );
    let v: Value = serde_json::from_str(&body).expect("json");
    let d0 = device(&v, 0);
    let running = &d0["processes"][0];
    assert_eq!(running["pid"], 4620000, "{d0:#}");
    assert_eq!(running["peak_bytes"], 10000 * MIB, "{d0:#}");
    let exited = &d0["accounting"]["exited"][0];
    assert_eq!(exited["pid"], 4612100, "{d0:#}");
    assert_eq!(exited["peak_bytes"], 31744 * MIB, "{d0:#}");
    assert_eq!(device(&v, 1)["processes"][0]["peak_bytes"], Value::Null);
}
