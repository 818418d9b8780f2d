//! Unified memory and container GPU memory limits through the fake NVML library and the
//! stand-in system trees of `tests/fixtures/unified` (pointed at by `GPUMON_HOST_ROOT`): a
//! GB10-like part (memory NOT_SUPPORTED), a GH200-like part in NUMA mode and in CDMM, and a
//! container at its limit with the device half free, in `once`, `pick`, `explain`, `serve`
//! (read back by a real Prometheus) and the dashboard.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use gpumon::model::unified::{GpuLimit, LimitSource};
use gpumon::model::{Device, Memory, Process, ProcessKind, Sample, Utilization};
use gpumon::tui::app::App;
use gpumon::tui::render_once;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::Value;

use crate::common::{fake_lib, gpumon_fake, serve_address, stdout_json, MIB};
use crate::docs::{assert_valid, once_validator, schema_pub};
use crate::serve::{free_port, query, Running};

const GIB: u64 = 1 << 30;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn scenario(name: &str) -> PathBuf {
    repo(&format!("assets/scenarios/{name}.json"))
}

fn tree(name: &str) -> PathBuf {
    repo(&format!("tests/fixtures/unified/{name}"))
}

/// `once --json` on a scenario with the system read under `root`, checked against its schema.
fn once_json(name: &str, root: &Path) -> Value {
    let v = stdout_json(
        gpumon_fake(&scenario(name), 0.0)
            .env("GPUMON_HOST_ROOT", root)
            .args(["once", "--json"]),
    );
    assert_valid(&once_validator(), &v, name);
    v
}

/// The schemas' enums are the code's: each variant serialised, in order.
#[test]
fn the_schemas_name_the_codes_methods_modes_and_sources() {
    use gpumon::model::unified::{CoherentMode, MemoryMethod};
    let names = Value::Array;
    let (once, _) = schema_pub("once.schema.json");
    let (explain, _) = schema_pub("explain.schema.json");
    assert_eq!(
        once["$defs"]["memory_method"]["enum"],
        names(vec![
            serde_json::to_value(MemoryMethod::Nvml).expect("json"),
            serde_json::to_value(MemoryMethod::ProcessSum).expect("json"),
        ])
    );
    assert_eq!(
        once["$defs"]["coherent_mode"]["enum"],
        names(vec![
            serde_json::to_value(CoherentMode::Numa).expect("json"),
            serde_json::to_value(CoherentMode::Cdmm).expect("json"),
        ])
    );
    assert_eq!(
        once["$defs"]["limit_source"]["enum"],
        names(vec![
            serde_json::to_value(LimitSource::Dmem).expect("json"),
            serde_json::to_value(LimitSource::Nvml).expect("json"),
        ])
    );
    assert_eq!(explain["$defs"]["gpu_limit"], once["$defs"]["gpu_limit"]);
    // A match that names every variant: a new one fails to compile here until listed above.
    for m in [MemoryMethod::Nvml, MemoryMethod::ProcessSum] {
        match m {
            MemoryMethod::Nvml | MemoryMethod::ProcessSum => {}
        }
    }
    for m in [CoherentMode::Numa, CoherentMode::Cdmm] {
        match m {
            CoherentMode::Numa | CoherentMode::Cdmm => {}
        }
    }
    for s in [LimitSource::Dmem, LimitSource::Nvml] {
        match s {
            LimitSource::Dmem | LimitSource::Nvml => {}
        }
    }
}

fn once_text(name: &str, root: &Path) -> String {
    let out = gpumon_fake(&scenario(name), 0.0)
        .env("GPUMON_HOST_ROOT", root)
        .env("COLUMNS", "200")
        .arg("once")
        .output()
        .expect("once");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_gb10_sums_its_processes_and_never_counts_the_hosts_use() {
    let v = once_json("gb10", &tree("gb10"));
    let d = &v["devices"][0];
    // NVML reports nothing for the device's memory: N/A, not 0, and the reason.
    assert_eq!(d["memory"]["used_bytes"], Value::Null, "{d}");
    assert_eq!(d["field_errors"]["memory"], "not supported");
    let s = &d["shared_memory"];
    assert_eq!(s["method"], "process_sum", "{s}");
    // 40 GiB + 2 GiB of listed processes, not MemTotal − MemAvailable (60 GiB here).
    assert_eq!(s["gpu_held_bytes"], 42 * GIB);
    let host_use = 125829120u64 * 1024 - 62914560 * 1024;
    assert_ne!(s["gpu_held_bytes"], host_use);
    assert_eq!(s["system_total_bytes"], 125829120u64 * 1024);
    assert_eq!(s["headroom_bytes"], 60 * GIB);
    assert_eq!(s["pressure"]["some_avg10"], 3.2);
    assert_eq!(s["coherent_mode"], Value::Null);
    let text = once_text("gb10", &tree("gb10"));
    assert!(
        text.contains("GPU holds 42.0 GiB (derived: sum of its processes")
            && text.contains("the system can still give 60.0 GiB of 120.0 GiB")
            && text.contains("memory pressure 3.2%")
            // The GPU's line gives the dashboard gauge's figures: the processes' sum of the
            // system's memory, not N/A and not the 60 GiB in use.
            && text.contains("| GPU 42.0 GiB derived / 120.0 GiB shared |"),
        "{text}"
    );
}

#[test]
fn log_carries_the_method_and_the_limit() {
    let fields = "index,memory.used,memory.method,memory.gpu_held,memory.headroom,memory.pressure,cgroup.name,cgroup.limit,cgroup.used";
    let log = |name: &str, root: &Path| {
        let out = gpumon_fake(&scenario(name), 0.0)
            .env("GPUMON_HOST_ROOT", root)
            .args(["log", "--count", "1", "--format", "csv", "--fields", fields])
            .timeout(Duration::from_secs(30))
            .output()
            .expect("log");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let gb10 = log("gb10", &tree("gb10"));
    let row = gb10.lines().nth(1).expect("a record");
    assert_eq!(
        row,
        format!("0,,process_sum,{},{},3.2,,,", 42 * GIB, 60 * GIB),
        "{gb10}"
    );
    let limited = log("container-limit", &tree("limit"));
    let row = limited.lines().nth(1).expect("a record");
    let used = (32768 + 7372) * MIB;
    assert_eq!(
        row,
        format!(
            "0,{used},nvml,{used},,,/kubepods/pod-cy/c1,{},{}",
            8 * GIB,
            7372 * MIB
        ),
        "{limited}"
    );
}

#[test]
fn a_gh200_says_whether_its_hbm_is_a_numa_node() {
    let v = once_json("gh200", &tree("gh200-numa"));
    let s = &v["devices"][0]["shared_memory"];
    assert_eq!(s["method"], "nvml", "{s}");
    assert_eq!(s["gpu_held_bytes"], 50 * GIB);
    assert_eq!(s["coherent_mode"], "numa");
    let node = &s["hbm_node"];
    assert_eq!(node["node"], 1);
    assert_eq!(node["total_bytes"], 96 * GIB);
    // The node's 56 GiB in use less the GPU's 50: 6 GiB the kernel placed there for the host.
    assert_eq!(node["host_bytes"], 6 * GIB);
    let v = once_json("gh200", &tree("gh200-cdmm"));
    let s = &v["devices"][0]["shared_memory"];
    assert_eq!(s["coherent_mode"], "cdmm", "{s}");
    assert_eq!(s["hbm_node"], Value::Null);
    assert!(once_text("gh200", &tree("gh200-cdmm")).contains("HBM kept by the driver (CDMM)"));
}

#[test]
fn a_discrete_gpu_without_a_limit_is_as_before() {
    let v = once_json("container-limit", &tree("gb10"));
    let d = &v["devices"][0];
    assert!(d.get("shared_memory").is_none(), "{d}");
    // No limit in NVML for a cgroup that is not the scenario's, no dmem controller.
    assert!(d.get("container_limit").is_none(), "{d}");
}

#[test]
fn the_containers_limit_from_dmem() {
    let v = once_json("container-limit", &tree("limit"));
    let l = &v["devices"][0]["container_limit"];
    assert_eq!(l["source"], "dmem", "{l}");
    assert_eq!(l["cgroup"], "/kubepods/pod-cy/c1");
    assert_eq!(l["hard_bytes"], 8 * GIB);
    assert_eq!(l["used_bytes"], 7372 * MIB);
    assert_eq!(l["soft_bytes"], Value::Null);
    let text = once_text("container-limit", &tree("limit"));
    assert!(
        text.contains(
            "this container: 7.2 GiB of 8.0 GiB (dmem limit of cgroup /kubepods/pod-cy/c1)"
        ),
        "{text}"
    );
}

/// A root with gpumon's cgroup and no dmem controller: the limit comes from the fake
/// library's `nvmlDeviceGetMemoryLimits_v1`, called with the cgroup directory's path.
fn nvml_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    let p = dir.path().join("proc/self");
    std::fs::create_dir_all(&p).expect("mkdir");
    std::fs::write(p.join("cgroup"), "0::/kubepods/pod-cy/c1\n").expect("write");
    dir
}

#[test]
fn the_containers_limit_from_nvml_r615() {
    let root = nvml_root();
    let v = once_json("container-limit", root.path());
    let l = &v["devices"][0]["container_limit"];
    assert_eq!(l["source"], "nvml", "{l}");
    assert_eq!(l["hard_bytes"], 8 * GIB);
    assert_eq!(l["used_bytes"], 7372 * MIB);
    // Another cgroup: NVML answers NOT_SUPPORTED, and there is no limit, not a 0.
    std::fs::write(root.path().join("proc/self/cgroup"), "0::/other\n").expect("write");
    let v = once_json("container-limit", root.path());
    assert!(v["devices"][0].get("container_limit").is_none());
}

#[test]
fn pick_counts_the_limit_as_the_room() {
    let out = gpumon_fake(&scenario("container-limit"), 0.0)
        .env("GPUMON_HOST_ROOT", tree("limit"))
        .args(["pick", "--need", "2GiB"])
        .timeout(Duration::from_secs(30))
        .output()
        .expect("pick");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("820.0 MiB free within this container's GPU memory limit of 8.0 GiB"),
        "{err}"
    );
    // Without the limit the GPU's 40 GiB free are room enough.
    let out = gpumon_fake(&scenario("container-limit"), 0.0)
        .env("GPUMON_HOST_ROOT", tree("gb10"))
        .args(["pick", "--need", "2GiB", "--format", "list"])
        .output()
        .expect("pick");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0\n");
}

const OOM_AT_LIMIT: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 8.00 GiB of which 820.00 MiB is free. Including non-PyTorch memory, this process has 7.20 GiB memory in use. Of the allocated memory 6.50 GiB is allocated by PyTorch, and 200.00 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n";

#[test]
fn explain_says_an_oom_at_the_limit_is_the_limits() {
    let out = gpumon_fake(&scenario("container-limit"), 0.0)
        .env("GPUMON_HOST_ROOT", tree("limit"))
        .env("COLUMNS", "200")
        .arg("explain")
        .write_stdin(OOM_AT_LIMIT)
        .output()
        .expect("explain");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("raised at this container's GPU memory limit (8.0 GiB hard")
            && text.contains("while GPU 0 had 40.3 GiB free")
            && text.contains("NVIDIA_GPU_MEMORY_LIMIT"),
        "{text}"
    );
    let out = gpumon_fake(&scenario("container-limit"), 0.0)
        .env("GPUMON_HOST_ROOT", tree("limit"))
        .args(["explain", "--json"])
        .write_stdin(OOM_AT_LIMIT)
        .output()
        .expect("explain");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let (_, explain) = schema_pub("explain.schema.json");
    assert_valid(&explain, &v, "explain at the limit");
    let l = &v["container_limit"];
    assert_eq!(l["gpu"], 0, "{l}");
    assert_eq!(l["limit"]["hard_bytes"], 8 * GIB);
    assert_eq!(l["device_free_bytes"], (81920 - 512 - 32768 - 7372) * MIB);
    // Without a limit, nothing is said of one.
    let out = gpumon_fake(&scenario("container-limit"), 0.0)
        .env("GPUMON_HOST_ROOT", tree("gb10"))
        .args(["explain", "--json"])
        .write_stdin(OOM_AT_LIMIT)
        .output()
        .expect("explain");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["container_limit"], Value::Null);
}

#[test]
fn prometheus_reads_back_the_limit_and_the_shared_memory() {
    let start_serve = |name: &str, root: &Path| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_gpumon"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("GPUMON_NVML_LIB", fake_lib())
            .env("FAKE_NVML_SCENARIO", scenario(name))
            .env("FAKE_NVML_SPEED", "0")
            .env("GPUMON_HOST_ROOT", root)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start gpumon serve");
        let addr = serve_address(&mut child);
        (Running(child), addr)
    };
    let (_limit, limit_addr) = start_serve("container-limit", &tree("limit"));
    let (_gb10, gb10_addr) = start_serve("gb10", &tree("gb10"));
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: gpumon\n    static_configs:\n      - targets: ['{limit_addr}', '{gb10_addr}']\n"
        ),
    )
    .expect("write config");
    let prom = format!("127.0.0.1:{}", free_port());
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={prom}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus is required for this test (apt-get install prometheus)");
    let _prometheus = Running(child);
    let start = Instant::now();
    while query(&prom, "count(up{job=\"gpumon\"} == 1)") != Some(2.0) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "Prometheus never scraped gpumon"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let expect = [
        (
            "gpumon_cgroup_memory_limit_bytes{gpu=\"0\",cgroup=\"/kubepods/pod-cy/c1\",source=\"dmem\"}",
            (8 * GIB) as f64,
        ),
        (
            "gpumon_cgroup_memory_used_bytes{cgroup=\"/kubepods/pod-cy/c1\"}",
            (7372 * MIB) as f64,
        ),
        (
            "gpumon_shared_memory_gpu_held_bytes{method=\"process_sum\"}",
            (42 * GIB) as f64,
        ),
        ("gpumon_shared_memory_headroom_bytes", (60 * GIB) as f64),
        ("count(gpumon_cgroup_memory_limit_bytes)", 1.0),
    ];
    for (q, want) in expect {
        let got = query(&prom, q);
        assert!(
            got.is_some_and(|v| (v - want).abs() < 1e-6 * want.max(1.0)),
            "{q}: Prometheus has {got:?}, the scenario says {want}"
        );
    }
}

/// An A100 with this container's 8 GiB limit on it, 7.2 GiB used.
fn limited(t: u64) -> Vec<Device> {
    let total = 81920 * MIB;
    let used = (40140 + t % 2) * MIB;
    let mut p = Process::from_nvml(7101, ProcessKind::Compute, Some(7372 * MIB));
    p.user = Some("cy".into());
    p.name = Some("python".into());
    p.command = Some("python finetune.py".into());
    vec![Device {
        index: 0,
        uuid: Some("GPU-00000000".into()),
        name: Some("NVIDIA A100-SXM4-80GB".into()),
        pci_bus_id: Some("00000000:01:00.0".into()),
        memory: Memory {
            total_bytes: Some(total),
            used_bytes: Some(used),
            free_bytes: Some(total - 512 * MIB - used),
            reserved_bytes: Some(512 * MIB),
        },
        utilization: Utilization {
            gpu_percent: Some(40),
            memory_percent: Some(10),
        },
        processes: vec![p],
        container_limit: Some(GpuLimit {
            cgroup: "/kubepods/pod-cy/c1".into(),
            source: LimitSource::Dmem,
            hard_bytes: Some(8 * GIB),
            soft_bytes: None,
            used_bytes: Some(7372 * MIB),
        }),
        ..Device::default()
    }]
}

#[test]
fn snapshot_the_dashboard_marks_the_containers_limit() {
    let mut terminal = Terminal::new(TestBackend::new(100, 24)).expect("terminal");
    let mut app = App::new(&crate::common::dashboard_settings(
        Duration::from_secs(1),
        Duration::from_secs(600),
    ));
    for t in 0..5 {
        let sample = node7_sample(t, limited(t));
        render_once(&mut terminal, &mut app, sample).expect("draw");
    }
    let text = terminal.backend().to_string();
    assert!(
        text.contains("this container: 7.2 GiB of 8.0 GiB"),
        "{text}"
    );
    // The mark at 8 of 80 GiB: a tenth of the gauge's width.
    assert!(text.contains('╏'), "{text}");
    insta::assert_snapshot!(terminal.backend());
}

/// A GB10 in a container with a GPU memory limit of 70 GiB (66 GiB used of it): the shared
/// pool's gauge draws the GPU's 66 GiB, the host's 10 GiB, the 4 GiB the limit still allows as
/// free and the rest of MemAvailable beyond the limit; the limit is marked; and as the host's
/// own use grows, the GPU's part of the bar stays as wide.
#[test]
fn the_shared_gauge_keeps_the_gpus_part_whatever_the_host_uses() {
    use gpumon::model::unified::{MemoryMethod, SharedMemory};
    let frame = |available: u64| {
        let mut p = Process::from_nvml(5101, ProcessKind::Compute, Some(66 * GIB));
        p.user = Some("ana".into());
        let limit = GpuLimit {
            cgroup: "/kubepods/pod-ana/c1".into(),
            source: LimitSource::Nvml,
            hard_bytes: Some(70 * GIB),
            soft_bytes: None,
            used_bytes: Some(66 * GIB),
        };
        let device = Device {
            index: 0,
            name: Some("NVIDIA GB10".into()),
            processes: vec![p],
            shared_memory: Some(SharedMemory {
                method: MemoryMethod::ProcessSum,
                gpu_held_bytes: Some(66 * GIB),
                system_total_bytes: Some(120 * GIB),
                system_available_bytes: Some(available),
                headroom_bytes: Some(available.min(4 * GIB)),
                pressure: None,
                coherent_mode: None,
                hbm_node: None,
            }),
            container_limit: Some(limit),
            ..Device::default()
        };
        let mut terminal = Terminal::new(TestBackend::new(120, 20)).expect("terminal");
        let mut app = App::new(&crate::common::dashboard_settings(
            Duration::from_secs(1),
            Duration::from_secs(600),
        ));
        let sample = Arc::new(Sample {
            timestamp: SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000),
            hostname: Some("spark".into()),
            source: "nvml",
            driver_version: None,
            cuda_version: None,
            devices: vec![device],
            error: None,
            host: None,
        });
        render_once(&mut terminal, &mut app, sample).expect("draw");
        terminal.backend().to_string()
    };
    let bar = |text: &str| -> String {
        text.lines()
            .find(|l| l.contains('█'))
            .unwrap_or_default()
            .to_owned()
    };
    let count = |line: &str, c: char| line.chars().filter(|x| *x == c).count();
    // 120 GiB: 44 available, so 76 in use: the GPU's 66 and the host's 10.
    let a = frame(44 * GIB);
    assert!(
        a.contains("shared memory 120.0 GiB: GPU 66.0 GiB (derived) · host 10.0 GiB · free 4.0 GiB · beyond the limit 40.0 GiB"),
        "{a}"
    );
    let bar_a = bar(&a);
    // 66 of 120 GiB of 120 cells; the limit's mark at 70 GiB.
    assert_eq!(count(&bar_a, '█'), 66, "{bar_a}");
    assert!(bar_a.contains('╏'), "{bar_a}");
    // The host takes 30 GiB more: its part grows, the GPU's does not.
    let b = frame(14 * GIB);
    let bar_b = bar(&b);
    assert!(b.contains("GPU 66.0 GiB (derived) · host 40.0 GiB"), "{b}");
    assert_eq!(count(&bar_b, '█'), 66, "{bar_b}");
    assert!(count(&bar_b, '▓') > count(&bar_a, '▓'), "{bar_a}\n{bar_b}");
}

/// A simulated GPU is never shown beside this machine's memory: the simulated source reads
/// the system only under a `GPUMON_HOST_ROOT` given for it. The scenario's own limit stays.
#[test]
fn a_simulated_gpu_reads_no_host_files_unless_given_a_root() {
    let run = |name: &str, root: Option<&Path>| {
        let mut cmd = crate::common::gpumon();
        cmd.env_remove("GPUMON_HOST_ROOT");
        if let Some(r) = root {
            cmd.env("GPUMON_HOST_ROOT", r);
        }
        let scen = scenario(name);
        stdout_json(cmd.args(["--scenario"]).arg(&scen).args(["once", "--json"]))
    };
    let bare = run("gb10", None);
    assert!(bare["devices"][0].get("shared_memory").is_none(), "{bare}");
    let rooted = run("gb10", Some(&tree("gb10")));
    assert_eq!(
        rooted["devices"][0]["shared_memory"]["headroom_bytes"],
        60 * GIB
    );
    let limited = run("container-limit", None);
    let l = &limited["devices"][0]["container_limit"];
    assert_eq!(
        (l["source"].as_str(), l["hard_bytes"].as_u64()),
        (Some("nvml"), Some(8 * GIB))
    );
}

/// `explain --recording`: the recorded container limit says the error was the limit's, with
/// no driver or cgroup read now (`--offline`).
#[test]
fn explain_reads_the_limit_from_a_recording() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("limit.rec.zst");
    let rec = Command::new(env!("CARGO_BIN_EXE_gpumon"))
        .args(["record", "--interval", "200ms", "-o"])
        .arg(&file)
        .env("GPUMON_NVML_LIB", fake_lib())
        .env("FAKE_NVML_SCENARIO", scenario("container-limit"))
        .env("FAKE_NVML_SPEED", "1")
        .env("GPUMON_HOST_ROOT", tree("limit"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("gpumon record");
    let rec = Running(rec);
    let start = Instant::now();
    while crate::recording::replayed_count(&file) < 3 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no samples recorded"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(rec);
    let rows = crate::recording::replayed(&file);
    let last = rows.last().expect("rows")["timestamp"]
        .as_str()
        .expect("time")
        .to_owned();
    let out = crate::common::gpumon()
        .env_remove("GPUMON_HOST_ROOT")
        .args(["explain", "--offline", "--json", "--recording"])
        .arg(&file)
        .args(["--at", &last])
        .write_stdin(OOM_AT_LIMIT)
        .output()
        .expect("explain");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["here"], Value::Null);
    let l = &v["container_limit"];
    assert_eq!(l["limit"]["hard_bytes"], 8 * GIB, "{v:#}");
    assert_eq!(l["limit"]["source"], "dmem");
}

/// A stand-in root with the `dmem` controller and `dmem.max`/`dmem.current` at `cgroup` on
/// GPU 0 (`0000:01:00.0`), gpumon itself in an unlimited cgroup of its own.
fn owner_root(limits: &[(&str, u64, u64)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    let write = |rel: &str, text: &str| {
        let p = dir.path().join(rel.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    write("proc/self/cgroup", "0::/gpumon.scope\n");
    write("sys/fs/cgroup/cgroup.controllers", "cpu memory pids dmem\n");
    for (cgroup, max, current) in limits {
        let at = format!("sys/fs/cgroup/{}", cgroup.trim_matches('/'));
        write(
            &format!("{at}/dmem.max"),
            &format!("drm/0000:01:00.0/vram0 {max}\n"),
        );
        write(
            &format!("{at}/dmem.current"),
            &format!("drm/0000:01:00.0/vram0 {current}\n"),
        );
    }
    dir
}

/// A real process listed by NVML gets the limit of the cgroup it is in (read from its own
/// `/proc/PID/cgroup`, the stand-in tree's `dmem` files at that path) in `once --json`.
#[test]
fn a_real_process_gets_its_cgroups_limit() {
    let mut child = Command::new("sleep").arg("60").spawn().expect("sleep");
    let pid = child.id();
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let Some(cgroup) = text.lines().find_map(|l| l.strip_prefix("0::")) else {
        let _ = child.kill();
        let _ = child.wait();
        eprintln!("no cgroup v2 line for a child here; skipped");
        return;
    };
    let cgroup = cgroup.trim().to_owned();
    let root = owner_root(&[(&cgroup, 8 * GIB, 3 * GIB)]);
    let scn = crate::common::scenario(&format!(
        r#"{{"version":1,"devices":[{{"name":"G0","memory_total_mib":81920,
            "processes":[{{"pid":{pid},"memory_mib":2048}}]}}]}}"#
    ));
    let v = stdout_json(
        gpumon_fake(&scn, 0.0)
            .env("GPUMON_HOST_ROOT", root.path())
            .args(["once", "--json"]),
    );
    let _ = child.kill();
    let _ = child.wait();
    assert_valid(&once_validator(), &v, "a process's limit");
    let l = &v["devices"][0]["processes"][0]["gpu_limit"];
    let want = if cgroup == "/" {
        "/"
    } else {
        cgroup.trim_end_matches('/')
    };
    assert_eq!(l["cgroup"], want, "{v:#}");
    assert_eq!(
        (l["hard_bytes"].as_u64(), l["used_bytes"].as_u64()),
        (Some(8 * GIB), Some(3 * GIB))
    );
    assert_eq!(l["source"], "dmem");
}

/// Two pods, each limited in its own cgroup, and a host process without a limit.
fn two_pods() -> tempfile::TempPath {
    crate::common::scenario(
        r#"{"version":1,"devices":[{"name":"NVIDIA A100-SXM4-80GB","memory_total_mib":81920,
            "processes":[
              {"pid":11,"memory_mib":6000,"cgroup":"0::/kubepods/burstable/poda1b2c3d4-0000-4000-8000-000000000001/c0ffee01"},
              {"pid":12,"memory_mib":1000,"cgroup":"0::/kubepods/burstable/poda1b2c3d4-0000-4000-8000-000000000001/c0ffee01"},
              {"pid":21,"memory_mib":2000,"cgroup":"0::/kubepods/burstable/podb1b2c3d4-0000-4000-8000-000000000002/c0ffee02"},
              {"pid":31,"memory_mib":500,"user":"root","start_s":-10,"cgroup":"0::/user.slice"}]}]}"#,
    )
}

fn two_pod_limits() -> tempfile::TempDir {
    owner_root(&[
        (
            "/kubepods/burstable/poda1b2c3d4-0000-4000-8000-000000000001/c0ffee01",
            8 * GIB,
            7 * GIB,
        ),
        (
            "/kubepods/burstable/podb1b2c3d4-0000-4000-8000-000000000002/c0ffee02",
            4 * GIB,
            2 * GIB,
        ),
    ])
}

/// `once --by owner`: each pod's limit beside it, in the table and its JSON; the host
/// process's owner has none.
#[test]
fn the_per_owner_view_shows_each_owners_limit() {
    let (scn, root) = (two_pods(), two_pod_limits());
    let once = |json: bool| {
        let mut cmd = crate::common::gpumon();
        cmd.env("GPUMON_HOST_ROOT", root.path())
            .arg("--scenario")
            .arg(&scn)
            .args(["once", "--by", "owner"]);
        if json {
            cmd.arg("--json");
        }
        cmd
    };
    let v = stdout_json(&mut once(true));
    let (_, by) = schema_pub("by.schema.json");
    assert_valid(&by, &v, "once --by owner --json with limits");
    let rows = v["rows"].as_array().cloned().unwrap_or_default();
    let limits: Vec<(u64, u64)> = rows
        .iter()
        .map(|r| {
            let l = &r["limits"][0];
            (
                l["hard_bytes"].as_u64().unwrap_or(0),
                l["used_bytes"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        limits,
        [(8 * GIB, 7 * GIB), (4 * GIB, 2 * GIB), (0, 0)],
        "{v:#}"
    );
    assert_eq!(rows[0]["limits"][0]["gpu"], 0);
    assert!(rows[2].get("limits").is_none(), "{v:#}");
    let out = once(false).output().expect("once");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("GPU memory limits:"), "{text}");
    assert!(
        text.contains(
            "on GPU 0: 7.0 GiB of 8.0 GiB (dmem limit of cgroup /kubepods/burstable/poda1b2c3d4"
        ),
        "{text}"
    );
    assert!(text.contains("on GPU 0: 2.0 GiB of 4.0 GiB"), "{text}");
}

/// `serve`: the owners' limits as `gpumon_cgroup_memory_limit_bytes` / `…_used_bytes`
/// labelled with the pod as the process series are, only with `--process-labels pod`; and
/// `/api/v1/sample` carries a process's limit only where its owner is shown.
#[test]
fn serve_labels_owner_limits_as_the_owners_are() {
    let (scn, root) = (two_pods(), two_pod_limits());
    let serve = |labels: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpumon"));
        cmd.env("GPUMON_HOST_ROOT", root.path())
            .arg("--scenario")
            .arg(&scn)
            .args(["serve", "--listen", "127.0.0.1:0"]);
        if let Some(l) = labels {
            cmd.args(["--process-labels", l]);
        }
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start gpumon serve");
        let addr = serve_address(&mut child);
        let metrics = crate::serve::wait_for(
            &format!("http://{addr}/metrics"),
            "the processes' series",
            |b| b.contains("pid=\"31\""),
        );
        let sample = crate::serve::get(&format!("http://{addr}/api/v1/sample")).1;
        drop(Running(child));
        (metrics, sample)
    };
    let (shown, sample) = serve(Some("pod"));
    let series: Vec<&str> = shown
        .lines()
        .filter(|l| l.starts_with("gpumon_cgroup_memory_limit_bytes{"))
        .collect();
    assert_eq!(series.len(), 2, "{shown}");
    let a = series
        .iter()
        .find(|l| l.contains("c0ffee01"))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(a.contains("pod=\"") && a.contains("source=\"dmem\""), "{a}");
    assert!(a.ends_with(&format!(" {}", 8 * GIB)), "{a}");
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("gpumon_cgroup_memory_used_bytes{")
                && l.contains("c0ffee02")
                && l.ends_with(&format!(" {}", 2 * GIB))),
        "{shown}"
    );
    assert!(sample.contains("\"gpu_limit\""), "{sample}");

    let (hidden, sample) = serve(None);
    assert!(!hidden.contains("c0ffee0"), "{hidden}");
    assert!(!sample.contains("gpu_limit"), "{sample}");
}

/// Many GPUs: the compact one-line layout says each GPU's container limit where the line has
/// room, and marks it on the bar.
#[test]
fn snapshot_the_compact_dashboard_says_the_limit() {
    let mut terminal = Terminal::new(TestBackend::new(120, 16)).expect("terminal");
    let mut app = App::new(&crate::common::dashboard_settings(
        Duration::from_secs(1),
        Duration::from_secs(600),
    ));
    let devices = |t: u64| -> Vec<Device> {
        (0..8u32)
            .map(|i| {
                let mut d = limited(t).remove(0);
                d.index = i;
                d.uuid = Some(format!("GPU-0000000{i}"));
                if i % 2 == 1 {
                    d.container_limit = None;
                }
                d
            })
            .collect()
    };
    for t in 0..3 {
        let sample = node7_sample(t, devices(t));
        render_once(&mut terminal, &mut app, sample).expect("draw");
    }
    let text = terminal.backend().to_string();
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("A100")).collect();
    assert!(rows.len() >= 4, "compact, one line a GPU:\n{text}");
    for (i, r) in rows.iter().enumerate() {
        assert!(
            r.trim_start_matches('"').starts_with(&format!("[{i}]")),
            "{r}"
        );
        assert_eq!(r.contains("limit 8.0 GiB"), i % 2 == 0, "{r}");
        assert_eq!(r.contains('╏'), i % 2 == 0, "{r}");
    }
    insta::assert_snapshot!(terminal.backend());
}

/// gpumon with no NVML to load and the system read under `root`.
fn without_nvml(root: &Path) -> assert_cmd::Command {
    let mut cmd = crate::common::gpumon();
    cmd.args(["--nvml-lib", "/nonexistent/libnvidia-ml.so.1"])
        .env("GPUMON_HOST_ROOT", root);
    cmd
}

/// A Jetson without NVML: its integrated GPU is found in sysfs (devfreq's `of_node` name), its
/// load and temperature read, its memory the system's: the device's own memory is unknown
/// (null, never 0), no GPU-held figure is made up, and the headroom is MemAvailable, derived.
#[test]
fn a_jetson_without_nvml_is_read_from_sysfs_and_its_memory_said_as_shared() {
    let v = stdout_json(without_nvml(&tree("jetson-orin")).args(["once", "--json"]));
    assert_valid(&once_validator(), &v, "jetson-orin");
    assert_eq!(v["source"], "tegra");
    let devices = v["devices"].as_array().expect("devices");
    assert_eq!(devices.len(), 1, "{v:#}");
    let d = &devices[0];
    assert_eq!(d["name"], "Jetson Orin (ga10b)");
    assert_eq!(d["utilization"]["gpu_percent"], 31, "load 312 is 31.2 %");
    assert_eq!(d["temperature_c"], 42, "GPU-therm, not CPU-therm");
    for k in ["total_bytes", "used_bytes", "free_bytes"] {
        assert!(d["memory"][k].is_null(), "{k}: {:#}", d["memory"]);
    }
    assert!(d["field_errors"]["memory"].as_str().is_some(), "{d:#}");
    let shared = &d["shared_memory"];
    assert_eq!(shared["method"], "process_sum", "{shared:#}");
    assert!(
        shared["gpu_held_bytes"].is_null(),
        "never MemTotal − MemAvailable"
    );
    assert_eq!(shared["system_total_bytes"], 64_335_836u64 * 1024);
    assert_eq!(shared["system_available_bytes"], 48_234_100u64 * 1024);
    assert_eq!(shared["headroom_bytes"], 48_234_100u64 * 1024);
    assert_eq!(shared["pressure"]["some_avg10"], 1.5);
    // The clock (cur_freq, 1 300 500 000 Hz) and rail gating (railgate_enable 1) jtop reads.
    assert_eq!(d["soc_gpu"]["clock_mhz"], 1301, "{d:#}");
    assert_eq!(d["soc_gpu"]["rail_gating"], true);
}

/// Without NVML and without an integrated GPU (a devfreq device that is a memory controller,
/// not a GPU), gpumon says as before that no driver was found.
#[test]
fn without_nvml_or_an_integrated_gpu_the_driver_is_said_missing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let emc = dir
        .path()
        .join("sys/class/devfreq/3d00000.emc/device/of_node");
    std::fs::create_dir_all(&emc).expect("mkdir");
    std::fs::write(emc.join("name"), "external-memory-controller\0").expect("write");
    let out = without_nvml(dir.path())
        .args(["once", "--json"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no NVIDIA driver found"), "{err}");
}

/// The dashboard on a Jetson read without NVML: the part's name, load and temperature from
/// sysfs, its memory N/A (never 0) with the system's headroom and pressure beside it.
#[test]
fn snapshot_the_dashboard_on_a_jetson_without_nvml() {
    use gpumon::collect::source::tegra;
    let root = tree("jetson-orin");
    let found = tegra::find(&root).expect("the stand-in's GPU");
    let watch = gpumon::collect::unified::Watch::new(root);
    let mut terminal = Terminal::new(TestBackend::new(180, 16)).expect("terminal");
    let mut app = App::new(&crate::common::dashboard_settings(
        Duration::from_secs(1),
        Duration::from_secs(600),
    ));
    for t in 0..3 {
        let mut devices = vec![tegra::read_device(&found)];
        watch.update(&mut devices);
        let sample = Arc::new(Sample {
            timestamp: SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000 + t),
            hostname: Some("orin-dev".into()),
            source: "tegra",
            driver_version: None,
            cuda_version: None,
            devices,
            error: None,
            host: None,
        });
        render_once(&mut terminal, &mut app, sample).expect("draw");
    }
    let text = terminal.backend().to_string();
    for want in [
        "Jetson Orin (ga10b",
        "42°C",
        "31%",
        // The gauge's figures: the system's memory, and no GPU figure invented for it.
        "shared memory 61.4 GiB: GPU N/A · in use 15.4 GiB (host and GPU) · free 46.0 GiB",
        "GPU holds N/A",
        "46.0 GiB of 61.4 GiB",
        "GPU clock 1301 MHz, rail gating on (sysfs)",
    ] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
    insta::assert_snapshot!(terminal.backend());
}

/// `pick` on a Jetson without NVML counts the system's headroom (46 GiB) as its room.
#[test]
fn pick_on_a_jetson_counts_the_systems_headroom() {
    let root = tree("jetson-orin");
    let out = without_nvml(&root)
        .args(["pick", "--need", "40GiB", "--format", "list"])
        .output()
        .expect("pick");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0\n");
    let out = without_nvml(&root)
        .args(["pick", "--need", "50GiB", "--format", "list"])
        .output()
        .expect("pick");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

/// Three processes on the A100 of [`limited`]: one in a pod limited to 8 GiB with 7.2 GiB
/// used, one in a container (with a hostile name) whose hard limit NVML does not say, and a
/// host process without a limit.
fn owners_with_limits(t: u64) -> Vec<Device> {
    let mut devices = limited(t);
    let limit = |hard: Option<u64>, used: u64, source: LimitSource, cgroup: &str| {
        Some(Arc::new(GpuLimit {
            cgroup: cgroup.into(),
            source,
            hard_bytes: hard,
            soft_bytes: None,
            used_bytes: Some(used),
        }))
    };
    let d = &mut devices[0];
    d.container_limit = None;
    d.processes[0].container = Some("pod-cy".into());
    d.processes[0].gpu_limit = limit(
        Some(8 * GIB),
        7372 * MIB,
        LimitSource::Dmem,
        "/kubepods/pod-cy/c1",
    );
    let mut dee = Process::from_nvml(7102, ProcessKind::Compute, Some(GIB));
    dee.user = Some("dee".into());
    dee.command = Some("python eval.py".into());
    dee.container = Some("box-dee\x1b]0;pwned\x07".into());
    dee.gpu_limit = limit(None, GIB, LimitSource::Nvml, "/docker/box-dee");
    let mut host = Process::from_nvml(7103, ProcessKind::Compute, Some(512 * MIB));
    host.user = Some("root".into());
    host.command = Some("python serve.py".into());
    d.processes.push(dee);
    d.processes.push(host);
    devices
}

/// A sample of the node the limits tests draw ("gpu-node-7", R615 driver) at second `t`.
fn node7_sample(t: u64, devices: Vec<Device>) -> Arc<Sample> {
    Arc::new(Sample {
        timestamp: SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000 + t),
        hostname: Some("gpu-node-7".into()),
        source: "nvml",
        driver_version: Some("615.71.09".into()),
        cuda_version: Some("13.4".into()),
        devices,
        error: None,
        host: None,
    })
}

fn owners_sample(t: u64) -> Arc<Sample> {
    node7_sample(t, owners_with_limits(t))
}

/// The text under a right-aligned column's head in the line for `pid`.
fn column_cell(text: &str, head: &str, pid: &str) -> String {
    let lines: Vec<Vec<char>> = text.lines().map(|l| l.chars().collect()).collect();
    let find = |l: &[char], s: &str| {
        let s: Vec<char> = s.chars().collect();
        l.windows(s.len()).position(|w| w == s.as_slice())
    };
    let at = lines
        .iter()
        .filter(|l| find(l, "PID").is_some())
        .find_map(|l| find(l, &format!(" {head}")).map(|i| i + 1))
        .unwrap_or_else(|| panic!("no {head} column:\n{text}"));
    let end = at + head.chars().count();
    let row = lines
        .iter()
        .find(|l| {
            let l: String = l.iter().collect();
            l.trim_start_matches(['"', ' '])
                .starts_with(&format!("{pid} "))
        })
        .unwrap_or_else(|| panic!("no row for {pid}:\n{text}"));
    row[end.saturating_sub(10)..end.min(row.len())]
        .iter()
        .collect::<String>()
        .trim()
        .to_owned()
}

/// The process table: a LIMIT column where some process's cgroup has a GPU memory limit,
/// with the hard limit, N/A where it is not known, blank for a process without one; no such
/// column where no process has a limit.
#[test]
fn snapshot_the_process_table_shows_each_processs_limit() {
    let settings =
        crate::common::dashboard_settings(Duration::from_secs(1), Duration::from_secs(600));
    let mut app = App::new(&settings);
    let mut terminal = Terminal::new(TestBackend::new(120, 24)).expect("terminal");
    for t in 0..3 {
        render_once(&mut terminal, &mut app, owners_sample(t)).expect("draw");
    }
    let text = terminal.backend().to_string();
    assert_eq!(column_cell(&text, "LIMIT", "7101"), "8.0 GiB", "{text}");
    assert_eq!(column_cell(&text, "LIMIT", "7102"), "N/A", "{text}");
    assert_eq!(column_cell(&text, "LIMIT", "7103"), "", "{text}");
    assert!(!text.contains('\x1b'), "escaped:\n{text}");
    insta::assert_snapshot!(terminal.backend());

    // Without a limit, no column.
    let mut app = App::new(&settings);
    let mut plain = Terminal::new(TestBackend::new(120, 24)).expect("terminal");
    let mut s = (*owners_sample(0)).clone();
    for p in &mut s.devices[0].processes {
        p.gpu_limit = None;
    }
    render_once(&mut plain, &mut app, Arc::new(s)).expect("draw");
    let text = plain.backend().to_string();
    assert!(
        text.contains("GPU MEM") && !text.contains("LIMIT"),
        "{text}"
    );

    // Small terminals: never a panic.
    for (w, h) in [(1, 1), (20, 5), (40, 8), (80, 12), (100, 14)] {
        let mut small = Terminal::new(TestBackend::new(w, h)).expect("terminal");
        let mut app = App::new(&settings);
        render_once(&mut small, &mut app, owners_sample(0)).expect("draw");
    }
}

/// The dashboard's per-owner view (Tab, then `b`): each owner's limit beside it ("limit 8.0
/// GiB, 7.2 GiB used"), N/A where the hard limit is not known, nothing for the host's
/// processes; the owner's name escaped.
#[test]
fn snapshot_the_per_owner_view_shows_each_owners_limit() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let settings =
        crate::common::dashboard_settings(Duration::from_secs(1), Duration::from_secs(600));
    let open = |terminal: &mut Terminal<TestBackend>| {
        let mut app = App::new(&settings);
        render_once(terminal, &mut app, owners_sample(0)).expect("draw");
        app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
        app.on_key(KeyEvent::new(KeyCode::Char('b'), KeyModifiers::NONE));
        terminal
            .draw(|f| gpumon::tui::ui::draw(f, &mut app))
            .expect("draw");
    };
    let mut terminal = Terminal::new(TestBackend::new(120, 24)).expect("terminal");
    open(&mut terminal);
    let text = terminal.backend().to_string();
    let line = |what: &str| {
        text.lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no line with {what}:\n{text}"))
            .to_owned()
    };
    assert!(line("OWNER").contains("GPU LIMIT"), "{text}");
    assert!(
        line("pod-cy").contains("limit 8.0 GiB, 7.2 GiB used"),
        "{text}"
    );
    assert!(
        line("box-dee\\u{1b}]0;pwned\\u{7}").contains("limit N/A, 1.0 GiB used"),
        "{text}"
    );
    assert!(!line("host").contains("limit"), "{text}");
    assert!(!text.contains('\x1b'), "escaped:\n{text}");
    insta::assert_snapshot!(terminal.backend());

    // Small terminals: never a panic.
    for (w, h) in [(1, 1), (20, 5), (40, 8), (80, 12), (100, 14)] {
        let mut small = Terminal::new(TestBackend::new(w, h)).expect("terminal");
        open(&mut small);
    }
}

// ---------------------------------------------------------------------------------------------
// The built-in unified machines (`--demo-machine`) and each cgroup's limit from NVML.

/// `once --json` with what changes from run to run (times, the host's name, ages) replaced.
fn once_redacted(args: &[&str]) -> String {
    fn redact(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (k, x) in map.iter_mut() {
                    if ["timestamp", "hostname", "start_time", "data_age_ms", "at"]
                        .contains(&k.as_str())
                        && !x.is_null()
                    {
                        *x = Value::String("[redacted]".into());
                    } else {
                        redact(x);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(redact),
            _ => {}
        }
    }
    let mut cmd = crate::common::gpumon();
    cmd.env_remove("GPUMON_HOST_ROOT").args(args);
    let mut v = stdout_json(&mut cmd);
    assert_valid(&once_validator(), &v, &args.join(" "));
    redact(&mut v);
    serde_json::to_string_pretty(&v).expect("json")
}

/// `--demo-machine spark`: the GB10's memory is N/A (NVML reports none), the GPU holds the
/// sum of its processes (derived), and the system's headroom and pressure are the scenario's
/// own host side, never this machine's: the same with `GPUMON_HOST_ROOT` pointing elsewhere.
#[test]
fn snapshot_the_spark_demo_in_once_json() {
    let json = once_redacted(&[
        "--demo-machine",
        "spark",
        "--peak-rate",
        "0",
        "once",
        "--json",
    ]);
    let v: Value = serde_json::from_str(&json).expect("json");
    let d = &v["devices"][0];
    assert!(d["memory"]["used_bytes"].is_null(), "{d:#}");
    let s = &d["shared_memory"];
    assert_eq!(s["method"], "process_sum");
    assert_eq!(s["gpu_held_bytes"], (61440 + 3072) * MIB);
    assert_eq!(s["headroom_bytes"], 44032 * MIB);
    assert_eq!(s["system_total_bytes"], 122880 * MIB);
    assert_eq!(s["pressure"]["some_avg10"], 0.4);
    let elsewhere = stdout_json(
        crate::common::gpumon()
            .env("GPUMON_HOST_ROOT", tree("jetson-orin"))
            .args(["--demo-machine", "spark", "once", "--json"]),
    );
    assert_eq!(
        elsewhere["devices"][0]["shared_memory"]["headroom_bytes"],
        44032 * MIB,
        "the scenario's host, not the tree's"
    );
    insta::assert_snapshot!(json);
}

/// `--demo-machine gh200`: the HBM as NUMA node 1 with the host's 6 GiB on it, and each pod's
/// GPU memory limit from NVML (`nvmlDeviceGetMemoryLimits_v1`, asked for its own cgroup by
/// the GPU's reader), the host's notebook without one.
#[test]
fn snapshot_the_gh200_demo_in_once_json() {
    let json = once_redacted(&[
        "--demo-machine",
        "gh200",
        "--peak-rate",
        "0",
        "once",
        "--json",
    ]);
    let v: Value = serde_json::from_str(&json).expect("json");
    let d = &v["devices"][0];
    let s = &d["shared_memory"];
    assert_eq!(s["coherent_mode"], "numa", "{s:#}");
    assert_eq!(s["hbm_node"]["host_bytes"], 6 * GIB);
    let limits: Vec<(Value, Value)> = d["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .map(|p| (p["pid"].clone(), p["gpu_limit"].clone()))
        .collect();
    assert_eq!(limits.len(), 3, "{limits:?}");
    for (pid, l) in &limits {
        match pid.as_u64() {
            Some(6101) => assert_eq!(
                (l["hard_bytes"].as_u64(), l["source"].as_str()),
                (Some(40 * GIB), Some("nvml"))
            ),
            Some(6201) => assert_eq!(
                (l["hard_bytes"].as_u64(), l["source"].as_str()),
                (Some(24 * GIB), Some("nvml"))
            ),
            _ => assert!(l.is_null(), "{pid}: {l}"),
        }
    }
    insta::assert_snapshot!(json);
}

/// The dashboard on `--demo-machine` machines, through the sampler as the dashboard runs it
/// (one tick; the time, host name and start times fixed).
fn demo_screen(machine: gpumon::collect::source::simulated::DemoMachine) -> String {
    use gpumon::collect::sampler::{Filter, Sampler};
    use gpumon::collect::source::simulated::Simulated;
    let opened = Simulated::demo_machine(machine).expect("demo").open();
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
    let mut sample = sampler.tick();
    sample.timestamp = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    sample.hostname = Some("demo-node".into());
    for d in &mut sample.devices {
        d.data_age_ms = Some(0);
        for p in &mut d.processes {
            p.start_time = Some(1_795_000_000 - 3600);
        }
    }
    let mut terminal = Terminal::new(TestBackend::new(160, 30)).expect("terminal");
    let mut app = App::new(&crate::common::dashboard_settings(
        Duration::from_secs(1),
        Duration::from_secs(600),
    ));
    render_once(&mut terminal, &mut app, Arc::new(sample)).expect("draw");
    let text = terminal.backend().to_string();
    let name = format!("demo_machine_{machine:?}").to_lowercase();
    insta::assert_snapshot!(name, terminal.backend());
    text
}

#[test]
fn snapshot_the_dashboard_on_the_demo_machines() {
    use gpumon::collect::source::simulated::DemoMachine;
    let spark = demo_screen(DemoMachine::Spark);
    for want in [
        "NVIDIA GB10",
        "GPU holds 63.0 GiB",
        "43.0 GiB of 120.0 GiB",
        // The gauge: the system's 120 GiB, the processes' 63 GiB derived, the host's 14 GiB
        // (77 GiB in use less the GPU's) apart from it; the chart of the GPU-held figure.
        "shared memory 120.0 GiB: GPU 63.0 GiB (derived) · host 14.0 GiB · free 43.0 GiB",
        "GPU-held memory (derived) over 10m",
        "120 GiB│",
    ] {
        assert!(spark.contains(want), "{want}:\n{spark}");
    }
    let gh200 = demo_screen(DemoMachine::Gh200);
    for want in ["HBM as NUMA node 1", "LIMIT", "40.0 GiB"] {
        assert!(gh200.contains(want), "{want}:\n{gh200}");
    }
}

/// A real process (a child of the test) in its real cgroup, listed on two GPUs whose driver
/// sets that cgroup different limits: each GPU's reader asks its own device for the cgroup
/// handed to it, and each process row carries its GPU's answer, source `nvml` (no `dmem`
/// controller in the stand-in root).
fn child_on_two_gpus(hang_second: bool) -> (Value, std::time::Duration) {
    let mut child = Command::new("sleep").arg("60").spawn().expect("sleep");
    let pid = child.id();
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let cgroup = text
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .unwrap_or("/")
        .trim()
        .to_owned();
    let root = tempfile::tempdir().expect("root");
    std::fs::create_dir_all(root.path().join("sys/fs/cgroup")).expect("mkdir");
    let gpu = |i: u32, hard: u64, used: u64| {
        format!(
            r#"{{"name":"NVIDIA H100 80GB HBM3","memory_total_mib":81920,"pci_bus_id":"00000000:0{}:00.0",
            "processes":[{{"pid":{pid},"memory_mib":{used}}}],
            "memory_limits":[{{"cgroup":{cg},"hard_mib":{hard},"used_mib":{used}}}]}}"#,
            i + 1,
            cg = serde_json::to_string(&cgroup).expect("json"),
        )
    };
    let hang = if hang_second {
        r#","faults":[{"kind":"hang","device":1,"block_s":30}]"#
    } else {
        ""
    };
    let scn = crate::common::scenario(&format!(
        r#"{{"version":1,"devices":[{},{}]{hang}}}"#,
        gpu(0, 8192, 3072),
        gpu(1, 4096, 1024)
    ));
    let started = Instant::now();
    let v = stdout_json(
        gpumon_fake(&scn, 0.0)
            .env("GPUMON_HOST_ROOT", root.path())
            .args(["--timeout", "1s", "once", "--json"]),
    );
    let took = started.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    assert_valid(&once_validator(), &v, "limits per cgroup");
    (v, took)
}

fn limit_of(d: &Value) -> (Option<u64>, Option<u64>, Option<&str>) {
    let l = &d["processes"][0]["gpu_limit"];
    (
        l["hard_bytes"].as_u64(),
        l["used_bytes"].as_u64(),
        l["source"].as_str(),
    )
}

#[test]
fn each_gpu_reads_its_processes_cgroup_limits_from_nvml() {
    let (v, _) = child_on_two_gpus(false);
    let d = v["devices"].as_array().expect("devices");
    assert_eq!(
        limit_of(&d[0]),
        (Some(8 * GIB), Some(3 * GIB), Some("nvml")),
        "{v:#}"
    );
    assert_eq!(
        limit_of(&d[1]),
        (Some(4 * GIB), Some(GIB), Some("nvml")),
        "{v:#}"
    );
}

/// GPU 1's calls hang: GPU 0's reading and its process's limit still arrive, within the
/// deadline, and GPU 1 is said stalled.
#[test]
fn a_hung_gpu_holds_up_neither_the_others_readings_nor_their_limits() {
    let (v, took) = child_on_two_gpus(true);
    let d = v["devices"].as_array().expect("devices");
    assert_eq!(
        limit_of(&d[0]),
        (Some(8 * GIB), Some(3 * GIB), Some("nvml")),
        "{v:#}"
    );
    assert!(d[1]["error"].as_str().is_some(), "{:#}", d[1]);
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

/// Two containers hold processes on one GPU, each limited on it: each process carries its own
/// container's limit, the host's process none; the per-owner view names both.
#[test]
fn two_containers_on_one_gpu_each_with_its_own_nvml_limit() {
    let scn = crate::common::scenario(
        r#"{"version":1,"devices":[{"name":"NVIDIA A100-SXM4-80GB","memory_total_mib":81920,
            "processes":[
              {"pid":11,"memory_mib":6000,"cgroup":"0::/kubepods/burstable/poda1b2c3d4-0000-4000-8000-000000000001/c0ffee01"},
              {"pid":21,"memory_mib":2000,"cgroup":"0::/kubepods/burstable/podb1b2c3d4-0000-4000-8000-000000000002/c0ffee02"},
              {"pid":31,"memory_mib":500,"cgroup":"0::/user.slice"}],
            "memory_limits":[
              {"cgroup":"/kubepods/burstable/poda1b2c3d4-0000-4000-8000-000000000001/c0ffee01","hard_mib":8192,"used_mib":6000},
              {"cgroup":"/kubepods/burstable/podb1b2c3d4-0000-4000-8000-000000000002/c0ffee02","hard_mib":4096,"soft_mib":2048,"used_mib":2000}]}]}"#,
    );
    let v = stdout_json(
        crate::common::gpumon()
            .env_remove("GPUMON_HOST_ROOT")
            .arg("--scenario")
            .arg(&*scn)
            .args(["once", "--json"]),
    );
    let procs = v["devices"][0]["processes"].as_array().expect("processes");
    let hard: Vec<_> = procs
        .iter()
        .map(|p| {
            let l = &p["gpu_limit"];
            (
                p["pid"].as_u64(),
                l["hard_bytes"].as_u64(),
                l["source"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        hard,
        [
            (Some(11), Some(8 * GIB), Some("nvml")),
            (Some(21), Some(4 * GIB), Some("nvml")),
            (Some(31), None, None)
        ]
    );
    let out = crate::common::gpumon()
        .env_remove("GPUMON_HOST_ROOT")
        .arg("--scenario")
        .arg(&*scn)
        .args(["once", "--by", "owner"])
        .output()
        .expect("once --by owner");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("NVML limit"), "{text}");
    assert!(
        text.contains("8.0 GiB") && text.contains("4.0 GiB"),
        "{text}"
    );
}
