//! What happened on a GPU in the minute before an out-of-memory error: how the job's own
//! memory moved, which other processes grew (or appeared), and memory that appeared without
//! an owner. Read from samples (a run's own, or a recording's); pure.

use std::time::{Duration, SystemTime};

use super::{Process, Sample};
use crate::units::fmt_bytes;

/// How far back the timeline looks.
pub const WINDOW: Duration = Duration::from_secs(60);
/// A change smaller than this is not worth a line.
const MIN_CHANGE: u64 = 64 << 20;

/// One line of the timeline, with the bytes it is about (for ordering).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub text: String,
    pub bytes: u64,
}

/// The timeline of GPU `gpu` in the `WINDOW` before `until`, from `samples` (in time order):
/// the highest memory read between samples, where it was measured and above what the samples
/// showed; each other process's growth or appearance, largest first; then the growth of
/// memory no process accounts for (with who holds it, where gpumon found out). `mine` tells
/// the job's processes from the others'.
pub fn neighbours(
    samples: &[&Sample],
    gpu: u32,
    mine: &dyn Fn(&Process) -> bool,
    until: SystemTime,
) -> Vec<Event> {
    let from = until.checked_sub(WINDOW).unwrap_or(SystemTime::UNIX_EPOCH);
    let window: Vec<(&Sample, &super::Device)> = samples
        .iter()
        .filter(|s| s.timestamp >= from && s.timestamp <= until)
        .filter_map(|s| Some((*s, s.devices.iter().find(|d| d.index == gpu && d.fresh())?)))
        .collect();
    let (Some((_, first_d)), Some((_, last_d))) = (window.first(), window.last()) else {
        return Vec::new();
    };
    let secs_before = |t: SystemTime| until.duration_since(t).unwrap_or_default().as_secs_f64();
    let mut events = Vec::new();
    for p in last_d.processes.iter().filter(|p| !mine(p)) {
        let Some(now) = p.gpu_memory_bytes else {
            continue;
        };
        let series: Vec<(SystemTime, u64)> = window
            .iter()
            .filter_map(|(s, d)| {
                let q = d.processes.iter().find(|q| q.pid == p.pid)?;
                Some((s.timestamp, q.gpu_memory_bytes?))
            })
            .collect();
        let who = who(p);
        let was_there = first_d.processes.iter().any(|q| q.pid == p.pid);
        if !was_there {
            let Some(&(t, _)) = series.first() else {
                continue;
            };
            if now >= MIN_CHANGE {
                events.push(Event {
                    text: format!(
                        "pid {} ({who}) appeared {:.0} s before the error and holds {}",
                        p.pid,
                        secs_before(t),
                        fmt_bytes(now)
                    ),
                    bytes: now,
                });
            }
            continue;
        }
        // From its lowest point in the window (the last time it was there) to now.
        let Some(&(_, low)) = series.iter().min_by_key(|(_, b)| *b) else {
            continue;
        };
        let Some(&(t_low, _)) = series.iter().rev().find(|(_, b)| *b == low) else {
            continue;
        };
        if now.saturating_sub(low) >= MIN_CHANGE {
            events.push(Event {
                text: format!(
                    "pid {} ({who}) grew from {} to {} in the {:.0} s before the error",
                    p.pid,
                    fmt_bytes(low),
                    fmt_bytes(now),
                    secs_before(t_low).max(1.0)
                ),
                bytes: now - low,
            });
        }
    }
    events.sort_by_key(|e| std::cmp::Reverse(e.bytes));
    let unowned: Vec<(SystemTime, u64)> = window
        .iter()
        .filter_map(|(s, d)| Some((s.timestamp, d.unattributed_bytes()?)))
        .collect();
    let low = unowned.iter().map(|(_, b)| *b).min();
    let t_low = low.and_then(|l| unowned.iter().rev().find(|(_, b)| *b == l).map(|(t, _)| *t));
    if let (Some(a), Some(t_low), Some(b)) = (low, t_low, last_d.unattributed_bytes()) {
        if b.saturating_sub(a) >= MIN_CHANGE {
            let mut text = format!(
                "memory used by no listed process grew from {} to {} in the {:.0} s before the \
                 error",
                fmt_bytes(a),
                fmt_bytes(b),
                secs_before(t_low).max(1.0)
            );
            let named: Vec<String> = last_d.holders.iter().map(|h| h.describe()).collect();
            if !named.is_empty() {
                text.push_str(&format!("; held by: {}", named.join("; ")));
            }
            events.push(Event { text, bytes: b - a });
        }
    }
    events.extend(exited_before(samples, gpu, mine, until));
    if let Some(peak) = peak_before(&window, until) {
        events.insert(0, peak);
    }
    events
}

/// "the peak before the error was 78.0 GiB of 80.0 GiB, 0.4 s before it, read between
/// samples (the samples showed at most 60.0 GiB)": the highest of the window's peaks
/// ([`super::MemoryPeak`]), when one was measured and rose above the samples' own figures
/// (otherwise the samples already tell it).
fn peak_before(window: &[(&Sample, &super::Device)], until: SystemTime) -> Option<Event> {
    let peak = window
        .iter()
        .filter_map(|(_, d)| d.peak)
        .filter(|p| p.at <= until)
        .max_by_key(|p| p.used_bytes)?;
    let sampled = window
        .iter()
        .filter_map(|(_, d)| d.memory.used_bytes)
        .max()?;
    if peak.used_bytes <= sampled {
        return None;
    }
    let of = window
        .last()
        .and_then(|(_, d)| d.memory.total_bytes)
        .map(|t| format!(" of {}", fmt_bytes(t)))
        .unwrap_or_default();
    let before = until
        .duration_since(peak.at)
        .unwrap_or_default()
        .as_secs_f64();
    let before = if before < 10.0 {
        format!("{before:.1} s")
    } else {
        format!("{before:.0} s")
    };
    Some(Event {
        text: format!(
            "the peak before the error was {}{of}, {before} before it, read between samples \
             (the samples showed at most {})",
            fmt_bytes(peak.used_bytes),
            fmt_bytes(sampled)
        ),
        bytes: peak.used_bytes,
    })
}

/// "bob, python serve.py": a process as a line names it.
fn who(p: &Process) -> String {
    let user = p.user.as_deref().unwrap_or("user N/A");
    match p.command.as_deref().or(p.name.as_deref()) {
        Some(c) => {
            let c: String = c.chars().take(60).collect();
            format!("{user}, {c}")
        }
        None => user.to_owned(),
    }
}

/// A figure's course over `points` (time, bytes), as a few values from first to last:
/// "2.0 → 4.0 → 8.0 → 10.0 GiB".
pub fn course(points: &[u64], at_most: usize) -> Option<String> {
    if points.len() < 2 || at_most < 2 {
        return None;
    }
    let n = points.len();
    let mut picked: Vec<u64> = (0..at_most.min(n))
        .map(|i| points[i * (n - 1) / (at_most.min(n) - 1)])
        .collect();
    picked.dedup();
    Some(
        picked
            .iter()
            .map(|b| fmt_bytes(*b))
            .collect::<Vec<_>>()
            .join(" → "),
    )
}

/// The post-mortem's lines on processes that exited in the [`WINDOW`] before
/// `until` on GPU `gpu`, as the driver's accounting tells them in any of `samples` (one that
/// exited just before the error is listed only in a later sample): "pid 4121 (alice, python)
/// peaked at 31.0 GiB and exited 2 s before the error". `mine` tells the job's processes.
fn exited_before(
    samples: &[&super::Sample],
    gpu: u32,
    mine: &dyn Fn(&super::Process) -> bool,
    until: SystemTime,
) -> Vec<Event> {
    let from = until.checked_sub(WINDOW).unwrap_or(SystemTime::UNIX_EPOCH);
    let mut seen: Vec<&super::accounting::ExitedProcess> = Vec::new();
    for s in samples {
        let Some(a) = s
            .devices
            .iter()
            .find(|d| d.index == gpu)
            .and_then(|d| d.accounting.as_ref())
        else {
            continue;
        };
        for e in &a.exited {
            let in_window = e.ended_at.is_some_and(|t| t >= from && t <= until);
            let dup = seen
                .iter()
                .any(|o| o.pid == e.pid && o.started_at == e.started_at);
            if in_window && !dup {
                seen.push(e);
            }
        }
    }
    let mut events: Vec<Event> = seen
        .into_iter()
        .filter_map(|e| {
            let mut p = super::Process::from_nvml(e.pid, super::ProcessKind::Compute, None);
            (p.user, p.name) = (e.user.clone(), e.name.clone());
            if mine(&p) {
                return None;
            }
            let peak = e.peak_bytes?;
            let before = until
                .duration_since(e.ended_at?)
                .unwrap_or_default()
                .as_secs();
            let who = match (e.user.as_deref(), e.name.as_deref()) {
                (Some(u), Some(n)) => format!(" ({u}, {n})"),
                (Some(x), None) | (None, Some(x)) => format!(" ({x})"),
                (None, None) => String::new(),
            };
            Some(Event {
                text: format!(
                    "pid {}{who} peaked at {} and exited {before} s before the error (the \
                     driver's accounting)",
                    e.pid,
                    crate::units::fmt_bytes(peak)
                ),
                bytes: peak,
            })
        })
        .collect();
    events.sort_by_key(|e| std::cmp::Reverse(e.bytes));
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Device, Memory, ProcessKind};

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    fn sample(t: u64, procs: &[(u32, u64)], used_extra: u64) -> Sample {
        let listed: u64 = procs.iter().map(|(_, b)| b).sum();
        Sample {
            timestamp: SystemTime::UNIX_EPOCH + Duration::from_secs(1000 + t),
            hostname: None,
            source: "nvml",
            driver_version: None,
            cuda_version: None,
            devices: vec![Device {
                index: 0,
                memory: Memory {
                    total_bytes: Some(80 * GIB),
                    used_bytes: Some(listed + used_extra),
                    free_bytes: Some(80 * GIB - listed - used_extra),
                    reserved_bytes: Some(0),
                },
                processes: procs
                    .iter()
                    .map(|&(pid, b)| {
                        let mut p = Process::from_nvml(pid, ProcessKind::Compute, Some(b));
                        p.user = Some(if pid == 1 { "alice" } else { "bob" }.into());
                        p.command = Some(format!("python job{pid}.py"));
                        p
                    })
                    .collect(),
                ..Device::default()
            }],
            error: None,
            host: None,
        }
    }

    #[test]
    fn a_neighbour_that_grew_before_the_error_is_named_with_its_growth() {
        // pid 1 is the job; pid 42 grows from 2 GiB at t=40 to 12 GiB at t=60; pid 7 appears
        // at t=50; memory without an owner grows 5 GiB.
        let samples: Vec<Sample> = (0..=60)
            .step_by(5)
            .map(|t| {
                let bob = if t <= 40 {
                    2 * GIB
                } else {
                    2 * GIB + (t - 40) * GIB / 2
                };
                let mut procs = vec![(1, 20 * GIB), (42, bob)];
                if t >= 50 {
                    procs.push((7, 3 * GIB));
                }
                sample(t, &procs, if t >= 55 { 5 * GIB } else { 0 })
            })
            .collect();
        let refs: Vec<&Sample> = samples.iter().collect();
        let until = SystemTime::UNIX_EPOCH + Duration::from_secs(1061);
        let ev = neighbours(&refs, 0, &|p| p.pid == 1, until);
        let texts: Vec<&str> = ev.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(
            texts[0],
            "pid 42 (bob, python job42.py) grew from 2.0 GiB to 12.0 GiB in the 21 s before the error"
        );
        assert!(texts.contains(&"memory used by no listed process grew from 0 B to 5.0 GiB in the 11 s before the error"), "{texts:?}");
        assert!(
            texts.contains(
                &"pid 7 (bob, python job7.py) appeared 11 s before the error and holds 3.0 GiB"
            ),
            "{texts:?}"
        );
        assert!(
            !texts.iter().any(|t| t.contains("pid 1 ")),
            "the job is not a neighbour"
        );
        // Small changes are not worth a line.
        let flat: Vec<Sample> = (0..5)
            .map(|t| sample(t, &[(1, GIB), (42, GIB + t * MIB)], 0))
            .collect();
        let refs: Vec<&Sample> = flat.iter().collect();
        assert!(neighbours(&refs, 0, &|p| p.pid == 1, until).is_empty());
    }

    #[test]
    fn the_peak_between_samples_before_the_error_is_said_only_where_measured_and_higher() {
        let until = SystemTime::UNIX_EPOCH + Duration::from_secs(1061);
        let peaked = |t: u64, peak: Option<u64>| {
            let mut s = sample(t, &[(1, 60 * GIB)], 0);
            s.devices[0].peak = peak.map(|used_bytes| crate::model::MemoryPeak {
                used_bytes,
                at: SystemTime::UNIX_EPOCH + Duration::from_millis((1000 + t) * 1000 - 400),
                window_ms: 5000,
                reads: 250,
            });
            s
        };
        let samples: Vec<Sample> = (0..=60)
            .step_by(5)
            .map(|t| peaked(t, Some(if t == 60 { 78 * GIB } else { 60 * GIB })))
            .collect();
        let refs: Vec<&Sample> = samples.iter().collect();
        let ev = neighbours(&refs, 0, &|p| p.pid == 1, until);
        assert_eq!(
            ev.first().map(|e| e.text.as_str()),
            Some(
                "the peak before the error was 78.0 GiB of 80.0 GiB, 1.4 s before it, read \
                 between samples (the samples showed at most 60.0 GiB)"
            )
        );
        // Not measured (None), or no higher than the samples: nothing to add.
        for peak in [None, Some(60 * GIB)] {
            let samples: Vec<Sample> = (0..=60).step_by(5).map(|t| peaked(t, peak)).collect();
            let refs: Vec<&Sample> = samples.iter().collect();
            assert!(neighbours(&refs, 0, &|p| p.pid == 1, until).is_empty());
        }
    }

    #[test]
    fn a_course_shows_a_few_points_first_to_last() {
        let pts: Vec<u64> = (1..=10).map(|i| i * GIB).collect();
        assert_eq!(
            course(&pts, 4).as_deref(),
            Some("1.0 GiB → 4.0 GiB → 7.0 GiB → 10.0 GiB")
        );
        assert_eq!(course(&[GIB], 4), None);
        assert_eq!(course(&[GIB, GIB], 4).as_deref(), Some("1.0 GiB"));
    }

    #[test]
    fn the_post_mortem_names_a_neighbour_that_peaked_and_exited_before_the_error() {
        use crate::model::accounting::{Accounting, ExitedProcess};
        let exited = |pid: u32, ago_s: u64, now: SystemTime| ExitedProcess {
            pid,
            peak_bytes: Some(u64::from(pid) << 20),
            started_at: None,
            ended_at: Some(now - Duration::from_secs(ago_s)),
            user: None,
            name: None,
        };
        let sample_at = |secs: u64, accounting: Option<Accounting>| Sample {
            timestamp: SystemTime::UNIX_EPOCH + Duration::from_secs(secs),
            hostname: None,
            source: "nvml",
            driver_version: None,
            cuda_version: None,
            devices: vec![Device {
                accounting,
                ..Default::default()
            }],
            error: None,
            host: None,
        };
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut e = exited(4121, 2, now);
        e.peak_bytes = Some(31 << 30);
        e.user = Some("alice".into());
        let acc = |list: Vec<ExitedProcess>| {
            Some(Accounting {
                enabled: Some(true),
                exited: list,
                ..Accounting::default()
            })
        };
        // Listed in the sample after the error, and again in the next: said once.
        let after = sample_at(1_000_001, acc(vec![e.clone(), exited(9, 300, now)]));
        let again = sample_at(1_000_002, acc(vec![e.clone()]));
        let events = exited_before(&[&after, &again], 0, &|_| false, now);
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(
            events[0].text,
            "pid 4121 (alice) peaked at 31.0 GiB and exited 2 s before the error (the driver's \
             accounting)"
        );
        assert!(
            exited_before(&[&after], 0, &|p| p.pid == 4121, now).is_empty(),
            "the job's own"
        );
    }
}
