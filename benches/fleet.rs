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

/// Listeners on `n` free ports of 127.0.0.1 answering every request with `body` (and one that
/// never answers, when `silent`), served on a thread of their own; their addresses.
fn fixture(n: usize, body: Vec<u8>, silent: bool) -> Vec<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let response = std::sync::Arc::new(
                [
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                        body.len()
                    )
                    .into_bytes(),
                    body,
                ]
                .concat(),
            );
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
                            let _ = s.write_all(&response).await;
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
    let addrs = fixture(1000, body, true);
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
