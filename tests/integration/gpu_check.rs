//! `scripts/gpu-check --fake`: the real-GPU check run against the fake library, so that it
//! cannot rot between the rare sessions that have a GPU. Its comparisons run for real here (the
//! fake NVML read by gpumon and by the script's own ctypes reader, real orphaned and
//! other-namespace processes); what needs hardware must be skipped with a reason.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::fake_lib;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/gpu-check")
}

fn gpu_check(gpumon: &Path, out: &Path) -> std::process::Output {
    Command::new("python3")
        .arg(script())
        .args(["--fake", "--quick", "--dashboard-seconds", "2"])
        .arg("--fake-lib")
        .arg(fake_lib())
        .arg("--gpumon")
        .arg(gpumon)
        .arg("--out")
        .arg(out)
        .env_remove("GPUMON_NVML_LIB")
        .output()
        .expect("run scripts/gpu-check")
}

/// The line of the report's summary table for one check.
fn summary_row<'a>(report: &'a str, check: &str) -> &'a str {
    report
        .lines()
        .find(|l| l.starts_with(&format!("| {check}: ")))
        .unwrap_or_else(|| panic!("no row for {check} in:\n{report}"))
}

#[test]
fn gpu_check_passes_on_the_fake_library_and_says_why_it_skips() {
    let out = tempfile::tempdir().expect("temp dir");
    let run = gpu_check(Path::new(env!("CARGO_BIN_EXE_gpumon")), out.path());
    let report = std::fs::read_to_string(out.path().join("report.md")).expect("report.md");
    assert!(
        run.status.success(),
        "gpu-check failed ({:?}):\n{report}\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    for check in ["readings", "cost", "holders"] {
        assert!(
            summary_row(&report, check).contains("| PASS |"),
            "{check}:\n{report}"
        );
    }
    for check in ["oom", "snapshot", "growth", "peak", "interference"] {
        let row = summary_row(&report, check);
        assert!(
            row.contains("| SKIP | needs a CUDA GPU"),
            "{check} must say why: {row}"
        );
    }
    // The comparisons really ran: every process the scenario lists was compared by pid.
    assert!(report.contains("| 0 | memory used |"), "{report}");
    assert!(report.contains("| orphaned (parent exited) |"), "{report}");
    // R615's limits call, answered by the fake for this process's cgroup, agrees with
    // gpumon's container_limit.
    assert!(report.contains("| 64.00 GiB (nvml) | yes |"), "{report}");
    for raw in ["once.json", "nvml-direct.json", "nvml-call-times-ns.json"] {
        assert!(out.path().join(raw).is_file(), "{raw} was not written");
    }
}

#[test]
fn gpu_check_fails_when_gpumon_misreads_used_memory() {
    // A gpumon that reports 1 MiB more in use on GPU 0 than NVML says: the check must see it.
    let dir = tempfile::tempdir().expect("temp dir");
    let wrapper = dir.path().join("gpumon");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nif [ \"$1\" = once ]; then\n  \"{bin}\" \"$@\" | python3 -c '\nimport json,sys\nd=json.load(sys.stdin)\nd[\"devices\"][0][\"memory\"][\"used_bytes\"]+=1<<20\njson.dump(d,sys.stdout)'\nelse\n  exec \"{bin}\" \"$@\"\nfi\n",
            bin = env!("CARGO_BIN_EXE_gpumon")
        ),
    )
    .expect("write wrapper");
    let mut perm = std::fs::metadata(&wrapper).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&wrapper, perm).expect("chmod");
    let out = dir.path().join("out");
    let run = gpu_check(&wrapper, &out);
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert_eq!(run.status.code(), Some(1), "{report}");
    assert!(
        summary_row(&report, "readings").contains("| FAIL |"),
        "{report}"
    );
    assert!(
        report.contains("| 0 | memory used |") && report.contains("**NO**"),
        "{report}"
    );
}
