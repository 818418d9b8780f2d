//! Dashboard efficiency: the release binary in a 200×50 tmux pane on the fake library with
//! 8 GPUs × 40 live processes at a 1 s interval, beside nvtop on the same fake GPUs (and
//! the same build with `--record`, `gpumon record` alone, and other gpumon builds with GPUMON_BENCH_COMPARE=PATH[,PATH…]),
//! all at once. Reports each one's CPU
//! share of steady state (after a warm-up) and its memory: anonymous (private) memory from
//! `/proc/PID/smaps_rollup` beside the resident set, after 60 s and, with GPUMON_BENCH_SECS
//! longer, at its end (660: the 10-minute history full). Then, with every call on GPU 3
//! blocking for 10 minutes, how long `q` takes to end the process. Needs tmux.
//! `cargo bench --bench dashboard`.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{
    fake_lib, memory, scenario, scenario_with_faults, soname_dir, user_binary, Sleepers, GPUS,
    PROCS,
};

fn tmux(socket: &str, args: &[&str]) -> String {
    let out = Command::new("tmux")
        .arg("-L")
        .arg(socket)
        .args(args)
        .output()
        .expect("tmux");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// utime + stime in clock ticks, from /proc/PID/stat.
fn cpu_ticks(pid: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    f[11].parse::<u64>().unwrap_or(0) + f[12].parse::<u64>().unwrap_or(0)
}

/// A dashboard measured in its own 200×50 tmux session.
struct Contestant {
    label: String,
    session: String,
    pid: u32,
    cpu0: u64,
}

fn main() {
    let lib = fake_lib();
    let sleepers = Sleepers::spawn(GPUS * PROCS);
    let path = scenario(&sleepers.pids());
    let socket = format!("gpumon-bench-{}", std::process::id());
    let bin = user_binary();
    let bin = bin.as_str();
    let sonames = soname_dir(&lib);
    let env = format!(
        "GPUMON_NVML_LIB={} FAKE_NVML_SCENARIO={}",
        lib.display(),
        path.display()
    );
    // This build; other gpumon builds to compare with (GPUMON_BENCH_COMPARE=PATH,…); nvtop when it is
    // installed (GPUMON_BENCH_PEERS=0 leaves it out). All run at once, on the same fake GPUs,
    // so the machine's speed of the moment is the same for each.
    let mut commands = vec![
        (
            "gpumon".to_owned(),
            format!("exec env {env} {bin} --interval 1s"),
        ),
        // The same build without the memory-only reads between frames: their cost.
        (
            "gpumon --peak-rate 0".to_owned(),
            format!("exec env {env} {bin} --interval 1s --peak-rate 0"),
        ),
    ];
    // The same build recording every sample (`--record`), unless GPUMON_BENCH_RECORD=0.
    let recording = tempfile::tempdir().expect("dir");
    if std::env::var("GPUMON_BENCH_RECORD").map_or(true, |v| v != "0") {
        commands.push((
            "gpumon --record".to_owned(),
            format!(
                "exec env {env} {bin} --interval 1s --record {}",
                recording.path().join("bench.rec.zst").display()
            ),
        ));
        // And `gpumon record` alone (headless, in a pane like the others).
        commands.push((
            "record (headless)".to_owned(),
            format!(
                "exec env {env} {bin} record --interval 1s -o {}",
                recording.path().join("record.rec.zst").display()
            ),
        ));
    }
    if let Ok(others) = std::env::var("GPUMON_BENCH_COMPARE") {
        for other in others.split(',').filter(|o| !o.is_empty()) {
            commands.push((
                other.to_owned(),
                format!("exec env {env} {other} --interval 1s"),
            ));
        }
    }
    let peers = std::env::var("GPUMON_BENCH_PEERS").map_or(true, |v| v != "0");
    if peers && Command::new("nvtop").arg("--version").output().is_ok() {
        commands.push((
            "nvtop".to_owned(),
            format!(
                "exec env LD_LIBRARY_PATH={} {env} nvtop -d 10",
                sonames.path().display()
            ),
        ));
    }
    let mut contestants: Vec<Contestant> = commands
        .into_iter()
        .enumerate()
        .map(|(i, (label, cmd))| {
            let session = format!("d{i}");
            tmux(
                &socket,
                &[
                    "new-session",
                    "-d",
                    "-s",
                    &session,
                    "-x",
                    "200",
                    "-y",
                    "50",
                    &cmd,
                ],
            );
            let pid = tmux(&socket, &["display", "-p", "-t", &session, "#{pane_pid}"])
                .trim()
                .parse()
                .expect("pane pid");
            Contestant {
                label,
                session,
                pid,
                cpu0: 0,
            }
        })
        .collect();
    std::thread::sleep(Duration::from_secs(5));
    for c in &contestants {
        let screen = tmux(&socket, &["capture-pane", "-p", "-t", &c.session]);
        if c.label.starts_with("gpumon") {
            assert!(
                screen.contains("[7] Bench GPU"),
                "{}: dashboard not drawn:\n{screen}",
                c.label
            );
        }
    }
    let secs = std::env::var("GPUMON_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60u64);
    for c in &mut contestants {
        c.cpu0 = cpu_ticks(&c.pid.to_string());
    }
    let w0 = Instant::now();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let report = |contestants: &[Contestant], at: &str| {
        let wall = w0.elapsed().as_secs_f64();
        for c in contestants {
            let cpu = (cpu_ticks(&c.pid.to_string()) - c.cpu0) as f64 / hz;
            let mem = memory(c.pid).unwrap_or_default();
            println!(
                "{:<34} {GPUS} GPUs x {PROCS} processes, 200x50, 1 s, {at}: {:.3}% of one core; {mem}",
                c.label,
                cpu * 100.0 / wall,
            );
        }
    };
    // A report after the first minute, and at the end of a longer run (11 minutes: the
    // 10-minute history full).
    let first = secs.min(60);
    std::thread::sleep(Duration::from_secs(first));
    report(&contestants, &format!("{first} s"));
    if secs > first {
        std::thread::sleep(Duration::from_secs(secs - first));
        report(&contestants, &format!("{secs} s"));
    }
    for c in &contestants {
        tmux(&socket, &["send-keys", "-t", &c.session, "q"]);
    }
    std::thread::sleep(Duration::from_millis(300));
    tmux(&socket, &["kill-server"]);

    // Quitting while a GPU is hung: from `q` to the process gone.
    let hung = scenario_with_faults(
        &sleepers.pids(),
        r#"{"kind":"hang","device":3,"block_s":600}"#,
    );
    let mut exits = vec![];
    for _ in 0..5 {
        let cmd = format!(
            "GPUMON_NVML_LIB={} FAKE_NVML_SCENARIO={} {bin} --interval 1s --timeout 2s",
            lib.display(),
            hung.display()
        );
        tmux(
            &socket,
            &[
                "new-session",
                "-d",
                "-s",
                "h",
                "-x",
                "200",
                "-y",
                "50",
                &cmd,
            ],
        );
        let pid = wait_pid(bin, "--interval 1s --timeout 2s");
        let t = Instant::now();
        while !tmux(&socket, &["capture-pane", "-p", "-t", "h"]).contains("not responding for") {
            assert!(t.elapsed() < Duration::from_secs(20), "GPU 3 never stalled");
            std::thread::sleep(Duration::from_millis(50));
        }
        let q = Instant::now();
        tmux(&socket, &["send-keys", "-t", "h", "q"]);
        while running(&pid) {
            assert!(q.elapsed() < Duration::from_secs(60), "gpumon did not exit");
            std::thread::sleep(Duration::from_millis(2));
        }
        exits.push(q.elapsed());
        tmux(&socket, &["kill-server"]);
    }
    exits.sort_unstable();
    println!(
        "q with GPU 3 hung (each call blocks 600 s): median {:.0?}, max {:.0?} to exit (5 runs, tmux send-keys included)",
        exits[exits.len() / 2],
        exits[exits.len() - 1]
    );
    drop(sleepers);
}

/// Whether `pid` is still running: an exited process is gone, or a zombie until its parent
/// (tmux) reaps it, which is no part of gpumon's exit.
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

/// The newest gpumon whose command line starts with `bin args`.
fn wait_pid(bin: &str, args: &str) -> String {
    let started = Instant::now();
    loop {
        let out = Command::new("pgrep")
            .args(["-n", "-f", &format!("^{bin} {args}")])
            .output()
            .expect("pgrep");
        let pid = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if !pid.is_empty() {
            return pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "gpumon did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
