//! OOM analyzer benchmark: a 10 MB training log with one OOM at the end, scanned the way
//! `gpumon explain` reads it (streaming, line by line), its lines behind `[rank0]:` prefixes and
//! bare; then the release `gpumon explain` on that log from its start to its exit, beside other
//! gpumon builds (`GPUMON_BENCH_COMPARE=PATH[,PATH…]`, interleaved run by run, so that they
//! share the machine's load); then on 100 MB of repeated OOM messages, its peak private memory
//! and RSS at 10, 50 and 100 MB (flat is the target; `GPUMON_BENCH_SKIP_FLOOD=1` leaves it out).
//! `GPUMON_BENCH_BIN=PATH` runs that gpumon instead of building one in `target/bench-user`.
//! Run with `cargo bench --bench oom`.

mod common;

use std::time::{Duration, Instant};

use gpumon::oom::scan::for_each_line;
use gpumon::oom::scan::Scanner;

/// Runs of each measurement: issue 42 asks for a median of at least 20.
const RUNS: usize = 25;

const OOM: &str = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 572.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 321.06 MiB is free. Including non-PyTorch memory, this process has 23.30 GiB memory in use. Of the allocated memory 21.90 GiB is allocated by PyTorch, and 1.17 GiB is reserved by PyTorch but unallocated.\n";

/// A 10 MB training log, one OOM at its end: each line behind a rank and a time stamp, or
/// bare (no line then starts a log record, so each is also tested for a phrase split across
/// the line break).
fn training_log(prefixed: bool) -> (String, u64) {
    let mut log = String::with_capacity(11 << 20);
    let mut step = 0u64;
    while log.len() < 10 << 20 {
        step += 1;
        if prefixed {
            log.push_str(&format!(
                "[rank0]: 2024-05-01 12:00:{:02}.123 INFO train.py:88] step {step} loss {:.4} lr 3.0e-4 tokens/s 48213 grad_norm 0.93\n",
                step % 60,
                1.0 / step as f64
            ));
        } else {
            log.push_str(&format!(
                "epoch 3 step {step} loss {:.4} lr 3.0e-4 tokens/s 48213 grad_norm 0.93 memory allocated 21.9 GiB\n",
                1.0 / step as f64
            ));
        }
    }
    log.push_str(
        "Traceback (most recent call last):\n  File \"train.py\", line 120, in <module>\n",
    );
    log.push_str(OOM);
    (log, step + 3)
}

fn summary(times: &mut [Duration]) -> String {
    times.sort_unstable();
    format!(
        "median {:.1?}, min {:.1?}, max {:.1?} (n={})",
        times[times.len() / 2],
        times[0],
        times[times.len() - 1],
        times.len()
    )
}

fn main() {
    for prefixed in [true, false] {
        let (log, lines) = training_log(prefixed);
        let bytes = log.as_bytes();
        let mut times: Vec<Duration> = (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                let mut s = Scanner::new();
                for_each_line(bytes, |l, q| s.push_noted(l, q)).expect("read");
                let a = s.finish();
                assert_eq!(a.ooms.len(), 1);
                t.elapsed()
            })
            .collect();
        println!(
            "scan of a {:.1} MB log ({lines} lines{}, one OOM at the end): {}",
            bytes.len() as f64 / 1e6,
            if prefixed {
                ", [rank0]: prefixes"
            } else {
                ", bare"
            },
            summary(&mut times)
        );
    }

    // Runs of trigger lines that read as one message (a retry logged every step): the scan's
    // cost per line stays flat as the run grows (it grew with the lines before).
    for n in [400usize, 4_000, 40_000] {
        for (what, make) in [
            (
                "prose naming OOM",
                (|i| format!("warning {i}: we are out of memory again\n")) as fn(usize) -> String,
            ),
            ("a CUDA OOM per step", |i| {
                format!("step {i}: RuntimeError: CUDA error: out of memory\n")
            }),
        ] {
            let log: String = (0..n).map(make).collect();
            let mut times: Vec<Duration> = (0..5)
                .map(|_| {
                    let t = Instant::now();
                    let mut s = Scanner::new();
                    for_each_line(log.as_bytes(), |l, q| s.push_noted(l, q)).expect("read");
                    s.finish();
                    t.elapsed()
                })
                .collect();
            println!("scan of {n} lines of {what}: {}", summary(&mut times));
        }
    }

    // The release binary from start to exit on the prefixed log, beside the builds to compare
    // (GPUMON_BENCH_BIN names an already built binary instead of building target/bench-user).
    let bin = std::env::var("GPUMON_BENCH_BIN").unwrap_or_else(|_| common::user_binary());
    let mut builds = vec![bin.clone()];
    if let Ok(more) = std::env::var("GPUMON_BENCH_COMPARE") {
        builds.extend(more.split(',').filter(|p| !p.is_empty()).map(str::to_owned));
    }
    let (log, _) = training_log(true);
    let mut file = tempfile::NamedTempFile::new().expect("temp");
    std::io::Write::write_all(&mut file, log.as_bytes()).expect("write");
    let mut walls: Vec<Vec<Duration>> = vec![Vec::new(); builds.len()];
    for _ in 0..RUNS {
        for (build, wall) in builds.iter().zip(&mut walls) {
            let t = Instant::now();
            let status = std::process::Command::new(build)
                .args(["explain", "--json", "--offline"])
                .arg(file.path())
                .stdout(std::process::Stdio::null())
                .status()
                .expect("run explain");
            wall.push(t.elapsed());
            assert!(status.success(), "{build}");
        }
    }
    for (build, wall) in builds.iter().zip(&mut walls) {
        println!(
            "gpumon explain --json on the {:.1} MB log, start to exit ({build}): {}",
            log.len() as f64 / 1e6,
            summary(wall)
        );
    }

    if std::env::var_os("GPUMON_BENCH_SKIP_FLOOD").is_some() {
        return;
    }
    // The release binary on 10, 50 and 100 MB of nothing but OOMs.
    for mb in [10usize, 50, 100] {
        let mut f = tempfile::NamedTempFile::new().expect("temp");
        let n = (mb << 20) / OOM.len();
        for _ in 0..n {
            std::io::Write::write_all(&mut f, OOM.as_bytes()).expect("write");
        }
        let (status, peak, wall) = common::run_polled(
            std::process::Command::new(&bin)
                .args(["explain", "--json"])
                .arg(f.path())
                .stdout(std::process::Stdio::null()),
        );
        assert!(status.success());
        println!(
            "explain on {mb} MB of repeated OOMs ({n} messages): {wall:.1?}; peak anonymous {:.2} MiB, peak RSS {:.2} MiB",
            peak.anon as f64 / 1024.0,
            peak.rss as f64 / 1024.0
        );
    }
}
