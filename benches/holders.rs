//! The holder scan (who holds a GPU's device node): /proc with 2,000 more live processes,
//! each with 10 open files (a shell's three and seven more), one of them holding the GPU's
//! stand-in node and the unified-memory node. The scan runs only when unattributed memory
//! appears or moves, at most every 5 s and never on the sampling path; this is what one costs.
//! `cargo bench --bench holders` (GPUMON_BENCH_PROCS to change the 2,000).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gpumon::collect::holders::{scan, Nodes};

struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn main() {
    let n: usize = std::env::var("GPUMON_BENCH_PROCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let dir = tempfile::tempdir().expect("temp dir");
    for f in ["nvidia0", "nvidia-uvm"] {
        std::fs::write(dir.path().join(f), b"").expect("stand-in node");
    }
    let t0 = Instant::now();
    let mut procs = Procs(Vec::with_capacity(n + 1));
    let opens: String = (3..10).map(|fd| format!("{fd}</dev/null ")).collect();
    for _ in 0..n {
        procs.0.push(
            Command::new("sh")
                .arg("-c")
                .arg(format!("exec {opens}; exec sleep 3600"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn"),
        );
    }
    let holder = Command::new("sh")
        .arg("-c")
        .arg("exec 3<nvidia0 4<nvidia-uvm; exec sleep 3600")
        .current_dir(dir.path())
        .spawn()
        .expect("spawn the holder");
    let holder_pid = holder.id();
    procs.0.push(holder);
    // Let every shell become its sleep.
    std::thread::sleep(Duration::from_secs(1) + Duration::from_micros(500 * n as u64));
    eprintln!(
        "{n} processes started in {:.1} s",
        t0.elapsed().as_secs_f64()
    );

    let nodes = Nodes::read(dir.path(), &[0]);
    let budget = Duration::from_secs(10);
    let mut times = Vec::new();
    let mut seen = 0;
    for _ in 0..30 {
        let s = scan(Path::new("/proc"), &nodes, std::process::id(), budget);
        assert!(s.found.iter().any(|f| f.pid == holder_pid && f.uvm));
        assert!(s.complete);
        seen = s.processes;
        times.push(s.elapsed);
    }
    times.sort_unstable();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "holder scan, {seen} processes in /proc: median {:.1} ms, p90 {:.1} ms, max {:.1} ms \
         (30 scans; budget in gpumon {} ms)",
        ms(times[times.len() / 2]),
        ms(times[times.len() * 9 / 10]),
        ms(times[times.len() - 1]),
        gpumon::collect::holders::BUDGET.as_millis()
    );
}
