//! Shell completions and the man page, generated from the command-line definitions.

use std::process::Command;

use crate::common::{gpumon, gpumon_fake, scenario, stdout_json};

#[test]
fn completions_for_every_shell_know_the_commands_and_flags() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = gpumon().args(["completions", shell]).output().expect("run");
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        for word in [
            "serve",
            "explain",
            "--web.config.file",
            "--timeout",
            "--demo",
        ] {
            // fish names long options as `-l timeout`.
            let fish = format!("-l {}", word.trim_start_matches("--"));
            assert!(
                script.contains(word) || script.contains(&fish),
                "{shell} completion lacks {word}"
            );
        }
    }
    // bash (and zsh, when installed) accept their scripts.
    let out = gpumon()
        .args(["completions", "bash"])
        .output()
        .expect("run");
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("gpumon.bash");
    std::fs::write(&file, &out.stdout).expect("write");
    let status = Command::new("bash")
        .arg("-n")
        .arg(&file)
        .status()
        .expect("bash");
    assert!(status.success(), "bash -n rejects the completion script");
    let loaded = Command::new("bash")
        .arg("-c")
        .arg(format!("source {}; complete -p gpumon", file.display()))
        .output()
        .expect("bash");
    assert!(
        String::from_utf8_lossy(&loaded.stdout).contains("gpumon"),
        "the script registers a completion for gpumon"
    );
    let bad = gpumon()
        .args(["completions", "tcsh"])
        .output()
        .expect("run");
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn the_man_page_is_roff_with_every_command() {
    let out = gpumon().arg("man").output().expect("run");
    assert!(out.status.success());
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH gpumon 1"), "{page}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
        assert!(page.contains(section), "missing {section}");
    }
    for command in ["gpumon\\-serve", "gpumon\\-explain", "gpumon\\-completions"] {
        assert!(page.contains(command), "missing {command}");
    }
}

/// Issue 30: every page the top-level page points to exists: `gpumon man COMMAND` prints it,
/// `--dir` writes them all, and man renders each without a warning.
#[test]
fn every_command_has_its_man_page() {
    let commands = [
        "once",
        "log",
        "record",
        "replay",
        "explain",
        "run",
        "serve",
        "estimate",
        "pick",
        "completions",
        "man",
    ];
    for c in commands {
        let out = gpumon().args(["man", c]).output().expect("run");
        assert!(out.status.success(), "{c}");
        let page = String::from_utf8_lossy(&out.stdout);
        assert!(page.contains(&format!(".TH gpumon-{c} 1")), "{c}: {page}");
        assert!(
            page.contains(".SH SYNOPSIS") && page.contains(".SH OPTIONS"),
            "{c}"
        );
    }
    let once =
        String::from_utf8_lossy(&gpumon().args(["man", "once"]).output().expect("run").stdout)
            .into_owned();
    assert!(
        once.contains("\\-\\-json") && once.contains("\\-\\-demo"),
        "once's own flags"
    );
    let explain = String::from_utf8_lossy(
        &gpumon()
            .args(["man", "explain"])
            .output()
            .expect("run")
            .stdout,
    )
    .into_owned();
    assert!(
        !explain.contains("\\-\\-history"),
        "explain lists no dashboard flag"
    );
    let bad = gpumon().args(["man", "nope"]).output().expect("run");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("once"));
    let dir = tempfile::tempdir().expect("dir");
    let out = gpumon()
        .args(["man", "--dir"])
        .arg(dir.path())
        .output()
        .expect("run");
    assert!(out.status.success());
    let mut written: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let mut want: Vec<String> = commands.iter().map(|c| format!("gpumon-{c}.1")).collect();
    want.push("gpumon.1".into());
    want.sort();
    assert_eq!(written, want);
    // man itself renders each page without a warning (when man is installed).
    if Command::new("man").arg("--version").output().is_ok() {
        for page in &want {
            let out = Command::new("man")
                .args(["--warnings", "-l", "-Tutf8"])
                .arg(dir.path().join(page))
                .env("MANWIDTH", "100")
                .output()
                .expect("man");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() && err.trim().is_empty(),
                "{page}: {err}"
            );
        }
    }
}

/// Issue 30: errors instead of silence: a --gpu that names no GPU exits 2 with the GPUs
/// there are (`once` printed "no GPUs found" and exited 0); a per-process field without
/// --processes says so.
#[test]
fn a_gpu_that_does_not_exist_and_a_field_of_the_other_kind_are_errors() {
    for args in [
        vec!["--demo", "once", "--gpu", "5"],
        vec!["--demo", "log", "--gpu", "5", "--count", "1"],
        vec!["--demo", "estimate", "--params", "7B", "--gpu", "5"],
        vec!["once", "--demo", "--gpu", "GPU-nope"],
    ] {
        let out = gpumon().args(&args).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("names no GPU: the GPUs here are 0 NVIDIA H100"),
            "{args:?}: {err}"
        );
    }
    let out = gpumon()
        .args(["--demo", "once", "--gpu", "1"])
        .output()
        .expect("run");
    assert!(out.status.success(), "an index that exists");
    let out = gpumon()
        .args(["--demo", "log", "--fields", "pid", "--count", "1"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("'pid' is a per-process field: add --processes"));
}

/// `estimate` reads each GPU's free memory through NVML (here the fake library) and says
/// where the run fits.
#[test]
fn estimate_checks_the_fit_on_the_gpus_read_through_nvml() {
    let s = scenario(
        r#"{"version":1,"devices":[
            {"name":"Small GPU","memory_total_mib":8192,"memory_reserved_mib":0,
             "processes":[{"pid":4242,"memory_mib":6144}]},
            {"name":"Big GPU","memory_total_mib":81920,"memory_reserved_mib":0,"processes":[]}]}"#,
    );
    let config = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/configs/llama-2-7b.json"
    );
    // Llama-2-7B inference in fp16, 4096 tokens: ~20 GiB; only the big GPU holds it.
    let j = stdout_json(gpumon_fake(&s, 0.0).args([
        "estimate",
        "--model",
        config,
        "--inference",
        "--seq-len",
        "4096",
        "--dtype",
        "fp16",
        "--json",
    ]));
    assert_eq!(j["schema_version"], 1);
    assert_eq!(j["inputs"]["model"]["params"], 6_738_415_616u64);
    assert_eq!(j["parts"]["kv_cache_bytes"], 2u64 << 30);
    assert!(j["parts"]["gradients_bytes"].is_null());
    let gpus = j["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 2);
    assert_eq!(gpus[0]["free_bytes"], 2u64 << 30);
    assert_eq!(gpus[0]["fits"], false);
    assert_eq!(gpus[1]["name"], "Big GPU");
    assert_eq!(gpus[1]["fits"], true);
    assert!(j["fits_with"].is_null());

    // Full fine-tuning of the same model does not fit 80 GiB: a plan that does.
    let out = gpumon_fake(&s, 0.0)
        .args([
            "estimate",
            "--model",
            config,
            "--batch",
            "8",
            "--seq-len",
            "4096",
            "--mixed-precision",
        ])
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[1] Big GPU") && text.contains("does not fit"),
        "{text}"
    );
    assert!(text.contains("The fewest changes that fit GPU 1"), "{text}");

    // Without a driver, the estimate still prints and says so.
    let out = gpumon()
        .env("GPUMON_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
        .args([
            "estimate", "--params", "7B", "--layers", "32", "--hidden", "4096", "--heads", "32",
        ])
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("No GPU was read") && text.contains("peak (must fit)"),
        "{text}"
    );

    // A config it cannot derive parameters from is a usage error naming --params.
    let dir = tempfile::tempdir().expect("tmp");
    let odd = dir.path().join("config.json");
    std::fs::write(
        &odd,
        r#"{"model_type":"mamba","architectures":["MambaForCausalLM"]}"#,
    )
    .expect("write");
    let out = gpumon()
        .args(["estimate", "--model", odd.to_str().expect("utf-8")])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--params"));
}

/// `once` reports the host beside the GPUs (sysinfo's reading, equal to the kernel's), in
/// text and JSON; one reading has no interval, so CPU use is null, never 0.
#[test]
fn once_reports_the_host_as_the_kernel_counts_it() {
    let json = stdout_json(gpumon().args(["--demo", "once", "--json"]));
    let host = &json["host"];
    let meminfo = std::fs::read_to_string("/proc/meminfo").expect("meminfo");
    let total_kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("MemTotal");
    assert_eq!(host["memory_total_bytes"], total_kib * 1024, "{host}");
    assert!(host["memory_used_bytes"].as_u64().is_some_and(|u| u > 0));
    assert!(host["cpu_percent"].is_null(), "{host}");
    assert!(host["load_average"]
        .as_array()
        .is_some_and(|l| l.len() == 3));
    assert!(host["uptime_s"].as_u64().is_some_and(|u| u > 0));
    let text = gpumon()
        .args(["--demo", "once"])
        .env("COLUMNS", "120")
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&text.stdout);
    let line = text.lines().nth(1).unwrap_or_default();
    assert!(
        line.starts_with("host  ") && line.contains(" CPUs  mem "),
        "{text}"
    );
}

/// Each command's help starts with its own summary, the one `gpumon --help` lists for it (a
/// doc comment on a flattened group of flags once replaced it with the group's).
#[test]
fn each_commands_help_starts_with_its_own_summary() {
    let top = gpumon().arg("--help").output().expect("run");
    let top = String::from_utf8_lossy(&top.stdout).into_owned();
    let listed: Vec<(&str, &str)> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        // An entry is indented by two spaces; a wrapped summary's next lines, by more.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| {
            let l = l.trim_start();
            let (name, summary) = l.split_once(' ')?;
            Some((name, summary.trim()))
        })
        .filter(|(name, _)| *name != "help")
        .collect();
    assert!(listed.len() >= 8, "{top}");
    for (name, summary) in listed {
        let out = gpumon().args([name, "-h"]).output().expect("run");
        let help = String::from_utf8_lossy(&out.stdout);
        let first = help.lines().next().unwrap_or_default();
        // The listing wraps long summaries; their first words must open the command's help.
        let start: String = summary.chars().take(30).collect();
        assert!(
            first.starts_with(&start),
            "gpumon {name} -h starts with {first:?}, not its summary {summary:?}"
        );
    }
}
