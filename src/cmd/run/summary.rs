//! The summary `gpumon run` prints when its job ends: how it ended, what it held, an OOM's
//! diagnosis, the batch that fits, the snapshots it saved.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use crate::model::breakdown::{Breakdown, PartKind};
use crate::model::{Device, Process, Sample};
use crate::oom::render::render_oom_repeated;
use crate::text::Paint;
use crate::units::fmt_age;
use crate::units::fmt_bytes;

use super::child::Relayed;
use super::gpus::{self, Launch};
use super::trace::{focus, Trace, GROWTH};

/// The snapshots this run's processes saved, each summarised.
pub(super) fn snapshot_summaries(out: &mut String, dir: &Path, stem: &str, paint: Paint) {
    use crate::oom::snapshot;
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let pid = name
                .to_str()?
                .strip_prefix(stem)?
                .strip_prefix('.')?
                .strip_suffix(".snapshot.pickle")?
                .parse()
                .ok()?;
            Some((pid, e.path()))
        })
        .collect();
    found.sort();
    if found.is_empty() {
        let _ = writeln!(
            out,
            "  no memory snapshot was saved: no process of the run hit an out-of-memory error in \
             PyTorch's allocator (or its PyTorch is older than 2.0)"
        );
        return;
    }
    for (pid, path) in found {
        let (sidecar, sidecar_error) = match snapshot::Sidecar::beside(&path) {
            Ok(s) => (s, None),
            Err(e) => (None, Some(e)),
        };
        let history_off = sidecar.as_ref().is_some_and(|m| m.history.is_none());
        let _ = writeln!(
            out,
            "{}",
            paint.bold(&format!("Memory snapshot at the OOM (pid {pid}):"))
        );
        let _ = writeln!(
            out,
            "  {} (open it in pytorch.org/memory_viz){}",
            crate::text::escape(&path.display().to_string()),
            match sidecar.as_ref().map(|m| (m.seconds, m.bytes)) {
                Some((Some(s), Some(b))) => format!("; taken in {s:.2} s, {}", fmt_bytes(b)),
                _ => String::new(),
            }
        );
        if history_off {
            let _ = writeln!(
                out,
                "  (PyTorch's memory history could not be turned on: no allocation stacks)"
            );
        }
        if let Some(e) = sidecar_error {
            let _ = writeln!(out, "  {}", crate::text::escape(&e));
        }
        match snapshot::read_file(&path, sidecar.as_ref()) {
            Ok(s) => out.push_str(&snapshot::render(
                &s,
                "  ",
                Some(crate::console::terminal_width()),
            )),
            Err(e) => {
                let _ = writeln!(out, "  {}", crate::text::escape(&e.to_string()));
            }
        }
    }
}

/// One process's figures in one sample, for the growth line.
pub(super) struct Figures {
    pub(super) allocated: Option<u64>,
    pub(super) reserved: Option<u64>,
    pub(super) process: Option<u64>,
}

pub(super) fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => "exited successfully".into(),
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => "ended".into(),
    }
}

pub(super) fn split_line(d: &Device, p: &Process) -> String {
    let Some(b) = Breakdown::process(&d.memory, p.memory()) else {
        return format!("pid {} on GPU {}: memory N/A", p.pid, d.index);
    };
    let parts: Vec<String> = b
        .parts
        .iter()
        .filter(|x| x.kind != PartKind::Unaccounted)
        .filter_map(|x| {
            x.bytes
                .map(|v| format!("{} {}", x.kind.label(), fmt_bytes(v)))
        })
        .collect();
    format!("pid {} on GPU {}: {}", p.pid, d.index, parts.join(", "))
}

/// The growth as `run` says it, with what marked the steps.
pub(super) fn growth_line(g: &crate::model::StepGrowth, marker: Option<&str>) -> String {
    let by = match marker {
        Some("optimizer") => " (steps marked by the optimizer's step)".to_owned(),
        Some("backward") => " (steps marked by backward())".to_owned(),
        Some(m) => format!(" (steps marked by {m})"),
        None => String::new(),
    };
    format!("{}{by}", g.describe())
}

/// "held from train.py:42 in train_loop (3,120 blocks, 11.9 MiB a step): <remedy>" per site,
/// then how it was found and what that cost.
pub(super) fn sites_lines(out: &mut String, h: &crate::model::HeldSites, indent: &str) {
    if h.sites.is_empty() {
        let _ = writeln!(
            out,
            "{indent}no block allocated in step {} was still held {} steps later (the growth may \
             come from the cache, or from before the history began)",
            h.step, h.held_steps
        );
    }
    for s in &h.sites {
        let _ = writeln!(
            out,
            "{indent}held from {} ({} block{}, {} a step): {}",
            s.label(),
            group_digits(s.blocks),
            if s.blocks == 1 { "" } else { "s" },
            fmt_bytes(s.bytes),
            crate::model::growth::remedy(s)
        );
    }
    let _ = writeln!(
        out,
        "{indent}(blocks allocated in step {} and still live {} steps later, from PyTorch's memory \
         history{}; its 3 snapshots took {:.3} s)",
        h.step,
        h.held_steps,
        if h.own_history {
            ", turned on for those steps"
        } else {
            ""
        },
        h.snapshot_micros as f64 / 1e6
    );
}

/// 2900 as "2,900".
pub(super) fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `--batch`: the largest batch that fits each GPU the job used, from the measured steps, and
/// with `--estimate` the measured figures beside the estimated ones.
pub(super) fn batch_summary(
    out: &mut String,
    trace: &Trace,
    batch: u32,
    estimated: Option<&crate::estimate::memory::Parts>,
) {
    // Inserted before an OOM's report, if any: after the per-GPU lines.
    let mut text = String::new();
    let fits: Vec<(u32, crate::estimate::batch::BatchFit)> = trace
        .peaks
        .iter()
        .filter_map(|(gpu, p)| Some((*gpu, p.batch?)))
        .collect();
    if fits.is_empty() {
        let _ = writeln!(
            text,
            "  --batch {batch}: not measured (the probe measures once the job has run 4 optimizer \
             steps, or 3 forward passes without gradients, with PyTorch 2.0 or later)"
        );
    }
    for (gpu, f) in &fits {
        let m = &f.measure;
        let what = if m.training {
            "optimizer steps"
        } else {
            "forward passes"
        };
        let margin = format!(
            "{:.0}% {}",
            f.margin * 100.0,
            if f.margin_measured {
                "(measured: peak reserved over peak allocated)"
            } else {
                "(not measured)"
            }
        );
        let largest = match f.largest {
            Some(n) => format!("about {n}"),
            None => "no figure (a step's peak did not exceed what it holds between steps)".into(),
        };
        let _ = writeln!(
            text,
            "  largest batch on GPU {gpu}: {largest}. Measured at batch {} over {} {what}: {} held \
             between steps, {} at a step's peak, {} a sample; {} for PyTorch on this GPU, less a \
             {margin} margin for fragmentation. An extrapolation from measured steps, linear in \
             the batch",
            m.batch,
            m.steps,
            fmt_bytes(m.held_bytes),
            fmt_bytes(m.peak_bytes),
            fmt_bytes(f.per_sample_bytes),
            fmt_bytes(f.room.for_allocator()),
        );
        if let Some(e) = estimated {
            let kept = e.weights_bytes + e.optimizer_bytes.unwrap_or(0);
            let step_est = e.activations_bytes.map_or("—".to_owned(), fmt_bytes);
            let _ = writeln!(
                text,
                "    measured against `estimate`: held {} vs weights + optimizer {} (gradients {} \
                 more while they live); a step adds {} vs activations {step_est}; peak {} vs {} \
                 (the estimate's total less its {} allowance for context and fragmentation)",
                fmt_bytes(m.held_bytes),
                fmt_bytes(kept),
                e.gradients_bytes.map_or("—".to_owned(), fmt_bytes),
                fmt_bytes(m.peak_bytes.saturating_sub(m.held_bytes)),
                fmt_bytes(m.peak_bytes),
                fmt_bytes(e.total_bytes.saturating_sub(e.overhead_bytes)),
                fmt_bytes(e.overhead_bytes),
            );
        }
    }
    // After the per-GPU lines, before any OOM report.
    let at = out
        .find("Out of memory in the output:")
        .and_then(|i| out[..i].rfind("\n\n"));
    match at {
        Some(i) => out.insert_str(i + 1, &text),
        None => out.push_str(&text),
    }
}

pub(super) fn summary(
    command: &[OsString],
    status: ExitStatus,
    elapsed: Duration,
    trace: &Trace,
    relayed: &Relayed,
    paint: Paint,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{} `{}` {} after {}",
        paint.bold("gpumon run:"),
        crate::text::shell_words(command),
        describe_status(status),
        fmt_age(elapsed.as_secs())
    );
    if trace.peaks.is_empty() {
        let _ = writeln!(
            out,
            "  no GPU process of this run was seen ({} samples taken)",
            trace.samples.len()
        );
    }
    for (gpu, peak) in &trace.peaks {
        let pids: Vec<String> = peak.pids.iter().map(u32::to_string).collect();
        let mut line = format!(
            "  GPU {gpu} {}: peak memory of the run {} (pid {})",
            peak.name.as_deref().unwrap_or(""),
            fmt_bytes(peak.process_bytes),
            pids.join(", ")
        );
        match &peak.framework {
            Some(fw) => {
                let _ = write!(
                    line,
                    "; {fw} peak allocated {}, peak reserved {}",
                    fmt_bytes(peak.allocated),
                    fmt_bytes(peak.reserved)
                );
            }
            None => line.push_str("; no allocator figures (the probe did not report)"),
        }
        // The driver's side, named as such: it counts every process on the GPU.
        if let Some(g) = peak.gpu_used_peak {
            let _ = write!(
                line,
                "; the whole GPU's used memory peaked at {} (NVML, read between samples, every \
                 process on it)",
                fmt_bytes(g)
            );
        }
        let _ = writeln!(out, "{line}");
        for (pid, (g, marker)) in &peak.growth {
            let _ = writeln!(
                out,
                "  pid {pid} on GPU {gpu}: {}",
                growth_line(g, marker.as_deref())
            );
            if let Some(h) = peak.sites.get(pid) {
                sites_lines(&mut out, h, "    ");
            }
        }
    }
    let Some(oom) = relayed.analysis.main() else {
        return out;
    };
    // Memory that grew step after step leads: the batch did not suddenly become too large.
    let grown: Vec<(u32, u32, &crate::model::StepGrowth)> = trace
        .peaks
        .iter()
        .flat_map(|(gpu, p)| p.growth.iter().map(move |(pid, (g, _))| (*gpu, *pid, g)))
        .collect();
    if !grown.is_empty() {
        let _ = writeln!(
            out,
            "\n{}",
            paint.bold("Memory grew step after step before the OOM:")
        );
        for (gpu, pid, g) in grown {
            let _ = writeln!(
                out,
                "  pid {pid} on GPU {gpu}: {} had grown {} a step for {} steps (steps {} to {}). \
                 Something each step keeps alive is the likely cause, not the batch size: a \
                 loss summed as a tensor (`total_loss += loss` keeps every step's autograd \
                 history; sum `loss.item()` instead), or outputs, losses or hidden states kept \
                 in a list or dict (keep `t.item()`, or `t.detach().cpu()`: `.detach()` alone \
                 still holds the tensor on the GPU)",
                g.measure,
                fmt_bytes(g.bytes_per_step),
                group_digits(g.last_step.saturating_sub(g.since_step)),
                g.since_step,
                g.last_step,
            );
        }
    }
    let _ = writeln!(out, "\n{}", paint.bold("Out of memory in the output:"));
    let layout = crate::oom::render::Layout {
        width: Some(crate::console::terminal_width()),
        ..Default::default()
    };
    render_oom_repeated(
        &mut out,
        oom,
        relayed.analysis.total as usize,
        relayed.analysis.repeats(),
        paint,
        &layout,
    );
    // The live numbers sampled just before the error went by.
    let before: Vec<&Arc<Sample>> = trace
        .samples
        .iter()
        .filter(|s| relayed.oom_at.is_none_or(|t| s.timestamp <= t))
        .collect();
    // A process that exits right after its OOM takes its probe report with it, so the very
    // last sample may have only NVML's total: prefer the last one with the allocator split.
    let with_split = before.iter().rev().find(|s| {
        focus(s, &trace.job, oom.device_index).is_some_and(|(_, p)| p.allocator.is_some())
    });
    let Some(last) = with_split.or(before.last()) else {
        let _ = writeln!(out, "No sample was taken before the error.");
        return out;
    };
    let Some((d, p)) = focus(last, &trace.job, oom.device_index) else {
        let _ = writeln!(
            out,
            "The job had no GPU process in the last sample before the error."
        );
        return out;
    };
    let ago = relayed
        .oom_at
        .and_then(|t| t.duration_since(last.timestamp).ok())
        .map_or(String::new(), |d| {
            format!(", {:.1} s before the error", d.as_secs_f64())
        });
    let _ = writeln!(
        out,
        "{}",
        paint.bold(&format!("Live, in the last sample{ago}:"))
    );
    let _ = writeln!(out, "  {}", split_line(d, p));
    let series: Vec<Figures> = before
        .iter()
        .rev()
        .take(GROWTH)
        .rev()
        .filter_map(|s| {
            let dev = s.devices.iter().find(|x| x.index == d.index)?;
            let q = dev.processes.iter().find(|q| q.pid == p.pid)?;
            let a = q.allocator.as_ref();
            Some(Figures {
                allocated: a.and_then(|a| a.allocated_bytes),
                reserved: a.and_then(|a| a.reserved_bytes),
                process: q.gpu_memory_bytes,
            })
        })
        .collect();
    if series.len() >= 2 {
        // Each figure from its first known value to its last (the probe may start reporting
        // a few samples in).
        let change = |name: &str, pick: fn(&Figures) -> Option<u64>| {
            let a = series.iter().find_map(pick)?;
            let b = series.iter().rev().find_map(pick)?;
            let sign = if b >= a { "+" } else { "-" };
            Some(format!(
                "{name} {} → {} ({sign}{})",
                fmt_bytes(a),
                fmt_bytes(b),
                fmt_bytes(a.abs_diff(b))
            ))
        };
        let parts: Vec<String> = [
            change("allocated", |x| x.allocated),
            change("reserved", |x| x.reserved),
            change("process", |x| x.process),
        ]
        .into_iter()
        .flatten()
        .collect();
        let _ = writeln!(
            out,
            "  over the last {} samples: {}",
            series.len(),
            parts.join("; ")
        );
    }
    // The last minute on that GPU: the job's course, and what the others did.
    let until = relayed.oom_at.unwrap_or(last.timestamp);
    let minute: Vec<&Sample> = before.iter().map(|s| s.as_ref()).collect();
    let events =
        crate::model::timeline::neighbours(&minute, d.index, &|q| trace.job.owns(q), until);
    let job_course: Vec<u64> = minute
        .iter()
        .filter(|s| {
            until
                .duration_since(s.timestamp)
                .is_ok_and(|a| a <= crate::model::timeline::WINDOW)
        })
        .filter_map(|s| {
            let dev = s.devices.iter().find(|x| x.index == d.index)?;
            let q = dev.processes.iter().find(|q| q.pid == p.pid)?;
            // One measure for the whole curve: the allocator's reserved when the focus sample
            // has it (samples before the probe reported are left out), else NVML's figure.
            if p.allocator.is_some() {
                q.allocator.as_ref().and_then(|a| a.reserved_bytes)
            } else {
                q.gpu_memory_bytes
            }
        })
        .collect();
    let course = crate::model::timeline::course(&job_course, 6);
    if course.is_some() || !events.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            paint.bold(&format!("The last minute on GPU {}:", d.index))
        );
        if let Some(c) = course {
            let what = if p.allocator.is_some() {
                "reserved"
            } else {
                "memory"
            };
            let _ = writeln!(out, "  this job's {what}: {c}");
        }
        if events.is_empty() {
            let _ = writeln!(
                out,
                "  no other process grew, and no memory appeared without an owner"
            );
        }
        for e in &events {
            let _ = writeln!(out, "  {}", e.text);
        }
    }
    out
}

/// All the summary says when the job has ended.
pub(super) struct Ending<'a> {
    pub(super) command: &'a [OsString],
    pub(super) status: ExitStatus,
    pub(super) elapsed: Duration,
    pub(super) trace: &'a Trace,
    pub(super) relayed: &'a Relayed,
    /// `--batch`'s batch, and `--estimate`'s parts beside it.
    pub(super) batch: Option<u32>,
    pub(super) estimated: Option<&'a crate::estimate::memory::Parts>,
    pub(super) launch: Option<&'a Launch>,
    /// `--snapshot`'s directory, and the stem of this run's files in it.
    pub(super) snapshots: Option<&'a Path>,
    pub(super) stem: &'a str,
    pub(super) recording: Option<&'a Path>,
}

/// The whole summary: [`summary`], the batch, where it ran, its snapshots and its recording.
pub(super) fn ending(e: &Ending, paint: Paint) -> String {
    let mut text = summary(e.command, e.status, e.elapsed, e.trace, e.relayed, paint);
    if let Some(n) = e.batch {
        batch_summary(&mut text, e.trace, n, e.estimated);
    }
    if let Some(l) = e.launch {
        // After the first line: where it ran and how long it waited for room.
        let head = text.len() - text.trim_start_matches('\n').len();
        let at = text[head..].find('\n').map_or(text.len(), |i| head + i + 1);
        text.insert_str(
            at,
            &format!(
                "  ran on {} (CUDA_VISIBLE_DEVICES={}), {}\n",
                l.chosen
                    .iter()
                    .map(crate::estimate::pick::Candidate::label)
                    .collect::<Vec<_>>()
                    .join(", "),
                l.ids,
                if l.waited < Duration::from_millis(100) {
                    "chosen at once".to_owned()
                } else {
                    format!("chosen after {} in the queue", gpus::took(l.waited))
                }
            ),
        );
    }
    if let Some(dir) = e.snapshots {
        snapshot_summaries(&mut text, dir, e.stem, paint);
    }
    if let Some(path) = e.recording {
        let _ = writeln!(
            text,
            "  the run's recording: {} (gpumon replay {})",
            path.display(),
            crate::text::shell_words(&[path.as_os_str().to_owned()])
        );
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn step_counts_are_grouped_by_thousands() {
        for (n, s) in [
            (0, "0"),
            (999, "999"),
            (2900, "2,900"),
            (1_234_567, "1,234,567"),
            (u64::MAX, "18,446,744,073,709,551,615"),
        ] {
            assert_eq!(super::group_digits(n), s);
        }
    }
}
