//! The sampling core through the real NVML code path (nvml-wrapper loading the fake library).

use std::io::Read;
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::*;

const TWO_GPUS: &str = r#"{
  "version": 1, "driver_version": "550.54.15", "cuda_driver_version": 12020,
  "devices": [
    {"name": "Fake H100", "uuid": "GPU-aaaaaaaa-0000-0000-0000-000000000000",
     "memory_total_mib": 81559, "memory_reserved_mib": 529, "unattributed_mib": 100,
     "utilization_gpu": 87, "utilization_memory": 40, "temperature_c": 61,
     "power_draw_w": 512.5, "power_limit_w": 700, "fan_percent": 30,
     "processes": [
       {"pid": 4000001, "memory_mib": 30000, "kind": "compute"},
       {"pid": 4000002, "memory_mib": 2048, "kind": "both"},
       {"pid": 4000003, "memory_mib": 16, "kind": "graphics"}]},
    {"name": "Fake H100", "uuid": "GPU-bbbbbbbb-0000-0000-0000-000000000000",
     "memory_total_mib": 81559, "memory_reserved_mib": 529,
     "processes": [{"pid": 4000004, "memory_mib": {"points": [[0, 0], [10, 1000]]}}]}
  ]
}"#;

fn device(v: &Value, i: usize) -> &Value {
    &v["devices"][i]
}

#[test]
fn once_json_matches_the_scenario_exactly() {
    let s = scenario(TWO_GPUS);
    let v = stdout_json(gpumon_fake(&s, 5.0).args(["once", "--json"]));
    assert_eq!(v["source"], "nvml");
    assert_eq!(v["driver_version"], "550.54.15");
    assert_eq!(v["cuda_version"], "12.2");
    let d0 = device(&v, 0);
    assert_eq!(d0["index"], 0);
    assert_eq!(d0["uuid"], "GPU-aaaaaaaa-0000-0000-0000-000000000000");
    assert_eq!(d0["name"], "Fake H100");
    let m = &d0["memory"];
    let used = (100 + 30000 + 2048 + 16) * MIB;
    assert_eq!(m["total_bytes"], 81559 * MIB);
    assert_eq!(m["reserved_bytes"], 529 * MIB);
    assert_eq!(m["used_bytes"], used);
    assert_eq!(m["free_bytes"], (81559 - 529) * MIB - used);
    assert_eq!(d0["utilization"]["gpu_percent"], 87);
    assert_eq!(d0["utilization"]["memory_percent"], 40);
    assert_eq!(d0["temperature_c"], 61);
    assert_eq!(d0["power_draw_w"], 512.5);
    assert_eq!(d0["power_limit_w"], 700.0);
    assert_eq!(d0["fan_percent"], 30);
    assert_eq!(d0["error"], Value::Null);
    // Compute and graphics lists merged by pid.
    let procs = d0["processes"].as_array().expect("processes");
    let summary: Vec<(u64, &str, u64)> = procs
        .iter()
        .map(|p| {
            (
                p["pid"].as_u64().expect("pid"),
                p["kind"].as_str().expect("kind"),
                p["gpu_memory_bytes"].as_u64().expect("bytes"),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (4000001, "compute", 30000 * MIB),
            (4000002, "both", 2048 * MIB),
            (4000003, "graphics", 16 * MIB)
        ]
    );
    // The ramp on GPU 1 at t = 5 s.
    assert_eq!(device(&v, 1)["processes"][0]["gpu_memory_bytes"], 500 * MIB);
    // The breakdown: processes, 100 MiB used by no listed process, driver reserved, free.
    let b = &d0["breakdown"];
    assert_eq!(b["total"], 81559 * MIB);
    let parts = b["parts"].as_array().expect("parts");
    let sum: u64 = parts.iter().filter_map(|p| p["bytes"].as_u64()).sum();
    assert_eq!(sum, 81559 * MIB, "the parts add up to the total");
    let unattributed = parts
        .iter()
        .find(|p| p["kind"] == "unattributed")
        .expect("part");
    assert_eq!(unattributed["bytes"], 100 * MIB);
    assert_eq!(unattributed["derived"], true);
}

#[test]
fn pids_that_do_not_exist_here_keep_their_rows() {
    let s = scenario(TWO_GPUS);
    let v = stdout_json(gpumon_fake(&s, 0.0).args(["once", "--json"]));
    let p = &device(&v, 0)["processes"][0];
    assert_eq!(p["pid"], 4000001);
    for field in [
        "user",
        "command",
        "cpu_percent",
        "host_memory_bytes",
        "start_time",
    ] {
        assert_eq!(
            p[field],
            Value::Null,
            "{field} must be unknown, not made up"
        );
    }
}

#[test]
fn host_fields_come_from_the_process_table() {
    let mut child = StdCommand::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    // Between fork and exec, /proc still shows the test binary: wait for the exec.
    let comm = format!("/proc/{}/comm", child.id());
    for _ in 0..200 {
        if std::fs::read_to_string(&comm).is_ok_and(|c| c.trim() == "sleep") {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let json = format!(
        r#"{{"version":1,"devices":[{{"name":"G","memory_total_mib":1024,
            "processes":[{{"pid":{},"memory_mib":64}}]}}]}}"#,
        child.id()
    );
    let s = scenario(&json);
    let v = stdout_json(gpumon_fake(&s, 0.0).args(["once", "--json"]));
    // What ps says of the same process: its user and its start (seconds since the epoch).
    let ps = |field: &str| {
        let out = StdCommand::new("ps")
            .args(["-o", &format!("{field}="), "-p", &child.id().to_string()])
            .output()
            .expect("ps");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let (ps_user, ps_etimes) = (ps("user"), ps("etimes"));
    let _ = child.kill();
    let _ = child.wait();
    let p = &device(&v, 0)["processes"][0];
    assert_eq!(p["name"], "sleep");
    assert_eq!(p["command"], "sleep 30");
    assert_eq!(p["user"], ps_user.as_str(), "{p}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let ps_start = now - ps_etimes.parse::<u64>().expect("etimes");
    let start = p["start_time"].as_u64().expect("start_time");
    assert!(
        start.abs_diff(ps_start) <= 2,
        "start {start} vs ps {ps_start}"
    );
    assert!(
        p["host_memory_bytes"].as_u64().is_some_and(|b| b > 0),
        "{p}"
    );
    assert!(p["start_time"].as_u64().is_some(), "{p}");
}

const FAULTS: &str = r#"{
  "version": 1,
  "devices": [
    {"name": "G0", "memory_total_mib": 1024, "fan_percent": 40,
     "processes": [{"pid": 4100001, "memory_mib": 100}, {"pid": 4100002, "memory_mib": 50},
                   {"pid": 4100003, "memory_mib": 25}]},
    {"name": "G1", "memory_total_mib": 1024, "processes": [{"pid": 4100004, "memory_mib": 10}]},
    {"name": "G2", "memory_total_mib": 1024, "processes": [{"pid": 4100005, "memory_mib": 10}]}
  ],
  "faults": [
    {"kind": "not_supported", "device": 0, "field": "fan"},
    {"kind": "not_supported", "device": 0, "field": "temperature", "at_s": 2},
    {"kind": "process_memory_unavailable", "pid": 4100002},
    {"kind": "process_exit", "pid": 4100003, "at_s": 3},
    {"kind": "device_lost", "device": 1, "at_s": 4},
    {"kind": "no_permission", "device": 2, "field": "processes"}
  ]
}"#;

#[test]
fn faults_show_as_unknown_or_errors_and_other_gpus_keep_reporting() {
    let s = scenario(FAULTS);
    let before = stdout_json(gpumon_fake(&s, 1.0).args(["once", "--json"]));
    assert_eq!(device(&before, 0)["fan_percent"], Value::Null);
    assert_eq!(device(&before, 0)["field_errors"]["fan"], "not supported");
    assert!(device(&before, 0)["temperature_c"].is_u64());
    assert_eq!(
        device(&before, 0)["processes"].as_array().map(Vec::len),
        Some(3)
    );
    assert_eq!(device(&before, 1)["error"], Value::Null);

    let after = stdout_json(gpumon_fake(&s, 5.0).args(["once", "--json"]));
    let d0 = device(&after, 0);
    assert_eq!(d0["temperature_c"], Value::Null);
    assert_eq!(d0["field_errors"]["temperature"], "not supported");
    let procs = d0["processes"].as_array().expect("processes");
    assert_eq!(procs.len(), 2, "pid 4100003 exited");
    assert_eq!(procs[1]["pid"], 4100002);
    assert_eq!(
        procs[1]["gpu_memory_bytes"],
        Value::Null,
        "unavailable is null, not 0"
    );
    // The lost GPU stays, with its error; the others keep reporting.
    let d1 = device(&after, 1);
    assert_eq!(d1["index"], 1);
    assert_eq!(d1["error"], "GPU is lost");
    assert_eq!(d1["memory"]["total_bytes"], Value::Null);
    let d2 = device(&after, 2);
    assert_eq!(d2["memory"]["total_bytes"], 1024 * MIB);
    assert_eq!(
        d2["processes_error"],
        "cannot list processes: no permission"
    );
    assert_eq!(d2["processes"].as_array().map(Vec::len), Some(0));

    // The text view says so too, and exits 0.
    let out = gpumon_fake(&s, 5.0).arg("once").output().expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("[1]") && l.ends_with("| GPU is lost")),
        "{text}"
    );
    assert!(text.contains("no permission"), "{text}");
    assert!(text.contains("N/A"), "{text}");
}

#[test]
fn drivers_without_memory_v2_fall_back_to_v1() {
    let s = scenario(
        r#"{"version":1,"devices":[{"name":"Old","memory_total_mib":1024,"memory_reserved_mib":24,
            "processes":[{"pid":4250001,"memory_mib":100}]}],
            "faults":[{"kind":"memory_v2_missing"}]}"#,
    );
    let v = stdout_json(gpumon_fake(&s, 0.0).args(["once", "--json"]));
    let m = &device(&v, 0)["memory"];
    // v1 semantics: `used` includes the driver reservation, which is then unknown on its own.
    assert_eq!(m["total_bytes"], 1024 * MIB);
    assert_eq!(m["used_bytes"], (100 + 24) * MIB);
    assert_eq!(m["free_bytes"], (1024 - 24 - 100) * MIB);
    assert_eq!(m["reserved_bytes"], Value::Null);
    assert_eq!(device(&v, 0)["field_errors"]["memory"], Value::Null);
}

#[test]
fn process_list_growing_between_count_and_fill_is_retried() {
    let s = scenario(
        r#"{"version":1,"devices":[{"name":"G","memory_total_mib":1024,
            "processes":[{"pid":4200001,"memory_mib":1},{"pid":4200002,"memory_mib":2}]}],
            "faults":[{"kind":"process_list_race"}]}"#,
    );
    for _ in 0..3 {
        let v = stdout_json(gpumon_fake(&s, 0.0).args(["once", "--json"]));
        assert_eq!(device(&v, 0)["processes_error"], Value::Null);
        assert_eq!(device(&v, 0)["processes"].as_array().map(Vec::len), Some(2));
    }
}

#[test]
fn a_garbage_process_count_is_an_error_not_an_allocation() {
    // 4 billion entries would be 96 GiB: the list is refused, the rest of the device read.
    let s = scenario(
        r#"{"version":1,"devices":[{"name":"G","memory_total_mib":1024,
            "processes":[{"pid":4200001,"memory_mib":1}]}],
            "faults":[{"kind":"process_list_garbage"}]}"#,
    );
    let v = stdout_json(gpumon_fake(&s, 0.0).args(["once", "--json"]));
    let d = device(&v, 0);
    assert_eq!(d["memory"]["total_bytes"], 1024 * MIB);
    assert_eq!(d["processes"].as_array().map(Vec::len), Some(0));
    let why = d["processes_error"].as_str().unwrap_or_default();
    assert!(why.starts_with("cannot list processes"), "{why}");
}

#[test]
fn drivers_with_the_v3_stride_bug_still_give_right_pids() {
    let procs: Vec<String> = (0..5)
        .map(|i| format!(r#"{{"pid":{},"memory_mib":{}}}"#, 4300001 + i, 10 * (i + 1)))
        .collect();
    let s = scenario(&format!(
        r#"{{"version":1,"driver_version":"535.54.03","devices":[{{"name":"G",
            "memory_total_mib":1024,"processes":[{}]}}]}}"#,
        procs.join(",")
    ));
    let v = stdout_json(gpumon_fake(&s, 0.0).args(["once", "--json"]));
    let got: Vec<(u64, u64)> = device(&v, 0)["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .map(|p| {
            (
                p["pid"].as_u64().unwrap_or(0),
                p["gpu_memory_bytes"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let want: Vec<(u64, u64)> = (0..5).map(|i| (4300001 + i, 10 * (i + 1) * MIB)).collect();
    assert_eq!(got, want);
}

#[test]
fn missing_library_gives_a_clear_message_and_exit_2() {
    let out = gpumon()
        .args(["--nvml-lib", "/nonexistent/libnvidia-ml.so.1", "once"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no NVIDIA driver found"), "{err}");
    assert!(err.contains("--demo"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn library_without_a_scenario_is_a_missing_driver() {
    // The fake answers DRIVER_NOT_LOADED without a scenario, like a host without the module.
    let out = gpumon()
        .env("GPUMON_NVML_LIB", fake_lib())
        .env_remove("FAKE_NVML_SCENARIO")
        .arg("once")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not loaded"));
}

fn jsonl(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn log_count_emits_count_times_devices_records_with_increasing_timestamps() {
    let s = scenario(TWO_GPUS);
    let out = gpumon_fake(&s, 0.0)
        .args([
            "log",
            "--count",
            "3",
            "--interval",
            "20ms",
            "--format",
            "jsonl",
        ])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records = jsonl(&out.stdout);
    assert_eq!(records.len(), 3 * 2);
    for gpu in 0..2u64 {
        let stamps: Vec<String> = records
            .iter()
            .filter(|r| r["index"] == gpu)
            .map(|r| r["timestamp"].as_str().expect("timestamp").to_owned())
            .collect();
        assert_eq!(stamps.len(), 3);
        // RFC 3339 in UTC with fixed width: lexical order is time order.
        assert!(stamps.windows(2).all(|w| w[0] < w[1]), "{stamps:?}");
    }
    assert_eq!(records[0]["memory.total"], 81559 * MIB);
}

/// Milliseconds since midnight of an RFC 3339 UTC timestamp ("…T15:43:56.492Z").
pub fn ms_of_day(stamp: &str) -> i64 {
    let time = stamp
        .split('T')
        .nth(1)
        .expect("a time")
        .trim_end_matches('Z');
    let mut hms = time.split(':');
    let mut part = || hms.next().expect("h:m:s").parse::<f64>().expect("a number");
    let (h, m, s) = (part(), part(), part());
    ((h * 3600.0 + m * 60.0 + s) * 1000.0).round() as i64
}

#[test]
fn log_keeps_its_interval_without_drifting() {
    // Each sample is due one interval after the previous one was due: the timer's rounding
    // and the tick's own time must not add to every period (they made 20 ms into 21.2).
    let s = scenario(TWO_GPUS);
    let out = gpumon_fake(&s, 0.0)
        .args([
            "log",
            "--count",
            "41",
            "--interval",
            "20ms",
            "--format",
            "jsonl",
            "--fields",
            "timestamp,index",
        ])
        .output()
        .expect("run");
    assert!(out.status.success());
    let stamps: Vec<i64> = jsonl(&out.stdout)
        .iter()
        .filter(|r| r["index"] == 0)
        .map(|r| ms_of_day(r["timestamp"].as_str().expect("timestamp")))
        .collect();
    assert_eq!(stamps.len(), 41);
    // Differences of whole milliseconds; across midnight, a day later.
    let mut gaps: Vec<i64> = stamps
        .windows(2)
        .map(|w| (w[1] - w[0]).rem_euclid(86_400_000))
        .collect();
    gaps.sort_unstable();
    // The median is the cadence, whatever a busy machine does to a few wake-ups (a late one
    // is followed by a shorter gap, as the next is due on time).
    assert_eq!(gaps[gaps.len() / 2], 20, "gaps in ms: {gaps:?}");
}

#[test]
fn log_csv_uses_nvidia_smi_field_names() {
    let s = scenario(TWO_GPUS);
    let out = gpumon_fake(&s, 0.0)
        .args([
            "log",
            "--count",
            "1",
            "--fields",
            "index,memory.used,utilization.gpu,fan.speed",
        ])
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "index,memory.used,utilization.gpu,fan.speed");
    assert_eq!(
        lines[1],
        format!("0,{},87,30", (100 + 30000 + 2048 + 16) * MIB)
    );
    assert_eq!(lines[2], "1,0,0,", "unknown fan speed is empty, not 0");
}

#[test]
fn log_rejects_unknown_fields() {
    let out = gpumon()
        .args(["--demo", "log", "--fields", "index,memory.bogus"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'memory.bogus'"));
}

/// The process-list and per-process utilisation calls a run of gpumon made, as the fake
/// library logs them: `NAME DEVICE count|fill`.
fn driver_calls(s: &std::path::Path, args: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("calls");
    gpumon_fake(s, 0.0)
        .env("FAKE_NVML_CALL_LOG", &log)
        .args(args)
        .assert()
        .success();
    std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn calls_to<'a>(calls: &'a [String], name: &str) -> Vec<&'a str> {
    calls
        .iter()
        .filter(|c| c.split(' ').next() == Some(name))
        .map(String::as_str)
        .collect()
}

const COMPUTE: &str = "nvmlDeviceGetComputeRunningProcesses_v3";
const GRAPHICS: &str = "nvmlDeviceGetGraphicsRunningProcesses_v3";
const UTILIZATION: &str = "nvmlDeviceGetProcessUtilization";

#[test]
fn each_view_asks_the_driver_only_for_what_it_shows() {
    let s = scenario(TWO_GPUS);
    // No processes shown: no process lists, no per-process utilisation.
    let calls = driver_calls(&s, &["once", "--no-processes"]);
    assert!(calls.is_empty(), "{calls:?}");
    // The process lists for processes.count, but no %SM, which log per GPU never prints.
    let calls = driver_calls(&s, &["log", "--count", "3", "--interval", "20ms"]);
    assert!(!calls_to(&calls, COMPUTE).is_empty(), "{calls:?}");
    assert!(calls_to(&calls, UTILIZATION).is_empty(), "{calls:?}");
    let calls = driver_calls(
        &s,
        &["log", "--processes", "--count", "3", "--interval", "20ms"],
    );
    assert!(calls_to(&calls, UTILIZATION).is_empty(), "{calls:?}");
    // Views that show them.
    for args in [
        &["once", "--json"][..],
        &[
            "log",
            "--processes",
            "--count",
            "1",
            "--fields",
            "pid,sm_percent",
        ],
    ] {
        let calls = driver_calls(&s, args);
        assert!(
            !calls_to(&calls, UTILIZATION).is_empty(),
            "{args:?}: {calls:?}"
        );
    }
}

#[test]
fn process_lists_are_read_in_one_call_once_their_size_is_known() {
    // nvml-wrapper asks for the count and then fills, two calls a list on every read; the
    // buffer kept from the last answer makes it one.
    let s = scenario(TWO_GPUS);
    let calls = driver_calls(&s, &["log", "--count", "10", "--interval", "10ms"]);
    for device in ["0", "1"] {
        let compute: Vec<&str> = calls_to(&calls, COMPUTE)
            .into_iter()
            .filter(|c| c.split(' ').nth(1) == Some(device))
            .collect();
        // The first read finds the size (a count call), each read after it is one fill.
        assert!(compute.len() >= 11, "GPU {device}: {compute:?}");
        let counts = compute.iter().filter(|c| c.ends_with(" count")).count();
        assert_eq!(counts, 1, "GPU {device}: {compute:?}");
    }
    // GPU 1 has no graphics process: one call a read, which answers 0.
    let graphics = calls_to(&calls, GRAPHICS);
    assert!(
        graphics
            .iter()
            .all(|c| !c.ends_with(" fill") || c.contains(" 0 ")),
        "{graphics:?}"
    );
}

#[test]
fn log_output_appends_and_writes_the_header_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("gpu.csv");
    let s = scenario(TWO_GPUS);
    for _ in 0..2 {
        gpumon_fake(&s, 0.0)
            .args(["log", "--count", "2", "--interval", "10ms", "--output"])
            .arg(&file)
            .assert()
            .success();
    }
    let text = std::fs::read_to_string(&file).expect("log file");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 2 * 2 * 2, "{text}");
    assert!(lines[0].starts_with("timestamp,index,name"));
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("timestamp")).count(),
        1
    );
}

#[test]
fn log_processes_follows_churn() {
    let s = scenario(
        r#"{"version":1,"devices":[{"name":"G","memory_total_mib":4096,"processes":[
            {"pid":4400001,"memory_mib":100},
            {"pid":4400002,"memory_mib":200,"start_s":2,"end_s":4},
            {"pid":4400003,"memory_mib":300,"start_s":3}]}]}"#,
    );
    let pids_at = |t: f64| -> Vec<u64> {
        let out = gpumon_fake(&s, t)
            .args(["log", "--processes", "--count", "1", "--format", "jsonl"])
            .output()
            .expect("run");
        jsonl(&out.stdout)
            .iter()
            .filter_map(|r| r["pid"].as_u64())
            .collect()
    };
    assert_eq!(pids_at(1.0), vec![4400001]);
    assert_eq!(pids_at(2.5), vec![4400001, 4400002]);
    assert_eq!(pids_at(3.5), vec![4400001, 4400002, 4400003]);
    assert_eq!(pids_at(5.0), vec![4400001, 4400003]);

    // And live: with the clock running fast, every tick is a consistent list.
    let out = gpumon_fake(&s, 0.0)
        .env("FAKE_NVML_SPEED", "100")
        .args([
            "log",
            "--processes",
            "--count",
            "8",
            "--interval",
            "10ms",
            "--format",
            "jsonl",
        ])
        .output()
        .expect("run");
    assert!(out.status.success());
    let records = jsonl(&out.stdout);
    assert!(records.len() >= 8);
    assert!(records.iter().all(|r| r["used_memory"].is_u64()));
}

#[test]
fn sixteen_gpus_with_two_hundred_processes_each() {
    let devices: Vec<String> = (0..16)
        .map(|d| {
            let procs: Vec<String> = (0..200)
                .map(|p| format!(r#"{{"pid":{},"memory_mib":1}}"#, 5_000_000 + d * 1000 + p))
                .collect();
            format!(
                r#"{{"name":"G{d}","memory_total_mib":16384,"processes":[{}]}}"#,
                procs.join(",")
            )
        })
        .collect();
    let s = scenario(&format!(
        r#"{{"version":1,"devices":[{}]}}"#,
        devices.join(",")
    ));
    let v = stdout_json(gpumon_fake(&s, 0.0).args(["once", "--json"]));
    let devs = v["devices"].as_array().expect("devices");
    assert_eq!(devs.len(), 16);
    for d in devs {
        assert_eq!(d["processes"].as_array().map(Vec::len), Some(200));
        assert_eq!(d["memory"]["used_bytes"], 200 * MIB);
    }
}

#[test]
fn gpu_filter_and_no_processes() {
    let s = scenario(TWO_GPUS);
    let v = stdout_json(gpumon_fake(&s, 0.0).args(["once", "--json", "--gpu", "1"]));
    assert_eq!(v["devices"].as_array().map(Vec::len), Some(1));
    assert_eq!(device(&v, 0)["index"], 1);
    let v = stdout_json(gpumon_fake(&s, 0.0).args([
        "once",
        "--json",
        "--no-processes",
        "--gpu",
        "GPU-aaaaaaaa",
    ]));
    assert_eq!(device(&v, 0)["index"], 0);
    assert_eq!(device(&v, 0)["processes"].as_array().map(Vec::len), Some(0));
}

#[test]
fn no_subcommand_off_a_terminal_prints_the_once_view_without_colour() {
    let out = gpumon()
        .env_remove("NO_COLOR")
        .arg("--demo")
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[0] NVIDIA H100 80GB HBM3"), "{text}");
    assert!(text.contains("alice"), "{text}");
    assert!(!text.contains('\x1b'), "no colour when piped");
}

#[test]
fn broken_pipe_is_not_a_failure() {
    let out = StdCommand::new("bash")
        .arg("-c")
        .arg(format!(
            "set -o pipefail; {} --demo log --interval 10ms --format csv | head -n 2",
            env!("CARGO_BIN_EXE_gpumon")
        ))
        .output()
        .expect("run bash");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn sigterm_ends_log_cleanly() {
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_gpumon"))
        .args(["--demo", "log", "--interval", "20ms", "--format", "csv"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(400));
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read");
    assert!(out.lines().count() >= 3, "records were flushed: {out}");
}

#[test]
fn per_process_utilisation_comes_from_nvml_samples() {
    // Process 10 has samples; 11 has none while the device samples (idle: 0); a second GPU
    // whose driver cannot give samples keeps N/A with the reason.
    let s = scenario(
        r#"{"version":1,"devices":[
            {"name":"A","memory_total_mib":1000,"processes":[
                {"pid":10,"memory_mib":100,"sm_percent":73,"mem_bw_percent":31},
                {"pid":11,"memory_mib":50,"kind":"both"}]},
            {"name":"B","memory_total_mib":1000,"processes":[
                {"pid":12,"memory_mib":100,"sm_percent":50}]},
            {"name":"C","memory_total_mib":1000,"processes":[
                {"pid":13,"memory_mib":100}]}],
          "faults":[{"kind":"not_supported","device":1,"field":"process_utilization"}]}"#,
    );
    let v = stdout_json(gpumon_fake(&s, 0.0).args(["once", "--json"]));
    let procs = |i: usize| device(&v, i)["processes"].clone();
    assert_eq!(procs(0)[0]["sm_percent"], 73);
    assert_eq!(procs(0)[0]["mem_bw_percent"], 31);
    assert_eq!(
        procs(0)[1]["sm_percent"],
        0,
        "idle while the driver samples"
    );
    assert_eq!(procs(0)[1]["kind"], "both");
    assert!(
        procs(1)[0]["sm_percent"].is_null(),
        "not supported: unknown"
    );
    assert_eq!(
        device(&v, 1)["field_errors"]["process_utilization"],
        "not supported"
    );
    // NOT_FOUND on a device that never gave a sample: unknown, not 0, and not an error.
    assert!(procs(2)[0]["sm_percent"].is_null());
    assert!(device(&v, 2)["field_errors"]
        .get("process_utilization")
        .is_none());
}

#[test]
fn once_fits_80_columns_with_a_header_and_binary_units() {
    let s = scenario(
        r#"{"version":1,"driver_version":"550.54.15","devices":[
            {"name":"NVIDIA H100 80GB HBM3","memory_total_mib":81559,"memory_reserved_mib":529,
             "power_draw_w":540,"power_limit_w":700,"unattributed_mib":2048,
             "processes":[
                {"pid":1,"memory_mib":1024,"sm_percent":40},
                {"pid":2,"memory_mib":30000}]},
            {"name":"NVIDIA H100 80GB HBM3","memory_total_mib":81559,"processes":[]}]}"#,
    );
    let run = |columns: &str| {
        let out = gpumon_fake(&s, 0.0)
            .env("COLUMNS", columns)
            .arg("once")
            .output()
            .expect("run");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let narrow = run("80");
    for line in narrow.lines() {
        assert!(line.chars().count() <= 80, "wider than 80: {line:?}");
    }
    assert!(
        narrow
            .lines()
            .any(|l| l.contains("PID") && l.contains("GPU MEM") && l.contains("COMMAND")),
        "a header line:\n{narrow}"
    );
    assert!(
        narrow.contains("1.0 GiB"),
        "1024 MiB reads 1.0 GiB:\n{narrow}"
    );
    assert!(!narrow.contains("1024.0 MiB"), "{narrow}");
    assert!(
        narrow.contains("[2.0 GiB not attributed]"),
        "kept at 80:\n{narrow}"
    );
    // Wider: the columns and fields that dropped come back.
    let wide = run("160");
    assert!(wide.contains("HOST MEM") && wide.contains("TYPE"), "{wide}");
    assert!(
        wide.contains("540 / 700 W") && wide.contains("reserved)"),
        "{wide}"
    );
    assert!(!narrow.contains("HOST MEM"), "{narrow}");
}

#[test]
fn log_processes_names_the_container_from_the_real_cgroup_file() {
    // This test's own process is the GPU process: its container comes from its real
    // /proc/PID/cgroup, whatever this machine runs it in (host, Docker, Kubernetes).
    let me = std::process::id();
    let s = scenario(&format!(
        r#"{{"version":1,"devices":[{{"name":"G","memory_total_mib":4096,"processes":[
            {{"pid":{me},"memory_mib":100,"sm_percent":12}}]}}]}}"#
    ));
    let out = gpumon_fake(&s, 0.0)
        .args([
            "log",
            "--processes",
            "--count",
            "1",
            "--format",
            "jsonl",
            "--fields",
            "pid,container,sm_percent,mem_bw_percent",
        ])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records = jsonl(&out.stdout);
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let want = gpumon::collect::host::container_of(&cgroup);
    assert_eq!(records[0]["pid"], me);
    assert_eq!(
        records[0]["container"].as_str(),
        want.as_deref(),
        "{cgroup}"
    );
    assert_eq!(records[0]["sm_percent"], 12);
    assert_eq!(records[0]["mem_bw_percent"], 0);
}
