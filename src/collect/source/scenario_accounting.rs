//! NVML accounting mode in scenario files: what the driver's per-process accounting buffer
//! holds at a scenario time (each process's highest memory so far, exited ones included, the
//! oldest overwritten past the buffer's size), for the fake NVML library.

use super::{Curve, FaultKind, ProcessSpec, Scenario};
use serde::Deserialize;

/// A device's accounting mode, as `"accounting": {"enabled": true, "buffer": 4000}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountingSpec {
    /// `false`: the GPU supports accounting but it is off (`nvidia-smi -am 0`, the default).
    pub enabled: bool,
    /// How many processes the buffer holds (`nvmlDeviceGetAccountingBufferSize`).
    #[serde(default = "default_buffer")]
    pub buffer: u32,
}

fn default_buffer() -> u32 {
    4000
}

/// One process in the accounting buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountingEntry {
    pub pid: u32,
    /// The highest memory of the process so far (`maxMemoryUsage`); `None` where the
    /// scenario makes its memory unavailable.
    pub max_memory: Option<u64>,
    /// Scenario time it started.
    pub start_s: f64,
    /// Scenario time it ended; `None` while it runs.
    pub end_s: Option<f64>,
}

/// The accounting state of a device at one time.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountingState {
    pub enabled: bool,
    pub buffer: u32,
    /// Oldest first; empty while accounting is off.
    pub entries: Vec<AccountingEntry>,
}

/// The most sawtooth periods [`Curve::max_over`] looks at (each has the same rise).
const MAX_PERIODS: u64 = 10_000;
/// Just before a drop: where a sawtooth or a spike is highest.
const BEFORE: f64 = 1e-6;

impl Curve {
    /// The highest value over `[from, to]`. A curve is piecewise linear (keyframes), plus a
    /// sawtooth (rising, then dropping at each period's end) and flat spikes, so its highest
    /// value is at one of its corners: the ends, each keyframe, each spike's start and just
    /// before its end, and just before each sawtooth drop. Exact, however short the spike, and
    /// cheap enough to ask for every process on every call.
    pub fn max_over(&self, from: f64, to: f64) -> f64 {
        let mut times = vec![from, to];
        if let Curve::Shape(s) = self {
            times.extend(s.points.iter().map(|p| p.0));
            for sp in &s.spikes {
                times.extend([sp.at_s, sp.at_s + sp.len_s - BEFORE]);
            }
            if let Some(saw) = s.sawtooth.as_ref().filter(|saw| saw.period_s > 0.0) {
                let first = ((from - saw.from_s) / saw.period_s).floor().max(0.0) as u64;
                let last = ((to - saw.from_s) / saw.period_s).ceil().max(0.0) as u64;
                for k in first..=last.min(first + MAX_PERIODS) {
                    times.push(saw.from_s + (k + 1) as f64 * saw.period_s - BEFORE);
                }
                times.extend(saw.until_s.map(|u| u - BEFORE));
            }
        }
        times
            .into_iter()
            .filter(|t| (from..=to).contains(t))
            .map(|t| self.at(t))
            .fold(0.0, f64::max)
    }
}

fn mib_to_bytes(mib: f64) -> u64 {
    (mib.max(0.0) * 1048576.0).round() as u64
}

impl Scenario {
    /// Device `index`'s accounting at scenario time `t`; `None` where the device has no
    /// accounting (NVML answers NOT_SUPPORTED).
    pub fn accounting_at(&self, index: u32, t: f64) -> Option<AccountingState> {
        let spec = self.devices.get(index as usize)?;
        let acc = spec.accounting.as_ref()?;
        if !acc.enabled {
            return Some(AccountingState {
                enabled: false,
                buffer: acc.buffer,
                entries: Vec::new(),
            });
        }
        let capacity = mib_to_bytes(spec.memory_total_mib as f64)
            .saturating_sub(mib_to_bytes(spec.memory_reserved_mib as f64));
        let faults = |kind: FaultKind, pid: u32| {
            self.faults.iter().filter(move |f| {
                f.kind == kind && f.pid == Some(pid) && f.device.is_none_or(|d| d == index)
            })
        };
        let entry = |p: &ProcessSpec, cap: u64| -> Option<AccountingEntry> {
            let pid = p.pid.or_else(|| {
                let file = p.pid_file.as_ref()?;
                std::fs::read_to_string(file).ok()?.trim().parse().ok()
            })?;
            if t < p.start_s {
                return None;
            }
            let killed = faults(FaultKind::ProcessExit, pid)
                .map(|f| f.at_s)
                .filter(|&at| at >= p.start_s)
                .reduce(f64::min);
            let end = match (p.end_s, killed) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
            .filter(|&e| e <= t);
            let until = end.unwrap_or(t) - p.start_s;
            let unavailable = faults(FaultKind::ProcessMemoryUnavailable, pid)
                .any(|f| f.at_s <= t && f.until_s.is_none_or(|u| u > p.start_s));
            Some(AccountingEntry {
                pid,
                max_memory: (!unavailable)
                    .then(|| mib_to_bytes(p.memory_mib.max_over(0.0, until)).min(cap)),
                start_s: p.start_s,
                end_s: end,
            })
        };
        let mut entries: Vec<AccountingEntry> = spec
            .processes
            .iter()
            .filter_map(|p| entry(p, capacity))
            .chain(spec.mig.iter().flatten().flat_map(|m| {
                let cap = mib_to_bytes(m.memory_total_mib as f64);
                m.processes.iter().filter_map(move |p| entry(p, cap))
            }))
            .collect();
        entries.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
        // A pid used twice: the driver reports the latest process only.
        let mut seen = std::collections::BTreeSet::new();
        let mut kept: Vec<AccountingEntry> = entries
            .into_iter()
            .rev()
            .filter(|e| seen.insert(e.pid))
            .collect();
        kept.truncate(acc.buffer as usize);
        kept.reverse();
        Some(AccountingState {
            enabled: true,
            buffer: acc.buffer,
            entries: kept,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::Scenario;

    fn scenario(acc: &str, processes: &str, faults: &str) -> Scenario {
        let text = format!(
            r#"{{"version":1,"devices":[{{"name":"G","memory_total_mib":81920,{acc}
                "processes":[{processes}]}}],"faults":[{faults}]}}"#
        );
        match Scenario::from_json(&text) {
            Ok(s) => s,
            Err(e) => panic!("{e}: {text}"),
        }
    }

    #[test]
    fn a_devices_without_accounting_has_none_and_off_lists_nothing() {
        let s = scenario("", r#"{"pid":7,"memory_mib":100}"#, "");
        assert_eq!(s.accounting_at(0, 1.0), None);
        let off = scenario(
            r#""accounting":{"enabled":false},"#,
            r#"{"pid":7,"memory_mib":100}"#,
            "",
        );
        let state = off.accounting_at(0, 1.0).expect("accounting");
        assert!(!state.enabled && state.entries.is_empty());
    }

    #[test]
    fn peaks_catch_a_30_ms_spike_and_outlive_the_process() {
        let s = scenario(
            r#""accounting":{"enabled":true},"#,
            r#"{"pid":7,"memory_mib":{"points":[[0,1000]],
                 "spikes":[{"at_s":2.5,"len_s":0.03,"value":30000}]},"end_s":5},
               {"pid":8,"memory_mib":500,"start_s":1}"#,
            "",
        );
        let at = |t: f64| s.accounting_at(0, t).expect("accounting").entries;
        let before = at(2.0);
        assert_eq!(before[0].max_memory, Some(1000 << 20));
        assert_eq!(before[0].end_s, None);
        let after = at(10.0);
        assert_eq!(
            after[0].max_memory,
            Some(31000 << 20),
            "the spike between samples"
        );
        assert_eq!(after[0].end_s, Some(5.0), "still listed after it exited");
        assert_eq!(after[1].pid, 8);
        assert_eq!(at(0.5).len(), 1, "pid 8 has not started");
    }

    #[test]
    fn the_highest_value_is_found_at_the_curves_corners() {
        let curve: super::super::Curve = serde_json::from_str(
            r#"{"points":[[0,10],[10,30],[20,5]],"sawtooth":{"period_s":4,"amplitude":8},
                "spikes":[{"at_s":13,"len_s":0.001,"value":50}]}"#,
        )
        .expect("curve");
        let brute = |from: f64, to: f64| {
            (0..=200_000)
                .map(|i| curve.at(from + (to - from) * f64::from(i) / 200_000.0))
                .fold(0.0, f64::max)
        };
        for (from, to) in [(0.0, 20.0), (0.0, 9.0), (14.0, 20.0), (2.5, 3.5)] {
            let exact = curve.max_over(from, to);
            assert!(exact >= brute(from, to) - 1e-3, "{from}..{to}: {exact}");
        }
        // The 1 ms spike, which a grid would step over.
        assert!(curve.max_over(0.0, 20.0) > 70.0);
    }

    #[test]
    fn the_buffer_keeps_the_newest_and_a_killed_process_ends_at_its_fault() {
        let procs: Vec<String> = (1..=10)
            .map(|i| {
                format!(
                    r#"{{"pid":{i},"memory_mib":{i},"start_s":{i},"end_s":{}}}"#,
                    i + 1
                )
            })
            .collect();
        let s = scenario(
            r#""accounting":{"enabled":true,"buffer":3},"#,
            &procs.join(","),
            r#"{"kind":"process_exit","pid":10,"at_s":10.5}"#,
        );
        let state = s.accounting_at(0, 20.0).expect("accounting");
        let pids: Vec<u32> = state.entries.iter().map(|e| e.pid).collect();
        assert_eq!(pids, [8, 9, 10]);
        assert_eq!(state.entries[2].end_s, Some(10.5));
    }
}
