//! Recordings: bytes a day and CPU per sample for 8 GPUs × 40 processes at 1 s with realistic
//! churn (%SM, memory bandwidth and CPU moving every sample, GPU memory growing in chunks and
//! host memory by pages now and then, read every 30 s as `record` reads them, a tenth of the
//! processes replaced every ten minutes),
//! and the time to open a 7-day recording and seek to a random time in it.
//! `cargo bench --bench record` (GPUMON_BENCH_HOURS: hours of 8 × 40 to write, default 1;
//! GPUMON_BENCH_HOST_EVERY: seconds between CPU and host-memory reads, default 30;
//! GPUMON_BENCH_KEEP: where to copy the 8 × 40 recording).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use gpumon::model::owner::{Owner, OwnerKind};
use gpumon::model::{Device, Memory, Process, ProcessKind, Sample, Utilization};
use gpumon::store::recording::{Limits, Reader, Writer};

/// A small, fast pseudo-random stream (xorshift), so runs are the same.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

fn process(rng: &mut Rng, pid: u32, job: &Arc<Owner>) -> Process {
    let mut p = Process::from_nvml(
        pid,
        ProcessKind::Compute,
        Some(2 * GIB + rng.below(8 * GIB)),
    );
    p.user = Some(["alice", "bob", "carol", "dave"][rng.below(4) as usize].into());
    p.name = Some("python".into());
    p.command = Some(format!(
        "python -m torch.distributed.run --nproc-per-node 8 train.py --config configs/llama-{}b.yaml --run-id {}",
        [7, 13, 70][rng.below(3) as usize],
        rng.next() % 100_000
    ));
    p.start_time = Some(1_795_000_000 - rng.below(86400));
    p.owner = Some(Arc::clone(job));
    p.container = Some(job.container_label());
    p
}

fn main() {
    let hours: u64 = std::env::var("GPUMON_BENCH_HOURS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let host_every: u64 = std::env::var("GPUMON_BENCH_HOST_EVERY")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|v| *v > 0)
        .unwrap_or(30);
    let dir = tempfile::tempdir().expect("dir");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut job = Owner::new(OwnerKind::Slurm, "81234");
    job.job = Some("81234.0".into());
    let job = Arc::new(job);
    let mut next_pid = 100_000u32;
    let mut devices: Vec<Device> = (0..8)
        .map(|i| Device {
            index: i,
            uuid: Some(format!("GPU-{i:08x}-4d1b-4c2e-9f4a-3b8e2d1c0a01")),
            name: Some("NVIDIA H100 80GB HBM3".into()),
            pci_bus_id: Some(format!("00000000:{:02X}:00.0", 0x18 + i)),
            minor_number: Some(i),
            memory: Memory {
                total_bytes: Some(81559 * MIB),
                used_bytes: Some(0),
                free_bytes: Some(0),
                reserved_bytes: Some(529 * MIB),
            },
            processes: (0..40)
                .map(|_| {
                    next_pid += 1;
                    process(&mut rng, next_pid, &job)
                })
                .collect(),
            ..Device::default()
        })
        .collect();
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    let path = dir.path().join("8x40.rec.zst");
    let mut w = Writer::open(
        &path,
        Limits {
            max_size: 1 << 40,
            keep: Duration::from_secs(1 << 30),
        },
    )
    .expect("writer");
    let n = hours * 3600;
    let mut cpu = Duration::ZERO;
    let mut raw = 0u64;
    for t in 0..n {
        for d in &mut devices {
            for p in &mut d.processes {
                // Realistic churn: a caching allocator grows in chunks, now and then; %SM and
                // memory bandwidth move a few points around the job's level every second; CPU
                // hovers around a core; host memory moves by pages, now and then.
                if rng.below(20) == 0 {
                    let m = p.gpu_memory_bytes.unwrap_or(0) as i64
                        + (rng.below(9) as i64 - 4) * 32 * MIB as i64;
                    p.gpu_memory_bytes = Some(m.clamp(GIB as i64, 12 * GIB as i64) as u64);
                }
                let level = 60 + (p.pid % 30);
                p.sm_percent = Some(level + rng.below(7) as u32 - 3);
                p.mem_bw_percent = Some(level / 2 + rng.below(5) as u32 - 2);
                // As the sampler computes it: CPU ticks over the wall time between reads. `record`
                // reads processes' CPU and host memory every 30 s (GPU figures every sample);
                // GPUMON_BENCH_HOST_EVERY=1 moves them every sample, as the dashboard does.
                if t % host_every == 0 {
                    p.cpu_percent = Some((9500 + rng.below(1000) as u32) as f32 / 97.3);
                    if rng.below(10) == 0 {
                        p.host_memory_bytes = Some(2 * GIB + rng.below(4096) * 4096);
                    }
                }
            }
            if t % 600 == 599 {
                for i in 0..4 {
                    next_pid += 1;
                    d.processes[(t as usize / 600 * 4 + i) % 40] =
                        process(&mut rng, next_pid, &job);
                }
            }
            let used: u64 = d
                .processes
                .iter()
                .filter_map(|p| p.gpu_memory_bytes)
                .sum::<u64>()
                / 5;
            d.memory.used_bytes = Some(used);
            d.memory.free_bytes = Some(81559 * MIB - 529 * MIB - used);
            d.utilization = Utilization {
                gpu_percent: Some(85 + rng.below(10) as u32),
                memory_percent: Some(40 + rng.below(10) as u32),
            };
            d.temperature_c = Some(60 + ((t / 120) % 8) as u32);
            // NVML's milliwatts.
            d.power_draw_w = Some((500_000 + rng.below(60_000)) as f64 / 1000.0);
        }
        let sample = Sample {
            timestamp: start + Duration::from_secs(t),
            hostname: Some("gpu-node-7".into()),
            source: "nvml",
            driver_version: Some("550.54.15".into()),
            cuda_version: Some("12.4".into()),
            devices: devices.clone(),
            error: None,
            host: None,
        };
        raw += serde_json::to_vec(&sample).expect("json").len() as u64 + 1;
        let t0 = Instant::now();
        w.append(&sample).expect("append");
        cpu += t0.elapsed();
    }
    drop(w);
    if let Ok(keep) = std::env::var("GPUMON_BENCH_KEEP") {
        std::fs::copy(&path, keep).expect("keep");
    }
    let size = path.metadata().expect("meta").len();
    let per_day = size as f64 / n as f64 * 86400.0;
    println!(
        "8 GPUs x 40 processes, 1 s, {n} samples: {:.1} KiB a sample raw JSON, {:.2} KiB \
         compressed ({:.0}x): {:.0} MB a day; writing a sample {:.2} ms ({:.3}% of a core at 1 s)",
        raw as f64 / n as f64 / 1024.0,
        size as f64 / n as f64 / 1024.0,
        raw as f64 / size as f64,
        per_day / 1e6,
        cpu.as_secs_f64() * 1e3 / n as f64,
        cpu.as_secs_f64() * 100.0 / n as f64,
    );
    let seek = |reader: &Reader, span: (SystemTime, SystemTime), rng: &mut Rng| {
        let len = span.1.duration_since(span.0).expect("span").as_secs();
        let mut times = Vec::new();
        for _ in 0..20 {
            let at = span.0 + Duration::from_secs(rng.below(len.max(1)));
            let t0 = Instant::now();
            let s = reader.at(at).expect("a sample");
            times.push(t0.elapsed());
            assert!(s.timestamp <= at || s.timestamp == span.0);
        }
        times.sort_unstable();
        (times[times.len() / 2], times[times.len() - 1])
    };
    let t0 = Instant::now();
    let reader = Reader::open(&path).expect("open");
    let opened = t0.elapsed();
    let span = reader.span().expect("span");
    let (median, max) = seek(&reader, span, &mut rng);
    println!(
        "the 8 x 40 recording: open {:.1} ms, seek to a random time median {:.1} ms, max {:.1} ms",
        opened.as_secs_f64() * 1e3,
        median.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3
    );

    // Seven days at 1 s, small samples: the index walk over 10,080 segments.
    let week = dir.path().join("week.rec.zst");
    let mut w = Writer::open(
        &week,
        Limits {
            max_size: 1 << 40,
            keep: Duration::from_secs(1 << 30),
        },
    )
    .expect("writer");
    let mut small = devices[0].clone();
    small.processes.truncate(1);
    for t in 0..7 * 86400u64 {
        let sample = Sample {
            timestamp: start + Duration::from_secs(t),
            hostname: None,
            source: "nvml",
            driver_version: None,
            cuda_version: None,
            devices: vec![small.clone()],
            error: None,
            host: None,
        };
        w.append(&sample).expect("append");
    }
    drop(w);
    let t0 = Instant::now();
    let reader = Reader::open(&week).expect("open");
    let opened = t0.elapsed();
    let span = reader.span().expect("span");
    let (median, max) = seek(&reader, span, &mut rng);
    println!(
        "a 7-day recording (604,800 samples, {:.0} MB): open {:.1} ms (reads its 10,080 trailers), \
         then seek to a random time median {:.1} ms, max {:.1} ms",
        week.metadata().expect("meta").len() as f64 / 1e6,
        opened.as_secs_f64() * 1e3,
        median.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3
    );
}
