//! OOM analyzer benchmark: a 10 MB training log with one OOM at the end, scanned the way
//! `gpumon explain` reads it (streaming, line by line); then the release `gpumon explain` on
//! 100 MB of repeated OOM messages, its peak private memory and RSS at 10, 50 and 100 MB (flat
//! is the target). Run with `cargo bench --bench oom`.

mod common;

use std::time::{Duration, Instant};

use gpumon::oom::scan::for_each_line;
use gpumon::oom::scan::Scanner;

fn main() {
    let mut log = String::with_capacity(10 << 20);
    let mut step = 0u64;
    while log.len() < 10 << 20 {
        step += 1;
        log.push_str(&format!(
            "[rank0]: 2024-05-01 12:00:{:02}.123 INFO train.py:88] step {step} loss {:.4} lr 3.0e-4 tokens/s 48213 grad_norm 0.93\n",
            step % 60,
            1.0 / step as f64
        ));
    }
    log.push_str(
        "Traceback (most recent call last):\n  File \"train.py\", line 120, in <module>\n",
    );
    log.push_str("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 572.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 321.06 MiB is free. Including non-PyTorch memory, this process has 23.30 GiB memory in use. Of the allocated memory 21.90 GiB is allocated by PyTorch, and 1.17 GiB is reserved by PyTorch but unallocated.\n");
    let bytes = log.as_bytes();
    let mut times: Vec<Duration> = (0..15)
        .map(|_| {
            let t = Instant::now();
            let mut s = Scanner::new();
            for_each_line(bytes, |l| s.push_line(l)).expect("read");
            let a = s.finish();
            assert_eq!(a.ooms.len(), 1);
            t.elapsed()
        })
        .collect();
    times.sort_unstable();
    println!(
        "explain on a {:.1} MB log ({} lines, one OOM at the end): median {:.1?}, min {:.1?}, max {:.1?}",
        bytes.len() as f64 / 1e6,
        step + 3,
        times[times.len() / 2],
        times[0],
        times[times.len() - 1]
    );

    // The release binary on 10, 50 and 100 MB of nothing but OOMs.
    let bin = common::user_binary();
    let oom = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 572.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 321.06 MiB is free. Including non-PyTorch memory, this process has 23.30 GiB memory in use. Of the allocated memory 21.90 GiB is allocated by PyTorch, and 1.17 GiB is reserved by PyTorch but unallocated.\n";
    for mb in [10usize, 50, 100] {
        let mut f = tempfile::NamedTempFile::new().expect("temp");
        let n = (mb << 20) / oom.len();
        for _ in 0..n {
            std::io::Write::write_all(&mut f, oom.as_bytes()).expect("write");
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
