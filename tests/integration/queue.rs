//! `gpumon run --gpus auto --wait`: two waiters on one scenario clock (the fake NVML library,
//! `FAKE_NVML_EPOCH`), GPU 1 freed at t = 5 s. They launch in the order they came, the second
//! never counts the memory the first was given, and each child sees its GPUs in
//! `CUDA_VISIBLE_DEVICES`; `once --json` lists the queue; Ctrl-C leaves it cleanly.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::common::{fake_lib, gpumon, scenario};

/// Two 40 GiB GPUs. GPU 0 is busy throughout; GPU 1 holds 30 GiB until t = 5 s. The first
/// job, once it has written its pid to `a.pid`, uses 24 GiB of GPU 1.
fn two_gpus(dir: &Path) -> String {
    format!(
        r#"{{"version":1,"devices":[
  {{"name":"A100","memory_total_mib":40960,"processes":[{{"pid":4830001,"memory_mib":36864,"sm_percent":90}}]}},
  {{"name":"A100","memory_total_mib":40960,"processes":[
     {{"pid":4830002,"memory_mib":30720,"end_s":5}},
     {{"pid_file":"{}","memory_mib":24576}}]}}]}}"#,
        dir.join("a.pid").display()
    )
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
}

struct Setup {
    dir: tempfile::TempDir,
    scenario: tempfile::TempPath,
    queue: std::path::PathBuf,
    epoch: f64,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().expect("dir");
        let scenario = scenario(&two_gpus(dir.path()));
        let queue = dir.path().join("queue");
        Setup {
            dir,
            scenario,
            queue,
            epoch: now(),
        }
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env("GPUMON_NVML_LIB", fake_lib())
            .env("FAKE_NVML_SCENARIO", &self.scenario)
            .env("FAKE_NVML_EPOCH", self.epoch.to_string())
            .env("GPUMON_QUEUE_DIR", &self.queue)
            .env("NO_COLOR", "1")
            .env("XDG_STATE_HOME", self.dir.path().join("state"))
            .env("XDG_RUNTIME_DIR", self.dir.path());
    }

    /// `gpumon run --gpus auto --need NEED --wait 60s --grace 30s -- sh -c SCRIPT`.
    fn waiter(&self, need: &str, script: &str) -> Child {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpumon"));
        self.env(&mut cmd);
        cmd.args([
            "--interval",
            "250ms",
            "run",
            "--no-record",
            "--gpus",
            "auto",
        ])
        .args([
            "--need", need, "--wait", "60s", "--grace", "30s", "--", "sh", "-c",
        ])
        .arg(script)
        .current_dir(self.dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        cmd.spawn().expect("spawn gpumon run")
    }

    fn entries(&self) -> usize {
        std::fs::read_dir(&self.queue)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                    .count()
            })
            .unwrap_or(0)
    }

    fn read(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.path().join(name))
            .ok()
            .filter(|s| s.ends_with('\n'))
    }
}

fn finish(child: Child) -> (i32, String) {
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn two_waiters_launch_in_order_and_the_second_never_double_books() {
    let s = Setup::new();
    // A: starts its job on GPU 1 at t ≈ 5 s, which shows up in NVML 2 s later with 24 GiB
    // and ends 3 s after that (its pid file emptied).
    let a = s.waiter(
        "20GiB",
        "date +%s.%N > a.start; echo \"$CUDA_DEVICE_ORDER $CUDA_VISIBLE_DEVICES\" > a.env; \
         sleep 2; echo $$ > a.pid; sleep 3; : > a.pid; date +%s.%N > a.end",
    );
    until("A's queue entry", Duration::from_secs(20), || {
        s.entries() == 1
    });
    // B needs 25 GiB: GPU 1's 40 free less the 20 held for A is not enough; nor is what is
    // left once A's job uses 24.
    let b = s.waiter(
        "25GiB",
        "date +%s.%N > b.start; echo \"$CUDA_DEVICE_ORDER $CUDA_VISIBLE_DEVICES\" > b.env",
    );
    until("B's queue entry", Duration::from_secs(20), || {
        s.entries() == 2
    });
    // While both wait, `once --json` lists them in order.
    let mut once = Command::new(env!("CARGO_BIN_EXE_gpumon"));
    s.env(&mut once);
    let out = once.args(["once", "--json"]).output().expect("once");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let queue = j["queue"].as_array().expect("queue");
    if s.read("a.start").is_none() {
        assert_eq!(queue.len(), 2, "{j}");
        assert_eq!(queue[0]["state"], "waiting");
        assert_eq!(queue[0]["need_bytes"], 20u64 << 30);
        assert_eq!(queue[1]["need_bytes"], 25u64 << 30);
        assert!(queue[0]["command"]
            .as_str()
            .expect("command")
            .starts_with("sh -c"));
    }
    let (rc_a, err_a) = finish(a);
    let (rc_b, err_b) = finish(b);
    assert_eq!(rc_a, 0, "{err_a}");
    assert_eq!(rc_b, 0, "{err_b}");
    assert_eq!(s.read("a.env").as_deref(), Some("PCI_BUS_ID 1\n"));
    assert_eq!(s.read("b.env").as_deref(), Some("PCI_BUS_ID 1\n"));
    let t = |f: &str| -> f64 {
        s.read(f)
            .unwrap_or_else(|| panic!("{f}"))
            .trim()
            .parse::<f64>()
            .expect("time")
            - s.epoch
    };
    let (a_start, a_end, b_start) = (t("a.start"), t("a.end"), t("b.start"));
    assert!(
        a_start >= 4.9,
        "A launched at {a_start:.2} s, before GPU 1 was free"
    );
    assert!(
        b_start >= a_end - 0.3,
        "B launched at {b_start:.2} s while A's job held GPU 1 (until {a_end:.2} s)\n{err_b}"
    );
    assert!(err_a.contains("running on 1"), "{err_a}");
    assert!(
        err_a.contains("ran on GPU 1 (CUDA_VISIBLE_DEVICES=1), chosen after"),
        "{err_a}"
    );
    assert!(err_b.contains("1 job ahead in the queue"), "{err_b}");
    assert!(
        err_b.contains("20.0 GiB of it held for a job launched from the queue"),
        "B saw A's hold: {err_b}"
    );
    assert_eq!(s.entries(), 0, "both left the queue");
}

#[test]
fn ctrl_c_leaves_the_queue_and_no_room_ever_is_said_at_once() {
    let s = Setup::new();
    let mut c = s.waiter("30GiB", "touch ran");
    until("C's queue entry", Duration::from_secs(20), || {
        s.entries() == 1
    });
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    let start = Instant::now();
    let status = c.wait().expect("wait");
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(status.code(), Some(130));
    assert_eq!(s.entries(), 0, "its entry is gone");
    assert!(!s.dir.path().join("ran").exists());
    // 50 GiB never fits a 40 GiB GPU: no wait at all.
    let (rc, err) = finish(s.waiter("50GiB", "touch ran"));
    assert_eq!(rc, 1);
    assert!(
        err.contains("no room for a GPU with 50.0 GiB free here even with every GPU empty"),
        "{err}"
    );
    // Without --wait, what does not fit now is refused with why.
    let out = gpumon()
        .env("GPUMON_NVML_LIB", fake_lib())
        .env("FAKE_NVML_SCENARIO", &s.scenario)
        .env("FAKE_NVML_TIME", "0")
        .env("GPUMON_QUEUE_DIR", &s.queue)
        .env("XDG_RUNTIME_DIR", s.dir.path())
        .args([
            "run",
            "--no-record",
            "--gpus",
            "auto",
            "--need",
            "20GiB",
            "--",
            "true",
        ])
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("GPU 1: 10.0 GiB free, 10.0 GiB short") && err.contains("--wait"),
        "{err}"
    );
}

/// S6 / C5: a lock another process holds forever does not stop `run --wait 2s`: it waits
/// its own 2 s for the lock (not the queue's 10 s, and not an error), says so, goes on
/// without it, and ends as --wait says, with why. A forged entry at the head, asking for
/// more than any GPU here has, is passed over and said.
#[test]
fn a_held_lock_and_a_forged_head_stop_no_one() {
    let s = Setup::new();
    std::fs::create_dir_all(&s.queue).expect("queue dir");
    // Another process holds the lock (as a read-only descriptor can) until it is killed.
    let mut holder = Command::new("python3")
        .arg("-c")
        .arg(
            "import fcntl,sys,time\n\
             f=open(sys.argv[1],'a+'); fcntl.flock(f, fcntl.LOCK_EX)\n\
             print('held', flush=True); time.sleep(600)",
        )
        .arg(s.queue.join(".lock"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().expect("stdout")),
        &mut line,
    )
    .expect("held");
    // A forged entry for that live process (ours: the uid matches its file), at the head,
    // asking for more than either 40 GiB GPU has.
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", holder.id())).expect("stat");
    let after = stat.rsplit_once(')').expect("stat").1;
    let start_ticks: u64 = after
        .split_whitespace()
        .nth(19)
        .expect("field")
        .parse()
        .expect("n");
    let forged = serde_json::json!({
        "version": 1, "pid": holder.id(), "start_ticks": start_ticks,
        "uid": unsafe { libc::getuid() }, "user": "mallory", "command": "python train.py",
        "count": 1, "need_bytes": 50u64 << 30, "enqueued_at": -1e300, "state": "waiting",
        "grace_s": 1e300
    });
    std::fs::write(s.queue.join("forged.json"), forged.to_string()).expect("forged");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpumon"));
    s.env(&mut cmd);
    let out = cmd
        .env("FAKE_NVML_TIME", "0")
        .args(["run", "--no-record", "--gpus", "auto", "--need", "20GiB"])
        .args(["--wait", "2s", "--", "true"])
        .output()
        .expect("run");
    let _ = holder.kill();
    let _ = holder.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("locked by another process for 2.0s: going on without it"),
        "{err}"
    );
    assert!(
        err.contains("no room for a GPU with 20.0 GiB free"),
        "{err}"
    );
    assert!(!err.contains("for 10 s"), "{err}");
    assert!(
        err.contains("which no GPU here could ever hold: passed over") && !err.contains("mallory"),
        "{err}"
    );
    assert!(!err.contains("job ahead"), "{err}");
}
