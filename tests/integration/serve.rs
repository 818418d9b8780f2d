//! `gpumon serve` with real parts: the release of Debian's Prometheus scraping it, `promtool`
//! checking its exposition, `curl` and `openssl` for TLS and basic auth, all against the fake
//! NVML library. `.ci/run` installs them when missing.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use regex::Regex;
use serde_json::Value;

use crate::common::{fake_lib, scenario, serve_address, MIB};

/// A child process killed when the test ends, however it ends.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `gpumon serve` on a free port of 127.0.0.1, on the fake library; returns it and its address.
pub fn serve(scenario: &Path, speed: &str, args: &[&str]) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("GPUMON_NVML_LIB", fake_lib())
        .env("FAKE_NVML_SCENARIO", scenario)
        .env("FAKE_NVML_SPEED", speed)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start gpumon serve");
    let addr = serve_address(&mut child);
    (Running(child), addr)
}

/// curl's exit status, HTTP status and body.
pub fn curl(args: &[&str]) -> (i32, u16, String) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "10", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("curl is required for the serve tests (apt-get install curl)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (
        out.status.code().unwrap_or(-1),
        code.trim().parse().unwrap_or(0),
        body.to_owned(),
    )
}

pub fn get(url: &str) -> (u16, String) {
    let (_, code, body) = curl(&[url]);
    (code, body)
}

/// Polls `url` until `cond` holds on its body (the first sample takes a moment).
pub fn wait_for(url: &str, what: &str, cond: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let (code, body) = get(url);
        if code == 200 && cond(&body) {
            return body;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what} at {url}: {code}\n{body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

const TWO_GPUS: &str = r#"{"version":1,"devices":[
  {"name":"Fake H100","memory_total_mib":81559,"memory_reserved_mib":529,"unattributed_mib":700,
   "utilization_gpu":77,"temperature_c":61,"power_draw_w":400.5,"power_limit_w":700,
   "processes":[{"pid":4700001,"memory_mib":30000},{"pid":4700002,"memory_mib":2000}]},
  {"name":"Fake A100","memory_total_mib":40960,"memory_reserved_mib":300,
   "processes":[{"pid":4700003,"memory_mib":100}]}]}"#;

/// One value of a Prometheus instant query.
pub fn query(prom: &str, q: &str) -> Option<f64> {
    let (_, code, body) = curl(&[
        "--get",
        "--data-urlencode",
        &format!("query={q}"),
        &format!("http://{prom}/api/v1/query"),
    ]);
    if code != 200 {
        return None;
    }
    let v: Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
}

#[test]
fn prometheus_scrapes_gpumon_serve_and_reads_back_the_scenario() {
    let s = scenario(TWO_GPUS);
    let (_gpumon, addr) = serve(&s, "0", &[]);
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: gpumon\n    static_configs:\n      - targets: ['{addr}']\n"
        ),
    )
    .expect("write config");
    let prom = format!("127.0.0.1:{}", free_port());
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={prom}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus is required for this test (apt-get install prometheus)");
    let _prometheus = Running(child);

    // Prometheus has scraped gpumon once the target is up.
    let start = Instant::now();
    while query(&prom, "up{job=\"gpumon\"}") != Some(1.0) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "Prometheus never scraped gpumon"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let mib = MIB as f64;
    let expect = [
        // dcgm-exporter's names, in MiB.
        ("DCGM_FI_DEV_FB_USED{gpu=\"0\"}", 32700.0),
        (
            "DCGM_FI_DEV_FB_FREE{gpu=\"0\"}",
            (81559 - 529 - 32700) as f64,
        ),
        ("DCGM_FI_DEV_FB_RESERVED{gpu=\"0\"}", 529.0),
        (
            "DCGM_FI_DEV_FB_USED{gpu=\"1\",modelName=\"Fake A100\"}",
            100.0,
        ),
        ("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"}", 77.0),
        ("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"}", 61.0),
        ("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"}", 400.5),
        // gpumon's, in bytes and ratios.
        ("gpumon_memory_used_bytes{gpu=\"0\"}", 32700.0 * mib),
        ("gpumon_memory_total_bytes{gpu=\"1\"}", 40960.0 * mib),
        ("gpumon_memory_unattributed_bytes{gpu=\"0\"}", 700.0 * mib),
        (
            "gpumon_process_memory_bytes{pid=\"4700001\"}",
            30000.0 * mib,
        ),
        (
            "gpumon_process_memory_bytes{pid=\"4700003\",gpu=\"1\"}",
            100.0 * mib,
        ),
        ("gpumon_gpu_utilization_ratio{gpu=\"0\"}", 0.77),
        ("gpumon_gpu_up{gpu=\"1\"}", 1.0),
        ("gpumon_gpu_stalled{gpu=\"0\"}", 0.0),
        ("count(gpumon_process_memory_bytes)", 3.0),
        (
            "count(DCGM_FI_DEV_FB_USED{Hostname!=\"\",UUID=~\"GPU-.+\"})",
            2.0,
        ),
    ];
    for (q, want) in expect {
        let got = query(&prom, q);
        assert!(
            got.is_some_and(|v| (v - want).abs() < 1e-6 * want.max(1.0)),
            "{q}: Prometheus has {got:?}, the scenario says {want}"
        );
    }
}

#[test]
fn promtool_accepts_the_exposition() {
    let s = scenario(TWO_GPUS);
    let (_gpumon, addr) = serve(&s, "0", &["--no-dcgm-names"]);
    let body = wait_for(&format!("http://{addr}/metrics"), "metrics", |b| {
        b.contains("gpumon_gpu_up")
    });
    let check = |text: &str| {
        let mut child = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("promtool is required (apt-get install prometheus)");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("write");
        let out = child.wait_with_output().expect("promtool");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    // gpumon's own family passes promtool's lint as well as its parser.
    let (code, said) = check(&body);
    assert_eq!(code, Some(0), "promtool: {said}");

    // With dcgm-exporter's names: valid, and the only lint is dcgm-exporter's own camelCase
    // label (modelName), which compatibility requires.
    let (_gpumon, addr) = serve(&s, "0", &[]);
    let body = wait_for(&format!("http://{addr}/metrics"), "metrics", |b| {
        b.contains("DCGM_FI_DEV_FB_USED")
    });
    let (code, said) = check(&body);
    assert!(
        matches!(code, Some(0) | Some(3)),
        "promtool: {code:?} {said}"
    );
    for line in said.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            line.starts_with("DCGM_FI_") && line.contains("camelCase"),
            "unexpected promtool finding: {line}"
        );
    }
    // OpenMetrics when asked for, ending with # EOF; the plain format otherwise.
    let (_, code, om) = curl(&[
        "-H",
        "Accept: application/openmetrics-text; version=1.0.0",
        &format!("http://{addr}/metrics"),
    ]);
    assert_eq!(code, 200);
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(!body.contains("# EOF"));
}

#[test]
fn the_sample_endpoint_is_the_once_json_schema_and_health_is_reported() {
    let s = scenario(TWO_GPUS);
    let (_gpumon, addr) = serve(&s, "0", &[]);
    let body = wait_for(&format!("http://{addr}/api/v1/sample"), "a sample", |b| {
        b.starts_with('{')
    });
    let v: Value = serde_json::from_str(&body).expect("JSON");
    let schema = crate::docs::once_validator();
    crate::docs::assert_valid(&schema, &v, "/api/v1/sample");
    assert_eq!(v["devices"][0]["memory"]["used_bytes"], 32700 * MIB);
    assert_eq!(v["devices"][0]["processes"][0]["pid"], 4700001);
    assert_eq!(v["devices"][1]["stalled"], false);
    assert!(v["devices"][0]["breakdown"]["parts"].is_array());
    assert_eq!(get(&format!("http://{addr}/healthz")), (200, "ok\n".into()));
    let (code, _) = get(&format!("http://{addr}/no/such/page"));
    assert_eq!(code, 404);
    let (_, code, _) = curl(&["-X", "POST", &format!("http://{addr}/metrics")]);
    assert_eq!(code, 405);
}

/// GET `path` on a kept-alive connection: the body.
fn get_kept_alive(conn: &mut std::io::BufReader<TcpStream>, path: &str) -> String {
    use std::io::BufRead;
    write!(
        conn.get_mut(),
        "GET {path} HTTP/1.1\r\nHost: gpumon\r\n\r\n"
    )
    .expect("request");
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        conn.read_line(&mut line).expect("a header line");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().expect("a length");
            }
        }
    }
    let mut body = vec![0u8; length];
    conn.read_exact(&mut body).expect("the body");
    String::from_utf8(body).expect("UTF-8")
}

#[test]
fn serve_samples_on_its_interval_without_drifting() {
    // As `log` does (sampling::log_keeps_its_interval_without_drifting): each sample is due
    // one interval after the previous one was due. Before, each period was 20 ms plus the
    // timer's rounding and the wake-up: 21 ms.
    let s = scenario(TWO_GPUS);
    let (_gpumon, addr) = serve(&s, "0", &["--interval", "20ms"]);
    let url = format!("http://{addr}/api/v1/sample");
    wait_for(&url, "a sample", |b| b.starts_with('{'));
    let mut conn = std::io::BufReader::new(TcpStream::connect(&addr).expect("connect"));
    let mut stamps: Vec<i64> = Vec::new();
    let start = Instant::now();
    while stamps.len() < 41 && start.elapsed() < Duration::from_secs(30) {
        let v: Value = serde_json::from_str(&get_kept_alive(&mut conn, "/api/v1/sample"))
            .expect("the sample as JSON");
        let ms = crate::sampling::ms_of_day(v["timestamp"].as_str().expect("a timestamp"));
        if stamps.last() != Some(&ms) {
            stamps.push(ms);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(stamps.len(), 41, "samples seen in 30 s");
    // A poll can miss samples (a debug build on a busy machine answers slowly): each gap is a
    // whole number of periods, and the span over the periods it holds is the cadence.
    let gaps: Vec<i64> = stamps
        .windows(2)
        .map(|w| (w[1] - w[0]).rem_euclid(86_400_000))
        .collect();
    let periods: i64 = gaps.iter().map(|g| (g + 10) / 20).sum();
    let cadence = gaps.iter().sum::<i64>() as f64 / periods as f64;
    assert!(
        (19.5..=20.5).contains(&cadence),
        "{cadence:.2} ms a sample; gaps in ms: {gaps:?}"
    );
}

#[test]
fn series_of_exited_processes_disappear() {
    let s = scenario(
        r#"{"version":1,"devices":[{"name":"G","memory_total_mib":8192,
            "processes":[{"pid":4700011,"memory_mib":100},
                         {"pid":4700012,"memory_mib":200,"end_s":1.5}]}]}"#,
    );
    let (_gpumon, addr) = serve(&s, "1", &["--interval", "200ms"]);
    let url = format!("http://{addr}/metrics");
    wait_for(&url, "both processes", |b| {
        b.contains("pid=\"4700011\"") && b.contains("pid=\"4700012\"")
    });
    let body = wait_for(&url, "pid 4700012 to go", |b| {
        !b.contains("pid=\"4700012\"")
    });
    assert!(body.contains("pid=\"4700011\""));
}

#[test]
fn many_scrapes_while_a_gpu_hangs_all_answer_promptly() {
    let s = scenario(crate::stall::HUNG);
    let (_gpumon, addr) = serve(&s, "0", &["--timeout", "1s"]);
    let url = format!("http://{addr}/metrics");
    let body = wait_for(&url, "GPU 1 to stall", |b| {
        b.contains("gpumon_gpu_stalled{gpu=\"1\",UUID=")
            && b.lines()
                .any(|l| l.starts_with("gpumon_gpu_stalled{gpu=\"1\"") && l.ends_with(" 1"))
    });
    assert!(body
        .lines()
        .any(|l| l.starts_with("gpumon_gpu_up{gpu=\"0\"") && l.ends_with(" 1")));
    // Each call on GPU 1 blocks for a minute; 50 scrapes at once must not wait on it.
    let started = Instant::now();
    let scrapers: Vec<Child> = (0..50)
        .map(|_| {
            Command::new("curl")
                .args([
                    "-sS",
                    "--max-time",
                    "20",
                    "-o",
                    "/dev/null",
                    "-w",
                    "%{http_code}",
                    &url,
                ])
                .stdout(Stdio::piped())
                .spawn()
                .expect("curl")
        })
        .collect();
    for c in scrapers {
        let out = c.wait_with_output().expect("curl");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "200");
    }
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "50 scrapes took {:?}",
        started.elapsed()
    );
}

#[test]
fn hostile_clients_do_not_get_in_the_way() {
    let s = scenario(TWO_GPUS);
    let (_gpumon, addr) = serve(&s, "0", &[]);
    let url = format!("http://{addr}/metrics");
    wait_for(&url, "metrics", |b| b.contains("gpumon_gpu_up"));
    // A client that connects and never finishes its request.
    let mut slow = TcpStream::connect(&addr).expect("connect");
    slow.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .expect("write");
    // Headers larger than the server reads.
    let big = format!("X-Big: {}", "a".repeat(64 * 1024));
    let (_, code, _) = curl(&["-H", &big, &url]);
    assert_eq!(code, 431, "oversized headers are refused");
    // Garbage instead of HTTP.
    let mut junk = TcpStream::connect(&addr).expect("connect");
    let _ = junk.write_all(b"\x16\x03\x01\x02\x00garbage\r\n\r\n");
    let mut reply = Vec::new();
    let _ = junk.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = junk.read_to_end(&mut reply);
    // And still everyone else is served.
    let (code, body) = get(&url);
    assert_eq!(code, 200);
    assert!(body.contains("gpumon_gpu_up"));
    drop(slow);
}

#[test]
fn tls_and_basic_auth_from_a_web_config_file() {
    let dir = tempfile::tempdir().expect("dir");
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let status = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args([
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl is required for this test (apt-get install openssl)");
    assert!(status.success());
    let hash = bcrypt::hash("s3cret", 4).expect("bcrypt");
    let web = dir.path().join("web.yml");
    // Relative paths are relative to the configuration file, as in exporter-toolkit.
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n\
             basic_auth_users:\n  prom: '{hash}'\n\
             http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"
        ),
    )
    .expect("write");
    let s = scenario(TWO_GPUS);
    let web_arg = web.display().to_string();
    let (_gpumon, addr) = serve(&s, "0", &["--web.config.file", &web_arg]);
    let port = addr.rsplit(':').next().expect("port");
    let url = format!("https://localhost:{port}/metrics");
    let ca = cert.display().to_string();
    // No credentials: refused.
    let (rc, code, _) = curl(&["--cacert", &ca, &url]);
    assert_eq!((rc, code), (0, 401));
    // Wrong password: refused.
    let (_, code, _) = curl(&["--cacert", &ca, "-u", "prom:guess", &url]);
    assert_eq!(code, 401);
    // The right ones: served, with the configured header.
    let start = Instant::now();
    loop {
        let (rc, code, body) = curl(&["--cacert", &ca, "-u", "prom:s3cret", "-D", "-", &url]);
        if code == 200 {
            assert!(body.contains("gpumon_gpu_up"), "{body}");
            assert!(body
                .to_ascii_lowercase()
                .contains("x-content-type-options: nosniff"));
            break;
        }
        assert!(
            rc == 0 && start.elapsed() < Duration::from_secs(20),
            "{rc} {code} {body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Plain HTTP on the TLS port gets nothing.
    let (_, code, _) = curl(&[&format!("http://127.0.0.1:{port}/metrics")]);
    assert_ne!(code, 200);
}

#[test]
fn bad_configurations_are_refused_at_start_with_a_clear_message() {
    let dir = tempfile::tempdir().expect("dir");
    let s = scenario(TWO_GPUS);
    let cases = [
        ("tls_server_config:\n  cert_file: nope.pem\n  key_file: nope.key\n", "nope.pem"),
        ("basic_auth_users:\n  prom: hunter2\n", "not a bcrypt hash"),
        ("tls_server_config:\n  client_auth_type: RequireAndVerifyClientCert\n  cert_file: a\n  key_file: b\n", "not supported"),
        ("basic_auth_user:\n  prom: x\n", "unknown field"),
    ];
    for (text, why) in cases {
        let web = dir.path().join("web.yml");
        std::fs::write(&web, text).expect("write");
        let out = Command::new(env!("CARGO_BIN_EXE_gpumon"))
            .args(["serve", "--listen", "127.0.0.1:0", "--web.config.file"])
            .arg(&web)
            .env("GPUMON_NVML_LIB", fake_lib())
            .env("FAKE_NVML_SCENARIO", &*s)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("refusing the web configuration") && err.contains(why),
            "{text}: {err}"
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .args(["serve", "--process-labels", "user,password"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}

/// The metric names the Grafana dashboard queries (its panels and its variables).
pub fn dashboard_metrics() -> std::collections::BTreeSet<String> {
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/assets/grafana/gpumon.json"
        ))
        .expect("read the dashboard"),
    )
    .expect("the dashboard is JSON");
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("expr" | "query" | "definition", Value::String(e)) => out.push(e.clone()),
                        _ => walk(v, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut exprs = Vec::new();
    walk(&dashboard, &mut exprs);
    let names = Regex::new(r"\b(gpumon_[a-z_]+|DCGM_FI_[A-Z_]+)\b").expect("regex");
    exprs
        .iter()
        .flat_map(|e| names.find_iter(e).map(|m| m.as_str().to_owned()))
        .collect()
}

/// The metric families a scrape declares.
pub fn exported(body: &str) -> std::collections::BTreeSet<&str> {
    body.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect()
}

/// Idle holds and memory per user: a real process holds 20 GiB at 0% SM beside a busy one;
/// after --idle-after, `gpumon_idle_held_bytes` says so for its GPU, and with
/// `--process-labels user` `gpumon_user_memory_bytes` sums each user's memory.
#[test]
fn idle_holds_and_memory_per_user_are_exported() {
    let mut idle = Command::new("sleep").arg("300").spawn().expect("sleep");
    let mut busy = Command::new("sleep").arg("300").spawn().expect("sleep");
    let s = scenario(&format!(
        r#"{{"version":1,"devices":[
            {{"name":"G0","memory_total_mib":81920,
              "processes":[{{"pid":{},"memory_mib":20480,"sm_percent":0}},
                           {{"pid":{},"memory_mib":1024,"sm_percent":60}}]}},
            {{"name":"G1","memory_total_mib":81920}}]}}"#,
        idle.id(),
        busy.id()
    ));
    let (_gpumon, addr) = serve(
        &s,
        "1",
        &[
            "--interval",
            "1s",
            "--idle-after",
            "10s",
            "--process-labels",
            "user",
        ],
    );
    let url = format!("http://{addr}/metrics");
    let first = wait_for(&url, "a sample", |b| b.contains("gpumon_gpu_up"));
    assert!(
        !first.contains("gpumon_idle_held_bytes{"),
        "unknown before 10 s: {first}"
    );
    let started = Instant::now();
    let body = wait_for(&url, "the idle hold", |b| {
        b.contains("gpumon_idle_held_bytes{gpu=\"0\"")
    });
    let _ = idle.kill();
    let _ = busy.kill();
    let _ = idle.wait();
    let _ = busy.wait();
    assert!(
        started.elapsed() >= Duration::from_secs(5),
        "not before idle-after"
    );
    let line = |prefix: &str| {
        body.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix}: {body}"))
            .rsplit(' ')
            .next()
            .expect("value")
            .parse::<u64>()
            .expect("integer")
    };
    assert_eq!(line("gpumon_idle_held_bytes{gpu=\"0\""), 20480 * MIB);
    assert_eq!(line("gpumon_idle_held_bytes{gpu=\"1\""), 0);
    let me = std::env::var("USER").unwrap_or_else(|_| "root".into());
    let user_line = body
        .lines()
        .find(|l| l.starts_with("gpumon_user_memory_bytes{"))
        .unwrap_or_else(|| panic!("no per-user memory: {body}"));
    assert!(
        user_line.ends_with(&format!(" {}", 21504 * MIB)),
        "{user_line} ({me})"
    );
}

/// The alerting rules in a real Prometheus: it loads `assets/prometheus/alerts.yml`, scrapes a
/// `gpumon serve` whose GPU 1 reports an Xid 79 two seconds in, and fires GpuFellOffTheBus
/// for that GPU; the counter reads back as 1.
#[test]
fn a_real_prometheus_counts_an_xid_and_fires_the_alert() {
    let s = scenario(&TWO_GPUS.replace(
        "]}]}",
        r#"]}],"faults":[{"kind":"xid","device":1,"xid":79,"at_s":2}]}"#,
    ));
    let (_gpumon, addr) = serve(&s, "1", &[]);
    let dir = tempfile::tempdir().expect("dir");
    let rules =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/prometheus/alerts.yml");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - {}\n\
             scrape_configs:\n  - job_name: gpumon\n    static_configs:\n      - targets: ['{addr}']\n",
            rules.display()
        ),
    )
    .expect("write config");
    let prom = format!("127.0.0.1:{}", free_port());
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={prom}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus is required for this test (apt-get install prometheus)");
    let _prometheus = Running(child);
    let start = Instant::now();
    let firing = r#"ALERTS{alertname="GpuFellOffTheBus",alertstate="firing",gpu="1",xid="79"}"#;
    while query(&prom, firing) != Some(1.0) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the alert never fired; the counter reads {:?}",
            query(&prom, "gpumon_xid_errors_total")
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(
        query(&prom, r#"gpumon_xid_errors_total{gpu="1",xid="79"}"#),
        Some(1.0)
    );
    assert_eq!(
        query(&prom, r#"count(ALERTS{alertstate="firing"})"#),
        Some(1.0)
    );
}
