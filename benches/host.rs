//! Per-process host facts for 320 live pids (8 GPUs × 40): gpumon's own lookup (`stat`,
//! `cmdline`, `cgroup` and the owner of `/proc/PID`, user names through `getpwuid_r`) against
//! sysinfo's targeted refresh of the same pids (CPU, memory, command line and user, names from
//! sysinfo's `Users` list). Two costs each: the first sight of every pid, and the per-second
//! refresh that follows. Then the host line's reading (sysinfo's `system` feature).
//! `cargo bench --bench host`.

mod common;

use std::time::{Duration, Instant};

use common::{Sleepers, GPUS, PROCS};
use gpumon::collect::host::{HostLookup, HOST_REFRESH};
use gpumon::model::{Device, Process, ProcessKind};
use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, System, UpdateKind, Users};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn devices(pids: &[u32]) -> Vec<Device> {
    pids.chunks(PROCS)
        .enumerate()
        .map(|(i, chunk)| Device {
            index: i as u32,
            processes: chunk
                .iter()
                .map(|&pid| Process::from_nvml(pid, ProcessKind::Compute, Some(1 << 30)))
                .collect(),
            ..Device::default()
        })
        .collect()
}

fn main() {
    let sleepers = Sleepers::spawn(GPUS * PROCS);
    // Each pid's arguments are set once it has exec'd; wait for the last one.
    std::thread::sleep(Duration::from_millis(300));
    let pids = sleepers.pids();
    let sys_pids: Vec<sysinfo::Pid> = pids.iter().map(|&p| sysinfo::Pid::from_u32(p)).collect();
    let kind = ProcessRefreshKind::nothing()
        .with_cpu()
        .with_memory()
        .with_cmd(UpdateKind::OnlyIfNotSet)
        .with_user(UpdateKind::OnlyIfNotSet);

    // First sight: a new lookup each time (nothing cached).
    let first_gpumon = median(
        (0..20)
            .map(|_| {
                let mut devs = devices(&pids);
                let mut lookup = HostLookup::new();
                let t = Instant::now();
                lookup.enrich(&mut devs, None);
                let d = t.elapsed();
                assert!(devs[0].processes[0].user.is_some(), "gpumon found no user");
                d
            })
            .collect(),
    );
    let first_sysinfo = median(
        (0..20)
            .map(|_| {
                let mut sys = System::new();
                let t = Instant::now();
                sys.refresh_processes_specifics(ProcessesToUpdate::Some(&sys_pids), true, kind);
                let users = Users::new_with_refreshed_list();
                let named = sys_pids
                    .iter()
                    .filter_map(|p| sys.process(*p)?.user_id())
                    .filter(|uid| users.get_user_by_id(uid).is_some())
                    .count();
                let d = t.elapsed();
                assert_eq!(named, pids.len(), "sysinfo named every user");
                d
            })
            .collect(),
    );

    // The per-second refresh of every pid (no focus), on a warm lookup.
    let mut devs = devices(&pids);
    let mut lookup = HostLookup::new();
    lookup.enrich(&mut devs, None);
    let mut sys = System::new();
    sys.refresh_processes_specifics(ProcessesToUpdate::Some(&sys_pids), true, kind);
    let (mut refresh_gpumon, mut refresh_sysinfo) = (vec![], vec![]);
    for _ in 0..5 {
        std::thread::sleep(HOST_REFRESH + Duration::from_millis(20));
        let t = Instant::now();
        lookup.enrich(&mut devs, None);
        refresh_gpumon.push(t.elapsed());
        let t = Instant::now();
        sys.refresh_processes_specifics(ProcessesToUpdate::Some(&sys_pids), true, kind);
        refresh_sysinfo.push(t.elapsed());
    }

    let n = pids.len();
    println!("host facts for {n} live pids (median):");
    println!(
        "  first sight: gpumon {:.2?}, sysinfo {:.2?} ({:.1}x)",
        first_gpumon,
        first_sysinfo,
        first_sysinfo.as_secs_f64() / first_gpumon.as_secs_f64()
    );
    let (rg, rs) = (median(refresh_gpumon), median(refresh_sysinfo));
    println!(
        "  per-second refresh: gpumon {rg:.2?}, sysinfo {rs:.2?} ({:.1}x)",
        rs.as_secs_f64() / rg.as_secs_f64()
    );

    // The host line: one reading a tick.
    let mut stats = gpumon::collect::system::SystemStats::new();
    stats.read();
    let reads: Vec<Duration> = (0..200)
        .map(|_| {
            let t = Instant::now();
            stats.read();
            t.elapsed()
        })
        .collect();
    println!(
        "  host line (CPU, memory, swap, load, uptime): {:.1?} a reading",
        median(reads)
    );
    drop(sleepers);
}
