//! Dashboard efficiency: the release binary in a 200×50 tmux pane on the fake library with
//! 8 GPUs × 40 live processes at a 1 s interval. Reports CPU share over 60 s of steady state
//! (after a warm-up) and peak RSS, from /proc; then, with every call on GPU 3 blocking for
//! 10 minutes, how long `q` takes to end the process. Needs tmux.
//! `cargo bench --bench dashboard` (GPUMON_BENCH_SECS sets the steady-state seconds).

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{fake_lib, scenario, scenario_with_faults, user_binary, Sleepers, GPUS, PROCS};

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

fn status_kib(pid: &str, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("status")
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let lib = fake_lib();
    let sleepers = Sleepers::spawn(GPUS * PROCS);
    let path = scenario(&sleepers.pids());
    let socket = format!("gpumon-bench-{}", std::process::id());
    let bin = user_binary();
    let bin = bin.as_str();
    let cmd = format!(
        "GPUMON_NVML_LIB={} FAKE_NVML_SCENARIO={} {bin} --interval 1s",
        lib.display(),
        path.display()
    );
    tmux(
        &socket,
        &[
            "new-session",
            "-d",
            "-s",
            "b",
            "-x",
            "200",
            "-y",
            "50",
            &cmd,
        ],
    );
    let pid = wait_pid(bin, "--interval 1s");
    std::thread::sleep(Duration::from_secs(5));
    let screen = tmux(&socket, &["capture-pane", "-p", "-t", "b"]);
    assert!(
        screen.contains("[7] Bench GPU"),
        "dashboard not drawn:\n{screen}"
    );
    let secs = std::env::var("GPUMON_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60u64);
    let t0 = cpu_ticks(&pid);
    let w0 = Instant::now();
    std::thread::sleep(Duration::from_secs(secs));
    let ticks = cpu_ticks(&pid) - t0;
    let wall = w0.elapsed().as_secs_f64();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let cpu = ticks as f64 / hz;
    println!(
        "dashboard, {GPUS} GPUs x {PROCS} processes, 200x50, 1 s interval: {cpu:.2} s CPU over {wall:.0} s = {:.3}% of one core; peak RSS {:.1} MiB (now {:.1} MiB)",
        cpu * 100.0 / wall,
        status_kib(&pid, "VmHWM:") as f64 / 1024.0,
        status_kib(&pid, "VmRSS:") as f64 / 1024.0,
    );
    tmux(&socket, &["send-keys", "-t", "b", "q"]);
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
