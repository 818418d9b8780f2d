//! The dashboard: full-screen snapshots on TestBackend, and the real binary in tmux.

use std::process::Command as StdCommand;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use gpumon::model::{Device, HostStats, Memory, Process, ProcessKind, Sample, Utilization};
use gpumon::tui::app::App;
use gpumon::tui::{render_once, theme};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use regex::Regex;

use crate::common::{fake_lib, scenario, MIB};

const T0: u64 = 1_795_000_000;

fn at(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(T0 + s)
}

fn device(index: u32, procs: u32, used_mib: u64, lost: bool) -> Device {
    if lost {
        return Device {
            index,
            name: Some("NVIDIA H100 80GB HBM3".into()),
            error: Some("GPU is lost".into()),
            ..Device::default()
        };
    }
    let total = 81559 * MIB;
    let reserved = 529 * MIB;
    let per = if procs == 0 {
        0
    } else {
        used_mib * MIB / procs as u64
    };
    let processes = (0..procs)
        .map(|i| {
            let pid = 40000 + index * 100 + i;
            let mut p = Process::from_nvml(pid, ProcessKind::Compute, Some(per));
            p.user = Some(["alice", "bob", "carol"][(i % 3) as usize].into());
            p.name = Some("python".into());
            p.command = Some(format!("python train.py --rank {index} --worker {i}"));
            p.cpu_percent = Some(98.0 + i as f32);
            p.host_memory_bytes = Some((2000 + 10 * i as u64) * MIB);
            p.start_time = Some(T0 - 3600 - i as u64);
            p.sm_percent = Some(85u32.saturating_sub(9 * i));
            p.mem_bw_percent = Some(41u32.saturating_sub(4 * i));
            p
        })
        .collect();
    let used = used_mib * MIB;
    Device {
        index,
        uuid: Some(format!("GPU-0000000{index}")),
        name: Some("NVIDIA H100 80GB HBM3".into()),
        pci_bus_id: Some(format!("00000000:{:02X}:00.0", index + 1)),
        memory: Memory {
            total_bytes: Some(total),
            used_bytes: Some(used),
            free_bytes: Some(total - reserved - used),
            reserved_bytes: Some(reserved),
        },
        utilization: Utilization {
            gpu_percent: Some(90),
            memory_percent: Some(40),
        },
        temperature_c: Some(65),
        power_draw_w: Some(540.0),
        power_limit_w: Some(700.0),
        fan_percent: None,
        processes,
        ..Device::default()
    }
}

fn sample(t: u64, devices: Vec<Device>) -> Arc<Sample> {
    Arc::new(Sample {
        timestamp: at(t),
        hostname: Some("gpu-node-7".into()),
        source: "nvml",
        driver_version: Some("550.54.15".into()),
        cuda_version: Some("12.4".into()),
        devices,
        error: None,
        host: Some(HOST),
    })
}

/// The host line's figures in every screen, as a live dashboard always has them.
const HOST: HostStats = HostStats {
    cpu_percent: Some(37.5),
    cpu_count: Some(96),
    memory_total_bytes: Some(1024 * 1024 * MIB),
    memory_used_bytes: Some(412 * 1024 * MIB),
    memory_available_bytes: Some(612 * 1024 * MIB),
    swap_total_bytes: Some(8 * 1024 * MIB),
    swap_used_bytes: Some(0),
    load_average: Some([35.2, 33.9, 30.1]),
    uptime_s: Some(12 * 86400 + 4 * 3600),
    pids_hidden: false,
};

/// A dashboard after `steps` one-second samples of `make(t)`.
fn screen(
    w: u16,
    h: u16,
    steps: u64,
    make: impl Fn(u64) -> Vec<Device>,
) -> (Terminal<TestBackend>, App) {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    let mut app = App::new(&crate::common::dashboard_settings(
        Duration::from_secs(1),
        Duration::from_secs(600),
    ));
    for t in 0..steps {
        render_once(&mut terminal, &mut app, sample(t * 20, make(t))).expect("draw");
    }
    (terminal, app)
}

fn two_gpus(t: u64) -> Vec<Device> {
    vec![
        device(0, 3, 30000 + 1500 * (t % 7), false),
        device(1, 1, 20000, false),
    ]
}

#[test]
fn snapshot_80x24_two_gpus() {
    let (terminal, _) = screen(80, 24, 30, two_gpus);
    insta::assert_snapshot!(terminal.backend());
}

/// Rows with nothing drawn on them, between the header and the footer.
fn blank_rows(terminal: &Terminal<TestBackend>) -> usize {
    let text = terminal.backend().to_string();
    let lines: Vec<&str> = text.lines().collect();
    lines[1..lines.len().saturating_sub(1)]
        .iter()
        .filter(|l| l.trim_matches('"').trim().is_empty())
        .count()
}

#[test]
fn snapshot_two_gpus_fill_120x40_and_200x50_with_history() {
    for (w, h) in [(120, 40), (200, 50)] {
        let (terminal, _) = screen(w, h, 30, two_gpus);
        assert!(
            blank_rows(&terminal) <= 3,
            "{w}x{h} leaves {} blank rows:\n{}",
            blank_rows(&terminal),
            terminal.backend()
        );
        insta::assert_snapshot!(format!("two_gpus_{w}x{h}"), terminal.backend());
    }
}

#[test]
fn snapshot_eight_gpus_forty_processes_at_80x24_and_120x40() {
    for (w, h) in [(80, 24), (120, 40)] {
        let (terminal, _) = screen(w, h, 30, |t| {
            (0..8)
                .map(|i| device(i, 40, 20000 + 1000 * ((t + i as u64) % 9), false))
                .collect()
        });
        insta::assert_snapshot!(format!("eight_gpus_{w}x{h}"), terminal.backend());
    }
}

#[test]
fn snapshot_200x50_eight_gpus_forty_processes() {
    let (terminal, _) = screen(200, 50, 30, |t| {
        (0..8)
            .map(|i| device(i, 40, 20000 + 1000 * ((t + i as u64) % 9), false))
            .collect()
    });
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn snapshot_sixteen_gpus_go_compact() {
    let (terminal, _) = screen(80, 24, 3, |_| {
        (0..16)
            .map(|i| device(i, 2, 1000 * (i as u64 + 1), false))
            .collect()
    });
    insta::assert_snapshot!(terminal.backend());
}

/// GPU 0 at 30 GB with a spike to 78 GiB between two frames every 10 samples, the last one
/// 0.4 s before the last frame; GPU 1's peak is its reading, and is not shown.
fn spiky(t: u64) -> Vec<Device> {
    let mut devices = vec![device(0, 2, 30000, false), device(1, 1, 20000, false)];
    for d in &mut devices {
        let spike = d.index == 0 && t % 10 == 9;
        d.peak = Some(gpumon::model::MemoryPeak {
            used_bytes: if spike {
                78 << 30
            } else {
                d.memory.used_bytes.unwrap_or(0)
            },
            at: at(t * 20) - Duration::from_millis(400),
            window_ms: 20_000,
            reads: 1000,
        });
    }
    devices
}

/// The peak between frames: a mark on GPU 0's gauge, "peak 78.0 GiB 0.4 s ago" on its line,
/// and its chart's columns rising to 78 GiB where the readings alone stay at 30 GB.
#[test]
fn snapshot_a_spike_between_frames_on_the_gauge_the_line_and_the_chart() {
    let (terminal, _) = screen(120, 40, 30, spiky);
    let text = terminal.backend().to_string();
    assert!(text.contains("peak 78.0 GiB 0.4 s ago"), "{text}");
    assert!(text.contains('┃'), "the gauge's mark: {text}");
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn snapshot_lost_gpu_shows_inline_and_leaves_a_gap() {
    let (terminal, _) = screen(100, 30, 30, |t| {
        vec![
            device(0, 2, 25000, false),
            device(1, 1, 9000, (10..20).contains(&t)),
        ]
    });
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn snapshot_stalled_gpu_is_greyed_with_its_age_and_leaves_a_gap() {
    // GPU 1 answers for 20 samples, then stops: from sample 22 it is past its deadline.
    let (terminal, _) = screen(100, 30, 30, |t| {
        let mut d1 = device(1, 1, 9000, false);
        if t >= 22 {
            d1.stalled = true;
            d1.error = Some(format!("not responding for {} s", (t - 20) * 20));
            d1.data_age_ms = Some((t - 20) * 20_000);
        }
        vec![device(0, 2, 25000 + 100 * t, false), d1]
    });
    let text = format!("{:?}", terminal.backend());
    assert!(
        text.contains(
            "[1] NVIDIA H100 80GB HBM3  not responding for 180 s (last data 11:13:20 UTC)"
        ),
        "{text}"
    );
    // Greyed: every cell of the stalled gauge is drawn in the stale style.
    let buf = terminal.backend().buffer();
    let gauge_y = (0..buf.area.height)
        .find(|&y| {
            let row: String = (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_owned())
                .collect();
            row.starts_with("[1]")
        })
        .map(|y| y + 1)
        .expect("GPU 1's rows");
    assert!(
        (0..buf.area.width).all(|x| buf[(x, gauge_y)].style().fg == theme::stale().fg),
        "GPU 1's gauge is greyed"
    );
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn snapshot_oom_panel_and_help() {
    let (mut terminal, mut app) = screen(120, 40, 5, two_gpus);
    app.on_paste("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 572.00 MiB. GPU 1 has a total capacity of 79.65 GiB of which 321.06 MiB is free. Including non-PyTorch memory, this process has 78.70 GiB memory in use. Of the allocated memory 70.90 GiB is allocated by PyTorch, and 7.17 GiB is reserved by PyTorch but unallocated.");
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    insta::assert_snapshot!("oom_panel", terminal.backend());
    app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    app.on_key(KeyEvent::new(KeyCode::Char(' '), KeyModifiers::NONE));
    app.on_key(KeyEvent::new(KeyCode::Char('?'), KeyModifiers::NONE));
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    insta::assert_snapshot!("help_paused", terminal.backend());
}

#[test]
fn snapshot_oom_panel_at_80x24_shows_the_first_finding() {
    let (mut terminal, mut app) = screen(80, 24, 5, two_gpus);
    let message = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 572.00 MiB. GPU 1 has a total capacity of 79.65 GiB of which 321.06 MiB is free. Including non-PyTorch memory, this process has 78.70 GiB memory in use. Of the allocated memory 70.90 GiB is allocated by PyTorch, and 7.17 GiB is reserved by PyTorch but unallocated.";
    app.on_paste(message);
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    let text = terminal.backend().to_string();
    assert!(
        text.contains("1. Fragmentation"),
        "first finding in view:\n{text}"
    );
    assert!(
        text.contains("GPU 1 now │"),
        "live bar beside the message's:\n{text}"
    );
    // The message is in the input box only, not quoted again in the report.
    assert_eq!(
        text.matches("Tried to allocate 572.00 MiB").count(),
        1,
        "{text}"
    );
    // Wrapped remedies keep their hanging indent: no report line starts flush left with
    // a continuation word.
    for line in text
        .lines()
        .filter(|l| l.contains("PYTORCH_CUDA_ALLOC_CONF"))
    {
        assert!(line.contains("   - PYTORCH"), "{line}");
    }
    insta::assert_snapshot!("oom_panel_80x24", terminal.backend());
}

#[test]
fn snapshot_selected_process_with_the_allocator_split() {
    let (terminal, _) = screen(120, 20, 3, |_| {
        let mut d = device(0, 2, 40000, false);
        d.processes[0].allocator = Some(Box::new(gpumon::model::AllocatorStats {
            framework: "pytorch".into(),
            framework_version: Some("2.5.1".into()),
            allocated_bytes: Some(14 << 30),
            allocated_peak_bytes: Some(16 << 30),
            reserved_bytes: Some(18 << 30),
            reserved_peak_bytes: Some(18 << 30),
            active_bytes: None,
            inactive_split_bytes: None,
            num_alloc_retries: Some(0),
            num_ooms: Some(0),
            age_ms: 0,
            run_id: None,
            steps: None,
            step_growth: None,
            step_marker: None,
            steps_marked: None,
            held_sites: None,
        }));
        vec![d]
    });
    let text = terminal.backend().to_string();
    // Whole fields, the least important (outside the framework) dropped at 120 columns.
    assert!(
        text.contains("alloc 14.0 GiB · cached 4.0 GiB · other apps 19.5 GiB · free"),
        "{text}"
    );
    assert!(text.contains("▶ pid 40000 GPU 0 PyTorch "), "{text}");
    // The GPU's gauge shows the split in shades of the process's colour, and says so.
    // Row 3: under the header, the host line and the GPU's title.
    let gauge = text.lines().nth(3).unwrap_or_default();
    let (a, c, n) = (gauge.find('█'), gauge.find('▓'), gauge.find('▒'));
    assert!(
        a < c && c < n && a.is_some(),
        "allocated, cached, outside: {gauge}"
    );
    assert!(text.contains("█ allocated ▓ cached ▒ outside"), "{text}");
    insta::assert_snapshot!(terminal.backend());
}

/// The training rank of `snapshot_selected_process_with_the_allocator_split`, its allocator
/// split moving with the step.
fn training(t: u64) -> Vec<Device> {
    let mut d = device(0, 2, 40000, false);
    let p = &mut d.processes[0];
    p.command = Some(format!(
        "python -m torch.distributed.run --nproc-per-node 8 train.py --model llama-7b \
         --batch-size 16 --seq-len 4096 --grad-accum 8 --lr 3e-4 --warmup 2000 \
         --data /datasets/redpajama --out /checkpoints/run-{t:03}"
    ));
    p.container =
        Some("k8s pod 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 (containerd 3f4e5d6c7b8a)".into());
    let step = (t % 4) << 30;
    p.gpu_memory_bytes = Some((20 << 30) + step);
    p.allocator = Some(Box::new(gpumon::model::AllocatorStats {
        framework: "pytorch".into(),
        framework_version: Some("2.5.1".into()),
        allocated_bytes: Some((14 << 30) + step),
        allocated_peak_bytes: Some(17 << 30),
        reserved_bytes: Some((18 << 30) + step),
        reserved_peak_bytes: Some(21 << 30),
        active_bytes: None,
        inactive_split_bytes: None,
        num_alloc_retries: Some(3),
        num_ooms: Some(0),
        age_ms: 0,
        run_id: None,
        steps: None,
        step_growth: None,
        step_marker: None,
        steps_marked: None,
        held_sites: None,
    }));
    vec![d]
}

#[test]
fn snapshot_the_details_view() {
    for (w, h) in [(120, 40), (80, 24)] {
        let (mut terminal, mut app) = screen(w, h, 30, training);
        app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
        terminal
            .draw(|f| gpumon::tui::ui::draw(f, &mut app))
            .expect("draw");
        let text = terminal.backend().to_string();
        // The whole command, wrapped, with its last argument.
        assert!(text.contains("/checkpoints/run-029"), "{text}");
        assert!(text.contains("0f1e2d3c-4b5a-6978"), "{text}");
        assert!(text.contains("retries 3"), "{text}");
        assert!(text.contains("GPU memory of pid 40000"), "{text}");
        // The chart has drawn the series (Braille cells).
        assert!(
            text.chars().any(|c| ('\u{2801}'..='\u{28ff}').contains(&c)),
            "{text}"
        );
        insta::assert_snapshot!(format!("details_{w}x{h}"), terminal.backend());
    }
}

#[test]
fn the_owner_column_shows_when_a_process_has_one_and_room_allows() {
    let (terminal, _) = screen(140, 30, 2, training);
    let text = terminal.backend().to_string();
    assert!(text.contains("OWNER"), "{text}");
    assert!(text.contains("k8s pod 0f1e2d3c"), "{text}");
    let (terminal, _) = screen(100, 30, 2, training);
    assert!(!terminal.backend().to_string().contains("OWNER"));
    // No process with an owner: no column, even when wide.
    let (terminal, _) = screen(200, 30, 2, two_gpus);
    assert!(!terminal.backend().to_string().contains("OWNER"));
    // A pod the kubelet named, and a Slurm job step: named as people say them.
    let owned = |_| {
        use gpumon::model::owner::{Owner, OwnerKind};
        let mut d = device(0, 2, 20000, false);
        let mut pod = Owner::new(OwnerKind::Kubernetes, "trainer-0");
        pod.namespace = Some("ml".into());
        pod.container = Some("pytorch".into());
        d.processes[0].owner = Some(Arc::new(pod));
        let mut job = Owner::new(OwnerKind::Slurm, "81234");
        job.job = Some("81234.0".into());
        d.processes[1].owner = Some(Arc::new(job));
        vec![d]
    };
    let (terminal, _) = screen(140, 30, 2, owned);
    let text = terminal.backend().to_string();
    assert!(text.contains("ml/trainer-0/pytorch"), "{text}");
    assert!(text.contains("slurm 81234.0"), "{text}");
}

#[test]
fn tiny_and_odd_sizes_never_panic() {
    for (w, h) in [
        (1, 1),
        (10, 3),
        (39, 9),
        (40, 10),
        (41, 11),
        (80, 12),
        (300, 5),
        (5, 200),
    ] {
        let (terminal, _) = screen(w, h, 3, |t| {
            vec![device(0, 50, 5000 * t, t == 1), device(1, 0, 0, false)]
        });
        let text = terminal.backend().to_string();
        if w < 40 || h < 10 {
            assert!(text.contains("terminal") || w < 12, "{w}x{h}:\n{text}");
        }
    }
    let (terminal, _) = screen(30, 8, 1, two_gpus);
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn the_largest_processes_have_a_colour_of_their_own_the_same_in_gauge_and_table() {
    // 40 processes of different sizes: the 8 largest get the 8 colours, the others none.
    let (_, app) = screen(200, 50, 2, |_| {
        let mut d = device(0, 40, 40000, false);
        for (i, p) in d.processes.iter_mut().enumerate() {
            p.gpu_memory_bytes = Some((i as u64 + 1) * 100 * MIB);
        }
        vec![d]
    });
    let colours: Vec<_> = (40000..40040).map(|pid| app.process_style(pid)).collect();
    assert!(colours[..32].iter().all(Option::is_none), "{colours:?}");
    let mut top: Vec<_> = colours[32..].iter().map(|c| c.and_then(|s| s.fg)).collect();
    assert!(top.iter().all(Option::is_some));
    top.sort_by_key(|c| format!("{c:?}"));
    top.dedup();
    assert_eq!(top.len(), theme::PROCESS_COLORS.len(), "all distinct");

    let (terminal, app) = screen(80, 24, 2, |_| vec![device(0, 1, 40000, false)]);
    let buf = terminal.backend().buffer();
    let pid_style = app
        .process_style(40000)
        .expect("the only process has a colour");
    // Row 3 is GPU 0's gauge (under the header, the host line and its title); the first
    // cells are the only process.
    assert_eq!(buf[(0, 3)].fg, pid_style.fg.expect("fg"));
    // Find the pid in the table and compare its colour.
    let row = (0..buf.area.height)
        .find(|&y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
                .contains("40000 ")
        })
        .expect("pid row");
    let x = (0..buf.area.width)
        .find(|&x| buf[(x, row)].symbol() == "4")
        .expect("pid cell");
    assert_eq!(buf[(x, row)].fg, pid_style.fg.expect("fg"));
}

// ---- the real binary in tmux ----------------------------------------------------------

pub struct Tmux {
    socket: String,
}

impl Tmux {
    pub fn new(width: u16, height: u16, env: &[(&str, String)]) -> Tmux {
        let socket = format!("gpumon-test-{}-{}", std::process::id(), rand_suffix());
        let t = Tmux { socket };
        let mut args = vec![
            "new-session".to_owned(),
            "-d".into(),
            "-s".into(),
            "e2e".into(),
            "-x".into(),
            width.to_string(),
            "-y".into(),
            height.to_string(),
        ];
        for (k, v) in env {
            args.push("-e".into());
            args.push(format!("{k}={v}"));
        }
        args.push("bash --norc --noprofile".into());
        t.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        t
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = StdCommand::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux is required for the end-to-end dashboard test (apt-get install tmux)");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "e2e"])
    }

    pub fn alternate_on(&self) -> bool {
        self.run(&["display", "-p", "-t", "e2e", "#{alternate_on}"])
            .trim()
            == "1"
    }

    pub fn wait_for(&self, what: &str, cond: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if cond(&s) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "timed out waiting for {what}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn type_line(&self, line: &str) {
        self.run(&["send-keys", "-t", "e2e", "-l", line]);
        self.run(&["send-keys", "-t", "e2e", "Enter"]);
    }

    /// The shell is back, the alternate screen is off and the tty is in cooked mode.
    pub fn assert_restored(&self, marker: &str) {
        self.wait_for(marker, |s| s.contains(marker));
        assert!(!self.alternate_on(), "still on the alternate screen");
        self.run(&["send-keys", "-t", "e2e", "clear", "Enter"]);
        // The marker is computed, so the echoed command line never matches it.
        self.type_line("stty -a | tr ' ' '\\n' | grep -xE -- '-?(icanon|echo)' | tr '\\n' ' '; echo STTY-$((40+2))");
        let s = self.wait_for("stty", |s| s.contains("STTY-42"));
        assert!(
            s.contains("icanon echo STTY-42"),
            "terminal left in raw mode:\n{s}"
        );
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = StdCommand::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

fn rand_suffix() -> u128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() % 1_000_000)
}

const E2E_SCENARIO: &str = r#"{"version":1,"devices":[
  {"name":"Fake H100","memory_total_mib":81559,"memory_reserved_mib":529,"utilization_gpu":77,
   "temperature_c":61,"power_draw_w":400,"power_limit_w":700,
   "processes":[{"pid":4500001,"memory_mib":30000},{"pid":4500002,"memory_mib":2000}]},
  {"name":"Fake H100","memory_total_mib":81559,"processes":[{"pid":4500003,"memory_mib":100}]}],
  "faults":[{"kind":"device_lost","device":1,"at_s":0}]}"#;

fn e2e_env(scenario: &std::path::Path) -> Vec<(&'static str, String)> {
    vec![
        ("GPUMON_NVML_LIB", fake_lib().display().to_string()),
        ("FAKE_NVML_SCENARIO", scenario.display().to_string()),
        ("FAKE_NVML_SPEED", "0".into()),
        ("PS1", "$ ".into()),
        ("RUST_BACKTRACE", "0".into()),
    ]
}

#[test]
fn end_to_end_in_tmux_paste_quit_and_restore() {
    let s = scenario(E2E_SCENARIO);
    let tmux = Tmux::new(120, 40, &e2e_env(&s));
    let bin = env!("CARGO_BIN_EXE_gpumon");
    tmux.type_line(&format!("{bin} --interval 200ms; echo EXIT=$?"));
    let screen = tmux.wait_for("the dashboard", |s| {
        s.contains("[0] Fake H100") && s.contains("4500001")
    });
    assert!(
        screen.contains("GPU is lost"),
        "the lost GPU shows inline:\n{screen}"
    );
    assert!(tmux.alternate_on());
    // Paste an OOM (bracketed) and see the analysis next to the live GPU.
    tmux.run(&["set-buffer", "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total capacity; 1.24 GiB already allocated; 2.88 MiB free; 1.25 GiB reserved in total by PyTorch)"]);
    tmux.run(&["paste-buffer", "-p", "-t", "e2e"]);
    let screen = tmux.wait_for("the OOM report", |s| {
        s.contains("PyTorch (CUDA) out of memory")
    });
    // The live GPU's bar under the message's.
    assert!(screen.contains("GPU 0 now │"), "{screen}");
    tmux.run(&["send-keys", "-t", "e2e", "Escape"]);
    tmux.wait_for("the panel to close", |s| !s.contains("OOM analyzer"));
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    tmux.assert_restored("EXIT=0");
}

#[test]
fn end_to_end_sigterm_and_panic_restore_the_terminal() {
    let s = scenario(E2E_SCENARIO);
    let tmux = Tmux::new(100, 30, &e2e_env(&s));
    let bin = env!("CARGO_BIN_EXE_gpumon");
    tmux.type_line(&format!("{bin} --interval 250ms; echo EXIT=$?"));
    tmux.wait_for("the dashboard", |s| s.contains("[0] Fake H100"));
    let pattern = format!("^{bin} --interval 250ms");
    let pid = StdCommand::new("pgrep")
        .arg("-n")
        .arg("-f")
        .arg(&pattern)
        .output()
        .expect("pgrep");
    let pid = String::from_utf8_lossy(&pid.stdout).trim().to_owned();
    assert!(!pid.is_empty(), "gpumon pid");
    StdCommand::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    tmux.assert_restored("EXIT=0");

    tmux.run(&["send-keys", "-t", "e2e", "clear", "Enter"]);
    tmux.type_line(&format!("GPUMON_DEBUG_PANIC=1 {bin}; echo EXIT=$?"));
    let screen = tmux.wait_for("the panic exit", |s| s.contains("EXIT=101"));
    assert!(
        screen.contains("GPUMON_DEBUG_PANIC is set"),
        "the panic message is shown:\n{screen}"
    );
    tmux.assert_restored("EXIT=101");

    // P3: a worker thread's panic ends the program too (it froze the view before).
    tmux.run(&["send-keys", "-t", "e2e", "clear", "Enter"]);
    tmux.type_line(&format!("GPUMON_DEBUG_PANIC=worker {bin}; echo EXIT=$?"));
    let screen = tmux.wait_for("the worker's panic exit", |s| s.contains("EXIT=101"));
    assert!(
        screen.contains("GPUMON_DEBUG_PANIC=worker is set"),
        "the panic message is shown:\n{screen}"
    );
    tmux.assert_restored("EXIT=101");
}

/// The line of the screen that starts with `prefix` (trimmed), if any.
pub fn line_with<'a>(screen: &'a str, prefix: &str) -> Option<&'a str> {
    screen
        .lines()
        .map(str::trim_start)
        .find(|l| l.starts_with(prefix))
}

#[test]
fn end_to_end_a_hung_gpu_never_freezes_the_dashboard() {
    let s = scenario(crate::stall::HUNG);
    let mut env = e2e_env(&s);
    // The scenario clock runs: GPU 0's memory grows by about 100 MiB a second.
    env.retain(|(k, _)| *k != "FAKE_NVML_SPEED");
    env.push(("FAKE_NVML_SPEED", "1".into()));
    let tmux = Tmux::new(120, 40, &env);
    let bin = env!("CARGO_BIN_EXE_gpumon");
    tmux.type_line(&format!(
        "{bin} --interval 250ms --timeout 1s; echo EXIT=$?"
    ));
    let screen = tmux.wait_for("GPU 1 to stall", |s| {
        line_with(s, "[1]").is_some_and(|l| l.contains("not responding for"))
            && line_with(s, "[0] Healthy H100").is_some()
    });
    assert!(
        line_with(&screen, "[1]").is_some_and(|l| l.contains("(no data yet)")),
        "{screen}"
    );
    // GPU 0 keeps updating while GPU 1's calls are blocked.
    let first = line_with(&screen, "[0] Healthy H100")
        .map(str::to_owned)
        .unwrap_or_default();
    let later = tmux.wait_for("GPU 0's figures to change", |s| {
        line_with(s, "[0] Healthy H100").is_some_and(|l| l != first)
    });
    assert!(
        line_with(&later, "[1]").is_some_and(|l| l.contains("not responding for")),
        "GPU 1 is still stalled:\n{later}"
    );
    // Quit while a call on GPU 1 is blocked (for a minute): the dashboard does not wait on it.
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    tmux.assert_restored("EXIT=0");
}

#[test]
fn end_to_end_waiting_for_a_driver_that_hangs_in_init_and_quitting() {
    let s = scenario(
        r#"{"version":1,"devices":[{"name":"G","memory_total_mib":1024}],
            "faults":[{"kind":"init_hang","block_s":120}]}"#,
    );
    let tmux = Tmux::new(100, 30, &e2e_env(&s));
    let bin = env!("CARGO_BIN_EXE_gpumon");
    tmux.type_line(&format!("{bin}; echo EXIT=$?"));
    tmux.wait_for("the waiting screen", |s| {
        s.contains("waiting for the NVIDIA driver… (")
    });
    tmux.wait_for("the wait to be counted", |s| {
        s.contains("waiting for the NVIDIA driver… (2 s)")
    });
    assert!(tmux.alternate_on());
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    tmux.assert_restored("EXIT=0");
}

/// The fields of a GPU line (two spaces apart; one after the index), each whole.
fn assert_fields_intact(line: &str, w: u16, figures: &Regex) {
    let known = ["NVIDIA H100 80GB HBM3", "65°C", "util 90%", "540/700 W"];
    let line = line.trim_end();
    let (index, rest) = line.split_once(' ').unwrap_or((line, ""));
    assert!(
        index.starts_with('[') && index.ends_with(']'),
        "{w}: {line:?}"
    );
    let mut saw_figures = false;
    for token in rest.split("  ").map(str::trim).filter(|t| !t.is_empty()) {
        if figures.is_match(token) {
            saw_figures = true;
        } else {
            assert!(
                known.contains(&token),
                "{w} columns: {token:?} is cut or joined in {line:?}"
            );
        }
    }
    assert!(
        saw_figures,
        "{w} columns: the memory figures went before the others: {line:?}"
    );
}

#[test]
fn every_width_from_40_to_220_keeps_each_field_whole() {
    let whole =
        Regex::new(r"^\d+(\.\d)? (B|KiB|MiB|GiB) / \d+(\.\d)? GiB \(\d+%\)$").expect("regex");
    let at_end = Regex::new(r"\d+(\.\d)? (MiB|GiB) / 79\.6 GiB \(\d+%\)\s*$").expect("regex");
    for w in 40..=220u16 {
        let (terminal, _) = screen(w, 30, 2, two_gpus);
        let text = terminal.backend().to_string();
        let lines: Vec<&str> = text
            .lines()
            .map(|l| l.trim_matches('"'))
            .filter(|l| l.starts_with("[0] ") || l.starts_with("[1] "))
            .collect();
        assert_eq!(lines.len(), 2, "{w}:\n{text}");
        for line in lines {
            assert_fields_intact(line, w, &whole);
        }
        // Compact rows (16 GPUs): index first, the figures whole at the end.
        let (terminal, _) = screen(w, 30, 1, |_| {
            (0..16)
                .map(|i| device(i, 2, 1000 * (i as u64 + 1), false))
                .collect()
        });
        let text = terminal.backend().to_string();
        for line in text
            .lines()
            .map(|l| l.trim_matches('"'))
            .filter(|l| l.starts_with("[ "))
        {
            assert!(at_end.is_match(line), "{w} columns, compact: {line:?}");
        }
    }
}

#[test]
fn the_demo_first_screen_shows_the_allocator_split() {
    use gpumon::collect::sampler::{Filter, Sampler};
    use gpumon::collect::source::simulated::Simulated;
    let opened = Simulated::demo().expect("demo").open();
    let mut sampler = Sampler::new(
        opened,
        Filter {
            gpus: vec![],
            processes: true,
            host: true,
            process_utilization: true,
            system: false,
        },
    );
    let sample = Arc::new(sampler.tick());
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let mut app = App::new(&crate::common::dashboard_settings(
        Duration::from_secs(1),
        Duration::from_secs(600),
    ));
    render_once(&mut terminal, &mut app, sample).expect("draw");
    let text = terminal.backend().to_string();
    // The largest process is selected: rank 0 of the training run, with PyTorch's split.
    assert!(text.contains("▶ pid 48213 GPU 0 PyTorch "), "{text}");
    assert!(
        text.contains("alloc ") && text.contains("cached "),
        "{text}"
    );
    assert!(text.contains("█ allocated ▓ cached ▒ outside"), "{text}");
    let gauge = text
        .lines()
        .skip_while(|l| !l.contains("[0] NVIDIA"))
        .nth(1)
        .unwrap_or_default();
    assert!(gauge.contains('▓') && gauge.contains('▒'), "{gauge}");
}

#[test]
fn end_to_end_a_paste_without_brackets_is_not_read_as_keys() {
    let s = scenario(E2E_SCENARIO);
    let tmux = Tmux::new(120, 40, &e2e_env(&s));
    let bin = env!("CARGO_BIN_EXE_gpumon");
    tmux.type_line(&format!("{bin} --interval 200ms; echo EXIT=$((1+1))"));
    tmux.wait_for("the dashboard", |s| s.contains("[0] Fake H100"));
    // Plain keys as a terminal without bracketed paste sends them: `q` would quit, space
    // pause, `s` sort, digits re-sort.
    tmux.run(&[
        "set-buffer",
        "quick sanity q 1 2\nRuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total capacity; 1.24 GiB already allocated; 2.88 MiB free; 1.25 GiB reserved in total by PyTorch)\n",
    ]);
    tmux.run(&["paste-buffer", "-t", "e2e"]);
    let screen = tmux.wait_for("the OOM report", |s| {
        s.contains("PyTorch (CUDA) out of memory")
    });
    assert!(
        !screen.contains("EXIT=2"),
        "the paste quit gpumon:\n{screen}"
    );
    assert!(
        !screen.contains("PAUSED"),
        "the paste paused the view:\n{screen}"
    );
    tmux.run(&["send-keys", "-t", "e2e", "Escape"]);
    tmux.wait_for("the panel to close", |s| !s.contains("OOM analyzer"));
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    tmux.assert_restored("EXIT=2");
}

#[test]
fn snapshot_the_signal_dialog() {
    // A pid that cannot exist anywhere, so the dialog's verdict is the same on every machine.
    let (mut terminal, mut app) = screen(100, 30, 3, |_| {
        let mut d = device(0, 1, 20000, false);
        d.processes[0].pid = u32::MAX - 7;
        vec![d]
    });
    app.on_key(KeyEvent::new(KeyCode::Char('k'), KeyModifiers::NONE));
    app.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    let text = terminal.backend().to_string();
    assert!(text.contains("▶ SIGKILL (9)"), "{text}");
    assert!(text.contains("is not visible from here"), "{text}");
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn end_to_end_sigterm_through_the_signal_dialog() {
    // Two stand-in GPU processes of this test's own: the dialog must end the chosen one only.
    let mut chosen = StdCommand::new("sleep").arg("60").spawn().expect("sleep");
    let mut other = StdCommand::new("sleep").arg("60").spawn().expect("sleep");
    let s = scenario(&format!(
        r#"{{"version":1,"devices":[{{"name":"Fake H100","memory_total_mib":81559,
            "processes":[{{"pid":{},"memory_mib":30000}},{{"pid":{},"memory_mib":100}}]}}]}}"#,
        chosen.id(),
        other.id()
    ));
    let tmux = Tmux::new(120, 40, &e2e_env(&s));
    let bin = env!("CARGO_BIN_EXE_gpumon");
    tmux.type_line(&format!("{bin} --interval 200ms; echo EXIT=$((1+1))"));
    let pid = chosen.id().to_string();
    tmux.wait_for("the chosen process at the top", |s| {
        s.contains(&format!("▶ pid {pid} GPU 0"))
    });
    tmux.run(&["send-keys", "-t", "e2e", "k"]);
    tmux.wait_for("the dialog", |s| s.contains("▶ SIGTERM (15)"));
    tmux.run(&["send-keys", "-t", "e2e", "Enter"]);
    tmux.wait_for("the outcome", |s| {
        s.contains(&format!("sent SIGTERM to pid {pid}"))
    });
    let start = Instant::now();
    let status = loop {
        if let Ok(Some(status)) = chosen.try_wait() {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "not signalled");
        std::thread::sleep(Duration::from_millis(20));
    };
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(15));
    assert!(
        other.try_wait().expect("wait").is_none(),
        "the other is untouched"
    );
    tmux.run(&["send-keys", "-t", "e2e", "Enter"]);
    tmux.wait_for("the dialog to close", |s| !s.contains("Send a signal"));
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    tmux.assert_restored("EXIT=2");
    let _ = other.kill();
    let _ = other.wait();
}

/// `e` opens the estimate panel against the GPU of the selected process; typed flags update
/// the report, which reads that GPU's free memory from the live sample.
#[test]
fn snapshot_estimate_panel_against_the_selected_gpu() {
    let (mut terminal, mut app) = screen(120, 40, 5, two_gpus);
    app.on_key(KeyEvent::new(KeyCode::Char('e'), KeyModifiers::NONE));
    assert_eq!(app.mode, gpumon::tui::app::Mode::Estimate);
    // It opens empty, with an example greyed where the flags go.
    assert_eq!(app.estimate.text, "");
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    assert!(terminal.backend().to_string().contains("e.g. --params 7B"));
    // Llama-2-7B's config, inference at 4096 tokens: its files are read off the UI thread.
    let config = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/configs/llama-2-7b.json"
    );
    app.on_paste(&format!(
        "--model {config} --inference --seq-len 4096 --dtype fp16"
    ));
    assert_eq!(
        app.estimate.text,
        format!("--model {config} --inference --seq-len 4096 --dtype fp16"),
        "nothing before what was pasted"
    );
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    assert!(terminal
        .backend()
        .to_string()
        .contains("reading the model's files…"));
    // What the event loop does: work the request out elsewhere and hand it back.
    let flags = app
        .take_estimate_request()
        .expect("a request for the files");
    assert!(app.take_estimate_request().is_none());
    let result = gpumon::cli::panel_estimate(&flags);
    // A result for other flags (typed on since) is dropped.
    let _ = app.on_estimate("--params 1B", gpumon::cli::panel_estimate("--params 1B"));
    assert!(app.estimate.reading);
    let _ = app.on_estimate(&flags, result);
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    let text = terminal.backend().to_string();
    // The selected row is a process on GPU 1.
    assert!(text.contains("Estimate against GPU 1"), "{text}");
    assert!(
        text.contains("6.74 B parameters (llama), inference"),
        "{text}"
    );
    assert!(
        text.contains("KV cache") && text.contains("2.0 GiB"),
        "{text}"
    );
    // Only that GPU is judged, with its live free memory.
    assert_eq!(text.matches("  free ").count(), 1, "{text}");
    assert!(
        text.contains("[1] NVIDIA H100 80GB HBM3        free   59.6 GiB   fits"),
        "{text}"
    );
    // A typo says what is wrong instead of a report.
    app.on_paste(" --batchh 2");
    let flags = app.take_estimate_request().expect("a request");
    let result = gpumon::cli::panel_estimate(&flags);
    let _ = app.on_estimate(&flags, result);
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    let text = terminal.backend().to_string();
    assert!(text.contains("unexpected argument '--batchh'"), "{text}");
    app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert_eq!(app.mode, gpumon::tui::app::Mode::Normal);
    // Reopened, the flags are kept; the snapshot uses flags without a machine's paths.
    app.on_key(KeyEvent::new(KeyCode::Char('e'), KeyModifiers::NONE));
    assert!(app.estimate.text.ends_with("--batchh 2"));
    app.on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    app.on_paste("--params 7B --layers 32 --hidden 4096 --heads 32 --vocab 32000 --batch 2 --seq-len 4096 --mixed-precision");
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    insta::assert_snapshot!("estimate_panel", terminal.backend());
}

/// The one escaping rule on screen: a command line and a GPU name that carry terminal
/// escapes show them escaped in the table, the details view and the signal dialog, and no
/// cell holds a control or reordering character.
#[test]
fn escape_sequences_in_commands_and_gpu_names_show_escaped_everywhere_on_screen() {
    let hostile = |_| {
        let mut d = device(0, 1, 20000, false);
        d.name = Some("GPU\u{1b}[2J\u{9b}31m".into());
        d.processes[0].command = Some("\u{1b}]0;pwned\u{7}\u{9b}2J\u{202e}evil\nx".into());
        d.processes[0].user = Some("e\u{1b}[31mvil".into());
        vec![d]
    };
    let (mut terminal, mut app) = screen(160, 40, 2, hostile);
    let clean = |terminal: &Terminal<TestBackend>| {
        let buf = terminal.backend().buffer();
        buf.content()
            .iter()
            .all(|c| !c.symbol().chars().any(gpumon::text::is_unsafe))
    };
    let text = terminal.backend().to_string();
    assert!(text.contains("\\u{1b}]0;pwned"), "{text}");
    assert!(text.contains("GPU\\u{1b}[2J\\u{9b}31m"), "{text}");
    assert!(clean(&terminal), "{text}");
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    let text = terminal.backend().to_string();
    assert!(text.contains("\\u{202e}evil"), "details: {text}");
    assert!(clean(&terminal), "details: {text}");
    app.on_key(KeyEvent::new(KeyCode::Char('k'), KeyModifiers::NONE));
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    assert!(clean(&terminal), "signal dialog: {}", terminal.backend());
}

/// The newest gpumon started as `bin args…`.
fn gpumon_pid(pattern: &str) -> String {
    let start = Instant::now();
    loop {
        let out = StdCommand::new("pgrep")
            .args(["-n", "-f", pattern])
            .output()
            .expect("pgrep");
        let pid = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if !pid.is_empty() {
            return pid;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no {pattern}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Finding 15: a bracketed paste whose end marker never comes no longer swallows every later
/// key: half a second after its last byte it ends, and `q` quits.
#[test]
fn end_to_end_an_unterminated_paste_does_not_swallow_the_keys() {
    let s = scenario(E2E_SCENARIO);
    let tmux = Tmux::new(120, 40, &e2e_env(&s));
    let bin = env!("CARGO_BIN_EXE_gpumon");
    tmux.type_line(&format!("{bin} --interval 200ms; echo EXIT=$?"));
    tmux.wait_for("the dashboard", |s| s.contains("[0] Fake H100"));
    // The start marker, some text, and no end marker.
    tmux.run(&[
        "send-keys",
        "-t",
        "e2e",
        "-l",
        "\x1b[200~RuntimeError: CUDA out of mem",
    ]);
    tmux.wait_for("the paste to end by itself", |s| s.contains("OOM analyzer"));
    tmux.run(&["send-keys", "-t", "e2e", "Escape"]);
    tmux.wait_for("the panel to close", |s| !s.contains("OOM analyzer"));
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    tmux.assert_restored("EXIT=0");
}

/// Finding 15: SIGTSTP (and Ctrl-Z, a key in raw mode) gives the terminal back and stops the
/// job; `fg` takes it again and repaints the whole screen.
#[test]
fn end_to_end_stopping_and_continuing_restores_then_repaints() {
    let s = scenario(E2E_SCENARIO);
    let tmux = Tmux::new(120, 40, &e2e_env(&s));
    let bin = env!("CARGO_BIN_EXE_gpumon");
    tmux.type_line("set -m");
    // Alone on its line: `; echo` would run as soon as the job stops.
    tmux.type_line(&format!("{bin} --interval 300ms"));
    tmux.wait_for("the dashboard", |s| s.contains("[0] Fake H100"));
    let pid = gpumon_pid(&format!("^{bin} --interval 300ms"));
    for stop in ["signal", "key"] {
        match stop {
            "signal" => {
                StdCommand::new("kill")
                    .args(["-TSTP", &pid])
                    .status()
                    .expect("kill");
            }
            _ => {
                tmux.run(&["send-keys", "-t", "e2e", "C-z"]);
            }
        }
        tmux.wait_for("the job to stop", |s| s.contains("Stopped"));
        assert!(!tmux.alternate_on(), "{stop}: the alternate screen is left");
        tmux.run(&["send-keys", "-t", "e2e", "clear", "Enter"]);
        tmux.type_line("stty -a | tr ' ' '\\n' | grep -xE -- '-?(icanon|echo)' | tr '\\n' ' '; echo STTY-$((40+2))");
        let screen = tmux.wait_for("stty", |s| s.contains("STTY-42"));
        assert!(
            screen.contains("icanon echo STTY-42"),
            "{stop}: still raw:\n{screen}"
        );
        tmux.type_line("fg");
        tmux.wait_for("the dashboard again", |s| {
            s.contains("[0] Fake H100") && !s.contains("STTY-42")
        });
        assert!(tmux.alternate_on(), "{stop}: back on the alternate screen");
        // Repainted whole, the host line and the table included: a frame drawn as a
        // difference would never send them again (they did not change).
        tmux.wait_for("the whole screen", |s| {
            s.contains("host ") && s.contains("4500001")
        });
    }
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    tmux.wait_for("the shell", |s| !s.contains("[0] Fake H100"));
    tmux.type_line("echo EXIT=$((1000+$?))");
    tmux.assert_restored("EXIT=1000");
}

/// Finding 20: SIGQUIT, SIGUSR1, SIGUSR2 and SIGALRM end the dashboard with the terminal
/// restored (they ended it raw); Alt-q does not quit.
#[test]
fn end_to_end_other_signals_restore_and_alt_q_does_not_quit() {
    let s = scenario(E2E_SCENARIO);
    let tmux = Tmux::new(100, 30, &e2e_env(&s));
    let bin = env!("CARGO_BIN_EXE_gpumon");
    for (i, sig) in ["QUIT", "USR1", "USR2", "ALRM"].iter().enumerate() {
        tmux.run(&["send-keys", "-t", "e2e", "clear", "Enter"]);
        let interval = format!("{}ms", 300 + i);
        tmux.type_line(&format!(
            "{bin} --interval {interval}; echo EXIT=$((1000+$?))"
        ));
        tmux.wait_for("the dashboard", |s| s.contains("[0] Fake H100"));
        if i == 0 {
            tmux.run(&["send-keys", "-t", "e2e", "M-q"]);
            std::thread::sleep(Duration::from_millis(500));
            assert!(tmux.alternate_on(), "Alt-q quit the dashboard");
        }
        let pid = gpumon_pid(&format!("^{bin} --interval {interval}"));
        StdCommand::new("kill")
            .args([&format!("-{sig}"), &pid])
            .status()
            .expect("kill");
        tmux.assert_restored("EXIT=1000");
    }
}

/// Finding 15: TERM=dumb gets plain output: the once report, no full-screen dashboard, no
/// colour.
#[test]
fn end_to_end_a_dumb_terminal_gets_the_plain_report() {
    let s = scenario(E2E_SCENARIO);
    let tmux = Tmux::new(120, 40, &e2e_env(&s));
    let bin = env!("CARGO_BIN_EXE_gpumon");
    tmux.type_line(&format!(
        "TERM=dumb {bin} | cat -v; echo EXIT=$((1000+${{PIPESTATUS[0]}}))"
    ));
    let screen = tmux.wait_for("the report", |s| s.contains("EXIT=1000"));
    assert!(screen.contains("[0] Fake H100"), "{screen}");
    assert!(
        !screen.contains("^["),
        "colour codes on a dumb terminal:\n{screen}"
    );
    tmux.run(&["send-keys", "-t", "e2e", "clear", "Enter"]);
    // On the terminal itself (not a pipe): still the report, and the shell is back at once.
    tmux.type_line(&format!("TERM=dumb {bin}; echo EXIT=$((1000+$?))"));
    tmux.wait_for("the report", |s| {
        s.contains("EXIT=1000") && s.contains("[0] Fake H100")
    });
    assert!(!tmux.alternate_on());
}

/// Findings 11 and 17: the estimate panel given `--model /dev/zero` or a FIFO says what it is
/// at once and the dashboard stays live (it froze, and ignored SIGTERM, reading /dev/zero on
/// the UI thread); its flags keep no large paste's memory.
#[test]
fn end_to_end_the_estimate_panel_never_freezes_on_a_bad_model_path() {
    let dir = tempfile::tempdir().expect("dir");
    let pipe = dir.path().join("model.fifo");
    let c = std::ffi::CString::new(pipe.to_str().expect("utf-8")).expect("path");
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let s = scenario(E2E_SCENARIO);
    let tmux = Tmux::new(140, 40, &e2e_env(&s));
    let bin = env!("CARGO_BIN_EXE_gpumon");
    tmux.type_line(&format!("{bin} --interval 200ms; echo EXIT=$?"));
    tmux.wait_for("the dashboard", |s| s.contains("[0] Fake H100"));
    tmux.run(&["send-keys", "-t", "e2e", "e"]);
    tmux.wait_for("the estimate panel", |s| s.contains("e.g. --params 7B"));
    tmux.run(&["send-keys", "-t", "e2e", "-l", "--", "--model /dev/zero"]);
    tmux.wait_for("the device to be named", |s| {
        s.contains("/dev/zero: is a device")
    });
    tmux.run(&["send-keys", "-t", "e2e", "C-u"]);
    tmux.run(&[
        "send-keys",
        "-t",
        "e2e",
        "-l",
        "--",
        &format!("--model {}", pipe.display()),
    ]);
    tmux.wait_for("the FIFO to be named", |s| s.contains("is a FIFO"));
    tmux.run(&["send-keys", "-t", "e2e", "Escape"]);
    tmux.wait_for("the panel to close", |s| !s.contains("Estimate against"));
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    tmux.assert_restored("EXIT=0");
}

#[test]
fn the_estimate_panel_keeps_no_large_paste() {
    let (_, mut app) = screen(120, 40, 2, two_gpus);
    app.on_key(KeyEvent::new(KeyCode::Char('e'), KeyModifiers::NONE));
    app.on_paste(&"--params 7B ".repeat(400_000));
    assert!(app.estimate.text.len() <= gpumon::tui::app::MAX_FLAGS);
    assert!(app.estimate.text.capacity() <= 4 * gpumon::tui::app::MAX_FLAGS);
    app.on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    assert_eq!(app.estimate.text.capacity(), 0, "cleared, memory and all");
}

/// Issue 30: `gpumon explain` on a terminal says how to end the input (it waited in
/// silence), then explains what was pasted.
#[test]
fn end_to_end_explain_on_a_terminal_says_how_to_end_the_input() {
    let s = scenario(E2E_SCENARIO);
    let tmux = Tmux::new(120, 30, &e2e_env(&s));
    let bin = env!("CARGO_BIN_EXE_gpumon");
    // Offline: the scenario's GPU 0 matches the error, and its holders would push the
    // report's head off the screen.
    tmux.type_line(&format!("{bin} explain --offline; echo EXIT=$?"));
    tmux.wait_for("the prompt", |s| {
        s.contains("paste the error or the log, then press Ctrl-D")
    });
    tmux.type_line("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.19 GiB is free.");
    tmux.run(&["send-keys", "-t", "e2e", "C-d"]);
    let screen = tmux.wait_for("the report", |s| s.contains("EXIT=0"));
    assert!(
        screen.contains("request 2.0 GiB (does not fit)"),
        "{screen}"
    );
}

/// A GPU whose process runs under the probe, beside another process: every part of the
/// selected-process line exists (allocated, cached, outside, other apps, free).
fn split_process(_t: u64) -> Vec<Device> {
    let mut d = device(0, 2, 30000, false);
    d.processes[0].allocator = Some(Box::new(gpumon::model::AllocatorStats {
        framework: "pytorch".into(),
        framework_version: Some("2.5.1".into()),
        allocated_bytes: Some(10 << 30),
        allocated_peak_bytes: Some(12 << 30),
        reserved_bytes: Some(13 << 30),
        reserved_peak_bytes: Some(14 << 30),
        active_bytes: None,
        inactive_split_bytes: None,
        num_alloc_retries: Some(0),
        num_ooms: Some(0),
        age_ms: 0,
        run_id: None,
        steps: None,
        step_growth: None,
        step_marker: None,
        steps_marked: None,
        held_sites: None,
    }));
    vec![d]
}

/// Issue 30: the selected-process line drops whole fields, lowest first ("non-framewor",
/// "· ot" were cut at the edge), and at 120 columns shows free and the other apps.
#[test]
fn snapshot_the_selected_process_line_keeps_whole_fields() {
    let field = Regex::new(r"^(alloc|cached|non-framework|other apps|free|this process|reserved) [0-9.]+ (B|KiB|MiB|GiB|TiB)$")
        .expect("regex");
    for (w, h) in [(80, 24), (100, 30), (120, 40)] {
        let (terminal, _) = screen(w, h, 3, split_process);
        let text = terminal.backend().to_string();
        let line = text
            .lines()
            .find(|l| l.contains("▶ pid"))
            .unwrap_or_else(|| panic!("{w}x{h}: no selection line:\n{text}"))
            .trim_matches('"')
            .trim_end();
        // After the bar: " field · field · …", each whole.
        let after = line
            .rsplit_once(|c: char| "█▓▒░".contains(c))
            .map_or("", |(_, r)| r);
        for f in after.split('·').map(str::trim).filter(|f| !f.is_empty()) {
            assert!(
                field.is_match(f),
                "{w}x{h}: a field cut short: {f:?} in {line:?}"
            );
        }
        if w >= 120 {
            assert!(
                after.contains("free") && after.contains("other apps"),
                "{w}x{h}: {line}"
            );
        }
        insta::assert_snapshot!(format!("selection_line_{w}x{h}"), line);
    }
}

/// Issue 30: the help is scrollable where it does not fit (80×24 clipped its last keys) and
/// whole where it does.
#[test]
fn snapshot_help_scrolls_where_it_does_not_fit() {
    let (mut terminal, mut app) = screen(80, 24, 3, two_gpus);
    app.on_key(KeyEvent::new(KeyCode::Char('?'), KeyModifiers::NONE));
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    let top = terminal.backend().to_string();
    assert!(top.contains("↑↓ PgUp PgDn scroll · 1–"), "{top}");
    assert!(
        !top.contains("Ctrl-Z"),
        "the last key is below the fold at first"
    );
    insta::assert_snapshot!("help_80x24_top", terminal.backend());
    for _ in 0..3 {
        app.on_key(KeyEvent::new(KeyCode::PageDown, KeyModifiers::NONE));
    }
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    let end = terminal.backend().to_string();
    assert!(
        end.contains("Ctrl-Z") && end.contains("Press any other key"),
        "{end}"
    );
    insta::assert_snapshot!("help_80x24_end", terminal.backend());
    assert_eq!(
        app.mode,
        gpumon::tui::app::Mode::Help,
        "scrolling keeps it open"
    );
    app.on_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE));
    assert_eq!(app.mode, gpumon::tui::app::Mode::Normal);
    let (mut terminal, mut app) = screen(120, 40, 3, two_gpus);
    app.on_key(KeyEvent::new(KeyCode::Char('?'), KeyModifiers::NONE));
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    let all = terminal.backend().to_string();
    for (k, _) in gpumon::tui::ui::KEYS {
        assert!(all.contains(k), "{k} missing at 120x40:\n{all}");
    }
    insta::assert_snapshot!("help_120x40", terminal.backend());
}

/// Issue 30: after a `/` filter is kept with Enter, Esc clears it (it did not), and the
/// footer says so; the footer drops whole hints at the edge (it was cut mid-word).
#[test]
fn snapshot_esc_clears_the_filter_and_the_footer_keeps_whole_hints() {
    for (w, h) in [(80, 24), (120, 40)] {
        let (mut terminal, mut app) = screen(w, h, 3, two_gpus);
        let press = |app: &mut App, c: KeyCode| {
            app.on_key(KeyEvent::new(c, KeyModifiers::NONE));
        };
        press(&mut app, KeyCode::Char('/'));
        for c in "bob".chars() {
            press(&mut app, KeyCode::Char(c));
        }
        press(&mut app, KeyCode::Enter);
        terminal
            .draw(|f| gpumon::tui::ui::draw(f, &mut app))
            .expect("draw");
        let text = terminal.backend().to_string();
        let footer = text
            .lines()
            .last()
            .unwrap_or_default()
            .trim_matches('"')
            .trim_end();
        assert!(
            footer.contains("filter: bob (Esc clears)"),
            "{w}x{h}: {footer}"
        );
        let hints = [
            "quit",
            "help",
            "(Esc clears)",
            "details",
            "signal",
            "filter",
            "sort",
            "OOM panel",
            "pause",
            "interval",
            "estimate",
        ];
        assert!(
            hints.iter().any(|h| footer.ends_with(h)),
            "{w}x{h}: cut mid-hint: {footer:?}"
        );
        insta::assert_snapshot!(format!("footer_filter_{w}x{h}"), footer);
        press(&mut app, KeyCode::Esc);
        assert_eq!(app.table.filter, "", "Esc clears the filter");
        terminal
            .draw(|f| gpumon::tui::ui::draw(f, &mut app))
            .expect("draw");
        let text = terminal.backend().to_string();
        let footer = text
            .lines()
            .last()
            .unwrap_or_default()
            .trim_matches('"')
            .trim_end();
        assert!(!footer.contains("filter:"), "{footer}");
        assert!(
            hints.iter().any(|h| footer.ends_with(h)),
            "{w}x{h}: cut mid-hint: {footer:?}"
        );
        insta::assert_snapshot!(format!("footer_{w}x{h}"), footer);
    }
}

/// A pseudo-terminal (100×30) that is not gpumon's controlling terminal, so closing its other
/// end sends no SIGHUP: the end gpumon gets, and the end the test keeps.
fn pseudo_terminal() -> (std::fs::File, std::fs::File) {
    use std::ffi::CStr;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::fs::OpenOptionsExt;
    // SAFETY: plain libc calls on a descriptor this test owns; ptsname's string is copied at once.
    let (master, name) = unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(fd >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
        // Not inherited: gpumon holding this end open would keep the terminal alive.
        assert_eq!(libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC), 0);
        assert_eq!(libc::grantpt(fd), 0);
        assert_eq!(libc::unlockpt(fd), 0);
        let name = CStr::from_ptr(libc::ptsname(fd))
            .to_str()
            .expect("name")
            .to_owned();
        let size = libc::winsize {
            ws_row: 30,
            ws_col: 100,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        libc::ioctl(fd, libc::TIOCSWINSZ, &size);
        (std::fs::File::from(OwnedFd::from_raw_fd(fd)), name)
    };
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(&name)
        .expect("open the terminal's other end");
    (slave, master)
}

/// The terminal gpumon reads its keys from goes away (its other end closed, with no SIGHUP),
/// while the one it draws on stays: the dashboard quits, instead of polling a closed input for
/// ever (a busy loop at 100% of a core, drawing on).
#[test]
fn end_to_end_a_keyboard_that_goes_away_ends_the_dashboard() {
    use std::io::Read;
    let (keys, keys_master) = pseudo_terminal();
    let (screen, screen_master) = pseudo_terminal();
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_gpumon"))
        .args(["--demo", "--interval", "100ms"])
        .env("TERM", "xterm-256color")
        .stdin(keys)
        .stdout(screen)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start gpumon");
    // Read what the dashboard draws, so that its writes never block.
    let mut reader = screen_master;
    let (tx, drawn) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 65536];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            if seen.len() < 1 << 20 {
                seen.extend_from_slice(&buf[..n]);
                if String::from_utf8_lossy(&seen).contains("NVIDIA H100") {
                    let _ = tx.send(());
                }
            }
        }
    });
    drawn
        .recv_timeout(Duration::from_secs(20))
        .expect("the dashboard drew a frame");
    drop(keys_master);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if start.elapsed() > Duration::from_secs(10) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(
        status.is_some(),
        "gpumon kept running 10 s after the terminal it reads went away"
    );
}

/// The estimate panel opens empty, its example greyed (not pre-filled flags that typing would
/// append to), at 80×24 and 120×40; the first key typed starts the flags.
#[test]
fn snapshot_the_estimate_panel_opens_empty_with_an_example() {
    for (w, h) in [(80, 24), (120, 40)] {
        let (mut terminal, mut app) = screen(w, h, 3, two_gpus);
        app.on_key(KeyEvent::new(KeyCode::Char('e'), KeyModifiers::NONE));
        terminal
            .draw(|f| gpumon::tui::ui::draw(f, &mut app))
            .expect("draw");
        assert_eq!(app.estimate.text, "");
        insta::assert_snapshot!(format!("estimate_panel_empty_{w}x{h}"), terminal.backend());
        app.on_key(KeyEvent::new(KeyCode::Char('-'), KeyModifiers::NONE));
        assert_eq!(app.estimate.text, "-", "the first key starts the flags");
    }
}

/// GPU 0 uses 20,000 MiB more than its one listed process: two workers that outlived their
/// job hold it, and three processes could not be inspected.
fn orphaned_workers(_: u64) -> Vec<Device> {
    use gpumon::model::{Holder, HolderReason};
    let mut d = device(0, 1, 40000, false);
    d.processes[0].gpu_memory_bytes = Some(20000 * MIB);
    let worker = |pid: u32| Holder {
        pid: Some(pid),
        user: Some("alice".into()),
        command: Some("/usr/bin/python3 -c from multiprocessing.spawn import spawn_main".into()),
        state: Some("S".into()),
        parent_pid: Some(1),
        reason: HolderReason::NotListed,
        bytes: None,
        count: 1,
        age_s: Some(7200),
    };
    d.holders = vec![
        // Pids above any machine's pid_max (4194304), so no real process answers the dialog.
        worker(4_194_311),
        worker(4_194_312),
        Holder {
            pid: None,
            user: None,
            command: None,
            state: None,
            parent_pid: None,
            reason: HolderReason::Unreadable,
            bytes: None,
            count: 3,
            age_s: None,
        },
    ];
    vec![d, device(1, 1, 20000, false)]
}

/// The holders of unattributed memory: a line under the GPU's gauge, rows in the table that
/// say why, and the details view and signal dialog on a holder row.
#[test]
fn snapshot_holders_under_the_gauge_and_in_the_table() {
    let (mut terminal, mut app) = screen(120, 30, 3, orphaned_workers);
    let text = terminal.backend().to_string();
    let gauge_row = text
        .lines()
        .position(|l| l.contains("unattributed 19.5 GiB held by:"))
        .unwrap_or_else(|| panic!("no holders line: {text}"));
    assert_eq!(gauge_row, 4, "under GPU 0's gauge:\n{text}");
    assert!(
        text.contains("pids 4194311, 4194312 not listed (python3, alice)"),
        "{text}"
    );
    assert!(text.contains("3 unreadable (root can name them)"), "{text}");
    assert!(text.contains("[not listed] /usr/bin/python3"), "{text}");
    insta::assert_snapshot!("holders_120x30", terminal.backend());

    // The holder rows sort after the listed process by memory (theirs is unknown); select
    // the first and open its details, then the signal dialog.
    let row = (0..app.row_count())
        .find(|&i| app.row(i).is_some_and(|r| r.holder.is_some()))
        .expect("a holder row");
    for _ in 0..row {
        app.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    }
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    let text = terminal.backend().to_string();
    assert!(text.contains("holds memory outside NVML's list"), "{text}");
    assert!(
        text.contains("holds the GPU but NVML does not list it"),
        "{text}"
    );
    app.on_key(KeyEvent::new(KeyCode::Char('k'), KeyModifiers::NONE));
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    let text = terminal.backend().to_string();
    assert!(text.contains("SIGTERM"), "{text}");
    assert!(text.contains("4194311"), "{text}");
    insta::assert_snapshot!("holders_signal_120x30", terminal.backend());

    // The OOM panel, pasted an error that names the listed process on GPU 0: beside the
    // report, who holds what the error cannot attribute.
    app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    app.on_paste("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which 40.00 GiB is free. Process 40000 has 19.53 GiB memory in use. Of the allocated memory 17.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.");
    let mut tall = Terminal::new(TestBackend::new(160, 60)).expect("terminal");
    tall.draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    let text: String = tall
        .backend()
        .to_string()
        .lines()
        .map(|l| l.trim_matches('"').trim_end().to_owned() + " ")
        .collect();
    assert!(
        text.contains("Held outside NVML's process list now"),
        "{text}"
    );
    assert!(text.contains("pid 4194311"), "{text}");
}

/// Alice trains on both GPUs; bob's notebook holds 20 GiB on GPU 0 at 0% SM.
fn lab(_: u64) -> Vec<Device> {
    let mut d0 = device(0, 2, 60000, false);
    d0.processes[0].user = Some("alice".into());
    d0.processes[0].gpu_memory_bytes = Some(40000 * MIB);
    let bob = &mut d0.processes[1];
    bob.user = Some("bob".into());
    bob.command = Some("python -m ipykernel_launcher -f kernel-51377.json".into());
    bob.gpu_memory_bytes = Some(20480 * MIB);
    bob.sm_percent = Some(0);
    let mut d1 = device(1, 1, 40000, false);
    d1.processes[0].user = Some("alice".into());
    vec![d0, d1]
}

/// The per-user view (Tab): a row per user with GPUs, memory, mean %SM, GPU-hours and idle
/// holds (bob's 20 GiB after more than --idle-after at 0% SM), its sort, the switch to
/// owners, and Enter filtering the process table to that user.
#[test]
fn snapshot_the_per_user_view_its_sort_and_idle_holds() {
    let mut terminal = Terminal::new(TestBackend::new(120, 30)).expect("terminal");
    let mut app = App::new(&crate::common::dashboard_settings(
        Duration::from_secs(1),
        Duration::from_secs(600),
    ));
    app.usage =
        gpumon::model::rollup::Usage::new(Duration::from_secs(300), Duration::from_secs(600));
    for t in 0..=20 {
        render_once(&mut terminal, &mut app, sample(t * 20, lab(t))).expect("draw");
    }
    let key = |app: &mut App, c: KeyCode| app.on_key(KeyEvent::new(c, KeyModifiers::NONE));
    key(&mut app, KeyCode::Tab);
    terminal
        .draw(|f| gpumon::tui::ui::draw(f, &mut app))
        .expect("draw");
    let text = terminal.backend().to_string();
    let row = |name: &str| {
        text.lines()
            .map(|l| l.trim_matches('"'))
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} row:\n{text}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    // alice: GPUs 0,1, 2 processes, 78.1 GiB, %SM 85, 2 GPUs × 400 s, nothing idle.
    assert_eq!(
        row("alice"),
        ["alice", "0,1", "2", "78.1", "GiB", "85", "0.22", "0", "B"],
        "{text}"
    );
    assert_eq!(
        row("bob"),
        ["bob", "0", "1", "20.0", "GiB", "0", "0.11", "20.0", "GiB"],
        "{text}"
    );
    assert!(text.contains("GPU MEM▼"), "{text}");
    insta::assert_snapshot!("per_user_120x30", terminal.backend());

    // Sorted by idle holds (the 7th column), bob comes first; Enter filters to him.
    key(&mut app, KeyCode::Char('7'));
    assert_eq!(app.user_rows()[0].key, "bob");
    key(&mut app, KeyCode::Char('7'));
    assert_eq!(app.user_rows()[0].key, "alice", "again reverses");
    key(&mut app, KeyCode::Char('b'));
    assert_eq!(app.user_rows()[0].key, "host", "per owner: host processes");
    key(&mut app, KeyCode::Char('b'));
    key(&mut app, KeyCode::Char('7'));
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.mode, gpumon::tui::app::Mode::Normal);
    assert_eq!(app.table.filter, "bob");
    let users: Vec<String> = (0..app.row_count())
        .filter_map(|i| app.row(i)?.process.user.clone())
        .collect();
    assert_eq!(users, ["bob"]);
}

/// The GPU line of GPU `i` on a tmux screen: its used memory as shown ("3.2 GiB").
fn shown_used(screen: &str, i: u32) -> Option<String> {
    let line = line_with(screen, &format!("[{i}] "))?;
    let re = Regex::new(r"([0-9.]+ [KMGT]?i?B) / [0-9.]+ [KMGT]i?B").expect("regex");
    Some(re.captures(line)?[1].to_owned())
}

/// `gpumon replay` in tmux on a real recording: the header says REPLAY and the time, the
/// figures are the recorded ones at the cursor (the first sample, then the last after `]`),
/// ← steps back, space plays, and q exits with the terminal restored.
#[test]
fn end_to_end_replay_moves_its_cursor_and_shows_the_recorded_figures() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("night.rec.zst");
    let scn = scenario(crate::recording::CLIMB);
    let mut rec = crate::recording::start_record(&scn, &file, "300ms");
    let deadline = Instant::now() + Duration::from_secs(30);
    while crate::recording::replayed_count(&file) < 24 {
        assert!(Instant::now() < deadline, "nothing recorded");
        std::thread::sleep(Duration::from_millis(200));
    }
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(rec.id() as i32, libc::SIGTERM) };
    let _ = rec.wait();
    let used_at = |at: Option<&str>| {
        let mut cmd = crate::common::gpumon();
        cmd.args(["once", "--json", "--replay"]).arg(&file);
        if let Some(at) = at {
            cmd.args(["--at", at]);
        }
        let s = crate::common::stdout_json(&mut cmd);
        gpumon::units::fmt_bytes(
            s["devices"][0]["memory"]["used_bytes"]
                .as_u64()
                .expect("used"),
        )
    };
    let (first, last) = (used_at(Some("+0s")), used_at(None));
    assert_ne!(first, last, "the recording climbs");

    let tmux = Tmux::new(120, 30, &[("PS1", "$ ".into())]);
    let bin = env!("CARGO_BIN_EXE_gpumon");
    tmux.type_line(&format!(
        "{bin} replay {}; echo DONE-$((1+1))",
        file.display()
    ));
    let s = tmux.wait_for("the replay", |s| s.contains("REPLAY") && s.contains("[0] "));
    assert!(s.contains("night.rec.zst"), "{s}");
    assert_eq!(shown_used(&s, 0).as_deref(), Some(first.as_str()), "{s}");
    // A minute on: past the end, so the last sample.
    tmux.run(&["send-keys", "-t", "e2e", "]"]);
    let s = tmux.wait_for("the last sample", |s| {
        shown_used(s, 0).as_deref() == Some(last.as_str())
    });
    // GPU 1 was lost by then, as recorded.
    assert!(s.contains("GPU is lost"), "{s}");
    tmux.run(&["send-keys", "-t", "e2e", "Left"]);
    tmux.run(&["send-keys", "-t", "e2e", "[", "Space"]);
    tmux.wait_for("playing", |s| s.contains("▶ 1×"));
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    tmux.assert_restored("DONE-2");
}

/// A GPU with MIG on: two instances with their processes (tagged with their GPU instance), a
/// recent Xid and a pending row remapping.
fn mig_gpu(t: u64) -> Vec<Device> {
    use gpumon::model::health::{Health, RemappedRows};
    use gpumon::model::MigDevice;
    let mut d = device(0, 3, 30000, false);
    d.utilization = Utilization::default();
    d.field_errors.insert("utilization", "not supported".into());
    for (i, p) in d.processes.iter_mut().enumerate() {
        p.gpu_instance_id = Some(if i < 2 { 1 } else { 5 });
        p.compute_instance_id = Some(0);
        p.sm_percent = None;
        p.mem_bw_percent = None;
    }
    let instance = |index, gi, profile: &str, total_mib: u64, used_mib: u64| MigDevice {
        index,
        uuid: Some(format!("MIG-0000000{index}")),
        name: Some(format!("NVIDIA H100 80GB HBM3 MIG {profile}")),
        profile: Some(profile.into()),
        gpu_instance_id: Some(gi),
        compute_instance_id: Some(0),
        memory: Memory {
            total_bytes: Some(total_mib * MIB),
            used_bytes: Some(used_mib * MIB),
            free_bytes: Some((total_mib - used_mib) * MIB),
            reserved_bytes: Some(0),
        },
        utilization: Utilization::default(),
        field_errors: [("utilization", "not supported".to_owned())].into(),
    };
    // 10000 MiB per process: two in GI 1 (with 512 MiB nobody lists), one in GI 5.
    d.mig = vec![
        instance(0, 1, "3g.40gb", 40448, 20512),
        instance(1, 5, "3g.40gb", 40448, 10000),
    ];
    d.memory.used_bytes = Some(30512 * MIB);
    d.health = Health {
        xids_watched: true,
        remapped_rows: Some(RemappedRows {
            corrected: 0,
            uncorrected: 1,
            pending: true,
            failed: false,
        }),
        clock_event_reasons: Some(0x4),
        ..Health::default()
    };
    if t >= 3 {
        d.health.add_xid(94, at(t * 20 - 30), Some(1));
    }
    vec![d, device(1, 1, 20000, false)]
}

#[test]
fn snapshot_mig_instances_under_their_parent_and_the_health_line() {
    let (terminal, _) = screen(160, 40, 6, mig_gpu);
    let text = format!("{:?}", terminal.backend());
    assert!(text.contains("MIG 3g.40gb GI 1"), "{text}");
    assert!(text.contains("Xid 94 (MIG GI 1) 30s ago"), "{text}");
    assert!(text.contains("row remapping pending"), "{text}");
    insta::assert_snapshot!(terminal.backend());
}

const XID_SCENARIO: &str = r#"{"version":1,
 "devices":[{"name":"Fake H100","memory_total_mib":81559,"processes":[{"pid":4500001,"memory_mib":1000}]},
            {"name":"Fake H100","memory_total_mib":81559,
             "mig":[{"profile":"3g.40gb","memory_total_mib":40448,"processes":[{"pid":4500002,"memory_mib":2000}]}]}],
 "faults":[{"kind":"xid","device":1,"xid":79,"at_s":3}]}"#;

/// An Xid scripted 3 s after NVML starts reaches the screen within a second of it: the event
/// thread waits on the driver, and the next sample (200 ms here) shows it.
#[test]
fn end_to_end_an_xid_reaches_the_dashboard_within_a_second() {
    let s = scenario(XID_SCENARIO);
    let mut env = e2e_env(&s);
    env.retain(|(k, _)| *k != "FAKE_NVML_SPEED");
    let tmux = Tmux::new(140, 40, &env);
    let bin = env!("CARGO_BIN_EXE_gpumon");
    let launched = Instant::now();
    tmux.type_line(&format!("{bin} --interval 200ms; echo EXIT=$?"));
    let screen = tmux.wait_for("the dashboard", |s| s.contains("[1] Fake H100"));
    // NVML started after the command was typed and before this screen: the Xid is due 3 s
    // after some moment in between.
    let shown = Instant::now();
    assert!(screen.contains("MIG 3g.40gb"), "{screen}");
    assert!(!screen.contains("Xid 79"), "{screen}");
    let screen = tmux.wait_for("the Xid", |s| s.contains("Xid 79"));
    let seen = Instant::now();
    assert!(
        screen.contains("fallen off the bus") && screen.contains("reboot the node"),
        "{screen}"
    );
    let latest = shown.duration_since(launched) + Duration::from_secs(3);
    let after_launch = seen.duration_since(launched);
    eprintln!(
        "Xid on screen {:.2} s after launch (due 3 s after NVML started)",
        after_launch.as_secs_f64()
    );
    assert!(
        after_launch <= latest + Duration::from_millis(1500),
        "the Xid took {after_launch:?} from launch; it was due by {latest:?}"
    );
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    tmux.assert_restored("EXIT=0");
}

/// With many GPUs each gets one line: a sick one says so there, and a MIG GPU's bar shows
/// its instances.
#[test]
fn compact_lines_flag_a_sick_gpu_and_split_a_mig_one() {
    let (terminal, _) = screen(120, 24, 3, |t| {
        let mut gpus: Vec<Device> = (0..16)
            .map(|i| device(i, 2, 1000 * (i as u64 + 1), false))
            .collect();
        gpus[3].health.add_xid(79, at(t * 20), None);
        let mut mig = mig_gpu(t).remove(0);
        mig.index = 5;
        gpus[5] = mig;
        gpus
    });
    let text = format!("{:?}", terminal.backend());
    let line = |i: u32| {
        text.lines()
            .find(|l| l.contains(&format!("\"[{i:>2}]")))
            .unwrap_or_else(|| panic!("no line for GPU {i}:\n{text}"))
            .to_owned()
    };
    assert!(line(3).contains("Xid 79"), "{}", line(3));
    assert!(line(5).contains("remap pending"), "{}", line(5));
    assert!(
        line(5).contains('▕'),
        "the instances side by side: {}",
        line(5)
    );
    assert!(!line(4).contains("Xid"), "{}", line(4));
}
