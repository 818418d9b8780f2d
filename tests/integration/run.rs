//! `gpumon run` end to end: the probe in a (stand-in torch) Python process, merged with NVML
//! from the fake library, OOM capture, pass-through, and the runtime directory's rules.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{fake_lib, MIB};

const UUID: &str = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
const GIB: u64 = 1 << 30;

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).expect("chmod");
        let env = Env { dir };
        let scenario = format!(
            r#"{{"version":1,"devices":[{{"name":"Fake V100","uuid":"{UUID}","memory_total_mib":16384,
               "memory_reserved_mib":256,"processes":[
                 {{"pid_file":"{}","memory_mib":13722}},
                 {{"pid_file":"{}.rank0","memory_mib":3000}},
                 {{"pid_file":"{}.rank1","memory_mib":4000}},
                 {{"pid":4700001,"memory_mib":512}}]}}]}}"#,
            env.path("pid").display(),
            env.path("pid").display(),
            env.path("pid").display()
        );
        fs::write(env.path("scenario.json"), scenario).expect("scenario");
        env
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn apply(&self, cmd: &mut StdCommand) {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/python");
        cmd.env("XDG_RUNTIME_DIR", self.dir.path())
            .env("XDG_STATE_HOME", self.dir.path().join("state"))
            .env("GPUMON_NVML_LIB", fake_lib())
            .env("FAKE_NVML_SCENARIO", self.path("scenario.json"))
            .env("FAKE_NVML_SPEED", "0")
            .env("FAKE_TORCH_STATE", self.path("state.json"))
            .env("PID_FILE", self.path("pid"))
            .env("DONE_FILE", self.path("done"))
            .env("PYTHONPATH", &fixtures)
            .env("NO_COLOR", "1")
            .env("RUST_BACKTRACE", "0");
    }

    fn gpumon_run(&self, args: &[&str]) -> StdCommand {
        let mut cmd = StdCommand::new(env!("CARGO_BIN_EXE_gpumon"));
        self.apply(&mut cmd);
        cmd.args(["run", "--interval", "100ms"]).args(args);
        cmd
    }

    fn train(&self, extra: &[&str], mode: &[&str]) -> StdCommand {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/python/train.py");
        let mut args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        args.extend(["--".into(), "python3".into(), script.display().to_string()]);
        args.extend(mode.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        self.gpumon_run(&refs)
    }

    fn wait_for_pid(&self) -> u32 {
        let start = Instant::now();
        loop {
            if let Some(pid) = fs::read_to_string(self.path("pid"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                return pid;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the job never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn finish(child: Child) -> (i32, String, String) {
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn merged_breakdown_is_visible_to_other_gpumons_and_the_summary_follows() {
    let env = Env::new();
    // A sitecustomize the environment already had must still run.
    let theirs = env.path("theirs");
    fs::create_dir(&theirs).expect("mkdir");
    fs::write(
        theirs.join("sitecustomize.py"),
        format!(
            "open({:?}, 'w').write('ran')\n",
            env.path("their-marker").display().to_string()
        ),
    )
    .expect("sitecustomize");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/python");
    let log = env.path("run.csv");
    let mut cmd = env.train(&["--log", log.to_str().expect("utf-8")], &["train", "3"]);
    cmd.env(
        "PYTHONPATH",
        format!("{}:{}", theirs.display(), fixtures.display()),
    );
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gpumon run");
    let pid = env.wait_for_pid();

    // Another gpumon of the same user sees the allocator split for that pid.
    let start = Instant::now();
    let process = loop {
        let mut once = StdCommand::new(env!("CARGO_BIN_EXE_gpumon"));
        env.apply(&mut once);
        let out = once.args(["once", "--json"]).output().expect("once");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let found = v["devices"][0]["processes"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["pid"] == pid).cloned());
        if let Some(p) = found.filter(|p| p["allocator"].is_object()) {
            break p;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no allocator figures: {v}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let a = &process["allocator"];
    assert_eq!(process["gpu_memory_bytes"], 13722 * MIB);
    assert_eq!(a["allocated_bytes"], GIB);
    assert_eq!(a["reserved_bytes"], 3 * GIB / 2);
    assert_eq!(a["framework"], "pytorch");
    assert_eq!(a["framework_version"], "2.5.1+stand-in");
    assert_eq!(a["num_alloc_retries"], 1);
    // The other process has no probe: NVML's total only, labelled by a null allocator.
    let mut once = StdCommand::new(env!("CARGO_BIN_EXE_gpumon"));
    env.apply(&mut once);
    let out = once
        .args([
            "log",
            "--processes",
            "--count",
            "1",
            "--format",
            "jsonl",
            "--fields",
            "pid,process.allocated,process.cached,process.non_framework",
        ])
        .output()
        .expect("log");
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let mine = rows.iter().find(|r| r["pid"] == pid).expect("our row");
    assert_eq!(mine["process.allocated"], GIB);
    assert_eq!(mine["process.cached"], GIB / 2);
    assert_eq!(mine["process.non_framework"], 13722 * MIB - 3 * GIB / 2);
    let other = rows
        .iter()
        .find(|r| r["pid"] == 4700001)
        .expect("other row");
    assert_eq!(other["process.allocated"], Value::Null);

    std::thread::sleep(Duration::from_millis(400));
    fs::write(env.path("done"), "").expect("done");
    let (code, _, stderr) = finish(child);
    assert_eq!(code, 3, "the job's exit status passes through:\n{stderr}");
    assert!(stderr.contains("exited with status 3"), "{stderr}");
    assert!(
        stderr.contains("GPU 0 Fake V100: peak memory of the run 13.4 GiB"),
        "{stderr}"
    );
    assert!(
        stderr.contains("pytorch 2.5.1+stand-in peak allocated 1.0 GiB, peak reserved 1.5 GiB"),
        "{stderr}"
    );
    // The driver's side beside the allocator's, each named.
    assert!(
        stderr.contains("the whole GPU's used memory peaked at "),
        "{stderr}"
    );
    assert_eq!(
        fs::read_to_string(env.path("their-marker")).ok().as_deref(),
        Some("ran")
    );
    let csv = fs::read_to_string(&log).expect("--log file");
    assert!(
        csv.starts_with("timestamp,gpu_index,pid,used_memory,process.allocated"),
        "{csv}"
    );
    assert!(
        csv.lines()
            .any(|l| l.contains(&format!(",{pid},")) && l.contains(&GIB.to_string())),
        "{csv}"
    );
    // The probe cleaned up after itself.
    let left: Vec<_> = fs::read_dir(env.dir.path().join("gpumon"))
        .expect("runtime dir")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn every_rank_a_launcher_starts_reports() {
    let env = Env::new();
    let child = env
        .train(&[], &["ranks"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    let rank = |r: u32| -> u32 {
        let file = env.path(&format!("pid.rank{r}"));
        let start = Instant::now();
        loop {
            if let Some(pid) = fs::read_to_string(&file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                return pid;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "rank {r} never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let (r0, r1) = (rank(0), rank(1));
    // Let the probes publish and gpumon sample a few times.
    std::thread::sleep(Duration::from_millis(1500));
    fs::write(env.path("done"), "").expect("done");
    let (code, _, stderr) = finish(child);
    assert_eq!(code, 0, "{stderr}");
    let mut pids = [r0, r1];
    pids.sort_unstable();
    assert!(
        stderr.contains(&format!("(pid {}, {})", pids[0], pids[1])),
        "both ranks are part of the run:\n{stderr}"
    );
    // The run's footprint on the GPU: both ranks together (3000 + 4000 MiB by NVML; allocated
    // 1 + 2 GiB, reserved 2 + 3 GiB by their probes).
    assert!(
        stderr.contains("peak memory of the run 6.8 GiB"),
        "{stderr}"
    );
    assert!(
        stderr.contains("peak allocated 3.0 GiB, peak reserved 5.0 GiB"),
        "{stderr}"
    );
}

#[test]
fn an_oom_is_explained_with_the_numbers_sampled_before_it() {
    let env = Env::new();
    let child = env
        .train(&[], &["oom"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    let (code, _, stderr) = finish(child);
    assert_eq!(code, 1);
    // The child's own stderr came through unchanged…
    assert!(
        stderr.contains("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB."),
        "{stderr}"
    );
    // …followed by the analysis and the live numbers.
    assert!(stderr.contains("Out of memory in the output:"), "{stderr}");
    assert!(
        stderr.contains("PyTorch (CUDA) holds 10.0 GiB in live allocations"),
        "{stderr}"
    );
    assert!(stderr.contains("Live, in the last sample"), "{stderr}");
    assert!(
        stderr.contains("allocated 10.0 GiB, cached (reserved, unallocated) 1.0 GiB"),
        "{stderr}"
    );
    assert!(stderr.contains("over the last"), "{stderr}");
    assert!(
        stderr.contains("allocated 2.0 GiB → 10.0 GiB") || stderr.contains("→ 10.0 GiB"),
        "{stderr}"
    );
}

#[test]
fn exit_codes_stdin_and_missing_commands_pass_through() {
    let env = Env::new();
    let (code, _, _) = finish(
        env.train(&["--quiet"], &["exit", "7"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run"),
    );
    assert_eq!(code, 7);
    let (code, _, stderr) = finish(
        env.train(&[], &["selfkill"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run"),
    );
    assert_eq!(code, 128 + 9, "{stderr}");
    assert!(stderr.contains("was killed by signal 9"), "{stderr}");
    let out = env
        .train(&["--quiet"], &["echo"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .expect("stdin")
                .write_all(b"hello through gpumon\n")?;
            c.wait_with_output()
        })
        .expect("run");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "echo: hello through gpumon\n"
    );
    let out = env
        .gpumon_run(&["--", "/nonexistent/program"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run '/nonexistent/program'"));
}

#[test]
fn signals_are_forwarded_to_the_job() {
    for (sig, code) in [(libc::SIGTERM, 0), (libc::SIGINT, 5)] {
        let env = Env::new();
        let mut child = env
            .train(&["--quiet"], &["signal", &code.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run");
        env.wait_for_pid();
        // Wait for the handler to be installed ("ready" is printed after it).
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: kill(2) on our own child (gpumon), which must pass it on.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = child.wait().expect("wait");
        let mut out = String::new();
        use std::io::Read;
        child
            .stdout
            .take()
            .expect("stdout")
            .read_to_string(&mut out)
            .expect("read");
        assert_eq!(status.code(), Some(code), "signal {sig}: {out}");
        assert!(out.contains(&format!("child got signal {sig}")), "{out}");
    }
}

#[test]
fn unsafe_runtime_directories_are_refused_and_bad_reports_ignored() {
    let env = Env::new();
    let open = env.path("open");
    fs::create_dir(&open).expect("mkdir");
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = env
        .gpumon_run(&["--probe-dir", open.to_str().expect("utf-8"), "--", "true"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("writable by group or others"));

    let dir = env.path("reports");
    gpumon::collect::probe::ensure_dir(&dir).expect("private dir");
    let me = std::process::id();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    let good = |pid: u32, time: f64| {
        format!(
            r#"{{"version":1,"pid":{pid},"time":{time},"interval":1,"devices":[{{"index":0,"allocated":1,"reserved":2}}]}}"#
        )
    };
    // A dead process: its report is removed.
    let mut dead = StdCommand::new("true").spawn().expect("true");
    let dead_pid = dead.id();
    dead.wait().expect("wait");
    fs::write(dir.join(format!("{dead_pid}.json")), good(dead_pid, now)).expect("write");
    // Ours and fresh: accepted.
    fs::write(dir.join(format!("{me}.json")), good(me, now)).expect("write");
    // Stale (published a minute ago), malformed, oversized, wrong pid inside: ignored.
    let parent = std::os::unix::process::parent_id();
    fs::write(dir.join(format!("{parent}.json")), good(parent, now - 60.0)).expect("write");
    fs::write(dir.join("1.json"), "{not json").expect("write");
    let big = format!("{}{}", good(me, now), " ".repeat(70 * 1024));
    fs::write(dir.join("2.json"), big).expect("write");
    let reports = gpumon::collect::probe::read_reports(&dir);
    let pids: Vec<u32> = reports.iter().map(|r| r.pid).collect();
    assert_eq!(pids, vec![me]);
    assert!(
        !dir.join(format!("{dead_pid}.json")).exists(),
        "the dead process's file is cleaned up"
    );
    // Not ours: ignored (only root can make such a file here).
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        let theirs = dir.join(format!("{me}.json"));
        std::os::unix::fs::chown(&theirs, Some(12345), None).expect("chown");
        assert!(gpumon::collect::probe::read_reports(&dir).is_empty());
    }
}

#[test]
fn serve_exports_the_allocator_split_of_a_gpumon_run_job_and_all_the_dashboard_needs() {
    let env = Env::new();
    let child = env
        .train(&[], &["train", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gpumon run");
    let pid = env.wait_for_pid();
    let mut serve = StdCommand::new(env!("CARGO_BIN_EXE_gpumon"));
    env.apply(&mut serve);
    let mut server = serve
        .args(["serve", "--listen", "127.0.0.1:0", "--interval", "100ms"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gpumon serve");
    let addr = crate::common::serve_address(&mut server);
    let labels = format!("{{gpu=\"0\",UUID=\"{UUID}\",pid=\"{pid}\"}}");
    let start = Instant::now();
    let body = loop {
        let out = StdCommand::new("curl")
            .args(["-sS", "--max-time", "5", &format!("http://{addr}/metrics")])
            .output()
            .expect("curl");
        let body = String::from_utf8_lossy(&out.stdout).into_owned();
        if body.contains(&format!("gpumon_allocator_allocated_bytes{labels}")) {
            break body;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no allocator series for {pid}:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = server.kill();
    let _ = server.wait();
    fs::write(env.path("done"), "").expect("done");
    let _ = finish(child);
    for (name, value) in [
        ("gpumon_allocator_allocated_bytes", GIB),
        ("gpumon_allocator_reserved_bytes", 3 * GIB / 2),
        ("gpumon_allocator_cached_bytes", GIB / 2),
        (
            "gpumon_allocator_non_framework_bytes",
            13722 * MIB - 3 * GIB / 2,
        ),
        ("gpumon_process_memory_bytes", 13722 * MIB),
    ] {
        let line = format!("{name}{labels} {value}\n");
        assert!(body.contains(&line), "missing {line}in:\n{body}");
    }
    assert!(body.contains(&format!("gpumon_allocator_allocated_peak_bytes{labels}")));
    // Every metric the Grafana dashboard queries is in this scrape.
    let used = crate::serve::dashboard_metrics();
    assert!(used.len() >= 15, "the dashboard queries {used:?}");
    let exported = crate::serve::exported(&body);
    for name in &used {
        assert!(
            exported.contains(name.as_str()),
            "the dashboard queries {name}, which gpumon does not export"
        );
    }
    // The process without a probe has NVML's figure and no allocator series.
    assert!(body.contains("pid=\"4700001\"} 536870912\n"));
    assert!(!body.contains("gpumon_allocator_allocated_bytes{gpu=\"0\",UUID=\"GPU-aaaaaaaa-0000-0000-0000-000000000000\",pid=\"4700001\"}"));
}

/// The post-mortem: another process on the same GPU grows in the seconds before the job's OOM
/// (the fake NVML's clock running); the summary names it with its growth, shows the job's own
/// course over the last minute, and names the run's recording, which replays.
#[test]
fn the_post_mortem_names_a_neighbour_that_grew_before_the_oom() {
    let env = Env::new();
    // The neighbour: a real process, so that its user and command are read as a GPU
    // process's are.
    let mut neighbour = StdCommand::new("sleep").arg("300").spawn().expect("sleep");
    let scenario = format!(
        r#"{{"version":1,"devices":[{{"name":"Fake V100","uuid":"{UUID}","memory_total_mib":16384,
           "memory_reserved_mib":256,"processes":[
             {{"pid_file":"{}","memory_mib":{{"points":[[0,2000],[2,12000]]}}}},
             {{"pid":{},"memory_mib":{{"points":[[0,512],[0.4,512],[1.4,2560]]}}}}]}}]}}"#,
        env.path("pid").display(),
        neighbour.id()
    );
    fs::write(env.path("scenario.json"), scenario).expect("scenario");
    let record = env.path("run.rec.zst");
    let mut cmd = env.train(&["--record", record.to_str().expect("utf-8")], &["oom"]);
    cmd.env("FAKE_NVML_SPEED", "1");
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    let (code, _, stderr) = finish(child);
    let _ = neighbour.kill();
    let _ = neighbour.wait();
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("The last minute on GPU 0:"), "{stderr}");
    let re = regex::Regex::new(&format!(
        r"pid {} \([^,]+, sleep 300\) grew from 512\.0 MiB to [0-9.]+ (GiB|MiB) in the \d+ s before the error",
        neighbour.id()
    ))
    .expect("regex");
    assert!(re.is_match(&stderr), "{stderr}");
    assert!(stderr.contains("this job's reserved: "), "{stderr}");
    assert!(
        stderr.contains(&format!("the run's recording: {}", record.display())),
        "{stderr}"
    );
    // The recording replays: the neighbour is in it.
    let out = StdCommand::new(env!("CARGO_BIN_EXE_gpumon"))
        .args(["once", "--json", "--replay"])
        .arg(&record)
        .output()
        .expect("once --replay");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let pids: Vec<u64> = v["devices"][0]["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .filter_map(|p| p["pid"].as_u64())
        .collect();
    assert!(pids.contains(&u64::from(neighbour.id())), "{v}");
}

#[test]
fn a_snapshot_at_the_oom_is_saved_and_summarised() {
    let env = Env::new();
    let snapshots = env.path("snapshots");
    let log = env.path("torch.log");
    let mut cmd = env.train(
        &[
            "--snapshot",
            "--snapshot-dir",
            snapshots.to_str().expect("utf-8"),
        ],
        &["snapshot"],
    );
    cmd.env("FAKE_TORCH_LOG", &log);
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    let (code, _, stderr) = finish(child);
    assert_eq!(code, 1, "{stderr}");
    // The history started when the program brought CUDA up, never before (the real
    // `_record_memory_history` would initialise CUDA itself), with the cheap options.
    // (The step marker's optimizer hook goes in meanwhile: not part of this order.)
    let calls: String = fs::read_to_string(&log)
        .expect("torch log")
        .lines()
        .filter(|l| !l.starts_with("hook "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        calls.contains("queued\ninitialized\nhistory all alloc python 100000\nobserver"),
        "{calls}"
    );
    assert!(!calls.contains("EARLY"), "{calls}");
    // The pickle is one Python reads back as PyTorch's layout (what memory_viz opens).
    let pickles: Vec<PathBuf> = fs::read_dir(&snapshots)
        .expect("snapshot dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".snapshot.pickle"))
        .collect();
    assert_eq!(pickles.len(), 1, "{pickles:?}");
    let check = StdCommand::new("python3")
        .args([
            "-c",
            "import pickle,sys; s=pickle.load(open(sys.argv[1],'rb')); \
             print(len(s['segments']), s['device_traces'][0][-1]['action'])",
        ])
        .arg(&pickles[0])
        .output()
        .expect("python3");
    assert_eq!(String::from_utf8_lossy(&check.stdout).trim(), "10 oom");
    // The summary: the split, the verdict with its remedy, and the sites by size (wrapped to
    // the terminal: compared with the white space folded).
    let stderr = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        stderr.contains("Memory snapshot at the OOM (pid "),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "reserved 10.0 GiB on device 0 = allocated 7.5 GiB + free in the cache 2.5 GiB \
             (10 pieces, the largest 256.0 MiB)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("the failed request: 2.0 GiB; free on the device: 512.0 MiB"),
        "{stderr}"
    );
    assert!(stderr.contains("Verdict: fragmentation"), "{stderr}");
    assert!(
        stderr.contains("Remedy: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
        "{stderr}"
    );
    let first = stderr
        .find("python/train.py:97 in forward")
        .expect("the largest site");
    let second = stderr
        .find("python/train.py:98 in step")
        .expect("the next site");
    assert!(first < second, "{stderr}");
    assert!(stderr.contains("6.0 GiB 8 blocks"), "{stderr}");
    // The job's own curve is one measure (the allocator's reserved), not NVML's figure first.
    assert!(
        !stderr.contains("this job's reserved: 13.4 GiB"),
        "{stderr}"
    );
}

#[test]
fn without_an_oom_the_summary_says_no_snapshot_was_saved() {
    let env = Env::new();
    fs::write(env.path("done"), "").expect("done");
    let out = env
        .train(&["--snapshot"], &["train", "0"])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("no memory snapshot was saved"), "{stderr}");
}

/// Issue 27: `run --batch 8` on the stand-in torch, whose allocator curve is known: 6 GiB held
/// between steps (2 GiB weights, 4 GiB Adam), a 10 GiB peak, 11 GiB reserved at the peak. On
/// the 16 GiB GPU (256 MiB driver reserved, 512 MiB another process, the job's own 2458 MiB
/// outside PyTorch) that is 512 MiB a sample and a batch of 11 at most.
#[test]
fn the_largest_batch_is_measured_from_the_first_steps() {
    let env = Env::new();
    let child = env
        .train(
            &[
                "--no-record",
                "--batch",
                "8",
                "--estimate",
                "--params 1B --layers 16 --hidden 2048 --heads 16 --batch 8 --seq-len 512",
            ],
            &["batch"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gpumon run");
    env.wait_for_pid();
    // The job ends once another gpumon sees the measure in the probe's report.
    let start = Instant::now();
    loop {
        let mut once = StdCommand::new(env!("CARGO_BIN_EXE_gpumon"));
        env.apply(&mut once);
        let out = once.args(["once", "--json"]).output().expect("once");
        let j: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let steps = j["devices"][0]["processes"].as_array().and_then(|ps| {
            ps.iter()
                .find_map(|p| p["allocator"]["steps"].as_object().cloned())
        });
        if let Some(steps) = steps {
            assert_eq!(steps["batch"], 8);
            assert_eq!(steps["held_bytes"], 6 * GIB);
            assert_eq!(steps["peak_bytes"], 10 * GIB);
            assert_eq!(steps["reserved_peak_bytes"], 11 * GIB);
            assert_eq!(steps["training"], true);
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no measure: {j}");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(400));
    fs::write(env.path("done"), "").expect("done");
    let (code, _, stderr) = finish(child);
    assert_eq!(code, 0, "{stderr}");
    for want in [
        "largest batch on GPU 0: about 11. Measured at batch 8 over 4 optimizer steps: 6.0 GiB \
         held between steps, 10.0 GiB at a step's peak, 512.0 MiB a sample; 12.8 GiB for \
         PyTorch on this GPU, less a 10% (measured: peak reserved over peak allocated) margin",
        "An extrapolation from measured steps, linear in the batch",
        "measured against `estimate`: held 6.0 GiB vs weights + optimizer",
        "gpumon: batch 8 measured on GPU 0: 512.0 MiB a sample, largest batch that fits about 11",
    ] {
        assert!(stderr.contains(want), "{want}\n{stderr}");
    }
}

/// Without the hooks' steps (a job that never trains), the summary says it measured nothing.
#[test]
fn a_batch_that_was_not_measured_is_said() {
    let env = Env::new();
    let child = env
        .train(&["--no-record", "--batch", "4"], &["exit", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gpumon run");
    let (code, _, stderr) = finish(child);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("--batch 4: not measured"), "{stderr}");
}

/// Issue 44: a job of `n` steps under `run` (extra flags first). Waits until another gpumon
/// sees all its steps marked, and returns the process's `allocator` there, then the run's
/// exit code and stderr.
fn step_job(extra: &[&str], mode: &[&str], n: u64) -> (Value, i32, String, String) {
    step_job_until(extra, mode, |a| a["steps_marked"] == n)
}

/// [`step_job`], waiting until the process's `allocator` satisfies `until`.
fn step_job_until(
    extra: &[&str],
    mode: &[&str],
    until: impl Fn(&Value) -> bool,
) -> (Value, i32, String, String) {
    let env = Env::new();
    let mut flags = vec!["--no-record"];
    flags.extend_from_slice(extra);
    let child = env
        .train(&flags, mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gpumon run");
    let pid = env.wait_for_pid();
    let start = Instant::now();
    let allocator = loop {
        let mut once = StdCommand::new(env!("CARGO_BIN_EXE_gpumon"));
        env.apply(&mut once);
        let out = once.args(["once", "--json"]).output().expect("once");
        let j: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let a = j["devices"][0]["processes"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["pid"] == pid))
            .map(|p| p["allocator"].clone())
            .unwrap_or(Value::Null);
        if until(&a) {
            // What it says is what the schema says (step_growth, held_sites and the rest).
            crate::docs::assert_valid(&crate::docs::once_validator(), &j, "once --json");
            break a;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never there: {j}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // `once` as text, from the same reports.
    let mut once = StdCommand::new(env!("CARGO_BIN_EXE_gpumon"));
    env.apply(&mut once);
    let text = once.arg("once").output().expect("once");
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    // Let `run`'s own sampler see the last report too.
    std::thread::sleep(Duration::from_millis(400));
    fs::write(env.path("done"), "").expect("done");
    let (code, _, stderr) = finish(child);
    (allocator, code, stderr, text)
}

const MIB_F: u64 = 1 << 20;

/// `total_loss += loss`: 12.5 MiB a step from the first step, steps marked by the optimizer.
#[test]
fn memory_that_grows_step_after_step_is_found_at_its_rate() {
    let (a, code, stderr, once) = step_job(&[], &["steps", "leak-loss", "60"], 60);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        once.contains("allocated grows 12.5 MiB a step since step 11"),
        "{once}"
    );
    assert_eq!(a["step_marker"], "optimizer", "{a}");
    let g = &a["step_growth"];
    assert_eq!(g["measure"], "allocated", "{a}");
    assert_eq!(g["bytes_per_step"], 25 * MIB_F / 2, "{a}");
    assert_eq!(g["since_step"], 11, "after the warm-up: {a}");
    assert_eq!(g["last_step"], 60, "{a}");
    assert!(g["steps_to_full"].is_u64(), "{a}");
    let said = "on GPU 0: allocated grows 12.5 MiB a step since step 11; at this rate the GPU is \
                full in ~";
    // Live, once, and again in the summary.
    assert_eq!(stderr.matches(said).count(), 2, "{stderr}");
    assert!(
        stderr.contains("(steps marked by the optimizer's step)"),
        "{stderr}"
    );
}

/// Outputs kept in a list, in a loop without an optimizer: `backward()` marks the steps.
#[test]
fn growth_without_an_optimizer_is_marked_by_backward() {
    let (a, code, stderr, _) = step_job(&[], &["steps", "leak-list", "60"], 60);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(a["step_marker"], "backward", "{a}");
    assert_eq!(a["step_growth"]["bytes_per_step"], 48 * MIB_F, "{a}");
    assert!(
        stderr.contains("allocated grows 48.0 MiB a step since step 11"),
        "{stderr}"
    );
}

/// `--step-marker MODULE:FUNCTION`: each return from that function is a step.
#[test]
fn a_step_marker_the_user_names_marks_the_steps() {
    let (a, code, stderr, _) = step_job(
        &["--step-marker", "__main__:train_step"],
        &["steps", "marker", "60"],
        60,
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(a["step_marker"], "__main__:train_step", "{a}");
    assert_eq!(a["step_growth"]["bytes_per_step"], 2 * MIB_F, "{a}");
    assert!(
        stderr.contains("(steps marked by __main__:train_step)"),
        "{stderr}"
    );
}

/// A large warm-up (Adam's states, caches filling over 8 steps), then flat: no alarm.
#[test]
fn a_flat_job_after_a_large_warmup_says_nothing() {
    let (a, code, stderr, once) = step_job(&[], &["steps", "warmup-flat", "60"], 60);
    assert_eq!(code, 0, "{stderr}");
    assert!(!once.contains("grows"), "{once}");
    assert_eq!(a["step_marker"], "optimizer", "{a}");
    assert!(a.get("step_growth").is_none(), "{a}");
    assert!(!stderr.contains("grows"), "{stderr}");
}

/// Flat but noisy (±200 MiB from step to step): no alarm.
#[test]
fn a_noisy_flat_job_says_nothing() {
    let (a, code, stderr, _) = step_job(&[], &["steps", "noisy-flat", "60"], 60);
    assert_eq!(code, 0, "{stderr}");
    assert!(a.get("step_growth").is_none(), "{a}");
    assert!(!stderr.contains("grows"), "{stderr}");
}

/// At an OOM after steady growth, the post-mortem leads with the growth, not the batch.
#[test]
fn an_oom_after_growth_leads_with_the_growth() {
    let (_, code, stderr, _) = step_job(&[], &["steps", "leak-loss", "60", "oom"], 60);
    assert_eq!(code, 1, "{stderr}");
    let grew = stderr
        .find("Memory grew step after step before the OOM:")
        .expect("the growth section");
    let oom = stderr
        .find("Out of memory in the output:")
        .expect("the OOM report");
    assert!(grew < oom, "{stderr}");
    assert!(
        stderr.contains("allocated had grown 12.5 MiB a step for 49 steps (steps 11 to 60)"),
        "{stderr}"
    );
    assert!(stderr.contains("sum `loss.item()` instead"), "{stderr}");
}

#[test]
fn a_step_marker_that_names_no_function_is_refused() {
    let env = Env::new();
    let out = env
        .gpumon_run(&["--step-marker", "train.py", "--", "true"])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("expected auto, off or MODULE:FUNCTION"),
        "{stderr}"
    );
}

/// Once growth is found, `run` asks the probe where it comes from: the blocks one step made
/// that are still held steps later, by allocation site. The per-step gradient (freed a step
/// later) and the workspace (remade at the same address) are not among them.
#[test]
fn the_site_that_holds_memory_across_steps_is_named() {
    for (kind, site, blocks, per_step, remedy) in [
        (
            "leak-loss",
            "/fixtures/python/train.py:301 in train_loop",
            "25 blocks",
            "12.5 MiB a step",
            "sum `loss.item()` instead",
        ),
        (
            "leak-list",
            "held from .../alice/proj/model.py:88 in forward",
            "1 block",
            "48.0 MiB a step",
            "`out.detach().cpu()`",
        ),
    ] {
        let (a, code, stderr, _) = step_job_until(&[], &["steps", kind, "60", "sites"], |a| {
            a["held_sites"].is_object()
        });
        assert_eq!(code, 0, "{stderr}");
        let h = &a["held_sites"];
        assert_eq!(h["held_steps"], 4, "{a}");
        assert_eq!(h["own_history"], true, "{a}");
        let sites = h["sites"].as_array().expect("sites");
        assert_eq!(sites.len(), 1, "only the leak: {a}");
        assert_eq!(
            sites[0]["bytes"],
            if kind == "leak-loss" {
                25 * MIB_F / 2
            } else {
                48 * MIB_F
            },
            "{a}"
        );
        let want = format!("{site} ({blocks}, {per_step}): ");
        assert!(stderr.contains(&want), "{want}\n{stderr}");
        assert!(stderr.contains(remedy), "{remedy}\n{stderr}");
        assert!(
            stderr.contains("turned on for those steps; its 3 snapshots took"),
            "{stderr}"
        );
    }
}

/// With neither HOME nor XDG_STATE_HOME, a run's recording and snapshots go to a directory of
/// the user's own under `$TMPDIR` (`gpumon-<uid>/runs`, 0700), never a shared
/// `$TMPDIR/gpumon/runs` where anyone can plant a symlink at the next run's name; one that
/// fails the probe directory's checks is refused.
#[test]
fn the_runs_directory_under_tmpdir_is_private_and_checked() {
    let env = Env::new();
    let tmp = env.path("tmp");
    fs::create_dir(&tmp).expect("mkdir");
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o1777)).expect("chmod");
    let run = |extra: &[&str]| {
        let mut args = extra.to_vec();
        args.extend(["--", "true"]);
        let mut cmd = env.gpumon_run(&args);
        cmd.env_remove("HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_RUNTIME_DIR")
            .env("TMPDIR", &tmp);
        cmd.output().expect("run")
    };
    let out = run(&[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!tmp.join("gpumon").exists(), "a shared directory was used");
    // SAFETY: getuid cannot fail.
    let private = tmp.join(format!("gpumon-{}", unsafe { libc::getuid() }));
    let runs = private.join("runs");
    let mode = |p: &Path| {
        fs::symlink_metadata(p)
            .expect("exists")
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(&private), 0o700);
    assert_eq!(mode(&runs), 0o700);
    let recorded: Vec<_> = fs::read_dir(&runs).expect("runs").flatten().collect();
    assert_eq!(recorded.len(), 1, "{recorded:?}");

    // Opened to others: refused (it is the probe's directory too), nothing written in it.
    fs::set_permissions(&private, fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = run(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("writable by group or others"), "{err}");
    assert_eq!(fs::read_dir(&runs).expect("runs").count(), 1);
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).expect("chmod");
    // A snapshot directory given open to others: refused as the probe directory would be.
    let open = env.path("open");
    fs::create_dir(&open).expect("mkdir");
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = run(&[
        "--snapshot",
        "--snapshot-dir",
        open.to_str().expect("utf-8"),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--snapshot:"), "{err}");
    assert!(err.contains("writable by group or others"), "{err}");
    // A symlink in its place: refused, nothing written through it.
    fs::remove_dir_all(&runs).expect("rm");
    let victim = env.path("victim");
    fs::create_dir(&victim).expect("mkdir");
    std::os::unix::fs::symlink(&victim, &runs).expect("symlink");
    let err = String::from_utf8_lossy(&run(&[]).stderr).into_owned();
    assert!(err.contains("not recording the run"), "{err}");
    assert!(
        err.contains("not a directory (or a symbolic link)"),
        "{err}"
    );
    assert_eq!(fs::read_dir(&victim).expect("victim").count(), 0);
}
