//! Sampler benchmark on the fake NVML library: 8 GPUs × 40 processes, with real live pids so
//! the host lookup does real /proc work.
//!
//! Reports (1) the cost per tick split into NVML, host lookup and assembly, (2) `gpumon once
//! --json` wall time and peak RSS, (3) the CPU share of `gpumon log` sampling at 100 Hz.
//! Run with `cargo bench --bench sampler`.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{fake_lib, scenario, Sleepers, GPUS, PROCS};
use gpumon::collect::sampler::{Filter, Sampler};
use gpumon::collect::source::nvml::NvmlSource;

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort_unstable();
    v[((v.len() - 1) as f64 * p) as usize]
}

fn rusage(who: i32) -> libc::rusage {
    // SAFETY: getrusage fills the struct we pass.
    unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut r);
        r
    }
}

fn child_rusage() -> libc::rusage {
    rusage(libc::RUSAGE_CHILDREN)
}

fn cpu(r: &libc::rusage) -> Duration {
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(r.ru_utime) + tv(r.ru_stime)
}

fn main() {
    let lib = fake_lib();
    let sleepers = Sleepers::spawn(GPUS * PROCS);
    let path = scenario(&sleepers.pids());
    // SAFETY: single-threaded at this point; the fake library reads these at init.
    unsafe {
        std::env::set_var("FAKE_NVML_SCENARIO", &path);
        std::env::set_var("FAKE_NVML_SPEED", "0");
    }

    // 1. Per-tick cost, in process.
    let source = NvmlSource::open(Some(lib.to_str().expect("utf-8 path"))).expect("open fake NVML");
    let mut sampler = Sampler::new(
        source,
        Filter {
            gpus: vec![],
            processes: true,
            host: true,
            process_utilization: true,
            system: false,
        },
    );
    for _ in 0..20 {
        sampler.tick();
    }
    let (mut nvml, mut host, mut asm, mut total) = (vec![], vec![], vec![], vec![]);
    // CPU of every thread of this process (the per-device readers included), per tick.
    let cpu_before = cpu(&rusage(libc::RUSAGE_SELF));
    for _ in 0..500 {
        let t = Instant::now();
        let s = sampler.tick();
        total.push(t.elapsed());
        assert_eq!(s.devices.len(), GPUS);
        nvml.push(sampler.last.source);
        host.push(sampler.last.host);
        asm.push(sampler.last.assembly);
    }
    let cpu_per_tick = (cpu(&rusage(libc::RUSAGE_SELF)) - cpu_before) / 500;
    // Paced ticks, as at an interval (caches and threads gone cold in between): what a tick
    // costs a dashboard or a log at 1 s.
    let paced_before = cpu(&rusage(libc::RUSAGE_SELF));
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(100));
        sampler.tick();
    }
    let paced = (cpu(&rusage(libc::RUSAGE_SELF)) - paced_before) / 40;
    println!("sampler tick, {GPUS} GPUs x {PROCS} processes (500 ticks):");
    println!("  CPU per tick, all threads: {cpu_per_tick:.1?} back to back, {paced:.1?} paced 100 ms apart");
    for (name, v) in [
        ("NVML", &mut nvml),
        ("host lookup", &mut host),
        ("assembly", &mut asm),
        ("total", &mut total),
    ] {
        println!(
            "  {name:<12} median {:>9.1?}  p95 {:>9.1?}",
            percentile(v, 0.5),
            percentile(v, 0.95)
        );
    }
    // The once-a-second /proc refresh of all 320 pids, which the ticks above reuse.
    let mut refresh = vec![];
    for _ in 0..4 {
        std::thread::sleep(gpumon::collect::host::HOST_REFRESH + Duration::from_millis(20));
        sampler.tick();
        refresh.push(sampler.last.host);
    }
    println!(
        "  host refresh (once per {:?}, all {} pids): median {:.1?}",
        gpumon::collect::host::HOST_REFRESH,
        GPUS * PROCS,
        percentile(&mut refresh, 0.5)
    );
    drop(sampler);

    // 2. `gpumon once --json`: wall time, peak anonymous (private) memory and peak RSS of the
    // whole process; alternating with GPUMON_BENCH_COMPARE=PATH,… when given, run for run.
    let bin = common::user_binary();
    let mut builds = vec![("gpumon".to_owned(), bin.clone())];
    if let Ok(others) = std::env::var("GPUMON_BENCH_COMPARE") {
        for other in others.split(',').filter(|o| !o.is_empty()) {
            builds.push((other.to_owned(), other.to_owned()));
        }
    }
    let mut results: Vec<(Vec<Duration>, common::Mem)> =
        vec![(vec![], common::Mem::default()); builds.len()];
    for _ in 0..30 {
        for ((_, bin), (walls, peak)) in builds.iter().zip(results.iter_mut()) {
            let (status, mem, wall) = common::run_polled(
                Command::new(bin)
                    .args(["once", "--json"])
                    .env("GPUMON_NVML_LIB", &lib)
                    .stdout(Stdio::null()),
            );
            assert!(status.success());
            walls.push(wall);
            peak.anon = peak.anon.max(mem.anon);
            peak.rss = peak.rss.max(mem.rss);
        }
    }
    for ((label, _), (mut walls, peak)) in builds.iter().zip(results) {
        println!(
            "{label} once --json: median {:.1?}, p95 {:.1?}; peak anonymous {:.2} MiB, peak RSS {:.2} MiB (polled)",
            percentile(&mut walls, 0.5),
            percentile(&mut walls, 0.95),
            peak.anon as f64 / 1024.0,
            peak.rss as f64 / 1024.0
        );
    }

    // 3. `gpumon log` at 100 Hz: CPU time over wall time.
    let before = cpu(&child_rusage());
    let t = Instant::now();
    let status = Command::new(&bin)
        .args([
            "log",
            "--interval",
            "10ms",
            "--count",
            "500",
            "--format",
            "csv",
            "--output",
            "/dev/null",
        ])
        .env("GPUMON_NVML_LIB", &lib)
        .status()
        .expect("run log");
    assert!(status.success());
    let wall = t.elapsed();
    let used = cpu(&child_rusage()) - before;
    println!(
        "gpumon log at 100 Hz, 500 samples: {:.2?} CPU over {:.2?} wall = {:.1}% of one core",
        used,
        wall,
        used.as_secs_f64() * 100.0 / wall.as_secs_f64()
    );

    drop(sleepers);
}
