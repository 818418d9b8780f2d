//! `gpumon serve` on the fake library with 8 GPUs × 40 live processes (release build):
//! (1) exporter CPU, anonymous (private) memory and RSS over GPUMON_BENCH_SECS (default 60)
//! of sampling every 1 s with a scrape every 15 s, as Prometheus's default would, beside other
//! gpumon builds serving the same GPUs when GPUMON_BENCH_COMPARE=PATH,… names them; (2) scrape latency p50/p99 under 50
//! concurrent scrapers (2,000 scrapes, a new connection each); (3) scrapes under 300 slow
//! (slowloris) connections, answered and their latency. `cargo bench --bench serve`.
//!
//! The scrapers speak the few lines of HTTP/1.1 a GET needs over a plain socket: test
//! equipment, so that the client's own cost stays out of the figures.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{fake_lib, scenario, Sleepers, GPUS, PROCS};

fn scrape(addr: &str) -> (Duration, usize) {
    let t = Instant::now();
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        .expect("request");
    let mut body = Vec::with_capacity(256 * 1024);
    s.read_to_end(&mut body).expect("response");
    assert!(
        body.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        &body[..body.len().min(64)]
    );
    (t.elapsed(), body.len())
}

/// One scrape on a kept-alive connection, as Prometheus scrapes a target.
fn scrape_on(conn: &mut BufReader<TcpStream>) -> Duration {
    let t = Instant::now();
    conn.get_mut()
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: bench\r\n\r\n")
        .expect("request");
    let mut len = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        conn.read_line(&mut line).expect("header");
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().expect("length");
        }
    }
    let mut body = vec![0u8; len];
    conn.read_exact(&mut body).expect("body");
    t.elapsed()
}

fn percentiles(mut all: Vec<Duration>) -> String {
    all.sort_unstable();
    let p = |q: f64| all[((all.len() - 1) as f64 * q) as usize];
    format!(
        "p50 {:.2?}, p99 {:.2?}, max {:.2?}",
        p(0.5),
        p(0.99),
        all[all.len() - 1]
    )
}

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    f[11].parse::<u64>().unwrap_or(0) + f[12].parse::<u64>().unwrap_or(0)
}

/// `gpumon serve` from `binary` on a free port of 127.0.0.1: the child and its address.
fn start(
    binary: &std::path::Path,
    lib: &std::path::Path,
    scenario: &std::path::Path,
) -> (std::process::Child, String) {
    let mut child = Command::new(binary)
        .args(["serve", "--listen", "127.0.0.1:0", "--interval", "1s"])
        .env("GPUMON_NVML_LIB", lib)
        .env("FAKE_NVML_SCENARIO", scenario)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gpumon serve");
    let mut line = String::new();
    BufReader::new(child.stderr.take().expect("stderr"))
        .read_line(&mut line)
        .expect("listening line");
    let addr = line
        .split("://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("address")
        .to_owned();
    (child, addr)
}

fn main() {
    let lib = fake_lib();
    let sleepers = Sleepers::spawn(GPUS * PROCS);
    let path = scenario(&sleepers.pids());
    // This build, and other gpumon builds to compare with in the same run
    // (GPUMON_BENCH_COMPARE=PATH,…): all serve the same GPUs side by side during part 1.
    let mut binaries = vec![std::path::PathBuf::from(common::user_binary())];
    if let Ok(others) = std::env::var("GPUMON_BENCH_COMPARE") {
        binaries.extend(
            others
                .split(',')
                .filter(|p| !p.is_empty())
                .map(std::path::PathBuf::from),
        );
    }
    let mut servers: Vec<(String, std::process::Child, String)> = binaries
        .iter()
        .map(|b| {
            let (child, addr) = start(b, &lib, &path);
            (b.display().to_string(), child, addr)
        })
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    let addr = servers[0].2.clone();
    let (_, size) = scrape(&addr);

    // 1. Steady state: sampling every second, a scrape every 15 s.
    let secs: u64 = std::env::var("GPUMON_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let t0: Vec<u64> = servers.iter().map(|(_, c, _)| cpu_ticks(c.id())).collect();
    let w0 = Instant::now();
    while w0.elapsed() < Duration::from_secs(secs) {
        for (_, _, a) in &servers {
            scrape(a);
        }
        std::thread::sleep(Duration::from_secs(15).min(Duration::from_secs(secs)));
    }
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let wall = w0.elapsed().as_secs_f64();
    for (i, (label, c, _)) in servers.iter().enumerate() {
        let mem = common::memory(c.id()).unwrap_or_default();
        let cpu = (cpu_ticks(c.id()) - t0[i]) as f64 / hz;
        let label = if i == 0 { "serve" } else { label.as_str() };
        println!(
            "{label}, {GPUS} GPUs x {PROCS} processes, 1 s sampling, a scrape every 15 s: {cpu:.2} s CPU over {wall:.0} s = {:.3}% of one core; {mem}; /metrics is {:.0} KiB",
            cpu * 100.0 / wall,
            size as f64 / 1024.0
        );
    }
    for (_, c, _) in servers.iter_mut().skip(1) {
        let _ = c.kill();
        let _ = c.wait();
    }
    let mut child = servers.swap_remove(0).1;

    // 2. Latency under 50 concurrent scrapers: kept-alive connections (as Prometheus
    //    scrapes), then a new connection for every scrape.
    let run = |keep_alive: bool| {
        let started = Instant::now();
        let workers: Vec<_> = (0..50)
            .map(|_| {
                let addr = addr.clone();
                std::thread::spawn(move || {
                    if keep_alive {
                        let mut conn = BufReader::new(TcpStream::connect(&addr).expect("connect"));
                        (0..40).map(|_| scrape_on(&mut conn)).collect::<Vec<_>>()
                    } else {
                        (0..40).map(|_| scrape(&addr).0).collect::<Vec<_>>()
                    }
                })
            })
            .collect();
        let all: Vec<Duration> = workers
            .into_iter()
            .flat_map(|w| w.join().expect("scraper"))
            .collect();
        (all.len(), started.elapsed(), percentiles(all))
    };
    for keep_alive in [true, false] {
        let (n, wall, p) = run(keep_alive);
        println!(
            "50 concurrent scrapers, {} connections, {n} scrapes in {wall:.2?}: {p}",
            if keep_alive { "kept-alive" } else { "new" }
        );
    }
    println!(
        "after the scrapers: {}",
        common::memory(child.id()).unwrap_or_default()
    );

    // 3. Slowloris: 300 connections that each send one header byte a second (reconnecting
    //    when shed), while Prometheus scrapes on a kept-alive connection every 100 ms and a
    //    second scraper opens a connection per scrape.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let attack = {
        let (stop, addr) = (std::sync::Arc::clone(&stop), addr.clone());
        std::thread::spawn(move || {
            const REQUEST: &[u8] =
                b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaa";
            let connect = || TcpStream::connect(&addr).ok();
            let mut conns: Vec<(Option<TcpStream>, usize)> =
                (0..300).map(|_| (connect(), 0)).collect();
            let mut shed = 0usize;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                for (conn, sent) in &mut conns {
                    let ok = conn.as_mut().is_some_and(|c| {
                        c.write_all(&REQUEST[*sent % REQUEST.len()..][..1]).is_ok()
                    });
                    if ok {
                        *sent += 1;
                    } else {
                        *conn = connect();
                        *sent = 0;
                        shed += 1;
                    }
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            shed
        })
    };
    std::thread::sleep(Duration::from_secs(2));
    let mut kept = BufReader::new(TcpStream::connect(&addr).expect("connect"));
    let (mut lat_kept, mut lat_new, mut failed) = (vec![], vec![], 0usize);
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        lat_kept.push(scrape_on(&mut kept));
        match std::panic::catch_unwind(|| scrape(&addr)) {
            Ok((t, _)) => lat_new.push(t),
            Err(_) => failed += 1,
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let shed = attack.join().expect("attacker");
    println!(
        "300 slow connections (one header byte a second; {shed} shed and reopened): {} of {} \
         kept-alive scrapes answered, {}; {} of {} new-connection scrapes answered, {}",
        lat_kept.len(),
        lat_kept.len(),
        percentiles(lat_kept.clone()),
        lat_new.len(),
        lat_new.len() + failed,
        percentiles(lat_new.clone())
    );
    let _ = child.kill();
    let _ = child.wait();
    drop(sleepers);
}
