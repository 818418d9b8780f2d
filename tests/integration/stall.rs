//! A GPU whose NVML calls hang never freezes gpumon: `once` returns within its deadline, `log`
//! keeps the healthy GPU's cadence, the hung GPU recovers by itself, and an NVML
//! initialisation that hangs is given up on with exit 2. All through the fake library's
//! `hang` and `init_hang` faults, which block the calling thread for real.

use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::common::{gpumon, gpumon_fake, scenario, stdout_json, MIB};

/// GPU 0 answers; every call on GPU 1 blocks for a minute.
pub const HUNG: &str = r#"{"version":1,"devices":[
  {"name":"Healthy H100","memory_total_mib":81559,"memory_reserved_mib":529,
   "utilization_gpu":40,"temperature_c":55,
   "processes":[{"pid":4600001,"memory_mib":{"points":[[0,1000],[600,61000]]}}]},
  {"name":"Wedged H100","memory_total_mib":81559,"processes":[{"pid":4600002,"memory_mib":500}]}],
  "faults":[{"kind":"hang","device":1,"block_s":60}]}"#;

fn rfc3339(v: &Value) -> SystemTime {
    humantime::parse_rfc3339(v.as_str().expect("timestamp")).expect("RFC 3339")
}

#[test]
fn once_returns_within_its_deadline_with_the_hung_gpu_stalled_and_the_other_exact() {
    let s = scenario(HUNG);
    let started = Instant::now();
    let json = stdout_json(gpumon_fake(&s, 0.0).args(["once", "--json", "--timeout", "1s"]));
    // Each call on GPU 1 blocks for 60 s: without per-device deadlines this takes minutes.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "once took {:?}",
        started.elapsed()
    );
    let d0 = &json["devices"][0];
    assert_eq!(d0["stalled"], false);
    assert_eq!(d0["error"], Value::Null);
    assert_eq!(d0["memory"]["used_bytes"], 1000 * MIB);
    assert_eq!(d0["memory"]["reserved_bytes"], 529 * MIB);
    assert_eq!(d0["processes"][0]["pid"], 4600001);
    let d1 = &json["devices"][1];
    assert_eq!(d1["index"], 1);
    assert_eq!(d1["stalled"], true);
    assert_eq!(d1["error"], "not responding for 1 s");
    assert_eq!(d1["data_age_ms"], Value::Null, "it never answered");
    assert_eq!(d1["memory"]["used_bytes"], Value::Null);
    assert_eq!(d1["breakdown"], Value::Null);

    // The text view names the state, and a device fault is no failure of gpumon's.
    let out = gpumon_fake(&s, 0.0)
        .args(["once", "--timeout", "500ms"])
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.starts_with("[1]")
            && l.contains("| not responding for 5")
            && l.ends_with(" ms")),
        "{text}"
    );
    assert!(text.contains("Healthy H100"), "{text}");
}

#[test]
fn log_keeps_the_healthy_gpus_cadence_and_blanks_the_stalled_one() {
    let s = scenario(HUNG);
    let out = gpumon_fake(&s, 0.0)
        .env("FAKE_NVML_SPEED", "1")
        .args([
            "log",
            "--interval",
            "100ms",
            "--timeout",
            "300ms",
            "--count",
            "15",
            "--format",
            "jsonl",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .expect("run log");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(records.len(), 30, "a record per GPU per sample");
    let gpu0: Vec<&Value> = records.iter().filter(|r| r["index"] == 0).collect();
    let gpu1: Vec<&Value> = records.iter().filter(|r| r["index"] == 1).collect();
    assert_eq!((gpu0.len(), gpu1.len()), (15, 15));
    for r in &gpu0 {
        assert_eq!(r["error"], Value::Null);
        assert!(r["memory.used"].is_u64(), "{r}");
    }
    // One interval apart (100 ms), never a hang's worth: the bound only separates "kept its
    // cadence" from "waited on the hung GPU" (each of its calls blocks for 60 s).
    for pair in gpu0.windows(2) {
        let gap = rfc3339(&pair[1]["timestamp"])
            .duration_since(rfc3339(&pair[0]["timestamp"]))
            .expect("increasing timestamps");
        assert!(gap < Duration::from_secs(2), "a row was held back {gap:?}");
    }
    // GPU 1: no readings ever, its rows say why; past the deadline it is stalled.
    for r in &gpu1 {
        assert_eq!(r["memory.used"], Value::Null, "{r}");
        assert_eq!(r["utilization.gpu"], Value::Null, "{r}");
        assert!(r["error"].is_string(), "{r}");
        assert_eq!(r["name"], Value::Null, "its name was never read");
    }
    let last = gpu1.last().expect("records");
    assert!(
        last["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("not responding for")),
        "{last}"
    );
}

/// GPU 1 answers at first, hangs from 1 s to 3 s (each call blocking 1.5 s), then answers again.
const HANG_WINDOW: &str = r#"{"version":1,"devices":[
  {"name":"Healthy","memory_total_mib":1024,"processes":[{"pid":4600011,"memory_mib":100}]},
  {"name":"Flaky","memory_total_mib":2048,"temperature_c":70,
   "processes":[{"pid":4600012,"memory_mib":300}]}],
  "faults":[{"kind":"hang","device":1,"block_s":1.5,"at_s":1,"until_s":3}]}"#;

#[test]
fn a_hung_gpu_is_stalled_keeps_its_last_values_and_recovers_by_itself() {
    let s = scenario(HANG_WINDOW);
    let out = gpumon_fake(&s, 0.0)
        .env("FAKE_NVML_SPEED", "1")
        .args([
            "log",
            "--interval",
            "100ms",
            "--timeout",
            "500ms",
            "--count",
            "70",
            "--format",
            "jsonl",
            "--fields",
            "timestamp,index,name,memory.used,temperature.gpu,error",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .expect("run log");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let gpu1: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON line"))
        .filter(|r| r["index"] == 1)
        .collect();
    let state = |r: &Value| match r["error"].as_str() {
        None => 'o',
        Some(e) if e.starts_with("not responding") => 's',
        Some(e) if e.starts_with("no answer for") => 'l',
        Some(_) => '?',
    };
    let states: String = gpu1.iter().map(state).collect();
    // Healthy; late, then stalled once the deadline has passed; healthy again, with nothing
    // else in between.
    let first_bad = states
        .find(['l', 's'])
        .unwrap_or_else(|| panic!("never late: {states}"));
    let first_stall = states
        .find('s')
        .unwrap_or_else(|| panic!("never stalled: {states}"));
    let recovered = states[first_stall..]
        .find('o')
        .map(|i| i + first_stall)
        .unwrap_or_else(|| panic!("never recovered: {states}"));
    assert!(
        first_bad > 0 && states[..first_bad].chars().all(|c| c == 'o'),
        "{states}"
    );
    assert!(
        states[first_bad..recovered]
            .chars()
            .all(|c| c == 'l' || c == 's'),
        "{states}"
    );
    assert!(states[recovered..].chars().all(|c| c == 'o'), "{states}");
    // Stalled rows name the device (its identity is known) and leave the readings empty.
    let stalled = &gpu1[first_stall];
    assert_eq!(stalled["name"], "Flaky");
    assert_eq!(stalled["memory.used"], Value::Null);
    assert_eq!(stalled["temperature.gpu"], Value::Null);
    let back = &gpu1[recovered];
    assert_eq!(back["memory.used"], 300 * MIB);
    assert_eq!(back["temperature.gpu"], 70);
}

#[test]
fn scenarios_hang_without_the_library_too() {
    // `--scenario` runs the same hang on the simulated source (what `--demo` uses), so the
    // state can be seen without the fake library: its reads block for real as well.
    let s = scenario(HANG_WINDOW);
    let out = gpumon()
        .args(["--scenario"])
        .arg(s.as_os_str())
        .args([
            "log",
            "--interval",
            "200ms",
            "--timeout",
            "400ms",
            "--count",
            "12",
            "--format",
            "jsonl",
            "--fields",
            "index,error",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("not responding for"),
        "the simulated GPU 1 stalls too:\n{text}"
    );
}

#[test]
fn an_nvml_init_that_hangs_is_given_up_on_with_exit_2() {
    let s = scenario(
        r#"{"version":1,"devices":[{"name":"G","memory_total_mib":1024}],
            "faults":[{"kind":"init_hang","block_s":60}]}"#,
    );
    for args in [&["once"][..], &["log", "--count", "1"][..]] {
        let started = Instant::now();
        let out = gpumon_fake(&s, 0.0)
            .args(args)
            .args(["--timeout", "1s"])
            .timeout(Duration::from_secs(30))
            .output()
            .expect("run");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{args:?} waited"
        );
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("the NVIDIA driver did not answer within 1s"),
            "{args:?}: {err}"
        );
        assert!(err.contains("--timeout"), "it says what to do: {err}");
    }
}
