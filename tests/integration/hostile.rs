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

/// 300 connections that each send one header byte a second (reconnecting when closed, as
/// the attack does), against a scraper on a kept-alive connection (as Prometheus scrapes)
/// and one that opens a connection per scrape. Finding 4: every legitimate scrape is
/// answered. (Its latency is a benchmark's business: `cargo bench --bench serve`.)
#[test]
fn slow_clients_cannot_starve_the_scrapers() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let s = scenario(
        r#"{"version":1,"devices":[{"name":"G","memory_total_mib":1024,
            "processes":[{"pid":4200001,"memory_mib":64}]}]}"#,
    );
    let (_serve, addr) = crate::serve::serve(&s, "0", &[]);
    crate::serve::wait_for(&format!("http://{addr}/metrics"), "a sample", |b| {
        b.contains("gpumon_gpu_up")
    });
    let stop = Arc::new(AtomicBool::new(false));
    let attack = {
        let (stop, addr) = (Arc::clone(&stop), addr.clone());
        std::thread::spawn(move || {
            const REQUEST: &[u8] =
                b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaa";
            let connect = || TcpStream::connect(&addr).ok();
            let mut conns: Vec<(Option<TcpStream>, usize)> =
                (0..300).map(|_| (connect(), 0)).collect();
            let mut reconnects = 0usize;
            while !stop.load(Ordering::SeqCst) {
                for (conn, sent) in &mut conns {
                    let alive = conn.as_mut().is_some_and(|c| {
                        c.write_all(&REQUEST[*sent % REQUEST.len()..][..1]).is_ok()
                    });
                    if alive {
                        *sent += 1;
                    } else {
                        *conn = connect();
                        *sent = 0;
                        reconnects += 1;
                    }
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            reconnects
        })
    };
    std::thread::sleep(Duration::from_millis(1500));
    let scrape_new = || -> bool {
        let Ok(mut c) = TcpStream::connect(&addr) else {
            return false;
        };
        let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
        if c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .is_err()
        {
            return false;
        }
        let mut body = Vec::new();
        c.read_to_end(&mut body).is_ok() && body.starts_with(b"HTTP/1.1 200")
    };
    let mut kept = BufReader::new(TcpStream::connect(&addr).expect("connect"));
    kept.get_ref()
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut scrape_kept = || -> bool {
        if kept
            .get_mut()
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .is_err()
        {
            return false;
        }
        let (mut len, mut status) = (0usize, String::new());
        if kept.read_line(&mut status).is_err() || !status.starts_with("HTTP/1.1 200") {
            return false;
        }
        loop {
            let mut line = String::new();
            if kept.read_line(&mut line).is_err() || line.is_empty() {
                return false;
            }
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        kept.read_exact(&mut body).is_ok()
    };
    let (mut asked, mut answered) = (0, 0);
    let until = std::time::Instant::now() + Duration::from_secs(8);
    while std::time::Instant::now() < until {
        asked += 2;
        answered += usize::from(scrape_new()) + usize::from(scrape_kept());
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::SeqCst);
    let reconnects = attack.join().expect("attacker");
    assert!(
        reconnects > 0,
        "the slow clients were never shed: the test did not bite"
    );
    assert_eq!(
        answered, asked,
        "legitimate scrapes answered under 300 slow connections"
    );
}

/// Findings 3 and 5: a flood of wrong passwords from one address (127.0.0.2) does not hold
/// up another client's first login past Prometheus's 10 s scrape timeout; an unknown user and
/// a known one with a wrong password are both refused (the same bcrypt check: see
/// webconfig's unit test); the flooder is told to slow down (429), not queued.
#[test]
fn a_password_flood_does_not_keep_prometheus_out() {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;

    let hash = bcrypt::hash("s3cret", 10).expect("hash");
    let dir = tempfile::tempdir().expect("dir");
    let web = dir.path().join("web.yml");
    std::fs::write(&web, format!("basic_auth_users:\n  prom: '{hash}'\n")).expect("write");
    let s = scenario(r#"{"version":1,"devices":[{"name":"G","memory_total_mib":1024}]}"#);
    let (_serve, addr) = crate::serve::serve(
        &s,
        "0",
        &["--web.config.file", web.to_str().expect("utf-8")],
    );
    let port: u16 = addr
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port");
    let stop = Arc::new(AtomicBool::new(false));
    let (tried, busy) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    // 150 at once: bcrypt at cost 10 takes ~65 ms, so one queue for all would hold a newcomer
    // for ten seconds.
    let flooders: Vec<_> = (0..150)
        .map(|t| {
            let (stop, tried, busy) = (Arc::clone(&stop), Arc::clone(&tried), Arc::clone(&busy));
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                let mut n = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    n += 1;
                    let user = if n.is_multiple_of(2) { "prom" } else { "mallory" };
                    let creds = base64_encode(&format!("{user}:guess-{t}-{n}"));
                    let reply = (|| {
                        // Connected from 127.0.0.2 (tokio binds before connecting; std cannot).
                        let c = rt.block_on(async {
                            let socket = tokio::net::TcpSocket::new_v4().ok()?;
                            socket.bind("127.0.0.2:0".parse().ok()?).ok()?;
                            socket.connect(([127, 0, 0, 1], port).into()).await.ok()
                        })?;
                        let mut c = c.into_std().ok()?;
                        c.set_nonblocking(false).ok()?;
                        let req = format!(
                            "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {creds}\r\nConnection: close\r\n\r\n"
                        );
                        c.write_all(req.as_bytes()).ok()?;
                        let mut out = Vec::new();
                        c.read_to_end(&mut out).ok()?;
                        Some(String::from_utf8_lossy(&out).into_owned())
                    })();
                    tried.fetch_add(1, Ordering::SeqCst);
                    if let Some(r) = reply {
                        assert!(!r.starts_with("HTTP/1.1 200"), "a wrong password got in: {r}");
                        if r.starts_with("HTTP/1.1 429") {
                            busy.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(100));
                        }
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    // Prometheus's first scrape, from another address, credentials never seen before.
    let mut c = std::net::TcpStream::connect(&addr).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let creds = base64_encode("prom:s3cret");
    write!(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {creds}\r\nConnection: close\r\n\r\n").expect("send");
    let mut reply = Vec::new();
    let read = c.read_to_end(&mut reply);
    stop.store(true, Ordering::SeqCst);
    for f in flooders {
        f.join().expect("flooder");
    }
    assert!(read.is_ok(), "no answer within 10 s: {read:?}");
    assert!(
        reply.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&reply)
    );
    assert!(tried.load(Ordering::SeqCst) > 150, "the flood ran");
    assert!(
        busy.load(Ordering::SeqCst) > 0,
        "the flooder was told to slow down"
    );
}

fn base64_encode(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// Finding 9: at a hang's onset no record repeats the hung GPU's last readings as fresh:
/// from its first late record on, every one carries an error and no readings (late, then
/// stalled), while the healthy GPU keeps its cadence with fresh readings.
#[test]
fn a_hang_onset_never_shows_stale_readings_as_fresh() {
    let s = scenario(
        r#"{"version":1,"devices":[
          {"name":"A","memory_total_mib":1024,"utilization_gpu":{"points":[[0,0],[100,100]]}},
          {"name":"B","memory_total_mib":200000,
           "processes":[{"pid":4700002,"memory_mib":{"points":[[0,0],[100,100000]]}}]}],
          "faults":[{"kind":"hang","device":1,"block_s":30,"at_s":2}]}"#,
    );
    let out = crate::common::gpumon()
        .env("GPUMON_NVML_LIB", crate::common::fake_lib())
        .env("FAKE_NVML_SCENARIO", &s)
        .args([
            "log",
            "--interval",
            "250ms",
            "--count",
            "40",
            "--format",
            "jsonl",
            "--fields",
            "timestamp,index,memory.used,utilization.gpu,error",
        ])
        .output()
        .expect("run");
    assert!(out.status.success());
    let records: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let of = |gpu: u64| -> Vec<&serde_json::Value> {
        records.iter().filter(|r| r["index"] == gpu).collect()
    };
    let b = of(1);
    let first_bad = b
        .iter()
        .position(|r| !r["error"].is_null())
        .expect("GPU 1 hung");
    assert!(first_bad >= 4, "it answered before the hang: {b:?}");
    // Its memory grows 250 MiB an interval: a record that repeats the one before it without
    // an error is a stale reading shown as fresh.
    let fresh: Vec<u64> = b.iter().filter_map(|r| r["memory.used"].as_u64()).collect();
    assert!(
        fresh.windows(2).all(|w| w[0] < w[1]),
        "a reading repeated as fresh: {fresh:?}"
    );
    for r in &b[first_bad..] {
        assert!(
            !r["error"].is_null(),
            "a hung GPU's record without an error: {r}"
        );
        assert!(
            r["memory.used"].is_null(),
            "stale readings shown as fresh: {r}"
        );
    }
    assert!(
        b[first_bad]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("no answer for")),
        "late first: {}",
        b[first_bad]
    );
    // The healthy GPU: every record fresh, one per interval.
    let a = of(0);
    assert_eq!(a.len(), 40);
    assert!(
        a.iter()
            .all(|r| r["error"].is_null() && r["memory.used"].is_number()),
        "{a:?}"
    );
    let utils: Vec<u64> = a
        .iter()
        .filter_map(|r| r["utilization.gpu"].as_u64())
        .collect();
    assert!(
        utils.windows(2).all(|w| w[0] <= w[1]) && utils.last() > utils.first(),
        "{utils:?}"
    );
}

/// Finding 9, in `serve`: through a hang's onset the healthy GPU's sample keeps coming every
/// interval (it froze for about 2 s), and the hung GPU is never exported up with its last
/// readings: late (up 0, no readings) and then stalled.
#[test]
fn serve_keeps_the_healthy_gpu_fresh_and_never_shows_the_hung_one_up() {
    let s = scenario(
        r#"{"version":1,"devices":[
          {"name":"A","memory_total_mib":1024},
          {"name":"B","memory_total_mib":1024}],
          "faults":[{"kind":"hang","device":1,"block_s":30,"at_s":1.5}]}"#,
    );
    let (_serve, addr) = crate::serve::serve(&s, "1", &["--interval", "250ms"]);
    crate::serve::wait_for(&format!("http://{addr}/api/v1/sample"), "a sample", |b| {
        b.contains("\"devices\"")
    });
    let started = std::time::Instant::now();
    let mut last_new = std::time::Instant::now();
    let (mut last_stamp, mut longest) = (String::new(), Duration::ZERO);
    let mut saw_late = false;
    while started.elapsed() < Duration::from_secs(4) {
        let (code, body) = crate::serve::get(&format!("http://{addr}/api/v1/sample"));
        assert_eq!(code, 200);
        let v: serde_json::Value = serde_json::from_str(&body).expect("json");
        let a = &v["devices"][0];
        assert!(
            a["error"].is_null() && a["late"] != true && a["stalled"] != true,
            "{a}"
        );
        assert!(a["data_age_ms"].as_u64().is_some_and(|ms| ms < 500), "{a}");
        let b = &v["devices"][1];
        if !b["error"].is_null() {
            saw_late |= b["late"] == true;
        } else {
            assert!(b["late"] != true && b["stalled"] != true, "{b}");
            // Shown without an error, its data must be this sample's, not seconds old.
            assert!(
                b["data_age_ms"].as_u64().is_some_and(|ms| ms < 500),
                "stale as fresh: {b}"
            );
        }
        let stamp = v["timestamp"].as_str().expect("timestamp").to_owned();
        if stamp != last_stamp {
            longest = longest.max(last_new.elapsed());
            last_new = std::time::Instant::now();
            last_stamp = stamp;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        saw_late,
        "the hang began while polling, so GPU 1 was late first"
    );
    assert!(
        longest < Duration::from_millis(1500),
        "no new sample for {longest:?} at a 250 ms interval"
    );
    let metrics = crate::serve::get(&format!("http://{addr}/metrics")).1;
    assert!(metrics.contains("gpumon_gpu_up{gpu=\"1\""), "{metrics}");
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("gpumon_gpu_up{gpu=\"1\"") && l.ends_with(" 0")),
        "{metrics}"
    );
}

/// Finding 10: a driver answering impossible values (used above total, so that free wraps
/// around; 4,294,967,295% utilisation and fan; 0 °C and 0 W from sensors that did not read)
/// shows them as unknown with the reported figure in `field_errors`, in every view: no
/// wrapped number, no 0 standing in for N/A.
#[test]
fn impossible_driver_values_become_unknown_everywhere() {
    let s = scenario(
        r#"{"version":1,"devices":[{"name":"G","memory_total_mib":16384,"power_limit_w":300,
            "fan_percent":40,"processes":[{"pid":4800001,"memory_mib":64}]},
            {"name":"Fine","memory_total_mib":1024}],
          "faults":[
            {"kind":"garbage","device":0,"field":"memory","value":20000000000},
            {"kind":"garbage","device":0,"field":"utilization"},
            {"kind":"garbage","device":0,"field":"temperature"},
            {"kind":"garbage","device":0,"field":"power"},
            {"kind":"garbage","device":0,"field":"fan"},
            {"kind":"garbage","device":0,"field":"processes"}]}"#,
    );
    let v = stdout_json(gpumon_fake(&s, 0.0).args(["once", "--json"]));
    let d = &v["devices"][0];
    for path in [
        "/memory/used_bytes",
        "/memory/free_bytes",
        "/utilization/gpu_percent",
        "/utilization/memory_percent",
        "/temperature_c",
        "/power_draw_w",
        "/fan_percent",
        "/processes/0/gpu_memory_bytes",
    ] {
        assert!(d.pointer(path).is_some_and(|x| x.is_null()), "{path}: {d}");
    }
    assert_eq!(
        d["memory"]["total_bytes"],
        16384u64 << 20,
        "what is possible stays"
    );
    assert_eq!(d["power_limit_w"], 300.0);
    let errors = d["field_errors"].to_string();
    for said in [
        "20000000000",
        "4294967295%",
        "0 °C",
        "0 W",
        "18446744073709551614",
    ] {
        assert!(errors.contains(said), "{said} not in {errors}");
    }
    let fine = v["devices"][1]["field_errors"].to_string();
    assert!(
        !fine.contains("reported"),
        "a healthy GPU's readings pass: {fine}"
    );
    let wrapped = |out: &str| {
        ["4294967295", "18446744", "1.8e19", "1.8446744"]
            .iter()
            .find(|w| out.contains(*w))
            .map(|w| format!("{w} in {out}"))
    };
    let zero = regex::Regex::new(r"(^|[^0-9.])0 ?(°C|W)\b").expect("regex");
    for args in [
        vec!["once"],
        vec!["log", "--count", "1", "--format", "csv"],
        vec!["log", "--count", "1", "--format", "table"],
        vec!["log", "--count", "1", "--processes", "--format", "jsonl"],
    ] {
        let out = gpumon_fake(&s, 0.0)
            .env("COLUMNS", "200")
            .args(&args)
            .output()
            .expect("run");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(wrapped(&text), None, "{args:?}");
        assert!(!zero.is_match(&text), "{args:?}: {text}");
    }
    let (_serve, addr) = crate::serve::serve(&s, "0", &[]);
    let metrics = crate::serve::wait_for(&format!("http://{addr}/metrics"), "a sample", |b| {
        b.contains("gpumon_gpu_up")
    });
    assert_eq!(wrapped(&metrics), None);
}

/// Finding 14: a probe report whose time is 1e19 (or in the future) panicked `once` and the
/// dashboard ("overflow when adding duration to instant") and killed `serve`'s sampler. It is
/// not believed now: the process keeps its NVML figures, the views go on.
#[test]
fn probe_reports_with_impossible_times_are_ignored_not_fatal() {
    let runtime = tempfile::tempdir().expect("runtime dir");
    let dir = runtime.path().join("gpumon");
    gpumon::collect::probe::ensure_dir(&dir).expect("probe dir");
    let child = StdCommand::new("sleep").arg("60").spawn().expect("spawn");
    let pid = child.id();
    let _child = Killed(child);
    let s = scenario(&format!(
        r#"{{"version":1,"devices":[{{"name":"G","memory_total_mib":1024,
            "processes":[{{"pid":{pid},"memory_mib":64}}]}}]}}"#
    ));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    for time in [
        "1e19".to_owned(),
        "1.7976931348623157e308".to_owned(),
        format!("{}", now + 86400.0),
    ] {
        std::fs::write(
            dir.join(format!("{pid}.json")),
            format!(
                r#"{{"version":1,"pid":{pid},"time":{time},"interval":1e300,
                    "devices":[{{"index":0,"allocated":1,"reserved":2}}]}}"#
            ),
        )
        .expect("write report");
        let out = gpumon_fake(&s, 0.0)
            .env("XDG_RUNTIME_DIR", runtime.path())
            .args(["once", "--json"])
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "time {time}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let p = &v["devices"][0]["processes"][0];
        assert_eq!(p["pid"], pid);
        assert!(p["allocator"].is_null(), "time {time}: {p}");
    }
    // A believable report is taken, so the ones above were refused for their time alone.
    std::fs::write(
        dir.join(format!("{pid}.json")),
        format!(
            r#"{{"version":1,"pid":{pid},"time":{now},"interval":1,
                "devices":[{{"index":0,"allocated":1,"reserved":2}}]}}"#
        ),
    )
    .expect("write report");
    let v = stdout_json(
        gpumon_fake(&s, 0.0)
            .env("XDG_RUNTIME_DIR", runtime.path())
            .args(["once", "--json"]),
    );
    assert_eq!(
        v["devices"][0]["processes"][0]["allocator"]["allocated_bytes"],
        1
    );
}

/// `path`: a FIFO with no writer (opening it for reading would wait forever).
fn fifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.to_str().expect("utf-8")).expect("path");
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Runs `gpumon args` and returns its exit code and stderr, failing if it takes longer than
/// 20 s (a blocked read) .
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let out = crate::common::gpumon()
        .args(args)
        .timeout(Duration::from_secs(20))
        .output()
        .expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Findings 11 and 20: the files `serve` reads are regular files within a size, refused with
/// the file and the reason (a device, a FIFO, a 10 MB file), never read without end, and the
/// message does not echo the file.
#[test]
fn serve_reads_its_configuration_files_bounded() {
    let dir = tempfile::tempdir().expect("dir");
    let pipe = dir.path().join("web.fifo");
    fifo(&pipe);
    let big = dir.path().join("big.yml");
    std::fs::write(
        &big,
        format!("basic_auth_users: {}\n", "x".repeat(10 << 20)),
    )
    .expect("write");
    let bad = dir.path().join("bad.yml");
    std::fs::write(
        &bad,
        format!("tls_server_config: [{}\n", "\"y\", ".repeat(2000)),
    )
    .expect("write");
    for (file, said) in [
        ("/dev/zero", "is a device"),
        (pipe.to_str().expect("utf-8"), "is a FIFO"),
        (
            big.to_str().expect("utf-8"),
            "more than a web configuration can be (at most 1.0 MiB)",
        ),
        (bad.to_str().expect("utf-8"), ""),
    ] {
        let (code, err) = refused(&[
            "--demo",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--web.config.file",
            file,
        ]);
        assert_eq!(code, Some(2), "{file}: {err}");
        assert!(err.contains(file) && err.contains(said), "{file}: {err}");
        assert!(
            err.len() < 1000,
            "the message echoes the file: {} bytes",
            err.len()
        );
    }
    let cert = dir.path().join("tls.yml");
    std::fs::write(
        &cert,
        "tls_server_config:\n  cert_file: /dev/zero\n  key_file: /dev/zero\n",
    )
    .expect("write");
    let (code, err) = refused(&[
        "--demo",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--web.config.file",
        cert.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("cert_file /dev/zero: is a device"), "{err}");
}

/// Findings 11 and 16: `estimate --model` reads a config, an index and headers bounded: a
/// device, a FIFO, a 3 GiB weights file given as the config, shard names that leave the
/// directory, and a 112-byte safetensors file that claims 2^63 bytes of header are each
/// refused at once, naming the file and the reason.
#[test]
fn estimate_reads_model_files_bounded() {
    let dir = tempfile::tempdir().expect("dir");
    let pipe = dir.path().join("config.fifo");
    fifo(&pipe);
    let weights = dir.path().join("model.bin");
    let f = std::fs::File::create(&weights).expect("create");
    f.set_len(3 << 30).expect("a sparse 3 GiB file");
    for (model, said) in [
        ("/dev/zero", "is a device"),
        (pipe.to_str().expect("utf-8"), "is a FIFO"),
        (
            weights.to_str().expect("utf-8"),
            "is 3.0 GiB, more than a config.json can be (at most 4.0 MiB)",
        ),
    ] {
        let (code, err) = refused(&["estimate", "--model", model]);
        assert_eq!(code, Some(2), "{model}: {err}");
        assert!(err.contains(model) && err.contains(said), "{model}: {err}");
    }
    let config = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configs/gpt2.json"),
    )
    .expect("fixture");
    for shard in [
        "../../../../etc/shadow",
        "/etc/passwd",
        "sub/model.safetensors",
        "..",
    ] {
        let m = tempfile::tempdir().expect("dir");
        std::fs::write(m.path().join("config.json"), &config).expect("write");
        std::fs::write(
            m.path().join("model.safetensors.index.json"),
            format!(r#"{{"weight_map":{{"w":"{shard}"}}}}"#),
        )
        .expect("write");
        let (code, err) = refused(&["estimate", "--model", m.path().to_str().expect("utf-8")]);
        assert_eq!(code, Some(2), "{shard}: {err}");
        assert!(
            err.contains("is not a file name in the model's directory"),
            "{shard}: {err}"
        );
    }
    let m = tempfile::tempdir().expect("dir");
    std::fs::write(m.path().join("config.json"), &config).expect("write");
    let mut lying = (1u64 << 63).to_le_bytes().to_vec();
    lying.extend_from_slice(&[b' '; 104]);
    std::fs::write(m.path().join("model.safetensors"), &lying).expect("write");
    let (code, err) = refused(&["estimate", "--model", m.path().to_str().expect("utf-8")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("it says its header is 9223372036854775808 bytes, but the file is 112 bytes"),
        "{err}"
    );
}

/// Finding 7: `log --output` follows logrotate: a renamed or deleted file is replaced by a new
/// one with its header, and SIGHUP reopens the file instead of killing `log` (rc 129).
#[test]
fn log_files_survive_rotation_and_sighup() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("gpu.csv");
    let s = scenario(r#"{"version":1,"devices":[{"name":"G","memory_total_mib":1024}]}"#);
    let child = StdCommand::new(env!("CARGO_BIN_EXE_gpumon"))
        .env("GPUMON_NVML_LIB", crate::common::fake_lib())
        .env("FAKE_NVML_SCENARIO", &s)
        .args([
            "log",
            "--interval",
            "100ms",
            "--format",
            "csv",
            "--fields",
            "timestamp,index,name",
        ])
        .arg("--output")
        .arg(&file)
        .spawn()
        .expect("start log");
    let mut child = Killed(child);
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
    let wait_rows = |p: &std::path::Path, n: usize| {
        let start = std::time::Instant::now();
        while read(p).lines().count() < n + 1 {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{}: {}",
                p.display(),
                read(p)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_rows(&file, 3);
    std::fs::rename(&file, dir.path().join("gpu.csv.1")).expect("rotate");
    wait_rows(&file, 2);
    assert!(
        read(&file).starts_with("timestamp,index,name\n"),
        "{}",
        read(&file)
    );
    std::fs::remove_file(&file).expect("delete");
    wait_rows(&file, 2);
    assert!(read(&file).starts_with("timestamp,index,name\n"));
    // logrotate's create + postrotate kill -HUP.
    std::fs::rename(&file, dir.path().join("gpu.csv.2")).expect("rotate");
    std::fs::write(&file, "").expect("create");
    let pid = child.0.id().to_string();
    StdCommand::new("kill")
        .args(["-HUP", &pid])
        .status()
        .expect("kill");
    wait_rows(&file, 2);
    assert!(read(&file).starts_with("timestamp,index,name\n"));
    assert!(
        child.0.try_wait().expect("wait").is_none(),
        "SIGHUP killed log"
    );
    StdCommand::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    let status = child.0.wait().expect("wait");
    assert!(status.success(), "{status:?}");
    // No record lost or cut anywhere: every line of every file is a whole row.
    for name in ["gpu.csv", "gpu.csv.1", "gpu.csv.2"] {
        let text = read(&dir.path().join(name));
        assert!(text.ends_with('\n'), "{name}: {text:?}");
        assert!(
            text.lines().skip(1).all(|l| l.split(',').count() == 3),
            "{name}: {text}"
        );
    }
}

/// Finding 8: a file that ends in a record cut short (a full disk) is cut back to its last
/// whole record before appending; a second run with other fields or another format is
/// refused, naming the file and both; a write that fails names the file (ENOSPC).
#[test]
fn log_files_never_mix_columns_or_append_onto_a_cut_record() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("gpu.csv");
    std::fs::write(
        &file,
        "timestamp,index,name\n2026-01-01T00:00:00.000Z,0,G\n2026-01-01T00:00:01.0",
    )
    .expect("write");
    let s = scenario(r#"{"version":1,"devices":[{"name":"G","memory_total_mib":1024}]}"#);
    let log = |args: &[&str], out: &std::path::Path| {
        gpumon_fake(&s, 0.0)
            .args(["log", "--count", "1"])
            .args(args)
            .arg("--output")
            .arg(out)
            .output()
            .expect("run")
    };
    let out = log(
        &["--format", "csv", "--fields", "timestamp,index,name"],
        &file,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("cut short"));
    let text = std::fs::read_to_string(&file).expect("read");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[1], "2026-01-01T00:00:00.000Z,0,G");
    assert!(
        lines[2].ends_with(",0,G") && lines[2].len() == lines[1].len(),
        "{text}"
    );
    for (args, what) in [
        (
            vec!["--format", "csv", "--fields", "timestamp,index"],
            "CSV header 'timestamp,index'",
        ),
        (
            vec!["--format", "jsonl", "--fields", "timestamp,index,name"],
            "JSON lines",
        ),
    ] {
        let out = log(&args, &file);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("gpu.csv holds another log") && err.contains(what),
            "{err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        text,
        "left as it was"
    );
    let out = log(&["--format", "csv"], std::path::Path::new("/dev/full"));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot write to /dev/full: No space left on device"),
        "{err}"
    );
}

/// Finding 6: `run` returns when its child exits, not when the last holder of the child's
/// stderr (a daemonised helper, a backgrounded sleep) lets go of it; the child's own output
/// and exit status still come through.
#[test]
fn run_returns_when_its_child_exits_not_its_pipes_last_holder() {
    let dir = tempfile::tempdir().expect("dir");
    // Files, not pipes: the backgrounded sleep inherits the child's stdout (gpumon's), and a
    // pipe held by it would keep this test, not gpumon, waiting.
    let (out_path, err_path) = (dir.path().join("out"), dir.path().join("err"));
    let started = std::time::Instant::now();
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_gpumon"))
        .env("XDG_RUNTIME_DIR", dir.path())
        .env_remove("GPUMON_NVML_LIB")
        .args([
            "--demo",
            "run",
            "--",
            "sh",
            "-c",
            "sleep 30 & echo from-the-child >&2; exit 4",
        ])
        .stdout(std::fs::File::create(&out_path).expect("out"))
        .stderr(std::fs::File::create(&err_path).expect("err"))
        .spawn()
        .expect("run");
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("gpumon run waited for the grandchild");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(4), "{status:?}");
    let err = std::fs::read_to_string(&err_path).expect("err");
    assert!(err.contains("from-the-child"), "{err}");
    assert!(err.contains("gpumon run:"), "the summary: {err}");
}

/// Findings 12, 13, 18 and 20 through the binary: `explain` names a directory given as its
/// file; reads a UTF-16LE log, CR-only line breaks and an OOM at the end of a 70 KB JSON
/// record; and counts a flood of repeated OOMs without keeping them.
#[test]
fn explain_reads_awkward_inputs() {
    let dir = tempfile::tempdir().expect("dir");
    let out = crate::common::gpumon()
        .args(["explain"])
        .arg(dir.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{} is a directory", dir.path().display())),
        "{err}"
    );

    let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.19 GiB is free. Of the allocated memory 75.50 GiB is allocated by PyTorch, and 1.50 GiB is reserved by PyTorch but unallocated.";
    let explain = |bytes: Vec<u8>| {
        let f = dir.path().join("input.log");
        std::fs::write(&f, bytes).expect("write");
        stdout_json(crate::common::gpumon().args(["explain", "--json"]).arg(&f))
    };
    let utf16: Vec<u8> = [0xff, 0xfe]
        .into_iter()
        .chain(
            format!("epoch 1\r\n{oom}\r\n")
                .encode_utf16()
                .flat_map(u16::to_le_bytes),
        )
        .collect();
    let v = explain(utf16);
    assert_eq!(v["breakdown"]["requested_bytes"], 2u64 << 30, "{v}");
    let mut record = String::from("progress 10%\rprogress 90%\r{\"msg\":\"Traceback:");
    for i in 0..2000 {
        record.push_str(&format!("\\n  File \\\"train.py\\\", line {i}"));
    }
    record.push_str(&format!("\\n{oom}\"}}\r"));
    let v = explain(record.into_bytes());
    assert_eq!(v["breakdown"]["requested_bytes"], 2u64 << 30, "{v}");
    let flood = format!("{oom}\n\n").repeat(500);
    let v = explain(flood.into_bytes());
    assert_eq!(v["count"], 500);
}
