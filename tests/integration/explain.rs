//! The OOM analyzer: the real-message corpus in assets/oom, the CLI, and robustness.

use std::path::Path;

use gpumon::oom::{analyze, render};
use proptest::prelude::*;
use serde_json::Value;

use crate::common::{gpumon, stdout_json};

/// The corpus, read once per test process: the property test below asks for it per case.
fn corpus() -> &'static [(String, String, Value)] {
    static CORPUS: std::sync::OnceLock<Vec<(String, String, Value)>> = std::sync::OnceLock::new();
    CORPUS.get_or_init(read_corpus)
}

fn read_corpus() -> Vec<(String, String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/oom");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("assets/oom") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("txt") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("message");
        let json: Value = serde_json::from_str(
            &std::fs::read_to_string(path.with_extension("json")).expect("sibling JSON"),
        )
        .expect("expected parse");
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("?")
            .to_owned();
        out.push((name, text, json));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn every_corpus_message_parses_as_expected() {
    let corpus = corpus();
    assert!(
        corpus.len() >= 150,
        "the corpus has {} messages",
        corpus.len()
    );
    let mut failures = Vec::new();
    for (name, text, json) in corpus {
        assert!(
            json["source"].as_str().is_some_and(|s| !s.is_empty()),
            "{name}: no source"
        );
        let got = serde_json::to_value(render::to_json(&analyze(text))).expect("json");
        if got["found"] != Value::Bool(true) {
            failures.push(format!("{name}: no OOM found"));
            continue;
        }
        let Some(expect) = json["expect"].as_object() else {
            failures.push(format!("{name}: no expect"));
            continue;
        };
        for (key, want) in expect {
            let have = match key.as_str() {
                "framework" | "format" | "device_index" | "count" | "repeats" | "missing"
                | "memory" | "memory_limit_bytes" | "buffer_limit" => got[key].clone(),
                // The fields flagged as impossible, by name.
                "implausible" => got["breakdown"]["implausible"]
                    .as_array()
                    .map(|a| a.iter().map(|i| i["field"].clone()).collect())
                    .unwrap_or_default(),
                "first_cause" => got["findings"][0]["cause"].clone(),
                "hint" => {
                    let hint = got["hint"].as_str().unwrap_or("");
                    Value::Bool(want.as_str().is_some_and(|w| hint.contains(w)))
                }
                "other_processes" => Value::Array(
                    got["breakdown"]["other_processes"]
                        .as_array()
                        .map(|ps| {
                            ps.iter()
                                .map(|p| serde_json::json!([p["pid"], p["bytes"]]))
                                .collect()
                        })
                        .unwrap_or_default(),
                ),
                _ => got["breakdown"][key].clone(),
            };
            let want = if key == "hint" {
                Value::Bool(true)
            } else {
                want.clone()
            };
            if have != want {
                failures.push(format!("{name}: {key} = {have}, expected {want}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn corpus_covers_every_family() {
    let frameworks: std::collections::BTreeSet<String> = corpus()
        .iter()
        .filter_map(|(_, _, j)| j["expect"]["framework"].as_str().map(str::to_owned))
        .collect();
    for f in [
        "pytorch",
        "hip",
        "xpu",
        "mps",
        "tensorflow",
        "jax",
        "cuda",
        "onnxruntime",
        "ggml",
        "vllm",
        "cupy",
        "paddle",
        "tensorrt",
        "rocm",
        "triton",
        "unknown",
        "rmm",
        "numba",
        "mxnet",
        "tensorrt_llm",
        "vllm_rs",
        "npu",
        "mlx",
        "pytorch_xla",
        "neuron",
        "wgpu",
    ] {
        assert!(frameworks.contains(f), "no corpus message for {f}");
    }
}

/// The look-alikes in assets/oom/lookalikes (real pastes from the threads their JSON names):
/// host-memory failures, GPU errors that are not about memory, and prose. None is taken for
/// a GPU OOM; a host failure may be found, as host memory.
#[test]
fn lookalikes_are_never_a_gpu_oom() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/oom/lookalikes");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("lookalikes") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("txt") {
            continue;
        }
        n += 1;
        let text = std::fs::read_to_string(&path).expect("text");
        let json: Value = serde_json::from_str(
            &std::fs::read_to_string(path.with_extension("json")).expect("sibling JSON"),
        )
        .expect("json");
        assert!(
            json["source"]
                .as_str()
                .is_some_and(|s| s.starts_with("https://")),
            "{path:?}: no source"
        );
        let got = serde_json::to_value(render::to_json(&analyze(&text))).expect("json");
        let gpu_oom = got["found"] == Value::Bool(true) && got["memory"] == "device";
        assert!(!gpu_oom, "{path:?} taken for a GPU OOM: {}", got["format"]);
        if let Some(memory) = json["expect"]["memory"].as_str() {
            assert_eq!(got["memory"], memory, "{path:?}");
        }
        for key in ["not_failures", "skipped_tactics", "reduced_scratch"] {
            if let Some(n) = json["expect"][key].as_u64() {
                assert_eq!(got[key], n, "{path:?}: {key}");
            }
        }
    }
    assert!(n >= 8, "{n} look-alikes");
}

/// Every recognised message gets at least one finding: what the figures show, or that they
/// do not explain it.
#[test]
fn every_corpus_message_gets_a_finding() {
    for (name, text, _) in corpus() {
        let j = serde_json::to_value(render::to_json(&analyze(text))).expect("json");
        assert!(
            j["findings"].as_array().is_some_and(|f| !f.is_empty()),
            "{name}: no finding"
        );
    }
}

/// `--estimate` sizes the standard remedies with the estimate's model of the described run.
#[test]
fn explain_sizes_remedies_with_the_described_run() {
    let config = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/configs/llama-2-7b.json"
    );
    let flags = format!("--model {config} --batch 8 --seq-len 4096 --mixed-precision");
    let message = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/oom/pytorch15-vdsr.txt");
    let j = stdout_json(gpumon().args(["explain", "--json", "--estimate", &flags, message]));
    let finding = j["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|x| x["cause"] == "framework_allocations"))
        .expect("the framework's allocations");
    assert!(finding["detail"]
        .as_str()
        .is_some_and(|d| d.contains("--estimate")));
    // The figures `gpumon estimate` computes for the changes, as a share of what the job holds:
    // the described run models far more than the 13.1 GiB this process held, and no remedy
    // may claim to save more than is held.
    let (shape, _, run) = gpumon::cli::estimate_line(&flags).expect("flags");
    let held = j["breakdown"]["allocated_bytes"]
        .as_u64()
        .expect("allocated");
    let modelled = gpumon::estimate::memory::estimate(&shape, &run).total_bytes;
    assert!(modelled > held);
    let saves = |lever| {
        gpumon::estimate::lever_saving(&shape, &run, lever)
            .map(|s| (s as u128 * held as u128 / modelled as u128) as u64)
    };
    let remedies = finding["remedies"].as_array().expect("remedies");
    let by = |word: &str| {
        remedies
            .iter()
            .find(|r| r["text"].as_str().is_some_and(|t| t.contains(word)))
            .map(|r| r["saves_bytes"].as_u64())
            .expect(word)
    };
    assert_eq!(
        by("Halve the batch"),
        saves(gpumon::estimate::Lever::HalveBatch)
    );
    assert_eq!(
        by("Activation checkpointing"),
        saves(gpumon::estimate::Lever::FullCheckpointing)
    );
    assert_eq!(
        by("lighter optimizer"),
        saves(gpumon::estimate::Lever::EightBitAdam)
    );
    for r in remedies {
        assert!(r["saves_bytes"].as_u64().is_none_or(|b| b <= held), "{r}");
    }
    // Already in mixed precision: autocast is not offered at all.
    assert!(
        !remedies
            .iter()
            .any(|r| r["text"].as_str().is_some_and(|t| t.contains("autocast"))),
        "{remedies:?}"
    );
    // Nor checkpointing to a run that checkpoints, nor halving a batch of 1.
    let flags =
        format!("--model {config} --batch 1 --seq-len 4096 --mixed-precision --checkpointing full");
    let j = stdout_json(gpumon().args(["explain", "--json", "--estimate", &flags, message]));
    let texts: Vec<String> = j["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|x| x["cause"] == "framework_allocations"))
        .and_then(|f| f["remedies"].as_array())
        .expect("remedies")
        .iter()
        .filter_map(|r| r["text"].as_str().map(str::to_owned))
        .collect();
    for gone in ["Activation checkpointing", "Halve the batch", "autocast"] {
        assert!(!texts.iter().any(|t| t.contains(gone)), "{gone}: {texts:?}");
    }
    assert!(texts.iter().any(|t| t.contains("lighter optimizer")));
    // Bad flags are a usage error.
    let out = gpumon()
        .args(["explain", "--estimate", "--batchh 2", message])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--batchh"));
}

/// Advice that is wrong for a family is worse than none: checked on every corpus message.
#[test]
fn remedies_are_right_for_each_family() {
    for (name, text, _) in corpus() {
        let j = serde_json::to_value(render::to_json(&analyze(text))).expect("json");
        let findings = j["findings"].as_array().cloned().unwrap_or_default();
        let all = j["findings"].to_string();
        match j["framework"].as_str() {
            Some("mps") => {
                // Unified memory, one GPU: no device to switch to, and "other allocations"
                // are this process's own.
                assert!(!all.contains("CUDA_VISIBLE_DEVICES"), "{name}: {all}");
                assert!(
                    findings.iter().all(|f| f["cause"] != "other_processes"),
                    "{name}: {all}"
                );
                for f in &findings {
                    for r in f["remedies"].as_array().into_iter().flatten() {
                        let t = r["text"].as_str().unwrap_or("");
                        if t.contains("WATERMARK_RATIO") || t.contains("memory_fraction") {
                            assert!(t.contains("system failure"), "{name}: {t}");
                        }
                    }
                }
            }
            // (A request no GPU could hold is told first: the size itself is the fault.)
            Some("paddle")
                if j["breakdown"]["device_used_bytes"].is_u64()
                    && j["breakdown"]["implausible"]
                        .as_array()
                        .is_none_or(|a| a.is_empty()) =>
            {
                // The device-wide figure: the other processes come first, never "Paddle's
                // own tensors fill the card".
                assert_eq!(findings[0]["cause"], "device_in_use", "{name}");
                assert!(
                    findings[0]["remedies"][0]["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("other processes")),
                    "{name}: {all}"
                );
                assert!(
                    findings
                        .iter()
                        .all(|f| f["cause"] != "framework_allocations"),
                    "{name}: {all}"
                );
            }
            Some("vllm") if j["format"] == "vllm-startup" => {
                // Too little is free: raising the share can only make it worse.
                assert!(
                    !all.contains("Raise gpu_memory_utilization"),
                    "{name}: {all}"
                );
                assert!(
                    all.contains("Lower gpu_memory_utilization"),
                    "{name}: {all}"
                );
                assert_eq!(findings[0]["cause"], "other_processes", "{name}");
            }
            _ if j["format"] == "xla-tpu-hbm" => {
                // A compiled TPU program: GPU and PyTorch advice does not apply.
                assert_eq!(findings.len(), 1, "{name}: {all}");
                assert!(
                    !all.contains("DeepSpeed") && !all.contains("torch."),
                    "{name}: {all}"
                );
            }
            Some("cupy") => {
                assert!(!all.contains("live allocations"), "{name}: {all}");
            }
            _ => {}
        }
    }
}

const FRAGMENTED: &str = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 572.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 321.06 MiB is free. Process 1234 has 1.20 GiB memory in use. Process 5678 has 400.00 MiB memory in use. Including non-PyTorch memory, this process has 21.70 GiB memory in use. Of the allocated memory 19.90 GiB is allocated by PyTorch, and 1.17 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.";

/// Causes in order of the memory they account for: the job's 19.9 GiB before the other
/// processes' 1.6 GiB before the cache's 1.17 GiB of pieces.
#[test]
fn findings_name_the_numbers_and_rank_by_the_memory_they_explain() {
    let a = analyze(FRAGMENTED);
    let j = serde_json::to_value(render::to_json(&a)).expect("json");
    let causes: Vec<&str> = j["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["cause"].as_str())
        .collect();
    assert_eq!(
        &causes[..3],
        ["framework_allocations", "other_processes", "fragmentation"],
        "{causes:?}"
    );
    let title = j["findings"][1]["title"].as_str().unwrap_or("");
    assert!(
        title.contains("1.6 GiB") && title.contains("pid 1234"),
        "{title}"
    );
    let remedies = j["findings"][2]["remedies"].to_string();
    assert!(remedies.contains("expandable_segments:True"));
    assert!(remedies.contains("empty_cache() will not fix"));
    // The breakdown parts add up to the total exactly.
    let parts = j["parts"]["parts"].as_array().expect("parts");
    let sum: u64 = parts.iter().filter_map(|p| p["bytes"].as_u64()).sum();
    assert_eq!(Some(sum), j["parts"]["total"].as_u64());
}

#[test]
fn wrapped_prefixed_coloured_crlf_input_still_parses() {
    let wrapped = "\x1b[31m[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\x1b[0m\r\n\
[rank3]: GPU 3 has a total capacity of 79.11 GiB of which 1.05 GiB is free. Including non-PyTorch\r\n\
[rank3]: memory, this process has 78.05 GiB memory in use. Of the allocated memory 74.61 GiB is\r\n\
[rank3]: allocated by PyTorch, and 2.01 GiB is reserved by PyTorch but unallocated.\r\n";
    let a = analyze(wrapped);
    let oom = a.main().expect("found");
    assert_eq!(oom.device_index, Some(3));
    assert_eq!(
        oom.facts.process_bytes,
        Some((78.05 * (1u64 << 30) as f64).round() as u64)
    );
    assert_eq!(
        oom.facts.reserved_unallocated_bytes,
        Some((2.01 * (1u64 << 30) as f64).round() as u64)
    );
}

#[test]
fn the_last_oom_is_the_main_one_and_all_are_counted() {
    let text = format!(
        "{}\nsome noise\n{}\n",
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total capacity; 1.24 GiB already allocated; 2.88 MiB free; 1.25 GiB reserved in total by PyTorch)",
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 24 bytes."
    );
    let j = serde_json::to_value(render::to_json(&analyze(&text))).expect("json");
    assert_eq!(j["count"], 2);
    assert_eq!(j["framework"], "jax");
}

#[test]
fn tensorflow_stats_after_the_oom_fill_the_limit() {
    let text = "W tensorflow/core/common_runtime/bfc_allocator.cc:419] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.17GiB (rounded to 1258291200).  Current allocation summary follows.\n\
I tensorflow/core/common_runtime/bfc_allocator.cc:905] InUse at 00000007EDB34500 next 867 of size 3211264\n\
I tensorflow/core/common_runtime/bfc_allocator.cc:680] Stats: \n\
Limit:                  2118451200\n\
InUse:                  1903846144\n\
MaxInUse:               1917554688\n";
    let a = analyze(text);
    let f = &a.main().expect("found").facts;
    assert_eq!(f.requested_bytes, Some(1258291200));
    assert_eq!(f.total_bytes, Some(2118451200));
    assert!(f.total_is_limit);
    assert_eq!(f.allocated_bytes, Some(1903846144));
    assert_eq!(f.free_bytes, Some(2118451200 - 1903846144));
    // The job fills its own allocator's limit (InUse plus the request is over Limit): memory
    // growth would not help, so it is not offered; the job's own tensors are the finding.
    let j = serde_json::to_value(render::to_json(&a)).expect("json");
    let all = j["findings"].to_string();
    assert!(!all.contains("memory_growth"), "{all}");
    assert!(!all.contains("ALLOW_GROWTH"), "{all}");
    assert_eq!(j["findings"][0]["cause"], "framework_allocations", "{all}");
    // A BFC allocator that is far from its limit still hears of it (another process may need
    // the memory TensorFlow mapped).
    let roomy = text.replace(
        "InUse:                  1903846144",
        "InUse:                  603846144",
    );
    let j = serde_json::to_value(render::to_json(&analyze(&roomy))).expect("json");
    assert!(j["findings"].to_string().contains("set_memory_growth"));
}

/// JAX with only its request: its own ways to lower the peak, and no TensorFlow variable.
#[test]
fn jax_request_only_gets_jax_remedies() {
    let text = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 7406166528 bytes.";
    let j = serde_json::to_value(render::to_json(&analyze(text))).expect("json");
    assert_eq!(j["framework"], "jax");
    let all = j["findings"].to_string();
    for want in [
        "jax.checkpoint",
        "donate_argnums",
        "bfloat16",
        "smaller batch",
    ] {
        assert!(all.contains(want), "{want}: {all}");
    }
    assert!(!all.contains("TF_FORCE_GPU_ALLOW_GROWTH"), "{all}");
}

#[test]
fn report_text_snapshot() {
    let text = render::render(&analyze(FRAGMENTED), gpumon::text::Paint(false));
    insta::assert_snapshot!(text);
}

#[test]
fn explain_reads_stdin_and_exits_0_1_2() {
    gpumon()
        .arg("explain")
        .write_stdin(FRAGMENTED)
        .assert()
        .code(0);
    let out = gpumon()
        .args(["explain", "-"])
        .write_stdin("all good\n")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("No out-of-memory error found") && err.contains("Looked for"),
        "{err}"
    );
    let out = gpumon()
        .args(["explain", "/nonexistent/log.txt"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/log.txt"));
}

#[test]
fn explain_json_schema() {
    let out = gpumon()
        .args(["explain", "--json"])
        .write_stdin(FRAGMENTED)
        .output()
        .expect("run");
    assert!(out.status.success());
    let j: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(j["found"], true);
    assert_eq!(j["count"], 1);
    assert_eq!(j["framework"], "pytorch");
    assert_eq!(j["device_index"], 0);
    let b = &j["breakdown"];
    for key in [
        "requested_bytes",
        "total_bytes",
        "free_bytes",
        "allocated_bytes",
        "reserved_bytes",
        "reserved_unallocated_bytes",
        "process_bytes",
    ] {
        assert!(b[key].is_u64(), "{key}: {}", b[key]);
    }
    assert_eq!(b["other_processes"][0]["pid"], 1234);
    assert!(j["findings"].as_array().is_some_and(|f| !f.is_empty()));
    // Not found is still valid JSON, with exit code 1.
    let out = gpumon()
        .args(["explain", "--json"])
        .write_stdin("")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let j: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(j["found"], false);
    assert_eq!(j["breakdown"], Value::Null);
}

#[test]
fn binary_garbage_and_a_huge_line_do_not_break_it() {
    let mut junk: Vec<u8> = (0..2_000_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    junk.extend_from_slice(FRAGMENTED.as_bytes());
    gpumon().arg("explain").write_stdin(junk).assert().code(0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn no_input_panics(s in "\\PC{0,400}") {
        let _ = render::to_json(&analyze(&s));
    }

    #[test]
    fn mangled_real_messages_do_not_panic(cut in 0usize..600, junk in "[0-9.;()GiBM ]{0,40}") {
        let mut s: String = FRAGMENTED.chars().take(cut).collect();
        s.push_str(&junk);
        s.push_str("Tried to allocate 99999999999999999999 GiB (GPU 0; 1e999 GiB total capacity;");
        let a = analyze(&s);
        let _ = render::render(&a, gpumon::text::Paint(false));
    }
}

#[test]
fn explain_wraps_to_columns_with_hanging_indents() {
    let out = gpumon()
        .arg("explain")
        .env("COLUMNS", "60")
        .write_stdin(FRAGMENTED)
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines() {
        assert!(line.chars().count() <= 60, "longer than 60: {line:?}");
    }
    // A remedy that wraps continues under its text, not at the margin.
    let lines: Vec<&str> = text.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.starts_with("   - PYTORCH_CUDA_ALLOC_CONF=expandable"))
        .expect("the remedy");
    assert!(lines[i + 1].starts_with("     "), "{text}");
    // The quoted message is cut at a word, with an ellipsis.
    assert!(text.contains('…'), "{text}");
}

/// `explain --snapshot` on pickles Python writes: every protocol, the verdicts, bad files.
#[test]
fn memory_snapshots_are_summarised_from_any_pickle_protocol_and_bad_ones_refused() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snapshots");
    let dir = tempfile::tempdir().expect("tempdir");
    // The committed fixture rewritten by Python itself at each protocol (0 is text).
    for protocol in 0..=5 {
        let out = dir.path().join(format!("p{protocol}.pickle"));
        let status = std::process::Command::new("python3")
            .args([
                "-c",
                "import pickle,sys; s=pickle.load(open(sys.argv[1],'rb')); \
                 pickle.dump(s, open(sys.argv[2],'wb'), protocol=int(sys.argv[3]))",
            ])
            .arg(fixtures.join("fragmented.pickle"))
            .arg(&out)
            .arg(protocol.to_string())
            .status()
            .expect("python3");
        if !status.success() && protocol == 5 {
            continue; // Python older than 3.8
        }
        let j = stdout_json(gpumon().args(["explain", "--json", "--snapshot"]).arg(&out));
        assert_eq!(j["verdict"]["kind"], "fragmentation", "protocol {protocol}");
        assert_eq!(j["request"], 1280 << 20, "protocol {protocol}");
        assert_eq!(j["free_pieces"], 43, "protocol {protocol}");
        assert_eq!(
            j["sites"][0]["location"], ".../alice/nanogpt/train.py:198 in <module>",
            "protocol {protocol}"
        );
    }
    let text = gpumon()
        .args(["explain", "--snapshot"])
        .arg(fixtures.join("too-much.pickle"))
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Verdict: genuinely too much"), "{text}");
    assert!(text.contains("3.2 GiB short of the request"), "{text}");
    assert!(!text.contains("expandable_segments:True"), "{text}");

    // Bad files: a clear error and the usage exit code, never a panic.
    let whole = std::fs::read(fixtures.join("fragmented.pickle")).expect("fixture");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("truncated", whole[..whole.len() / 2].to_vec()),
        ("json", br#"{"segments": []}"#.to_vec()),
        (
            "a class",
            b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x8c\x06system\x93.".to_vec(),
        ),
        ("a list", b"\x80\x04]\x94.".to_vec()),
        (
            "random",
            (0..4096u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
        ),
    ];
    for (what, bytes) in cases {
        let path = dir.path().join("bad.pickle");
        std::fs::write(&path, &bytes).expect("write");
        let out = gpumon()
            .args(["explain", "--snapshot"])
            .arg(&path)
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(stderr.contains("gpumon: "), "{what}: {stderr}");
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    }
    let missing = gpumon()
        .args(["explain", "--snapshot", "/nonexistent/x.pickle"])
        .output()
        .expect("run");
    assert_eq!(missing.status.code(), Some(2));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// The honest fallback: any wording around a GPU allocation failure with a known size
    /// never panics, and a request it reads is the exact size written.
    #[test]
    fn the_fallback_reads_a_known_size_exactly_or_not_at_all(
        prefix in prop::sample::select(vec!["", "[rank0]:", "2026-11-23 03:12:05 ERROR", "worker-3 |", "E1123 03:12:05.123 alloc.cc:42]"]),
        suffix in prop::sample::select(vec!["", "(retrying)", "; aborting", "at step 1200", "Error code 2"]),
        noise in "[0-9:;,()\\[\\] ]{0,24}",
        verb in prop::sample::select(vec!["failed to allocate", "could not allocate", "unable to allocate", "cannot allocate"]),
        place in prop::sample::select(vec!["on GPU 3", "in CUDA device memory", "of VRAM", "on the gpu"]),
        mib in 1u64..4_000_000,
        unit in prop::sample::select(vec!["MiB", "MB", "GiB", "bytes"]),
    ) {
        let (text, bytes) = match unit {
            "GiB" => (format!("{}.50 GiB", mib / 1024), (mib / 1024) * (1 << 30) + (1 << 29)),
            "bytes" => (format!("{} bytes", mib), mib),
            u => (format!("{mib} {u}"), mib << 20),
        };
        let line = format!("{prefix}{noise} mylib: {verb} {text} {place} {suffix}{noise}");
        let a = analyze(&line);
        let j = serde_json::to_value(render::to_json(&a)).expect("json");
        prop_assert_eq!(&j["found"], &Value::Bool(true), "{}", line);
        if let Some(got) = j["breakdown"]["requested_bytes"].as_u64() {
            prop_assert_eq!(got, bytes, "{}", line);
        }
        let _ = render::render(&a, gpumon::text::Paint(false));
    }
}

/// What the fallback does not take: the host's OOM killer, host memory, a line without a GPU
/// anywhere near it, and a figure given twice with different values.
#[test]
fn the_fallback_refuses_what_is_not_a_gpu_allocation_failure() {
    for text in [
        "Out of memory: Killed process 4242 (python) total-vm:123kB on the GPU node",
        "kernel: oom-killer invoked; CUDA job lost",
        "error: failed to allocate 2 GiB of host memory for the GPU staging buffer",
        "error: out of memory",
        "failed to allocate buffer for the log file",
    ] {
        let a = analyze(text);
        assert!(a.main().is_none(), "{text}");
    }
    let a = analyze("GPU error: failed to allocate 2.00 GiB, then failed to allocate 3.00 GiB");
    let oom = a.main().expect("a GPU allocation failure");
    assert_eq!(
        oom.facts.requested_bytes, None,
        "two different requests: none is read"
    );
    let a =
        analyze("CUDA: cannot allocate 512.00 MiB on device 0 (300.00 MiB free, 16.00 GiB total)");
    let f = &a.main().expect("found").facts;
    assert_eq!(f.requested_bytes, Some(512 << 20));
    assert_eq!(f.free_bytes, Some(300 << 20));
    assert_eq!(f.total_bytes, Some(16 << 30));
    assert_eq!(a.main().map(|o| o.device_index), Some(Some(0)));
}

/// Line prefixes of pdsh and journalctl on every wrapped line, runs of spaces inside the
/// sentences, a number glued to the next word: read as the clean message.
#[test]
fn pdsh_journal_spaced_and_glued_messages_read_as_clean_ones() {
    let clean = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 7.79 GiB of which 3.06 MiB is free. Including non-PyTorch memory, this process has 7.78 GiB memory in use. Of the allocated memory 7.50 GiB is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.";
    // Hard-wrapped at spaces, about 60 columns a line, each line with the tool's prefix.
    let wrap = |prefix: &str| {
        let mut lines: Vec<String> = vec![String::new()];
        for word in clean.split(' ') {
            let last = lines.last_mut().expect("a line");
            if !last.is_empty() && last.len() + word.len() > 60 {
                lines.push(String::new());
            }
            let last = lines.last_mut().expect("a line");
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
        lines
            .iter()
            .map(|l| format!("{prefix}{l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let want = serde_json::to_value(render::to_json(&analyze(clean))).expect("json");
    for (what, text) in [
        ("pdsh", wrap("gpu-node-07: ")),
        ("journalctl", wrap("Nov 23 03:12:05 node01 python[4242]: ")),
        ("spaces", clean.replace(' ', "   ")),
        ("glued", clean.replace("GPU 0 has", "GPU 0has")),
    ] {
        let got = serde_json::to_value(render::to_json(&analyze(&text))).expect("json");
        assert_eq!(got["format"], "pytorch-2.x", "{what}");
        assert_eq!(got["breakdown"], want["breakdown"], "{what}");
    }
}

/// Whole logs (`tail -50 train.log | gpumon explain`): TensorFlow's BFC line, its Stats block
/// and the traceback's ResourceExhaustedError are one failure explained with the Stats' figures;
/// JAX's error takes the device from XLA's `GPU_1_bfc` line before it.
#[test]
fn whole_logs_keep_the_stats_and_the_device_of_their_failure() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs");
    let tf = std::fs::read_to_string(dir.join("tensorflow-traceback.log")).expect("log");
    let j = serde_json::to_value(render::to_json(&analyze(&tf))).expect("json");
    assert_eq!(
        (j["count"].as_u64(), j["repeats"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(j["device_index"], 0);
    assert_eq!(j["breakdown"]["total_bytes"], 2118451200u64);
    assert_eq!(j["breakdown"]["allocated_bytes"], 1903846144u64);
    assert_eq!(j["findings"][0]["cause"], "framework_allocations");
    assert!(!j["findings"].to_string().contains("memory_growth"));

    let jax = std::fs::read_to_string(dir.join("jax-bfc-traceback.log")).expect("log");
    let j = serde_json::to_value(render::to_json(&analyze(&jax))).expect("json");
    assert_eq!(j["framework"], "jax");
    assert_eq!(j["device_index"], 1);
    assert_eq!(j["repeats"], 3);
    assert_eq!(j["breakdown"]["requested_bytes"], 7406166528u64);
}

/// RAPIDS and Numba get their own stacks' remedies: RMM's pool and spilling, Numba's context
/// and its one-pool advice; never PyTorch's.
#[test]
fn rapids_and_numba_remedies_fit_their_stack() {
    let pool = "MemoryError: std::bad_alloc: out_of_memory: RMM failure at:/opt/conda/include/rmm/mr/device/pool_memory_resource.hpp:196: Maximum pool size exceeded";
    let j = serde_json::to_value(render::to_json(&analyze(pool))).expect("json");
    assert_eq!(
        (j["framework"].as_str(), j["format"].as_str()),
        (Some("rmm"), Some("rmm-pool"))
    );
    let all = j["findings"].to_string();
    assert!(
        all.contains("maximum_pool_size") && all.contains("--device-memory-limit"),
        "{all}"
    );
    assert!(!all.contains("torch"), "{all}");
    // libcudf's own CUDA check, and RMM's wording before 0.10 with its size: RAPIDS' remedies,
    // never PyTorch's, TensorFlow's or JAX's.
    for (text, format, size) in [
        ("RuntimeError: CUDA error encountered at: ../src/bitmask/null_mask.cu:93: 2 cudaErrorMemoryAllocation out of memory", "libcudf", None),
        ("ERROR: RMM call in line 68of file /x/cpp/src/hash/managed_allocator.cuh failed with result RMM_ERROR_OUT_OF_MEMORY (4) Attempted to allocate: 4000000000 bytes.", "rmm", Some(4_000_000_000u64)),
    ] {
        let j = serde_json::to_value(render::to_json(&analyze(text))).expect("json");
        assert_eq!((j["framework"].as_str(), j["format"].as_str()), (Some("rmm"), Some(format)));
        assert_eq!(j["breakdown"]["requested_bytes"].as_u64(), size);
        let all = j["findings"].to_string();
        assert!(all.contains("--device-memory-limit"), "{all}");
        for wrong in ["torch", "TF_FORCE_GPU_ALLOW_GROWTH", "XLA_PYTHON"] {
            assert!(!all.contains(wrong), "{wrong}: {all}");
        }
    }
    for (text, want) in [
        ("numba.cuda.cudadrv.driver.CudaAPIError: [2] Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY", "rmm.allocators.numba"),
        ("numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: Call to cuInit results in CUDA_ERROR_OUT_OF_MEMORY (2)", "exclusive-process"),
    ] {
        let j = serde_json::to_value(render::to_json(&analyze(text))).expect("json");
        assert_eq!(j["framework"], "numba");
        let all = j["findings"].to_string();
        assert!(all.contains(want), "{want}: {all}");
        assert!(!all.contains("memory_summary"), "{all}");
    }
}

/// vllm.rs's planner gets vllm.rs's flags, with the share of the asked cache that fits (never
/// vLLM's --gpu-memory-utilization), and its refused request says that no allocation failed.
#[test]
fn vllm_rs_gets_its_own_flags_and_the_share_that_fits() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("assets/oom/vllm-rs-kvcache-docker.txt"),
    )
    .expect("corpus file");
    let j = serde_json::to_value(render::to_json(&analyze(&text))).expect("json");
    let all = j["findings"].to_string();
    // 29,353.63 MB of 131,072 MB: 22%.
    assert!(all.contains("22% of it fits"), "{all}");
    for flag in ["--max-num-seqs", "--fp8-kvcache", "--isq"] {
        assert!(all.contains(flag), "{flag}: {all}");
    }
    assert!(
        !all.contains("A larger --kv-fraction"),
        "already at 95%: {all}"
    );
    assert!(!all.contains("gpu-memory-utilization"), "{all}");
    let refused = "Stream generation failed: Remaining 36544 kvcache tokens, but your prompt requires 112000 new tokens, please request later!";
    let j = serde_json::to_value(render::to_json(&analyze(refused))).expect("json");
    assert_eq!(j["framework"], "vllm_rs");
    let all = j["findings"].to_string();
    assert!(all.contains("No GPU allocation failed"), "{all}");
}

/// `explain --snapshot` reads only a regular file within its cap, checked before it is read,
/// and the sidecar beside it the same way (capped at 16 KiB): a FIFO, a device or a sparse
/// 1.5 GiB file is refused at once with its real size, a bad sidecar is ignored with a warning.
#[test]
fn snapshot_files_that_are_not_regular_or_too_large_are_refused_before_reading() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snapshots");
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |path: &Path| {
        gpumon()
            .args(["explain", "--snapshot"])
            .arg(path)
            // A guard, not an assertion: a FIFO blocked forever before.
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .expect("run")
    };
    let fifo = dir.path().join("fifo.pickle");
    let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("path");
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out = run(&fifo);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is a FIFO"), "{stderr}");
    let out = run(Path::new("/dev/zero"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a device"));
    // Sparse: 1.5 GiB said, nothing read.
    let big = dir.path().join("big.pickle");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(1536 << 20))
        .expect("sparse file");
    let out = run(&big);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is 1.5 GiB, more than"), "{stderr}");
    // A sidecar that is a FIFO or a device: the snapshot is read without it.
    for (name, make) in [("fifo", true), ("zero", false)] {
        let snap = dir.path().join(format!("{name}.snapshot.pickle"));
        std::fs::copy(fixtures.join("fragmented.pickle"), &snap).expect("copy");
        let side = snap.with_extension("json");
        if make {
            let c = std::ffi::CString::new(side.to_str().expect("utf-8")).expect("path");
            // SAFETY: as above.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        } else {
            std::os::unix::fs::symlink("/dev/zero", &side).expect("symlink");
        }
        let out = run(&snap);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {stderr}");
        assert!(stderr.contains("warning:"), "{name}: {stderr}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Verdict: fragmentation"),
            "{name}"
        );
    }
    // A torch.save archive is named as one.
    let zip = dir.path().join("x.pt");
    std::fs::write(&zip, b"PK\x03\x04\x14\x00\x00\x00\x08\x00archive/data.pkl").expect("write");
    let stderr = String::from_utf8_lossy(&run(&zip).stderr).into_owned();
    assert!(
        stderr.contains("zip archive, as torch.save writes"),
        "{stderr}"
    );
}

/// One way a paste reaches gpumon, applied to a whole message.
#[derive(Debug, Clone)]
enum Paste {
    /// Re-wrapped at spaces to this many columns.
    Wrap(usize),
    /// Each line behind a log prefix.
    Prefix(&'static str),
    /// Quoted in a reply (`> `), as markdown does.
    Quote,
    /// Each line in markdown bold, or in backticks.
    Bold,
    Code,
    /// Colour codes around the words.
    Ansi,
    Crlf,
    /// Escaped for HTML (`&gt;`, `&amp;`, `&quot;`).
    Html,
    /// A control byte inside a line, at this fraction of its length.
    Control(u8, f64),
    /// The whole message as one escaped string: an HTTP JSON body (KoboldAI's 507), or a Rust
    /// `{:?}` panic (text-generation-inference's router).
    Json,
    RustDebug,
}

/// `text` escaped as JSON and Rust's `{:?}` escape a string: backslashes, quotes, line breaks.
fn escaped(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\r', "\\r")
        .replace('\n', "\\n")
}

fn wrap_at(line: &str, width: usize) -> String {
    let mut out: Vec<String> = vec![String::new()];
    for word in line.split(' ') {
        let last = out.last_mut().expect("a line");
        if !last.is_empty() && last.len() + 1 + word.len() > width {
            out.push(String::new());
        }
        let last = out.last_mut().expect("a line");
        if !last.is_empty() {
            last.push(' ');
        }
        last.push_str(word);
    }
    out.join("\n")
}

fn paste(text: &str, how: &Paste) -> String {
    let lines = text.lines();
    let each = |f: &dyn Fn(&str) -> String| lines.clone().map(f).collect::<Vec<_>>().join("\n");
    match how {
        Paste::Wrap(w) => each(&|l| wrap_at(l, *w)),
        Paste::Prefix(p) => each(&|l| format!("{p}{l}")),
        Paste::Quote => each(&|l| format!("> {l}")),
        Paste::Bold => each(&|l| {
            if l.trim().is_empty() {
                l.to_owned()
            } else {
                format!("**{l}**")
            }
        }),
        Paste::Code => each(&|l| {
            if l.trim().is_empty() {
                l.to_owned()
            } else {
                format!("`{l}`")
            }
        }),
        Paste::Ansi => each(&|l| format!("\x1b[31m{}\x1b[0m", l.replacen(' ', " \x1b[1;33m", 2))),
        Paste::Crlf => each(&|l| format!("{l}\r")),
        Paste::Html => each(&|l| {
            l.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
        }),
        Paste::Json => format!(
            "{{\"error\":\"{}\",\"error_type\":\"generation\"}}",
            escaped(text)
        ),
        Paste::RustDebug => format!(
            "thread 'tokio-runtime-worker' panicked at 'called `Result::unwrap()` on an `Err` value: Generation(\"{}\")', router/src/main.rs:10:5",
            escaped(text)
        ),
        Paste::Control(byte, at) => each(&|l| {
            let mut i = ((l.len() as f64) * at) as usize;
            while !l.is_char_boundary(i) {
                i -= 1;
            }
            format!("{}{}{}", &l[..i], *byte as char, &l[i..])
        }),
    }
}

/// The figures a paste reads: what must not change however it was pasted.
fn figures(text: &str) -> Value {
    let j = serde_json::to_value(render::to_json(&analyze(text))).expect("json");
    serde_json::json!({
        "found": j["found"],
        "framework": j["framework"],
        "device_index": j["device_index"],
        "memory": j["memory"],
        "breakdown": j["breakdown"],
    })
}

/// Pastes of several failures one after another whose lines, re-wrapped narrower than they
/// were printed, let a failure take a figure from its neighbour (a device from the previous
/// error's line, two repeated stream-executor failures read as one, an allocator's line and
/// the error after it read as one): known, and left out of the wrapping property. Every other
/// mutation holds for them.
const WRAP_NEIGHBOURS: &[&str] = &[
    "ort-cublas-then-arena",
    "rocm-driver-xla-repeated",
    "xla-cudamallocasync-two-devices",
    "tf-freed-by-series-sleap",
    "jax-bfc-rounded-request",
    "fooocus-mps-m1-8gb",
];

/// Messages that lose a figure, their device or their framework when re-wrapped at the widths
/// given, of those `every_corpus_message_reads_the_same_every_way_it_is_pasted` tries (it checks
/// each is still lost at each width listed, so that the list only shrinks, and that no other
/// width loses anything). The losses are of three
/// kinds: a figure or device on a line before the failure's own that a narrow wrap pushes out of
/// the context kept before a trigger (eight lines, more up to 640 bytes: Meshroom's device line
/// at 40 columns) or splits from the failure's line (gminer's
/// "…miner on" / "GPU0: EVGA …" / "…: out of memory", the device two lines above the phrase); a
/// framework named by words the wrap splits or moves (a Triton status table's cells, Caffe's
/// source path beside a CUDA check); and a message whose phrase the wrap splits so that its
/// block ends before its figures (BEAGLE, GridTools, nnabla). Every other way of pasting holds
/// for them, and every other message holds at every width. Most of those added with sets 45 and
/// 46 are read by the fallback, which takes its figures from the failure's own line and the
/// lines after it that go on with its sentence: a wrap that puts a size or device on a line
/// before, or splits the phrase itself, loses it.
const WRAP_LOSSES: &[(&str, &[usize])] = &[
    ("apollo-perception-caffe-syncedmem", &[40]),
    ("beast-beagle-cuda-out-of-memory", &[40, 55, 70]),
    ("caffe-dss-syncedmem-forward", &[40]),
    ("caffe-k40c-syncedmem-out-of-memory-patched-debug", &[40]),
    ("caffe_openpose_syncedmem", &[40]),
    ("carla-ue5-vulkan-out-of-memory-memorytypeindex5", &[40, 55]),
    ("catboost-gpu-multiclass-stack-pool", &[55, 70, 85, 130]),
    ("ccminer-cryptonight-gtx1080-long-state", &[40]),
    ("ccminer-cryptonight-long-state", &[40]),
    ("crfasrnn-permutohedral-gpu-alloc", &[70]),
    (
        "deeplink-dipu-cambricon-conv2d-backward-cnrtmalloc",
        &[40, 55, 70, 85, 100],
    ),
    ("elixir-exla-bumblebee-sd-2080ti", &[40, 55, 70, 85]),
    ("ethminer-1050ti-initepoch-oom", &[40, 55]),
    ("ethminer-5x1080ti-dag-oom", &[40, 55]),
    ("ethminer-dag-initepoch-1080ti", &[40, 55]),
    ("ethminer-genoil-gtx760-dag", &[40, 70]),
    ("fastertransformer-triton-cuda-runtime-oom", &[40]),
    ("ffmpeg-nvenc-livepool", &[40, 55, 70]),
    ("gminer-cortex-init-oom", &[40, 55, 70, 85]),
    ("graphcast-training-xla-bfc-replica-oom", &[160]),
    ("gridtools_100_storage", &[40, 130]),
    ("hypre_1435_umpire", &[55]),
    ("invokeai_insufficient_gpu_memory_load", &[40]),
    (
        "isaac-sim-moveit-vulkan-out-of-device-memory",
        &[40, 55, 70, 85],
    ),
    (
        "isaaclab-rtx-sensor-vulkan-out-of-gpu-memory",
        &[40, 55, 70, 85],
    ),
    ("keras-tf1-bfc-oom-shape-123008x500", &[40, 55, 70, 85, 160]),
    ("kokkos-mi300a-hip-scatterview-alloc", &[40, 85]),
    ("lichtfeld-vk-rad-open", &[55]),
    ("livepool-nvenc-open-session-oom", &[40, 55, 70]),
    ("mali-gles-0x505-flutter", &[70, 85, 100, 130]),
    ("mapbox-gl-adreno-gsl-rotation", &[85]),
    ("meshroom_1973_depthmap", &[40, 55, 70, 85, 100, 130]),
    ("nbminer-ethash-dag-oom", &[40]),
    ("nbminer-rx570-dag-oom", &[40]),
    ("nnabla-nvcnet-failed-to-allocate-again", &[40, 55, 70]),
    ("openmvs_713_refinemesh", &[40, 55]),
    ("optimum-rbln-rebellions-npu-lack-of-device-memory", &[55]),
    ("paddle-enforce-ocr-resnet", &[85]),
    ("paddle-xpu-kunlun-k200-vgg16-no-enough-memory", &[55]),
    ("paddlex-instance-seg-out-of-memory-gpu0", &[55]),
    ("profanity-gtx1060-kernel-queueing-res-4", &[40, 55]),
    ("raja-camp-hipstreamcreate-oom", &[40]),
    ("rigel-nexapow-rtx2070-super-insufficient-memory", &[40]),
    (
        "rocm-hip-runtime-mi50-deepspeed-allocation-failed",
        &[70, 130],
    ),
    ("sbox-vma-out-of-video-memory", &[40]),
    ("tensorflow-device-properties-total", &[85]),
    ("tensorflow-windows-driver-device", &[40, 55, 70, 100]),
    ("tf-cnn-benchmarks-bfc-64mib", &[100, 130]),
    ("tf-hub-elmo-bfc-oom", &[130]),
    ("trex-initepoch-cuda-exception-oom", &[85]),
    ("triton-server-wsl2-tf-backend-cuda-oom", &[70, 100]),
    (
        "trtllm-triton-table-cudamallocasync-oom",
        &[40, 55, 70, 85, 100, 130, 160],
    ),
    ("tt-xla-vllm-dram-oom-n150", &[55]),
    (
        "umpire-cudamallocallocator-strategy-test-out-of-memory",
        &[40, 130],
    ),
    ("vanitysearch-grid-vgpu-oom", &[40, 55]),
    ("vapor-gpu-ram-check", &[55]),
    ("vc4-cma-bo-alloc-0ad", &[40, 55]),
    (
        "xmrig-nvidia-cryptonight-extra-cpu-init-out-of-memory",
        &[40],
    ),
    ("xmrig-nvidia-gpu-on-line", &[40]),
    ("xpu_triton_a770_4gb", &[100, 160]),
    ("zjazz-miner-exceeding-gpu-memory", &[40, 70, 85, 100]),
];

/// Pastes a terminal already wrapped inside a word or a number ("KV cach" / "e is needed",
/// "memory 4" / "0.30 GiB"): re-wrapped again, their words are split at a space on some lines
/// and inside a word on others, and the scanner joins a block's lines one way or the other, not
/// each line its own way. Known, and left out of the wrapping property; as pasted they are read
/// (the corpus test).
const WRAPPED_MID_WORD: &[&str] = &[
    "vllm-kv-cache-wrapped-midword",
    "pytorch2-wrap-inside-number",
];

/// Found by a sweep beyond the property's seed: re-wrapped at 84 columns, TensorFlow's
/// stream-executor line lost the log prefix that had named its framework.
#[test]
fn pinned_host_tensorflow_rewrapped_at_84_columns_reads_the_same() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/oom/pinned-host-tensorflow.txt"),
    )
    .expect("corpus file");
    assert_eq!(figures(&paste(&text, &Paste::Wrap(84))), figures(&text));
}

/// Every corpus message, whole, inside a JSON body's string and inside a Rust `{:?}` panic,
/// reads the same figures as pasted plain: the escaped string is decoded into its lines.
#[test]
fn every_corpus_message_reads_the_same_inside_an_escaped_string() {
    let mut wrong = Vec::new();
    for (name, text, _) in corpus() {
        let want = figures(text);
        for how in [Paste::Json, Paste::RustDebug] {
            if figures(&paste(text, &how)) != want {
                wrong.push(format!("{name} as {how:?}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

fn paste_strategy() -> impl Strategy<Value = Paste> {
    prop_oneof![
        (40usize..200).prop_map(Paste::Wrap),
        prop::sample::select(vec![
            "[rank3]: ",
            "2024-05-01 12:00:01.123 ",
            "gpu-node-07: ",
            "Nov 23 03:12:05 node01 python[4242]: ",
            "(VllmWorker pid=4242) ",
        ])
        .prop_map(Paste::Prefix),
        Just(Paste::Quote),
        Just(Paste::Bold),
        Just(Paste::Code),
        Just(Paste::Ansi),
        Just(Paste::Crlf),
        Just(Paste::Html),
        Just(Paste::Json),
        Just(Paste::RustDebug),
        (
            prop::sample::select(vec![0u8, 1, 7, 0x0b, 0x0c, 0x1f, 0x7f]),
            0.0f64..1.0
        )
            .prop_map(|(b, at)| Paste::Control(b, at)),
    ]
}

proptest! {
    // A fixed seed: the same 384 pastes on every run, so that CI does not meet a new one at
    // random (a failure then reproduces exactly; change the seed to explore further).
    #![proptest_config(ProptestConfig {
        cases: 384,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x6770_756d_6f6e),
        ..ProptestConfig::default()
    })]
    /// Every corpus message reads the same figures however it was pasted: re-wrapped at any
    /// width from 40 columns, behind rank, time, host or worker prefixes, quoted, in bold or
    /// backticks, coloured, with CRLF, HTML-escaped, or with a NUL or control byte inside.
    #[test]
    fn every_corpus_message_reads_the_same_however_it_is_pasted(
        pick in any::<prop::sample::Index>(),
        how in paste_strategy(),
    ) {
        let corpus = corpus();
        let (name, text, _) = &corpus[pick.index(corpus.len())];
        if matches!(how, Paste::Wrap(_)) && wrap_is_known_to_lose(name) {
            return Ok(());
        }
        let want = figures(text);
        let got = figures(&paste(text, &how));
        prop_assert_eq!(got, want, "{} pasted as {:?}", name, how);
    }
}

/// The figures a translation keeps: the roles of PyTorch's sentence, its device and framework.
fn translated_figures(text: &str) -> Value {
    let j = serde_json::to_value(render::to_json(&analyze(text))).expect("json");
    let b = &j["breakdown"];
    serde_json::json!({
        "found": j["found"],
        "framework": j["framework"],
        "device_index": j["device_index"],
        "requested": b["requested_bytes"],
        "total": b["total_bytes"],
        "free": b["free_bytes"],
        "allocated": b["allocated_bytes"],
        "reserved": b["reserved_bytes"],
        "cached": b["reserved_unallocated_bytes"],
        "process": b["process_bytes"],
    })
}

/// Every corpus message in PyTorch's 1.x or 2.x sentence, translated as a browser's page
/// translation or a user prints it (Chinese with the role words before or after the size,
/// Japanese and Korean with their particles, Russian), reads the same figures as the English
/// one: the translation keeps the numbers, so the reading must too.
#[test]
fn every_translated_pytorch_sentence_reads_the_same_figures() {
    let one = regex::Regex::new(
        r"(CUDA|NPU) out of memory\. Tried to allocate (\S+ \S+) \((GPU|NPU) (\d+); (\S+ \S+) total capacity; (\S+ \S+) already allocated; (\S+ \S+) free; (\S+ \S+) reserved in total by PyTorch\)",
    )
    .expect("1.x regex");
    let two = regex::Regex::new(
        r"CUDA out of memory\. Tried to allocate (\S+ \S+)\. GPU (\d+) has a total capac(?:i)?ty of (\S+ \S+) of which (\S+ \S+) is free\. (?:Process \d+ has \S+ \S+ memory in use\. )*Including non-PyTorch memory, this process has (\S+ \S+) memory in use\. Of the allocated memory (\S+ \S+) is allocated by PyTorch, and (\S+ \S+) is reserved by PyTorch but unallocated\.",
    )
    .expect("2.x regex");
    type Translate = fn(&regex::Captures) -> String;
    let ones: &[(&str, Translate)] = &[
        ("zh", |c| {
            format!("{} 内存不足。尝试分配 {}（{} {}；总容量 {}；已分配 {}；空闲 {}；PyTorch 总共保留 {}）", &c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &c[7], &c[8])
        }),
        ("zh-after", |c| {
            format!("{}内存不足。试图分配{}（{} {}；{} 总容量；{} 已经分配；{} 免费；{} 由PyTorch总共保留）", &c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &c[7], &c[8])
        }),
        ("ja", |c| {
            format!("{} のメモリが不足しています。{} を割り当てようとしました ({} {}; {} 総容量; {} はすでに割り当てられています; {} 空き; PyTorch によって合計 {} が予約されています)", &c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &c[7], &c[8])
        }),
        ("ko", |c| {
            format!("{} 메모리 부족. {}를 할당하려고 했습니다 ({} {}; {} 총 용량; {} 이미 할당됨; {} 여유; PyTorch에서 총 {} 예약됨)", &c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &c[7], &c[8])
        }),
        ("ru", |c| {
            format!("{} недостаточно памяти. Пытался выделить {} ({} {}; {} общей емкости; {} уже выделено; {} свободно; {} зарезервировано в общей сложности PyTorch)", &c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &c[7], &c[8])
        }),
    ];
    let twos: &[(&str, Translate)] = &[("zh", |c| {
        format!("CUDA 内存不足。尝试分配 {}。GPU {} 的总容量为 {}，其中 {} 空闲。包括非 PyTorch 内存，此进程有 {} 内存在使用。在分配的内存中，{} 由 PyTorch 分配，{} 由 PyTorch 保留但未分配。", &c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &c[7])
    })];
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (name, text, _) in corpus() {
        for (re, translations, form) in [(&one, ones, "1.x"), (&two, twos, "2.x")] {
            let Some(c) = re.captures(text) else {
                continue;
            };
            let Some(whole) = c.get(0) else { continue };
            // The other processes' clauses are left out of the 2.x translation.
            if form == "2.x" && text[whole.range()].contains("Process ") {
                continue;
            }
            let want = translated_figures(text);
            for (lang, translate) in translations {
                let translated = format!(
                    "{}{}{}",
                    &text[..whole.start()],
                    translate(&c),
                    &text[whole.end()..]
                );
                checked += 1;
                if translated_figures(&translated) != want {
                    wrong.push(format!(
                        "{name} ({form}) in {lang}: {} vs {}",
                        translated_figures(&translated),
                        want
                    ));
                }
            }
        }
    }
    assert!(checked >= 40, "only {checked} translations checked");
    assert!(
        wrong.is_empty(),
        "{} differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// Whether re-wrapping `name` is known to change what it reads ([`WRAP_NEIGHBOURS`],
/// [`WRAPPED_MID_WORD`], [`WRAP_LOSSES`]).
fn wrap_is_known_to_lose(name: &str) -> bool {
    WRAP_NEIGHBOURS.contains(&name)
        || WRAPPED_MID_WORD.contains(&name)
        || WRAP_LOSSES.iter().any(|(n, _)| *n == name)
}

/// Every corpus message reads the same figures every way it is pasted, each way tried on each
/// message (the property above samples 384 pairs; this one tries all): re-wrapped at 40, 55,
/// 70, 85, 100, 130 and 160 columns, behind each prefix, quoted, in bold, in backticks,
/// coloured, with CRLF, HTML-escaped, inside a JSON string and a Rust panic's `{:?}`, with a NUL
/// and a unit separator inside. The pastes of several failures whose neighbours mix when
/// re-wrapped ([`WRAP_NEIGHBOURS`], [`WRAPPED_MID_WORD`]) are held to every other way; each
/// message in [`WRAP_LOSSES`] to every other way and width, and it must still lose at each width
/// listed (mended, the width leaves the list).
#[test]
fn every_corpus_message_reads_the_same_every_way_it_is_pasted() {
    let corpus = corpus();
    let widths = [40usize, 55, 70, 85, 100, 130, 160];
    let mut hows: Vec<Paste> = widths.into_iter().map(Paste::Wrap).collect();
    hows.extend(
        [
            "[rank3]: ",
            "2024-05-01 12:00:01.123 ",
            "gpu-node-07: ",
            "Nov 23 03:12:05 node01 python[4242]: ",
            "(VllmWorker pid=4242) ",
        ]
        .map(Paste::Prefix),
    );
    hows.extend([
        Paste::Quote,
        Paste::Bold,
        Paste::Code,
        Paste::Ansi,
        Paste::Crlf,
        Paste::Html,
        Paste::Json,
        Paste::RustDebug,
        Paste::Control(0, 0.5),
        Paste::Control(0x1f, 0.3),
    ]);
    // One message's pastes: what they lost, and the listed widths that no longer lose.
    let check = |name: &String, text: &String| {
        let (mut lost, mut mended) = (Vec::new(), Vec::new());
        let want = figures(text);
        let neighbours =
            WRAP_NEIGHBOURS.contains(&name.as_str()) || WRAPPED_MID_WORD.contains(&name.as_str());
        let known: &[usize] = WRAP_LOSSES
            .iter()
            .find(|(n, _)| n == name)
            .map_or(&[], |(_, w)| *w);
        for how in &hows {
            let same = figures(&paste(text, how)) == want;
            match how {
                Paste::Wrap(_) if neighbours => {}
                Paste::Wrap(w) if known.contains(w) && same => {
                    mended.push(format!("{name} at {w}"));
                }
                Paste::Wrap(w) if known.contains(w) => {}
                _ if !same => lost.push(format!("{name} pasted as {how:?}")),
                _ => {}
            }
        }
        (lost, mended)
    };
    // Every core: the other tests running beside this one mostly wait on processes.
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let chunk = corpus.len().div_ceil(threads).max(1);
    let (mut lost, mut mended) = (Vec::new(), Vec::new());
    std::thread::scope(|s| {
        let handles: Vec<_> = corpus
            .chunks(chunk)
            .map(|part| {
                let check = &check;
                s.spawn(move || {
                    part.iter()
                        .map(|(name, text, _)| check(name, text))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for (l, m) in h.join().expect("a checking thread") {
                lost.extend(l);
                mended.extend(m);
            }
        }
    });
    assert!(
        lost.is_empty(),
        "{} pastes read otherwise than their message:\n{}",
        lost.len(),
        lost.join("\n")
    );
    assert!(
        mended.is_empty(),
        "re-wrapped, these now read as printed: take the widths out of WRAP_LOSSES: {mended:?}"
    );
}
