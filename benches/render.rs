//! Cost of drawing one dashboard frame on ratatui's TestBackend (layout and widgets, without
//! terminal output), with 10 minutes of history: 200×50 with 8 GPUs × 40 processes (compact
//! rows and one chart), and 2 GPUs at 200×50 and 120×40 (a large chart per GPU).
//! `cargo bench --bench render`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use gpumon::model::{Device, Memory, Process, ProcessKind, Sample, Utilization};
use gpumon::tui::app::App;
use gpumon::tui::render_once;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn sample(t: u64, gpus: u32) -> Arc<Sample> {
    let devices = (0..gpus)
        .map(|i| Device {
            index: i,
            name: Some("NVIDIA H100 80GB HBM3".into()),
            memory: Memory {
                total_bytes: Some(80 << 30),
                used_bytes: Some((20 + (t + i as u64) % 30) << 30),
                free_bytes: Some(10 << 30),
                reserved_bytes: Some(1 << 29),
            },
            utilization: Utilization {
                gpu_percent: Some(90),
                memory_percent: Some(40),
            },
            temperature_c: Some(60),
            processes: (0..40u32)
                .map(|p| {
                    let mut pr = Process::from_nvml(
                        10_000 + i * 100 + p,
                        ProcessKind::Compute,
                        Some(1 << 28),
                    );
                    pr.user = Some("alice".into());
                    pr.command = Some(format!("python train.py --worker {p}"));
                    pr.cpu_percent = Some(50.0);
                    pr.host_memory_bytes = Some(1 << 30);
                    pr.start_time = Some(1_700_000_000);
                    pr
                })
                .collect(),
            ..Device::default()
        })
        .collect();
    Arc::new(Sample {
        timestamp: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + t),
        hostname: Some("bench".into()),
        source: "nvml",
        driver_version: None,
        cuda_version: None,
        devices,
        error: None,
        host: None,
    })
}

/// Median and p95 of one frame at `w`×`h` with `gpus` GPUs and 10 minutes of history.
fn frames(w: u16, h: u16, gpus: u32) -> (Duration, Duration) {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    let mut app = App::new(&gpumon::tui::Settings {
        interval: Duration::from_secs(1),
        history: Duration::from_secs(600),
        idle_after: Duration::from_secs(600),
        estimate: gpumon::cli::panel_estimate,
    });
    for t in 0..600 {
        app.history.record(&sample(t, gpus));
    }
    let mut times = Vec::new();
    for t in 600..800 {
        let s = sample(t, gpus);
        let start = Instant::now();
        render_once(&mut terminal, &mut app, s).expect("draw");
        times.push(start.elapsed());
    }
    times.sort_unstable();
    (times[times.len() / 2], times[times.len() * 95 / 100])
}

fn main() {
    for (w, h, gpus) in [(200, 50, 8), (200, 50, 2), (120, 40, 2)] {
        let (median, p95) = frames(w, h, gpus);
        println!(
            "dashboard frame {w}x{h}, {gpus} GPUs x 40 processes, 600 history points: median {median:.1?}, p95 {p95:.1?}"
        );
    }
}
