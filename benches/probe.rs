//! Probe costs: the Python side's CPU per publish (benches/python/probe_cost.py, stand-in
//! torch), and gpumon reading 64 probe reports per tick. `cargo bench --bench probe`.

use std::time::{Duration, Instant, SystemTime};

fn main() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/python/probe_cost.py");
    match std::process::Command::new("python3").arg(script).output() {
        Ok(out) => print!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => println!("python3 not available: {e}"),
    }

    let dir = tempfile::tempdir().expect("tempdir");
    gpumon::collect::probe::ensure_dir(dir.path()).expect("dir");
    // 64 live pids: ours and 63 children.
    let mut kids: Vec<std::process::Child> = (0..63)
        .map(|_| {
            std::process::Command::new("sleep")
                .arg("60")
                .spawn()
                .expect("sleep")
        })
        .collect();
    let mut pids: Vec<u32> = kids.iter().map(|k| k.id()).collect();
    pids.push(std::process::id());
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    for pid in &pids {
        let devices: Vec<String> = (0..8)
            .map(|i| format!(r#"{{"index":{i},"uuid":"GPU-{i}","allocated":1073741824,"allocated_peak":2147483648,"reserved":1610612736,"reserved_peak":2147483648,"active":1,"inactive_split":2,"num_alloc_retries":0,"num_ooms":0}}"#))
            .collect();
        std::fs::write(
            dir.path().join(format!("{pid}.json")),
            format!(r#"{{"version":1,"pid":{pid},"ppid":1,"run_id":"x","time":{now},"interval":1,"framework":"pytorch","torch_version":"2.5.1","devices":[{}]}}"#, devices.join(",")),
        )
        .expect("write");
    }
    let mut times: Vec<Duration> = (0..200)
        .map(|_| {
            let t = Instant::now();
            let r = gpumon::collect::probe::read_reports(dir.path());
            let e = t.elapsed();
            assert_eq!(r.len(), 64);
            e
        })
        .collect();
    times.sort_unstable();
    println!(
        "reading 64 probe reports (8 devices each): median {:.1?}, p95 {:.1?} per tick",
        times[times.len() / 2],
        times[times.len() * 95 / 100]
    );
    for k in &mut kids {
        let _ = k.kill();
        let _ = k.wait();
    }
}
