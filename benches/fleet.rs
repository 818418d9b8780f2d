//! `gpumon once --remote-file` against a fleet (release build): 256 and 1,000 nodes, each an
//! endpoint of this bench's own fixture server answering `/api/v1/sample` with a real 8 GPU ×
//! 40 process sample (taken once from gpumon on the fake library), then 1,000 nodes plus one
//! that accepts and never answers. Wall time, CPU (user + system) and gpumon's peak
//! anonymous memory and RSS; the silent node's cost is its deadline, paid in parallel.
//! `cargo bench --bench fleet`.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{fake_lib, run_polled, scenario, user_binary, Sleepers, GPUS, PROCS};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn cpu_children() -> Duration {
    // SAFETY: getrusage fills the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Listeners on `n` free ports of 127.0.0.1 answering `/api/v1/summary` with `summary` (a 404
/// when `None`: a gpumon older than the summary) and every other request with `body` (and one
/// that never answers, when `silent`), served on a thread of their own; their addresses.
fn fixture(n: usize, body: Vec<u8>, summary: Option<Vec<u8>>, silent: bool) -> Vec<String> {
    fixture_with(n, body, summary, Vec::new(), silent)
}

/// As [`fixture`], with `metrics` (Prometheus text) answered at `/metrics`.
fn fixture_with(
    n: usize,
    body: Vec<u8>,
    summary: Option<Vec<u8>>,
    metrics: Vec<u8>,
    silent: bool,
) -> Vec<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let answer = |status: &str, body: Vec<u8>| {
                [
                    format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                        body.len()
                    )
                    .into_bytes(),
                    body,
                ]
                .concat()
            };
            let metrics = [
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\n\r\n",
                    metrics.len()
                )
                .into_bytes(),
                metrics,
            ]
            .concat();
            let response = std::sync::Arc::new((
                answer("200 OK", body),
                match summary {
                    Some(s) => answer("200 OK", s),
                    None => answer("404 Not Found", b"not found".to_vec()),
                },
                metrics,
            ));
            let mut addrs = Vec::new();
            for i in 0..n + usize::from(silent) {
                let l = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                addrs.push(l.local_addr().expect("addr").to_string());
                let response = std::sync::Arc::clone(&response);
                let answer = i < n;
                tokio::spawn(async move {
                    let mut held = Vec::new();
                    while let Ok((mut s, _)) = l.accept().await {
                        if !answer {
                            held.push(s);
                            continue;
                        }
                        let response = std::sync::Arc::clone(&response);
                        tokio::spawn(async move {
                            let mut buf = [0u8; 2048];
                            let mut seen = Vec::new();
                            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                                match s.read(&mut buf).await {
                                    Ok(0) | Err(_) => return,
                                    Ok(k) => seen.extend_from_slice(&buf[..k]),
                                }
                            }
                            let r = if seen.starts_with(b"GET /api/v1/summary ") {
                                &response.1
                            } else if seen.starts_with(b"GET /metrics ") {
                                &response.2
                            } else {
                                &response.0
                            };
                            let _ = s.write_all(r).await;
                        });
                    }
                });
            }
            tx.send(addrs).expect("send");
            std::future::pending::<()>().await;
        });
    });
    rx.recv().expect("fixture")
}

fn main() {
    let bin = user_binary();
    let lib = fake_lib();
    let sleepers = Sleepers::spawn(GPUS * PROCS);
    let s = scenario(&sleepers.pids());
    let out = Command::new(&bin)
        .args(["once", "--json"])
        .env("GPUMON_NVML_LIB", &lib)
        .env("FAKE_NVML_SCENARIO", &s)
        .env("FAKE_NVML_SPEED", "0")
        .output()
        .expect("gpumon once");
    assert!(out.status.success());
    // Compact, as `serve` answers.
    let body = serde_json::to_vec(
        &serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("json"),
    )
    .expect("json");
    println!(
        "a node's sample: {} KiB ({GPUS} GPUs × {PROCS} processes)",
        body.len() / 1024
    );
    let sample: gpumon::model::Sample = serde_json::from_slice(&body).expect("sample");
    let summary =
        serde_json::to_vec(&gpumon::model::fleet::NodeSummary::of(&sample)).expect("summary");
    println!("its summary: {} bytes", summary.len());
    if std::env::var_os("GPUMON_BENCH_PROMETHEUS_ONLY").is_none() {
        fleet_view(&bin, &body, &summary);
    }
    if which("prometheus") {
        from_prometheus(&bin, &lib, &s);
    }
    if std::env::var_os("GPUMON_BENCH_PROMETHEUS_ONLY").is_some() {
        return;
    }
    let addrs = fixture(1000, body, Some(summary), true);
    let dir = tempfile::tempdir().expect("dir");
    for (label, nodes) in [
        ("256 nodes", &addrs[..256]),
        ("1,000 nodes", &addrs[..1000]),
        ("1,000 nodes + 1 silent", &addrs[..1001]),
    ] {
        let file = dir.path().join("nodes.txt");
        let mut f = std::fs::File::create(&file).expect("file");
        for (i, a) in nodes.iter().enumerate() {
            writeln!(f, "node{i} {a}").expect("write");
        }
        drop(f);
        let mut runs = Vec::new();
        for _ in 0..5 {
            let cpu0 = cpu_children();
            let (status, mem, wall) = run_polled(
                Command::new(&bin)
                    .args(["--timeout", "2s", "once", "--json", "--remote-file"])
                    .arg(&file)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null()),
            );
            let cpu = cpu_children() - cpu0;
            let silent = label.contains("silent");
            assert_eq!(status.code(), Some(if silent { 1 } else { 0 }), "{label}");
            runs.push((wall, cpu, mem));
        }
        runs.sort_by_key(|r| r.0);
        let (wall, cpu, mem) = &runs[runs.len() / 2];
        println!(
            "{label}: {:.0} ms wall (median of 5), {:.0} ms CPU, peak {:.1} MiB anonymous, {:.1} MiB RSS",
            wall.as_secs_f64() * 1e3,
            cpu.as_secs_f64() * 1e3,
            mem.anon as f64 / 1024.0,
            mem.rss as f64 / 1024.0
        );
    }
}

fn tmux(socket: &str, args: &[&str]) -> String {
    let out = Command::new("tmux")
        .arg("-L")
        .arg(socket)
        .args(args)
        .output()
        .expect("tmux");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// utime + stime in clock ticks (10 ms), from /proc/PID/stat.
fn cpu_ticks(pid: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some(close) = stat.rfind(')') else {
        return 0;
    };
    let f: Vec<&str> = stat[close + 2..].split_whitespace().collect();
    f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
}

/// The fleet view (`gpumon --remote-file`, 200×50 tmux pane) on 256 nodes refreshed every 2 s:
/// its CPU share over a minute after a 10 s warm-up and its memory, reading summaries, and
/// again with nodes that have no summary (an older gpumon: every sample read whole). Then
/// 1,000 nodes plus one that never answers: the time until every answering node has a row.
fn fleet_view(bin: &str, body: &[u8], summary: &[u8]) {
    let secs: u64 = std::env::var("GPUMON_BENCH_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let socket = format!("gpumon-fleet-bench-{}", std::process::id());
    let dir = tempfile::tempdir().expect("dir");
    for (label, with_summary) in [("summaries", true), ("whole samples (no summary)", false)] {
        let addrs = fixture(
            256,
            body.to_vec(),
            with_summary.then(|| summary.to_vec()),
            false,
        );
        let file = dir.path().join("fleet.txt");
        let mut f = std::fs::File::create(&file).expect("file");
        for (i, a) in addrs.iter().enumerate() {
            writeln!(f, "node{i:03} {a}").expect("write");
        }
        drop(f);
        let session = "fleet";
        tmux(
            &socket,
            &[
                "new-session",
                "-d",
                "-s",
                session,
                "-x",
                "200",
                "-y",
                "50",
                &format!("exec {bin} --remote-file {}", file.display()),
            ],
        );
        std::thread::sleep(Duration::from_secs(2));
        let pid = tmux(&socket, &["display", "-p", "-t", session, "#{pane_pid}"])
            .trim()
            .to_owned();
        std::thread::sleep(Duration::from_secs(8));
        let screen = tmux(&socket, &["capture-pane", "-p", "-t", session]);
        assert!(screen.contains("256 nodes · 2048 GPUs"), "{screen}");
        let t0 = cpu_ticks(&pid);
        let mut peak_anon = 0;
        for _ in 0..secs {
            std::thread::sleep(Duration::from_secs(1));
            if let Some(m) = common::memory(pid.parse().unwrap_or(0)) {
                peak_anon = peak_anon.max(m.anon);
            }
        }
        let cpu = (cpu_ticks(&pid) - t0) as f64 / 100.0;
        let mem = common::memory(pid.parse().unwrap_or(0)).unwrap_or_default();
        println!(
            "fleet view, 256 nodes × {GPUS} GPUs every 2 s, {label}: {:.2}% of a core over {secs} s, \
             {mem}, peak anonymous {:.2} MiB",
            cpu / secs as f64 * 100.0,
            peak_anon as f64 / 1024.0
        );
        tmux(&socket, &["kill-server"]);
    }
    // 1,000 nodes and a silent one: every answering row in, the silent one still waited on.
    let addrs = fixture(1000, body.to_vec(), Some(summary.to_vec()), true);
    let file = dir.path().join("fleet.txt");
    let mut f = std::fs::File::create(&file).expect("file");
    for (i, a) in addrs.iter().enumerate() {
        writeln!(f, "node{i:04} {a}").expect("write");
    }
    drop(f);
    let start = std::time::Instant::now();
    tmux(
        &socket,
        &[
            "new-session",
            "-d",
            "-s",
            "big",
            "-x",
            "200",
            "-y",
            "50",
            &format!("exec {bin} --timeout 10s --remote-file {}", file.display()),
        ],
    );
    loop {
        let screen = tmux(&socket, &["capture-pane", "-p", "-t", "big"]);
        if screen.contains("1001 nodes (1 not read) · 8000 GPUs") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{screen}");
        std::thread::sleep(Duration::from_millis(20));
    }
    println!(
        "fleet view, 1,000 nodes + 1 silent (deadline 10 s): every answering row on screen after {:.0} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    tmux(&socket, &["kill-server"]);
}

fn which(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

/// `--prometheus` against a real Prometheus scraping 256 nodes, each the `/metrics` of a real
/// `gpumon serve` with 8 GPUs × 40 processes: the query's time in Prometheus, and `once
/// --prometheus --json` end to end.
fn from_prometheus(bin: &str, lib: &std::path::Path, scenario: &std::path::Path) {
    let mut serve = Command::new(bin)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--process-labels",
            "user",
        ])
        .env("GPUMON_NVML_LIB", lib)
        .env("FAKE_NVML_SCENARIO", scenario)
        .env("FAKE_NVML_SPEED", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(serve.stderr.take().expect("stderr")),
        &mut line,
    )
    .expect("serve's address");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("address")
        .to_owned();
    std::thread::sleep(Duration::from_secs(2));
    let metrics = Command::new("curl")
        .args(["-s", &format!("http://{addr}/metrics")])
        .output()
        .expect("curl")
        .stdout;
    let _ = serve.kill();
    let _ = serve.wait();
    let series = metrics
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty() && l[0] != b'#')
        .count();
    let nodes = 256;
    let addrs = fixture_with(nodes, Vec::new(), None, metrics, false);
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("prometheus.yml");
    let targets: Vec<String> = addrs.iter().map(|a| format!("'{a}'")).collect();
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 15s\nscrape_configs:\n  - job_name: gpumon\n    static_configs:\n      - targets: [{}]\n",
            targets.join(", ")
        ),
    )
    .expect("config");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let prom = format!("127.0.0.1:{port}");
    let mut child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={prom}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus");
    let url = format!("http://{prom}");
    // Every target scraped once.
    let start = std::time::Instant::now();
    loop {
        let out = Command::new(bin)
            .args(["once", "--json", "--prometheus", &url])
            .output()
            .expect("once");
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let read = j["nodes"].as_array().map_or(0, |n| {
            n.iter()
                .filter(|n| {
                    n["summary"]["gpus"]
                        .as_array()
                        .is_some_and(|g| g.len() == GPUS)
                })
                .count()
        });
        if read == nodes {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "only {read} nodes scraped"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    let mut runs = Vec::new();
    for _ in 0..7 {
        let cpu0 = cpu_children();
        let (status, mem, wall) = run_polled(
            Command::new(bin)
                .args(["once", "--json", "--prometheus", &url])
                .stdout(Stdio::null()),
        );
        assert!(status.success());
        runs.push((wall, cpu_children() - cpu0, mem));
    }
    runs.sort_by_key(|r| r.0);
    let (wall, cpu, mem) = &runs[runs.len() / 2];
    // Prometheus's own time for each query, from its stats: gpumon's refresh (one family a
    // target), the same names from every target (what the first version asked), and an
    // opened node's query.
    // The median of 5 evaluations, the series returned and the answer's size.
    let stats = |q: &str| {
        let mut runs: Vec<(f64, usize, usize)> = (0..5)
            .map(|_| {
                let out = Command::new("curl")
                    .args([
                        "-s",
                        "--get",
                        "--data-urlencode",
                        &format!("query={q}"),
                        "--data-urlencode",
                        "stats=all",
                        &format!("{url}/api/v1/query"),
                    ])
                    .output()
                    .expect("curl")
                    .stdout;
                let j: serde_json::Value = serde_json::from_slice(&out).unwrap_or_default();
                let ms = j["data"]["stats"]["timings"]["evalTotalTime"]
                    .as_f64()
                    .unwrap_or(f64::NAN)
                    * 1e3;
                (
                    ms,
                    j["data"]["result"].as_array().map_or(0, Vec::len),
                    out.len(),
                )
            })
            .collect();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        runs[2]
    };
    let source = gpumon::feed::prometheus::Source::parse(&url, None).expect("source");
    let both = "{__name__=~\"up|gpumon_gpu_info|gpumon_gpu_up|gpumon_gpu_stalled|gpumon_memory_(total|used|free|reserved|unattributed)_bytes|gpumon_idle_held_bytes|gpumon_gpu_utilization_ratio|gpumon_processes|gpumon_user_memory_bytes|DCGM_FI_DEV_FB_(USED|FREE|RESERVED)|DCGM_FI_DEV_GPU_UTIL\"}";
    let (now_ms, now_series, now_bytes) = stats(&source.query());
    let (both_ms, both_series, both_bytes) = stats(both);
    let (node_ms, node_series, node_bytes) = stats(&source.node_query(&addrs[0]));
    // The same split in two queries, gpumon's family and dcgm-exporter's where gpumon's is not.
    let q = source.query();
    let (own, dcgm) = q.split_once(" or ").expect("two parts");
    let (own_ms, own_series, _) = stats(own);
    let (dcgm_ms, dcgm_series, _) = stats(dcgm);
    println!(
        "  as two queries: gpumon's {own_ms:.1} ms ({own_series} series), dcgm-exporter's \
         where gpumon's is not {dcgm_ms:.1} ms ({dcgm_series} series)"
    );
    println!(
        "--prometheus on {nodes} nodes × {GPUS} GPUs ({series} series a node, {} in all): one query a refresh; \
         Prometheus evaluates it in {now_ms:.1} ms ({now_series} series returned, {} KiB; both families from every \
         target: {both_ms:.1} ms, {both_series} series, {} KiB); an opened node's query {node_ms:.1} ms \
         ({node_series} series, {} KiB); once --prometheus --json {:.0} ms wall (median of 7), \
         {:.0} ms CPU, peak {:.1} MiB anonymous",
        series * nodes,
        now_bytes / 1024,
        both_bytes / 1024,
        node_bytes / 1024,
        wall.as_secs_f64() * 1e3,
        cpu.as_secs_f64() * 1e3,
        mem.anon as f64 / 1024.0
    );
    let _ = child.kill();
    let _ = child.wait();
}
