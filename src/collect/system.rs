//! The host's own figures beside the GPUs (CPU use, memory, swap, load, uptime), through
//! sysinfo with only its `system` feature. A reading costs four small /proc files
//! (`stat`, `meminfo`, `loadavg`, `uptime`); it is taken once a tick, only for the views that
//! show it.

use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};

use crate::model::HostStats;

pub struct SystemStats {
    sys: System,
    /// Readings taken so far (CPU use needs two CPU readings, and the first reading takes none).
    readings: u64,
}

impl Default for SystemStats {
    fn default() -> Self {
        Self::new()
    }
}

impl SystemStats {
    pub fn new() -> Self {
        SystemStats {
            sys: System::new_with_specifics(RefreshKind::nothing()),
            readings: 0,
        }
    }

    /// The host now; CPU use over the time since the previous reading (`None` on the first
    /// two). The first reading takes no CPU figures at all: sysinfo's first CPU reading also
    /// reads `/proc/cpuinfo`, which the kernel makes slowly on large machines, and a view that
    /// reads once (`once`) could show no CPU use from it anyway; the count comes from
    /// `sysconf` then.
    pub fn read(&mut self) -> HostStats {
        self.sys
            .refresh_memory_specifics(MemoryRefreshKind::nothing().with_ram().with_swap());
        let (cpus, cpu_percent) = if self.readings == 0 {
            // SAFETY: sysconf has no preconditions.
            let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
            (usize::try_from(online).unwrap_or(0), None)
        } else {
            self.sys
                .refresh_cpu_specifics(CpuRefreshKind::nothing().with_cpu_usage());
            let cpus = self.sys.cpus().len();
            let percent = (self.readings >= 2 && cpus > 0)
                .then(|| self.sys.global_cpu_usage())
                .filter(|p| p.is_finite())
                .map(|p| p.clamp(0.0, 100.0));
            (cpus, percent)
        };
        self.readings += 1;
        let total = self.sys.total_memory();
        let available = self.sys.available_memory();
        let load = System::load_average();
        let uptime = System::uptime();
        HostStats {
            cpu_percent,
            cpu_count: u32::try_from(cpus).ok().filter(|n| *n > 0),
            // sysinfo answers 0 where it could not read: unknown, never 0.
            memory_total_bytes: (total > 0).then_some(total),
            memory_used_bytes: (total > 0).then(|| total.saturating_sub(available)),
            memory_available_bytes: (total > 0).then_some(available),
            swap_total_bytes: (total > 0).then(|| self.sys.total_swap()),
            swap_used_bytes: (total > 0).then(|| self.sys.used_swap()),
            load_average: [load.one, load.five, load.fifteen]
                .iter()
                .all(|v| v.is_finite() && *v >= 0.0)
                .then_some([load.one, load.five, load.fifteen]),
            uptime_s: (uptime > 0).then_some(uptime),
            pids_hidden: super::host::in_child_pid_namespace(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the kernel's own files, read here: totals equal, CPU use unknown at first and
    /// known from the third (the first takes no CPU figures).
    #[test]
    fn readings_match_proc_and_cpu_use_needs_two_cpu_readings() {
        let mut stats = SystemStats::new();
        let first = stats.read();
        assert_eq!(first.cpu_percent, None, "one reading has no interval");
        let meminfo = std::fs::read_to_string("/proc/meminfo").expect("meminfo");
        let kib = |key: &str| -> u64 {
            meminfo
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
                .expect("meminfo field")
        };
        assert_eq!(first.memory_total_bytes, Some(kib("MemTotal:") * 1024));
        assert_eq!(first.swap_total_bytes, Some(kib("SwapTotal:") * 1024));
        let used = first.memory_used_bytes.expect("used");
        assert!(used > 0 && used < kib("MemTotal:") * 1024);
        let uptime: f64 = std::fs::read_to_string("/proc/uptime")
            .expect("uptime")
            .split_whitespace()
            .next()
            .and_then(|s| s.parse().ok())
            .expect("seconds");
        assert!(first
            .uptime_s
            .is_some_and(|u| (u as f64 - uptime).abs() < 5.0));
        assert!(first.load_average.is_some());
        assert!(first.cpu_count.is_some_and(|n| n >= 1));
        assert!(
            stats.sys.cpus().is_empty(),
            "the first reading leaves sysinfo's CPU list (and /proc/cpuinfo) alone"
        );
        let second = stats.read();
        assert_eq!(
            second.cpu_percent, None,
            "the first CPU reading has no interval"
        );
        assert_eq!(second.cpu_count, first.cpu_count);
        std::thread::sleep(sysinfo::MINIMUM_CPU_UPDATE_INTERVAL);
        let third = stats.read();
        assert!(
            third
                .cpu_percent
                .is_some_and(|p| (0.0..=100.0).contains(&p)),
            "{:?}",
            third.cpu_percent
        );
    }
}
