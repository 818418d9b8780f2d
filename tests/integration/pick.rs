//! `gpumon pick` through the fake NVML library: idle GPUs first, then free memory; MIG
//! instances by their UUID; never a GPU that does not answer; the reasons when none fits.

use std::time::{Duration, Instant};

use crate::common::{gpumon_fake, scenario};

/// GPU 0 busy with the most free memory, GPU 1 idle with little, GPU 2 idle with more, GPU 3
/// running a process at 0% SM.
const FOUR: &str = r#"{"version":1,"devices":[
  {"name":"H100","memory_total_mib":81920,"processes":[{"pid":4810001,"memory_mib":10240,"sm_percent":80}]},
  {"name":"H100","memory_total_mib":81920,"unattributed_mib":61440},
  {"name":"H100","memory_total_mib":81920,"unattributed_mib":40960},
  {"name":"H100","memory_total_mib":81920,"processes":[{"pid":4810002,"memory_mib":51200,"sm_percent":0}]}]}"#;

fn pick(s: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = gpumon_fake(s, 0.0)
        .arg("pick")
        .args(args)
        .timeout(Duration::from_secs(30))
        .output()
        .expect("pick");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn idle_gpus_first_then_the_most_free_in_nvmls_order() {
    let s = scenario(FOUR);
    let (rc, out, err) = pick(&s, &[]);
    assert_eq!(rc, 0, "{err}");
    // GPUs 2 and 3 are idle (3's process is at 0% SM); 2 has 40 GiB free, 3 has 30.
    assert_eq!(out, "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2\n");
    let (_, out, _) = pick(&s, &["--count", "3", "--format", "list"]);
    assert_eq!(out, "2,3,1\n");
    // 35 GiB: the busy GPU 0 before nothing; with --idle, too few.
    let (_, out, _) = pick(&s, &["--count", "2", "--need", "35GiB", "--format", "list"]);
    assert_eq!(out, "2,0\n");
    let (rc, out, err) = pick(&s, &["--count", "2", "--need", "35GiB", "--idle"]);
    assert_eq!((rc, out.as_str()), (1, ""), "{err}");
    for want in [
        "no room for 2 GPUs with 35.0 GiB free: 1 usable",
        "GPU 0: busy (1 process)",
        "GPU 1: 20.0 GiB free, 15.0 GiB short",
        "GPU 3: 30.0 GiB free, 5.0 GiB short",
    ] {
        assert!(err.contains(want), "{want}: {err}");
    }
    let (_, out, _) = pick(&s, &["--exclude", "2", "--format", "list"]);
    assert_eq!(out, "3\n");
}

#[test]
fn the_json_names_the_choice_and_why_each_other_gpu_was_left() {
    let s = scenario(FOUR);
    let (rc, out, err) = pick(&s, &["--need", "25GiB", "--format", "json"]);
    assert_eq!(rc, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(j["cuda_visible_devices"], "2");
    assert_eq!(j["cuda_device_order"], "PCI_BUS_ID");
    assert_eq!(j["choice"]["need_bytes"], 25u64 << 30);
    assert_eq!(j["choice"]["chosen"][0]["free_bytes"], 40u64 << 30);
    let why: Vec<(u64, &str)> = j["choice"]["rejected"]
        .as_array()
        .expect("rejected")
        .iter()
        .map(|r| {
            (
                r["index"].as_u64().expect("index"),
                r["why"].as_str().expect("why"),
            )
        })
        .collect();
    assert_eq!(
        why,
        vec![
            (1, "20.0 GiB free, 5.0 GiB short"),
            (3, "not needed"),
            (0, "not needed")
        ]
    );
}

#[test]
fn a_mig_instance_is_chosen_by_its_uuid() {
    let s = scenario(
        r#"{"version":1,"devices":[
          {"name":"A100","memory_total_mib":81920,
           "mig":[{"profile":"3g.40gb","gpu_instance_id":1,"memory_total_mib":40192,
                   "processes":[{"pid":4810010,"memory_mib":30000}]},
                  {"profile":"2g.20gb","gpu_instance_id":5,"memory_total_mib":19968}]},
          {"name":"A100","memory_total_mib":81920,"processes":[{"pid":4810011,"memory_mib":1000,"sm_percent":90}]}]}"#,
    );
    // 15 GiB: the idle 2g.20gb instance, before the busy whole GPU with more free.
    let (rc, out, err) = pick(&s, &["--need", "15GiB"]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(
        out,
        "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=MIG-5ca1ab1e-0000-4000-8000-000000000001\n"
    );
    // Two GPUs: whole ones only.
    let (rc, _, err) = pick(&s, &["--count", "2"]);
    assert_eq!(rc, 1);
    assert!(
        err.contains("a CUDA process uses one MIG instance at most"),
        "{err}"
    );
}

#[test]
fn a_gpu_that_does_not_answer_is_never_chosen() {
    let s = scenario(
        r#"{"version":1,"devices":[
          {"name":"Wedged","memory_total_mib":81920},
          {"name":"Healthy","memory_total_mib":40960}],
         "faults":[{"kind":"hang","device":0,"field":"memory","block_s":30}]}"#,
    );
    let started = Instant::now();
    let (rc, out, err) = pick(&s, &["--timeout", "2s", "--format", "list"]);
    assert_eq!((rc, out.as_str()), (0, "1\n"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn the_need_can_come_from_an_estimate() {
    let s = scenario(FOUR);
    // A 7B model's inference in fp16: 13 GiB of weights and a 16 GiB KV cache for 8
    // sequences of 4096 tokens, more than GPU 1's 20 GiB and within GPU 2's 40.
    let (rc, out, err) = pick(
        &s,
        &[
            "--estimate",
            "--params 7B --layers 32 --hidden 4096 --heads 32 --inference --batch 8 --seq-len 4096",
            "--format",
            "json",
        ],
    );
    assert_eq!(rc, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("json");
    let need = j["choice"]["need_bytes"].as_u64().expect("need");
    assert!(need > 20 << 30 && need <= 40 << 30, "{need}");
    assert_eq!(j["cuda_visible_devices"], "2");
    let (rc, _, err) = pick(&s, &["--estimate", "--no-such-flag 3"]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("--estimate"), "{err}");
}
