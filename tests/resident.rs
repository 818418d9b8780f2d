//! `resident::release_start_up_pages` on this very process: the pages go, and the program
//! goes on exactly as before. A test binary of its own with one test, so no other thread
//! loads or unloads a library meanwhile (the function's one condition).

use std::collections::HashMap;

/// Resident KiB of each clean, private, read-only file mapping of this process, by start.
fn clean_file_rss() -> HashMap<usize, u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
    let mut out = HashMap::new();
    let mut current: Option<(usize, bool)> = None;
    let mut rss = 0;
    for line in smaps.lines() {
        let first = line.split_ascii_whitespace().next().unwrap_or("");
        if let Some((start, _)) = first.split_once('-').filter(|_| !first.ends_with(':')) {
            let fields: Vec<&str> = line.split_ascii_whitespace().collect();
            let file = fields.get(5).is_some_and(|p| p.starts_with('/'));
            current = usize::from_str_radix(start, 16).ok().map(|s| {
                (
                    s,
                    file && fields[1].starts_with("r-") && fields[1].ends_with('p'),
                )
            });
        } else if let Some(v) = line.strip_prefix("Rss:") {
            rss = v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
        } else if let Some(v) = line.strip_prefix("Anonymous:") {
            let anon: u64 = v.trim().trim_end_matches("kB").trim().parse().unwrap_or(1);
            if let Some((start, true)) = current {
                if anon == 0 {
                    out.insert(start, rss);
                }
            }
        }
    }
    out
}

#[test]
fn start_up_pages_go_and_the_program_runs_on() {
    let before = clean_file_rss();
    let total_before: u64 = before.values().sum();
    assert!(total_before > 0, "this binary's own code is resident");

    let released = gpumon::resident::release_start_up_pages();
    assert!(released.mappings > 0, "{released:?}");
    assert!(released.bytes >= 4096, "{released:?}");

    // Only what ran since (reading smaps, this test) came back.
    let after: u64 = clean_file_rss()
        .iter()
        .filter(|(start, _)| before.contains_key(start))
        .map(|(_, kb)| kb)
        .sum();
    assert!(
        after < total_before,
        "clean file pages resident: {total_before} KiB before, {after} KiB after"
    );

    // Code, constants, relocated data (vtables, string tables) and thread-locals all read
    // back right: a real OOM message goes through the whole parser.
    let text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 \
                has a total capacity of 79.15 GiB of which 1.23 GiB is free. Including non-PyTorch \
                memory, this process has 77.90 GiB memory in use. Of the allocated memory 70.00 \
                GiB is allocated by PyTorch, and 6.50 GiB is reserved by PyTorch but unallocated.";
    let analysis = gpumon::oom::analyze(text);
    let oom = analysis.main().expect("the message is recognised");
    assert_eq!(oom.facts.requested_bytes, Some(2 << 30));
    assert_eq!(oom.facts.allocated_bytes, Some(70 << 30));
    assert_eq!(oom.device_index, Some(0));
    let shown: Box<dyn std::fmt::Display> = Box::new(format!("{:?}", oom.framework));
    assert!(!shown.to_string().is_empty());
    let json = serde_json::to_string(&analysis).expect("serialises");
    assert!(json.contains("\"requested_bytes\""), "{json}");
}
