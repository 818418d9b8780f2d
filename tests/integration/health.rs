//! Datacenter GPUs through the fake NVML library: MIG devices, Xid events, ECC, remapped rows
//! and throttle reasons, in `once`, `log` and `serve`; the alerting rules under `promtool`;
//! and how often the costly per-process utilisation call is made.

use std::path::Path;
use std::process::Command as StdCommand;
use std::time::{Duration, Instant};

use crate::common::{fake_lib, gpumon, gpumon_fake, scenario, stdout_json, MIB};
use crate::serve::{serve, wait_for};

/// One H100 with MIG on (two instances, three processes, 200 MiB in GI 1 that no process
/// holds), ECC counts, a pending remapping and a power cap; one whole H100 with an Xid 79
/// scripted at 3 s.
const MIG: &str = r#"{"version":1,"driver_version":"570.86.15",
 "devices":[
  {"name":"NVIDIA H100 80GB HBM3","memory_total_mib":81559,"memory_reserved_mib":559,
   "ecc":{"volatile_corrected":3,"volatile_uncorrected":1,"aggregate_corrected":120,"aggregate_uncorrected":2},
   "remapped_rows":{"corrected":1,"uncorrected":2,"pending":1},
   "clock_event_reasons":[{"reasons":["sw_power_cap","gpu_idle"]}],
   "mig":[{"profile":"3g.40gb","gpu_instance_id":1,"memory_total_mib":40448,"unattributed_mib":200,
           "processes":[{"pid":4800001,"memory_mib":10000},{"pid":4800002,"memory_mib":5000}]},
          {"profile":"2g.20gb","gpu_instance_id":5,"compute_instance_id":0,"memory_total_mib":20096,
           "processes":[{"pid":4800003,"memory_mib":3000}]}]},
  {"name":"NVIDIA H100 80GB HBM3","memory_total_mib":81559,
   "processes":[{"pid":4800004,"memory_mib":1000}]}],
 "faults":[{"kind":"xid","device":1,"xid":79,"at_s":3}]}"#;

#[test]
fn mig_devices_in_once_json_with_exact_memory_and_processes() {
    let s = scenario(MIG);
    let json = stdout_json(gpumon_fake(&s, 0.0).args(["once", "--json"]));
    let gpu = &json["devices"][0];
    let mig = gpu["mig"].as_array().expect("mig devices");
    assert_eq!(mig.len(), 2);
    let (a, b) = (&mig[0], &mig[1]);
    assert_eq!(a["profile"], "3g.40gb");
    assert_eq!(a["name"], "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
    assert_eq!(a["gpu_instance_id"], 1);
    assert_eq!(a["compute_instance_id"], 0);
    assert!(a["uuid"].as_str().is_some_and(|u| u.starts_with("MIG-")));
    assert_eq!(a["memory"]["total_bytes"], 40448 * MIB);
    assert_eq!(a["memory"]["used_bytes"], (200 + 10000 + 5000) * MIB);
    assert_eq!(a["memory"]["free_bytes"], (40448 - 15200) * MIB);
    assert_eq!(b["gpu_instance_id"], 5);
    assert_eq!(b["memory"]["used_bytes"], 3000 * MIB);
    // Utilisation is N/A on MIG (NOT_SUPPORTED, as real drivers answer), never 0.
    assert_eq!(a["utilization"]["gpu_percent"], serde_json::Value::Null);
    assert_eq!(a["field_errors"]["utilization"], "not supported");
    assert_eq!(gpu["utilization"]["gpu_percent"], serde_json::Value::Null);
    // The parent: the instances' sum, and every process with its instance.
    assert_eq!(gpu["memory"]["used_bytes"], (15200 + 3000) * MIB);
    let procs: Vec<(u64, u64, u64)> = gpu["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .map(|p| {
            (
                p["pid"].as_u64().expect("pid"),
                p["gpu_instance_id"].as_u64().expect("gi"),
                p["gpu_memory_bytes"].as_u64().expect("memory"),
            )
        })
        .collect();
    assert_eq!(
        procs,
        vec![
            (4800001, 1, 10000 * MIB),
            (4800002, 1, 5000 * MIB),
            (4800003, 5, 3000 * MIB)
        ]
    );
    // Health, read once: no Xid watch in `once`.
    let h = &gpu["health"];
    assert_eq!(h["ecc"]["volatile_uncorrected"], 1);
    assert_eq!(h["ecc"]["aggregate_corrected"], 120);
    assert_eq!(h["remapped_rows"]["uncorrected"], 2);
    assert_eq!(h["remapped_rows"]["pending"], true);
    assert_eq!(
        h["clock_event_reasons"],
        serde_json::json!(["gpu_idle", "sw_power_cap"])
    );
    assert_eq!(h["xids_watched"], false);
    // A GPU without ECC or remapping: unknown, not 0; MIG off: no instances, no ids.
    let whole = &json["devices"][1];
    assert_eq!(whole["health"]["ecc"], serde_json::Value::Null);
    assert_eq!(whole["health"]["remapped_rows"], serde_json::Value::Null);
    assert_eq!(whole["mig"], serde_json::json!([]));
    assert_eq!(
        whole["processes"][0]["gpu_instance_id"],
        serde_json::Value::Null
    );
}

#[test]
fn once_text_lists_each_instance_under_its_gpu() {
    let s = scenario(MIG);
    let out = gpumon_fake(&s, 0.0)
        .env("COLUMNS", "120")
        .arg("once")
        .output()
        .expect("once");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for want in [
        "MIG 3g.40gb GI 1",
        "MIG 2g.20gb GI 5",
        "row remapping pending",
        "1 uncorrected ECC",
    ] {
        assert!(text.contains(want), "no {want:?} in:\n{text}");
    }
}

#[test]
fn log_gives_each_mig_device_a_record_and_the_health_fields() {
    let s = scenario(MIG);
    let out = gpumon_fake(&s, 0.0)
        .args([
            "log",
            "--count",
            "1",
            "--format",
            "csv",
            "--fields",
            "index,name,memory.used,memory.unattributed,mig.profile,mig.gpu_instance_id,\
             mig.count,remapped_rows.pending,ecc.errors.uncorrected.aggregate.total,\
             clocks_event_reasons.active",
        ])
        .output()
        .expect("log");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let mib = |m: u64| (m * MIB).to_string();
    assert_eq!(
        lines[1..],
        [
            format!(
                "0,NVIDIA H100 80GB HBM3,{},{},,,2,1,2,5",
                mib(18200),
                mib(200)
            ),
            // The unattributed memory of an instance is its own: 200 MiB in GI 1.
            format!(
                "0,NVIDIA H100 80GB HBM3 MIG 3g.40gb,{},{},3g.40gb,1,,,,",
                mib(15200),
                mib(200)
            ),
            format!(
                "0,NVIDIA H100 80GB HBM3 MIG 2g.20gb,{},0,2g.20gb,5,,,,",
                mib(3000)
            ),
            format!("1,NVIDIA H100 80GB HBM3,{},0,,,0,,,0", mib(1000)),
        ],
        "{text}"
    );
}

/// The parent GPU's unattributed memory is 200 MiB too: the instances' sum less every
/// process, never the parent's total less the processes.
#[test]
fn the_parent_breakdown_adds_up_over_its_instances() {
    let s = scenario(MIG);
    let json = stdout_json(gpumon_fake(&s, 0.0).args(["once", "--json"]));
    let parts = json["devices"][0]["breakdown"]["parts"]
        .as_array()
        .expect("parts");
    let unattributed = parts
        .iter()
        .find(|p| p["kind"] == "unattributed")
        .expect("unattributed");
    assert_eq!(unattributed["bytes"], 200 * MIB, "{parts:?}");
}

#[test]
fn serve_labels_mig_devices_and_counts_a_scripted_xid() {
    let s = scenario(MIG);
    let (_serve, addr) = serve(&s, "1", &[]);
    let url = format!("http://{addr}/metrics");
    let body = wait_for(&url, "the Xid counter", |b| {
        b.contains("gpumon_xid_errors_total{gpu=\"1\"")
    });
    let has = |line: &str| body.lines().any(|l| l == line);
    let dev0 = "gpu=\"0\",UUID=\"GPU-5ca1ab1e-0000-4000-8000-000000000000\"";
    let dev1 = "gpu=\"1\",UUID=\"GPU-5ca1ab1e-0000-4000-8000-000000000001\"";
    assert!(
        has(&format!("gpumon_xid_errors_total{{{dev1},xid=\"79\"}} 1")),
        "{body}"
    );
    assert!(
        body.contains("# TYPE gpumon_xid_errors_total counter"),
        "{body}"
    );
    assert!(
        body.lines()
            .any(|l| l.starts_with("DCGM_FI_DEV_XID_ERRORS{gpu=\"1\"") && l.ends_with(" 79")),
        "{body}"
    );
    assert!(
        body.lines()
            .any(|l| l.starts_with("DCGM_FI_DEV_XID_ERRORS{gpu=\"0\"") && l.ends_with(" 0")),
        "{body}"
    );
    // MIG devices with dcgm-exporter's labels, and on gpumon's series.
    assert!(
        body.lines()
            .any(|l| l.starts_with("DCGM_FI_DEV_FB_USED{gpu=\"0\"")
                && l.contains("GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"1\"")
                && l.ends_with(" 15200")),
        "{body}"
    );
    for line in [
        format!("gpumon_memory_used_bytes{{{dev0},GPU_I_ID=\"1\",GPU_I_PROFILE=\"3g.40gb\"}} {}", 15200 * MIB),
        format!("gpumon_memory_unattributed_bytes{{{dev0},GPU_I_ID=\"1\",GPU_I_PROFILE=\"3g.40gb\"}} {}", 200 * MIB),
        format!("gpumon_processes{{{dev0},GPU_I_ID=\"5\",GPU_I_PROFILE=\"2g.20gb\"}} 1"),
        format!("gpumon_process_memory_bytes{{{dev0},pid=\"4800003\",GPU_I_ID=\"5\"}} {}", 3000 * MIB),
        format!("gpumon_ecc_errors_total{{{dev0},type=\"uncorrected\",counter=\"aggregate\"}} 2"),
        format!("gpumon_remapped_rows_pending{{{dev0}}} 1"),
        format!("gpumon_clock_event_reason{{{dev0},reason=\"sw_power_cap\"}} 1"),
        format!("gpumon_clock_event_reason{{{dev0},reason=\"hw_slowdown\"}} 0"),
        format!("gpumon_xid_watched{{{dev0}}} 1"),
    ] {
        assert!(has(&line), "no {line} in:\n{body}");
    }
    // The Prometheus text (0.0.4, above) names the counter as its samples are; OpenMetrics
    // names the family without `_total`.
    let (_, _, om) = crate::serve::curl(&["-H", "Accept: application/openmetrics-text", &url]);
    assert!(om.contains("# TYPE gpumon_xid_errors counter"), "{om}");
    assert!(om.contains("gpumon_xid_errors_total{gpu=\"1\""), "{om}");
}

/// A driver without the event API (NOT_SUPPORTED when the event set is made, as on consumer
/// GPUs), and one whose event wait hangs: the Xid fields say unknown, and every sample still
/// comes on time with its memory figures.
#[test]
fn no_event_api_or_a_hung_event_wait_leaves_the_rest_working() {
    let unsupported = scenario(
        r#"{"version":1,"devices":[{"name":"G","memory_total_mib":1000,"processes":[{"pid":4800010,"memory_mib":100}]}],
            "faults":[{"kind":"not_supported","field":"events"},{"kind":"xid","device":0,"xid":79,"at_s":1}]}"#,
    );
    let hung = scenario(
        r#"{"version":1,"devices":[{"name":"G","memory_total_mib":1000,"processes":[{"pid":4800011,"memory_mib":100}]}],
            "faults":[{"kind":"hang","field":"events","block_s":60},{"kind":"xid","device":0,"xid":79,"at_s":1}]}"#,
    );
    for (s, what) in [(&unsupported, "no event API"), (&hung, "a hung event wait")] {
        let started = Instant::now();
        let out = gpumon()
            .env("GPUMON_NVML_LIB", fake_lib())
            .env("FAKE_NVML_SCENARIO", Path::new(s))
            .args([
                "log",
                "--count",
                "4",
                "--interval",
                "500ms",
                "--format",
                "csv",
                "--fields",
                "memory.used,xid.last,xid.count,error",
            ])
            .timeout(Duration::from_secs(30))
            .output()
            .expect("log");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{what}: {text}");
        let rows: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            rows,
            vec![format!("{},,,", 100 * MIB); 4],
            "{what}: the Xid is unknown, the memory read:\n{text}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{what}: log took {:?}",
            started.elapsed()
        );
    }
    // The event set could not be made: serve says so, with the reason.
    let (_serve, addr) = serve(&unsupported, "1", &[]);
    wait_for(&format!("http://{addr}/metrics"), "the watch state", |b| {
        b.contains("gpumon_xid_watched{gpu=\"0\",UUID=\"GPU-5ca1ab1e-0000-4000-8000-000000000000\",reason=\"not supported\"} 0")
    });
}

/// The costly per-process utilisation call is made every few seconds, not every sample: at
/// 500 ms for 6 s that is 12 samples and at most 3 calls per GPU (and none on a MIG GPU,
/// which answers NOT_SUPPORTED... once).
#[test]
fn per_process_utilisation_is_asked_every_few_seconds() {
    let s = scenario(
        r#"{"version":1,"devices":[
            {"name":"G","memory_total_mib":1000,"processes":[{"pid":4800020,"memory_mib":100,"sm_percent":50}]},
            {"name":"H","memory_total_mib":1000,"processes":[{"pid":4800021,"memory_mib":100,"sm_percent":20}]}]}"#,
    );
    let log = tempfile::NamedTempFile::new().expect("call log");
    let out = gpumon()
        .env("GPUMON_NVML_LIB", fake_lib())
        .env("FAKE_NVML_SCENARIO", Path::new(&s))
        .env("FAKE_NVML_CALL_LOG", log.path())
        .args([
            "log",
            "--processes",
            "--count",
            "12",
            "--interval",
            "500ms",
            "--format",
            "csv",
            "--fields",
            "gpu_index,pid,sm_percent",
        ])
        .timeout(Duration::from_secs(30))
        .output()
        .expect("log");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    // Every record has the figure (the last window's mean between asks).
    assert!(
        text.lines().filter(|l| l.ends_with(",4800020,50")).count() >= 10,
        "{text}"
    );
    let calls = std::fs::read_to_string(log.path()).expect("read the call log");
    for gpu in 0..2 {
        let asks = calls
            .lines()
            .filter(|l| {
                l.starts_with("nvmlDeviceGetProcessUtilization ")
                    && l.split_whitespace().nth(1) == Some(&gpu.to_string())
            })
            .count();
        // Each ask is a count call and a fill call (nvml-wrapper's), so 2 per ask.
        assert!(
            (2..=6).contains(&asks),
            "GPU {gpu}: {asks} calls for 12 samples over 6 s:\n{calls}"
        );
    }
}

#[test]
fn promtool_checks_and_tests_the_alerting_rules() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/prometheus");
    for args in [
        vec!["check", "rules", "alerts.yml"],
        vec!["test", "rules", "alerts.test.yml"],
    ] {
        let out = StdCommand::new("promtool")
            .args(&args)
            .current_dir(&dir)
            .output()
            .expect("promtool is required (apt-get install prometheus)");
        assert!(
            out.status.success(),
            "promtool {args:?}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Inside a container NVML may refuse a MIG GPU's own memory and process lists (no
/// privilege): gpumon reads each MIG device instead, and the GPU's memory is their sum.
#[test]
fn an_unprivileged_caller_reads_each_mig_device() {
    let s = scenario(&MIG.replace(
        r#""faults":["#,
        r#""faults":[{"kind":"no_permission","field":"mig_aggregates","device":0},"#,
    ));
    let json = stdout_json(gpumon_fake(&s, 0.0).args(["once", "--json"]));
    let gpu = &json["devices"][0];
    assert_eq!(gpu["memory"]["total_bytes"], (40448 + 20096) * MIB);
    assert_eq!(gpu["memory"]["used_bytes"], (15200 + 3000) * MIB);
    assert_eq!(gpu["memory"]["reserved_bytes"], serde_json::Value::Null);
    assert_eq!(gpu["processes_error"], serde_json::Value::Null);
    let procs: Vec<(u64, u64)> = gpu["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .map(|p| {
            (
                p["pid"].as_u64().expect("pid"),
                p["gpu_instance_id"].as_u64().expect("gi"),
            )
        })
        .collect();
    assert_eq!(procs, vec![(4800001, 1), (4800002, 1), (4800003, 5)]);
    assert_eq!(
        json["devices"][0]["mig"][0]["memory"]["used_bytes"],
        15200 * MIB
    );
}

/// W1: Xid 79 comes just before the GPU falls off the bus. Once it is lost, its Xid, ECC
/// and DCGM_FI_DEV_XID_ERRORS series stay (they vanished with the loss, so the shipped
/// GpuFellOffTheBus alert almost never fired), beside `gpumon_gpu_up 0`.
#[test]
fn a_lost_gpu_keeps_its_xid_and_ecc_series() {
    let s = scenario(
        r#"{"version":1,
 "devices":[{"name":"NVIDIA H100 80GB HBM3","memory_total_mib":81559,
   "ecc":{"volatile_corrected":3,"volatile_uncorrected":1,"aggregate_corrected":120,"aggregate_uncorrected":2}}],
 "faults":[{"kind":"xid","device":0,"xid":79,"at_s":1},
           {"kind":"device_lost","device":0,"at_s":3}]}"#,
    );
    let (_serve, addr) = serve(&s, "1", &["--interval", "250ms"]);
    let url = format!("http://{addr}/metrics");
    let dev0 = "gpu=\"0\",UUID=\"GPU-5ca1ab1e-0000-4000-8000-000000000000\"";
    let up0 = format!("gpumon_gpu_up{{{dev0}}} 0");
    wait_for(&url, "the Xid", |b| b.contains("xid=\"79\""));
    // A few samples after the loss: the series are still there.
    let body = wait_for(&url, "the loss", |b| b.lines().any(|l| l == up0));
    std::thread::sleep(std::time::Duration::from_secs(1));
    let (_, body_later) = crate::serve::get(&url);
    for body in [&body, &body_later] {
        let has = |line: &str| body.lines().any(|l| l == line);
        for line in [
            up0.clone(),
            format!("gpumon_xid_errors_total{{{dev0},xid=\"79\"}} 1"),
            format!(
                "gpumon_ecc_errors_total{{{dev0},type=\"uncorrected\",counter=\"aggregate\"}} 2"
            ),
        ] {
            assert!(has(&line), "no {line} in:\n{body}");
        }
        assert!(
            body.lines()
                .any(|l| l.starts_with("DCGM_FI_DEV_XID_ERRORS{gpu=\"0\"") && l.ends_with(" 79")),
            "{body}"
        );
        assert!(
            !body.contains(&format!("gpumon_memory_used_bytes{{{dev0}}}")),
            "{body}"
        );
    }
}
