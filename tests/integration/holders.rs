//! Who holds memory that NVML attributes to nobody, with real processes: workers that outlived
//! their parent holding stand-in device nodes (files under `GPUMON_DEVICE_DIR`), a real zombie
//! that NVML (the fake library) lists, gpumon inside a PID namespace of its own reading host
//! pids, and gpumon as an unprivileged user that may not read root's open files.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{gpumon_fake, scenario, stdout_json, MIB};
use crate::docs::{assert_valid, once_validator};

/// A temporary directory with stand-in nodes for two GPUs and unified memory, readable by
/// every user (the unprivileged test reads it too).
fn device_dir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("gpumon-dev")
        .tempdir()
        .expect("temp dir");
    for n in ["nvidia0", "nvidia1", "nvidia-uvm", "nvidiactl"] {
        std::fs::write(dir.path().join(n), b"").expect("stand-in node");
    }
    set_mode(dir.path(), 0o755);
    dir
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Processes killed when the test ends, however it ends.
struct Reap(Vec<u32>);

impl Drop for Reap {
    fn drop(&mut self) {
        for pid in &self.0 {
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
        }
    }
}

/// Runs `script` under `sh` in `dir` and returns the pids it prints (one a line), once it
/// has exited: a process it started in the background is then an orphan.
fn orphans(dir: &Path, script: &str) -> Vec<u32> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("run sh");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().parse().expect("a pid"))
        .collect()
}

fn ppid(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    rest.split_whitespace()
        .nth(1)
        .expect("test")
        .parse()
        .expect("test")
}

/// GPU 0 uses 6 GiB more than its one listed process holds; GPU 1 holds nothing.
fn unattributed_scenario(listed: u32) -> tempfile::TempPath {
    scenario(&format!(
        r#"{{"version":1,"devices":[
          {{"name":"G0","memory_total_mib":81920,"unattributed_mib":6144,
            "processes":[{{"pid":{listed},"memory_mib":1000}}]}},
          {{"name":"G1","memory_total_mib":81920}}]}}"#
    ))
}

/// One GPU whose one listed process is `pid`, holding `mib`.
fn one_process(pid: u32, mib: u64) -> tempfile::TempPath {
    scenario(&format!(
        r#"{{"version":1,"devices":[{{"name":"G0","memory_total_mib":81920,
            "processes":[{{"pid":{pid},"memory_mib":{mib}}}]}}]}}"#
    ))
}

fn holders(sample: &Value, gpu: usize) -> Vec<Value> {
    sample["devices"][gpu]["holders"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn holder(sample: &Value, gpu: usize, pid: u32) -> Option<Value> {
    holders(sample, gpu)
        .into_iter()
        .find(|h| h["pid"].as_u64() == Some(pid.into()))
}

/// Workers that outlived the shell that started them hold GPU 0's node and the
/// unified-memory node, as a DataLoader worker of a killed job does; NVML lists neither.
/// `once` names them with their user, command and parent; a monitor (the GPU's node only)
/// and a process holding the other GPU are not named on GPU 0; GPU 1, whose memory is all
/// explained, has no holders.
#[test]
fn workers_that_outlived_their_job_are_named_with_their_parent() {
    let dir = device_dir();
    let pids = orphans(
        dir.path(),
        "exec 3<nvidia0 4<nvidia-uvm 5<nvidiactl; \
         sleep 300 >/dev/null & echo $!; sleep 301 >/dev/null & echo $!; \
         exec 3<&- 4<&- 5<&-; \
         (exec 3<nvidia0; exec sleep 302 >/dev/null) & echo $!; \
         (exec 3<nvidia1 4<nvidia-uvm; exec sleep 303 >/dev/null) & echo $!",
    );
    let _reap = Reap(pids.clone());
    let [w1, w2, monitor, other_gpu] = pids[..] else {
        panic!("four pids: {pids:?}")
    };
    let mut listed = Command::new("sleep").arg("300").spawn().expect("sleep");
    let listed_pid = listed.id();
    let scn = unattributed_scenario(listed_pid);
    let once = |json: bool| {
        let mut cmd = gpumon_fake(&scn, 10.0);
        cmd.env("GPUMON_DEVICE_DIR", dir.path()).arg("once");
        if json {
            cmd.arg("--json");
        }
        cmd
    };
    let sample = stdout_json(&mut once(true));
    let _ = listed.kill();
    let _ = listed.wait();
    assert_valid(&once_validator(), &sample, "once --json with holders");
    for w in [w1, w2] {
        let h = holder(&sample, 0, w).unwrap_or_else(|| panic!("{w} not named: {sample:#}"));
        assert_eq!(h["reason"], "not_listed");
        assert_eq!(h["parent_pid"].as_u64(), Some(ppid(w).into()));
        assert_eq!(h["bytes"], Value::Null, "a node says who, not how much");
        assert!(h["command"].as_str().expect("test").starts_with("sleep 30"));
        assert!(h["user"].is_string());
        assert!(h["age_s"].as_u64().is_some());
    }
    for p in [monitor, other_gpu, listed_pid] {
        assert!(holder(&sample, 0, p).is_none(), "{p} named: {sample:#}");
    }
    assert!(holders(&sample, 1).is_empty(), "{sample:#}");
    assert_eq!(sample["devices"][0]["minor_number"], 0);

    let out = once(false).output().expect("once");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Holders outside the process list"), "{text}");
    assert!(text.contains("[0] 6.0 GiB used, not attributed"), "{text}");
    assert!(text.contains(&format!("pid {w1} (sleep 300")), "{text}");
    assert!(
        text.contains("holds the GPU but NVML does not list it"),
        "{text}"
    );

    // The device directory elsewhere: nothing holds nodes there, so nobody is named.
    let empty = device_dir();
    let sample = stdout_json(
        gpumon_fake(&scn, 10.0)
            .env("GPUMON_DEVICE_DIR", empty.path())
            .args(["once", "--json"]),
    );
    assert!(holders(&sample, 0)
        .iter()
        .all(|h| h["reason"] != "not_listed"));
}

/// A child that exited and that its parent never reaps, listed by NVML with memory: a
/// zombie, and its parent named as the one to reap it. The parent is this test process:
/// `Child` reaps only on `wait`, so the child stays a zombie until then. (A shell as the
/// parent was racy: dash may reap a finished background job before its `exec`.)
#[test]
fn a_zombie_names_the_parent_that_must_reap_it() {
    let mut child = Command::new("true").spawn().expect("true");
    let zombie = child.id();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(format!("/proc/{zombie}/stat"))
        .unwrap_or_default()
        .contains(") Z ")
    {
        assert!(Instant::now() < deadline, "{zombie} never became a zombie");
        std::thread::sleep(Duration::from_millis(10));
    }
    let scn = one_process(zombie, 2048);
    let sample = stdout_json(gpumon_fake(&scn, 10.0).args(["once", "--json"]));
    let _ = child.wait();
    let h = holder(&sample, 0, zombie).unwrap_or_else(|| panic!("{sample:#}"));
    assert_eq!(h["reason"], "zombie");
    assert_eq!(h["state"], "Z");
    assert_eq!(h["parent_pid"].as_u64(), Some(std::process::id().into()));
    assert_eq!(h["bytes"].as_u64(), Some(2048 * MIB));
}

/// Whether this test can run here: as root, with `tool` installed. CI has both, so there a
/// missing one fails instead of skipping.
fn root_with(tool: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() == 0 };
    if root && Path::new("/usr/bin").join(tool).exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI runs as root with {tool}"
    );
    eprintln!("skipped: needs root and {tool}");
    false
}

/// gpumon in a PID namespace of its own (a container without --pid=host): NVML lists host
/// pids, which name nothing there, so each is another namespace's, with its memory. And the
/// other way round: a process in a new PID namespace, listed by its host pid, is a plain
/// process to gpumon on the host.
#[test]
fn pids_of_another_pid_namespace() {
    if !root_with("unshare") {
        return;
    }
    let mut host = Command::new("sleep").arg("300").spawn().expect("sleep");
    let scn = one_process(host.id(), 3072);
    let cmd = gpumon_fake(&scn, 10.0);
    let inside = cmd.get_program().to_owned();
    let envs: Vec<(String, String)> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v?.to_str()?.to_owned())))
        .collect();
    let mut unshare = Command::new("unshare");
    unshare
        .args(["--pid", "--fork", "--mount-proc"])
        .arg(&inside)
        .args(["once", "--json"])
        .envs(envs)
        .env("NO_COLOR", "1");
    let out = unshare.output().expect("unshare");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sample: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let h = holder(&sample, 0, host.id()).unwrap_or_else(|| panic!("{sample:#}"));
    assert_eq!(h["reason"], "other_namespace");
    assert_eq!(h["bytes"].as_u64(), Some(3072 * MIB));
    // Its host facts are not read from a /proc where the pid is someone else.
    assert_eq!(sample["devices"][0]["processes"][0]["command"], Value::Null);
    // The sample says so itself, for a recording or a fleet view read elsewhere.
    assert_eq!(sample["host"]["pids_hidden"], true, "{sample:#}");
    let _ = host.kill();
    let _ = host.wait();

    // A process in a new PID namespace, seen from the host by its host pid.
    let mut ns = Command::new("unshare")
        .args(["--pid", "--fork", "sleep", "300"])
        .spawn()
        .expect("unshare sleep");
    // The forked child is the sleep, in the new namespace.
    let deadline = Instant::now() + Duration::from_secs(5);
    let child = loop {
        let kids = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", ns.id()))
            .unwrap_or_default();
        if let Some(c) = kids.split_whitespace().next() {
            break c.parse::<u32>().expect("test");
        }
        assert!(Instant::now() < deadline, "unshare started no child");
        std::thread::sleep(Duration::from_millis(10));
    };
    let scn = one_process(child, 3072);
    let sample = stdout_json(gpumon_fake(&scn, 10.0).args(["once", "--json"]));
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(child as i32, libc::SIGKILL) };
    let _ = ns.kill();
    let _ = ns.wait();
    assert_eq!(sample["devices"][0]["processes"][0]["command"], "sleep 300");
    assert!(holders(&sample, 0).is_empty(), "{sample:#}");
    assert_eq!(sample["host"].get("pids_hidden"), None, "{sample:#}");
}

/// gpumon as an unprivileged user cannot read root's open files: the worker holding the GPU
/// is counted among the unreadable processes, with the advice that root can name them.
#[test]
fn processes_gpumon_may_not_inspect_are_counted() {
    if !root_with("setpriv") {
        return;
    }
    let dir = device_dir();
    let pids = orphans(
        dir.path(),
        "exec 3<nvidia0 4<nvidia-uvm; sleep 300 >/dev/null & echo $!",
    );
    let _reap = Reap(pids.clone());
    let mut listed = Command::new("sleep").arg("300").spawn().expect("sleep");
    let scn = unattributed_scenario(listed.id());
    set_mode(Path::new(&*scn), 0o644);
    // The binary and the fake library where uid 65534 may read them, wherever the build is.
    let tools = tempfile::Builder::new()
        .prefix("gpumon-bin")
        .tempdir()
        .expect("temp dir");
    set_mode(tools.path(), 0o755);
    let bin = tools.path().join("gpumon");
    let lib = tools.path().join("libnvidia-ml.so.1");
    std::fs::copy(env!("CARGO_BIN_EXE_gpumon"), &bin).expect("copy gpumon");
    std::fs::copy(crate::common::fake_lib(), &lib).expect("copy the fake library");
    set_mode(&bin, 0o755);
    set_mode(&lib, 0o644);
    let out = Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .arg(&bin)
        .args(["once", "--json"])
        .env("GPUMON_NVML_LIB", &lib)
        .env("FAKE_NVML_SCENARIO", &*scn)
        .env("FAKE_NVML_TIME", "10")
        .env("FAKE_NVML_SPEED", "0")
        .env("GPUMON_DEVICE_DIR", dir.path())
        .env("HOME", "/tmp")
        .env("NO_COLOR", "1")
        .output()
        .expect("setpriv");
    let _ = listed.kill();
    let _ = listed.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sample: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(holder(&sample, 0, pids[0]).is_none(), "{sample:#}");
    let unreadable: Vec<Value> = holders(&sample, 0)
        .into_iter()
        .filter(|h| h["reason"] == "unreadable")
        .collect();
    assert_eq!(unreadable.len(), 1, "{sample:#}");
    assert!(unreadable[0]["count"].as_u64().expect("test") >= 1);
    assert_eq!(unreadable[0]["pid"], Value::Null);
}

/// `explain` on the host where the OOM happened: the error names a process that NVML lists
/// on GPU 0, so explain reads GPU 0 now and names the workers that hold the memory the error
/// cannot attribute; `--offline` does not look.
#[test]
fn explain_names_the_holders_on_the_same_host() {
    let dir = device_dir();
    let pids = orphans(
        dir.path(),
        "exec 3<nvidia0 4<nvidia-uvm; sleep 300 >/dev/null & echo $!",
    );
    let _reap = Reap(pids.clone());
    let mut listed = Command::new("sleep").arg("300").spawn().expect("sleep");
    let scn = unattributed_scenario(listed.id());
    let oom = format!(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a \
         total capacity of 80.00 GiB of which 72.00 GiB is free. Process {} has 1000.00 MiB \
         memory in use. Including non-PyTorch memory, this process has 6.00 GiB memory in \
         use. Of the allocated memory 5.00 GiB is allocated by PyTorch, and 512.00 MiB is \
         reserved by PyTorch but unallocated.",
        listed.id()
    );
    let explain = |extra: &[&str]| {
        let mut cmd = gpumon_fake(&scn, 10.0);
        cmd.env("GPUMON_DEVICE_DIR", dir.path())
            .arg("explain")
            .args(extra)
            .write_stdin(oom.clone());
        cmd
    };
    let json = stdout_json(&mut explain(&["--json"]));
    let text = explain(&[]).output().expect("explain");
    let offline = stdout_json(&mut explain(&["--json", "--offline"]));
    let _ = listed.kill();
    let _ = listed.wait();
    let here = &json["here"];
    assert_eq!(here["gpu"], 0, "{json:#}");
    assert_eq!(here["matched_by"], "pid");
    let named: Vec<u64> = here["holders"]
        .as_array()
        .expect("holders")
        .iter()
        .filter_map(|h| h["pid"].as_u64())
        .collect();
    assert_eq!(named, vec![u64::from(pids[0])], "{json:#}");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("On this host now (GPU 0"), "{text}");
    assert!(
        text.contains(&format!("pid {} (sleep 300", pids[0])),
        "{text}"
    );
    assert_eq!(offline["here"], Value::Null);
    let (_, validator) = crate::docs::schema_pub("explain.schema.json");
    assert_valid(&validator, &json, "explain --json with holders here");
}
