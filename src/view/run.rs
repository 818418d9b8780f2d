//! The summary `gpumon run` prints when its job ends: how it ended, what it held, an OOM's
//! diagnosis, the batch that fits, where it ran. Text from the figures the run kept
//! ([`Held`], [`Ending`]); which processes are the job's, and the snapshots on disk, are the
//! command's to find.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::estimate::batch::BatchFit;
use crate::estimate::memory::Parts;
use crate::estimate::pick::Candidate;
use crate::model::breakdown::{Breakdown, PartKind};
use crate::model::run::GpuPeak;
use crate::model::{Device, Process, Sample};
use crate::oom::render::render_oom_repeated;
use crate::oom::Analysis;
use crate::text::Paint;
use crate::units::{fmt_age, fmt_bytes, fmt_wait};

/// Samples shown in the growth line.
const GROWTH: usize = 10;

/// What the job held over the run, as the run kept it while it watched.
pub struct Held<'a> {
    /// Peaks per GPU (its index).
    pub peaks: &'a BTreeMap<u32, GpuPeak>,
    /// `--batch`: the largest batch that fits each GPU the job measured on.
    pub batches: &'a BTreeMap<u32, BatchFit>,
    /// The last samples, oldest first (other users' strings already escaped).
    pub samples: &'a VecDeque<Arc<Sample>>,
    /// Whether a process is the job's (the command decides: its pid, the probe's tag, its
    /// parentage).
    pub owns: &'a dyn Fn(&Process) -> bool,
}

/// Where `--gpus` ran the job.
pub struct Placed<'a> {
    pub chosen: &'a [Candidate],
    /// `CUDA_VISIBLE_DEVICES`.
    pub ids: &'a str,
    /// How long it waited in the queue for room.
    pub waited: Duration,
}

/// What the job's stderr said: the OOMs read from it, and when the last one went by.
pub struct Output<'a> {
    pub analysis: &'a Analysis,
    pub oom_at: Option<SystemTime>,
}

/// The job's process on the GPU that matters most in `sample`: the one the OOM names (when
/// its index is the physical one), else the largest allocation.
fn focus<'a>(
    sample: &'a Sample,
    owns: &dyn Fn(&Process) -> bool,
    gpu: Option<u32>,
) -> Option<(&'a Device, &'a Process)> {
    let mut best: Option<(&Device, &Process)> = None;
    for d in &sample.devices {
        for p in d.processes.iter().filter(|p| owns(p)) {
            if gpu == Some(d.index) && p.allocator.is_some() {
                return Some((d, p));
            }
            let size = |p: &Process| {
                p.allocator
                    .as_ref()
                    .and_then(|a| a.allocated_bytes)
                    .or(p.gpu_memory_bytes)
                    .unwrap_or(0)
            };
            if best.is_none_or(|(_, b)| size(p) > size(b)) {
                best = Some((d, p));
            }
        }
    }
    best
}

/// One process's figures in one sample, for the growth line.
struct Figures {
    allocated: Option<u64>,
    reserved: Option<u64>,
    process: Option<u64>,
}

fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => "exited successfully".into(),
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => "ended".into(),
    }
}

fn split_line(d: &Device, p: &Process) -> String {
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
pub fn growth_line(g: &crate::model::StepGrowth, marker: Option<&str>) -> String {
    let by = match marker {
        Some("optimizer") => " (steps marked by the optimizer's step)".to_owned(),
        Some("backward") => " (steps marked by backward())".to_owned(),
        Some(m) => format!(" (steps marked by {m})"),
        None => String::new(),
    };
    format!("{}{by}", g.describe())
}

/// `held from train.py:42 in train_loop (3,120 blocks, 11.9 MiB a step): <remedy>` per site,
/// then how it was found and what that cost.
pub fn sites_lines(out: &mut String, h: &crate::model::HeldSites, indent: &str) {
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
fn group_digits(n: u64) -> String {
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
fn batch_summary(
    out: &mut String,
    batches: &BTreeMap<u32, BatchFit>,
    batch: u32,
    estimated: Option<&Parts>,
) {
    // Inserted before an OOM's report, if any: after the per-GPU lines.
    let mut text = String::new();
    let fits: Vec<(u32, BatchFit)> = batches.iter().map(|(gpu, f)| (*gpu, *f)).collect();
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

/// The end-of-job summary before `--batch`, `--gpus`, snapshots and the recording are added:
/// the headline, what each GPU held, and after an OOM its report and the live figures.
fn summary(
    command: &[OsString],
    status: ExitStatus,
    elapsed: Duration,
    held: &Held,
    output: &Output,
    paint: Paint,
    width: usize,
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
    held_lines(&mut out, held);
    let Some(oom) = output.analysis.main() else {
        return out;
    };
    growth_before_oom(&mut out, held.peaks, paint);
    let _ = writeln!(out, "\n{}", paint.bold("Out of memory in the output:"));
    let layout = crate::oom::render::Layout {
        width: Some(width),
        ..Default::default()
    };
    render_oom_repeated(
        &mut out,
        oom,
        output.analysis.total as usize,
        output.analysis.repeats(),
        paint,
        &layout,
    );
    live_before_oom(&mut out, held, output, oom, paint, width);
    out
}

/// Each GPU's peak line, then its processes' growth and the sites that held it.
fn held_lines(out: &mut String, held: &Held) {
    if held.peaks.is_empty() {
        let _ = writeln!(
            out,
            "  no GPU process of this run was seen ({} samples taken)",
            held.samples.len()
        );
    }
    for (gpu, peak) in held.peaks {
        let _ = writeln!(out, "{}", peak_line(*gpu, peak));
        for (pid, (g, marker)) in &peak.growth {
            let _ = writeln!(
                out,
                "  pid {pid} on GPU {gpu}: {}",
                growth_line(g, marker.as_deref())
            );
            if let Some(h) = peak.sites.get(pid) {
                sites_lines(out, h, "    ");
            }
        }
    }
}

/// `  GPU 0 H100: peak memory of the run …`: the process's peak, the allocator's, the driver's.
fn peak_line(gpu: u32, peak: &GpuPeak) -> String {
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
    // The driver's side, named as such: each process's own, where accounting is on;
    // else the whole GPU's, which counts every process on it.
    if let Some(text) = crate::model::accounting::job_peak_text(&peak.accounting) {
        let _ = write!(line, "; {text}");
    } else if let Some(g) = peak.gpu_used_peak {
        let _ = write!(
            line,
            "; the whole GPU's used memory peaked at {} (NVML, read between samples, every \
             process on it)",
            fmt_bytes(g)
        );
    }
    line
}

/// Memory that grew step after step leads an OOM's report: the batch did not suddenly become
/// too large.
fn growth_before_oom(out: &mut String, peaks: &BTreeMap<u32, GpuPeak>, paint: Paint) {
    let grown: Vec<(u32, u32, &crate::model::StepGrowth)> = peaks
        .iter()
        .flat_map(|(gpu, p)| p.growth.iter().map(move |(pid, (g, _))| (*gpu, *pid, g)))
        .collect();
    if grown.is_empty() {
        return;
    }
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

/// The live numbers sampled just before the error went by: the job's split on the GPU that
/// matters, a unified-memory limit, its change over the last samples, and the last minute.
fn live_before_oom(
    out: &mut String,
    held: &Held,
    output: &Output,
    oom: &crate::oom::Oom,
    paint: Paint,
    width: usize,
) {
    let before: Vec<&Sample> = held
        .samples
        .iter()
        .map(|s| s.as_ref())
        .filter(|s| output.oom_at.is_none_or(|t| s.timestamp <= t))
        .collect();
    // A process that exits right after its OOM takes its probe report with it, so the very
    // last sample may have only NVML's total: prefer the last one with the allocator split.
    let with_split = before.iter().rev().find(|s| {
        focus(s, held.owns, oom.device_index).is_some_and(|(_, p)| p.allocator.is_some())
    });
    let Some(last) = with_split.or(before.last()) else {
        let _ = writeln!(out, "No sample was taken before the error.");
        return;
    };
    let Some((d, p)) = focus(last, held.owns, oom.device_index) else {
        let _ = writeln!(
            out,
            "The job had no GPU process in the last sample before the error."
        );
        return;
    };
    let ago = output
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
    let (said, asked) = (oom.facts.total_bytes, oom.facts.requested_bytes);
    if let Some(v) = crate::model::unified::oom_at_limit(said, asked, d) {
        out.push_str(&crate::view::limit::render(&v, paint, width));
    }
    let recent = &before[before.len().saturating_sub(GROWTH)..];
    if let Some(line) = change_line(&figures(recent, d.index, p.pid)) {
        let _ = writeln!(out, "  {line}");
    }
    let until = output.oom_at.unwrap_or(last.timestamp);
    last_minute(out, &before, held.owns, until, (d, p), paint);
}

/// The process's figures in each sample that has it on that GPU, oldest first.
fn figures(samples: &[&Sample], gpu: u32, pid: u32) -> Vec<Figures> {
    samples
        .iter()
        .filter_map(|s| {
            let dev = s.devices.iter().find(|x| x.index == gpu)?;
            let q = dev.processes.iter().find(|q| q.pid == pid)?;
            let a = q.allocator.as_ref();
            Some(Figures {
                allocated: a.and_then(|a| a.allocated_bytes),
                reserved: a.and_then(|a| a.reserved_bytes),
                process: q.gpu_memory_bytes,
            })
        })
        .collect()
}

/// `over the last 5 samples: allocated 1.0 GiB → 2.0 GiB (+1.0 GiB); …`, each figure from its
/// first known value to its last (the probe may start reporting a few samples in); `None`
/// under two samples.
fn change_line(series: &[Figures]) -> Option<String> {
    if series.len() < 2 {
        return None;
    }
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
    Some(format!(
        "over the last {} samples: {}",
        series.len(),
        parts.join("; ")
    ))
}

/// The job's memory on `gpu` over the minute before `until`, in one measure for the whole
/// curve: the allocator's reserved when `by_reserved` (samples before the probe reported are
/// left out), else NVML's figure.
fn job_course(
    samples: &[&Sample],
    until: SystemTime,
    (gpu, pid): (u32, u32),
    by_reserved: bool,
) -> Vec<u64> {
    samples
        .iter()
        .filter(|s| {
            until
                .duration_since(s.timestamp)
                .is_ok_and(|a| a <= crate::model::timeline::WINDOW)
        })
        .filter_map(|s| {
            let dev = s.devices.iter().find(|x| x.index == gpu)?;
            let q = dev.processes.iter().find(|q| q.pid == pid)?;
            if by_reserved {
                q.allocator.as_ref().and_then(|a| a.reserved_bytes)
            } else {
                q.gpu_memory_bytes
            }
        })
        .collect()
}

/// The last minute on the focus GPU: the job's course, and what the others did.
fn last_minute(
    out: &mut String,
    before: &[&Sample],
    owns: &dyn Fn(&Process) -> bool,
    until: SystemTime,
    (d, p): (&Device, &Process),
    paint: Paint,
) {
    let events = crate::model::timeline::neighbours(before, d.index, owns, until);
    let by_reserved = p.allocator.is_some();
    let course = crate::model::timeline::course(
        &job_course(before, until, (d.index, p.pid), by_reserved),
        6,
    );
    if course.is_none() && events.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "{}",
        paint.bold(&format!("The last minute on GPU {}:", d.index))
    );
    if let Some(c) = course {
        let what = if by_reserved { "reserved" } else { "memory" };
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

/// All the summary says when the job has ended.
pub struct Ending<'a> {
    pub command: &'a [OsString],
    pub status: ExitStatus,
    pub elapsed: Duration,
    pub held: Held<'a>,
    pub output: Output<'a>,
    /// `--batch`'s batch, and `--estimate`'s parts beside it.
    pub batch: Option<u32>,
    pub estimated: Option<&'a Parts>,
    pub launch: Option<Placed<'a>>,
    /// What `--snapshot`'s directory holds of this run, as text (the command reads it).
    pub snapshots: Option<String>,
    pub recording: Option<&'a Path>,
    /// The terminal's width, for the OOM's report.
    pub width: usize,
}

/// The whole summary: how it ended and what it held, the batch, where it ran, its snapshots and its recording.
pub fn ending(e: &Ending, paint: Paint) -> String {
    let mut text = summary(
        e.command, e.status, e.elapsed, &e.held, &e.output, paint, e.width,
    );
    if let Some(n) = e.batch {
        batch_summary(&mut text, e.held.batches, n, e.estimated);
    }
    if let Some(l) = &e.launch {
        // After the first line: where it ran and how long it waited for room.
        let head = text.len() - text.trim_start_matches('\n').len();
        let at = text[head..].find('\n').map_or(text.len(), |i| head + i + 1);
        text.insert_str(
            at,
            &format!(
                "  ran on {} (CUDA_VISIBLE_DEVICES={}), {}\n",
                l.chosen
                    .iter()
                    .map(Candidate::label)
                    .collect::<Vec<_>>()
                    .join(", "),
                l.ids,
                if l.waited < Duration::from_millis(100) {
                    "chosen at once".to_owned()
                } else {
                    format!("chosen after {} in the queue", fmt_wait(l.waited))
                }
            ),
        );
    }
    if let Some(s) = &e.snapshots {
        text.push_str(s);
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
    use super::*;
    use crate::model::{Memory, ProcessKind};
    use std::os::unix::process::ExitStatusExt;

    const GIB: u64 = 1 << 30;

    fn sample(processes: Vec<Process>) -> Sample {
        Sample {
            timestamp: SystemTime::UNIX_EPOCH,
            hostname: None,
            source: "nvml",
            driver_version: None,
            cuda_version: None,
            devices: vec![Device {
                index: 0,
                memory: Memory {
                    total_bytes: Some(80 * GIB),
                    used_bytes: Some(12 * GIB),
                    free_bytes: Some(68 * GIB),
                    reserved_bytes: None,
                },
                processes,
                ..Device::default()
            }],
            error: None,
            host: None,
        }
    }

    /// The summary reads only the figures the run kept: which process is the job's is the
    /// command's predicate, so a larger process that is not the job's is never the focus.
    #[test]
    fn the_job_is_whom_the_command_says_not_the_largest_process() {
        let job = Process::from_nvml(7, ProcessKind::Compute, Some(2 * GIB));
        let other = Process::from_nvml(9, ProcessKind::Compute, Some(8 * GIB));
        let samples: VecDeque<Arc<Sample>> = [Arc::new(sample(vec![other, job]))].into();
        let mut peak = GpuPeak {
            name: Some("H100".into()),
            process_bytes: 2 * GIB,
            ..GpuPeak::default()
        };
        peak.pids.insert(7);
        let peaks = BTreeMap::from([(0, peak)]);
        let batches = BTreeMap::new();
        let analysis = crate::oom::analyze(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has \
             a total capacity of 79.11 GiB of which 1.00 GiB is free.",
        );
        assert!(analysis.main().is_some(), "the line is an OOM");
        let text = ending(
            &Ending {
                command: &["python".into(), "train.py".into()],
                status: ExitStatus::from_raw(1 << 8),
                elapsed: Duration::from_secs(65),
                held: Held {
                    peaks: &peaks,
                    batches: &batches,
                    samples: &samples,
                    owns: &|p| p.pid == 7,
                },
                output: Output {
                    analysis: &analysis,
                    oom_at: None,
                },
                batch: Some(8),
                estimated: None,
                launch: None,
                snapshots: Some("  the snapshots' text\n".into()),
                recording: None,
                width: 100,
            },
            Paint(false),
        );
        assert!(
            text.contains("`python train.py` exited with status 1 after 1m05s"),
            "{text}"
        );
        assert!(
            text.contains("GPU 0 H100: peak memory of the run 2.0 GiB (pid 7)"),
            "{text}"
        );
        assert!(text.contains("  pid 7 on GPU 0:"), "{text}");
        assert!(!text.contains("pid 9"), "{text}");
        // The batch line before the OOM's report; the snapshots' text at the end.
        let batch = text.find("--batch 8: not measured").expect("batch line");
        assert!(
            batch < text.find("Out of memory in the output:").expect("oom"),
            "{text}"
        );
        assert!(text.ends_with("  the snapshots' text\n"), "{text}");
    }

    #[test]
    fn the_peak_line_names_the_allocator_and_the_drivers_side() {
        let mut peak = GpuPeak {
            name: Some("H100".into()),
            process_bytes: 3 * GIB,
            gpu_used_peak: Some(5 * GIB),
            ..GpuPeak::default()
        };
        peak.pids.extend([7, 8]);
        assert_eq!(
            peak_line(1, &peak),
            "  GPU 1 H100: peak memory of the run 3.0 GiB (pid 7, 8); no allocator figures (the \
             probe did not report); the whole GPU's used memory peaked at 5.0 GiB (NVML, read \
             between samples, every process on it)"
        );
        // The process's own accounting wins over the whole GPU's figure.
        peak.framework = Some("pytorch".into());
        peak.allocated = GIB;
        peak.reserved = 2 * GIB;
        peak.accounting.insert(7, 4 * GIB);
        assert_eq!(
            peak_line(1, &peak),
            "  GPU 1 H100: peak memory of the run 3.0 GiB (pid 7, 8); pytorch peak allocated \
             1.0 GiB, peak reserved 2.0 GiB; the driver's accounting: pid 7 peaked at 4.0 GiB"
        );
    }

    #[test]
    fn the_change_line_runs_each_figure_from_its_first_known_value_to_its_last() {
        let f = |allocated, reserved, process| Figures {
            allocated,
            reserved,
            process,
        };
        assert_eq!(change_line(&[f(Some(GIB), None, Some(GIB))]), None);
        assert_eq!(
            change_line(&[
                f(None, None, Some(4 * GIB)),
                f(Some(GIB), Some(2 * GIB), Some(3 * GIB)),
                f(Some(2 * GIB), None, None),
            ])
            .as_deref(),
            Some(
                "over the last 3 samples: allocated 1.0 GiB → 2.0 GiB (+1.0 GiB); reserved \
                 2.0 GiB → 2.0 GiB (+0 B); process 4.0 GiB → 3.0 GiB (-1.0 GiB)"
            )
        );
    }

    #[test]
    fn the_jobs_course_keeps_the_last_minute_of_its_process_in_one_measure() {
        let at = |secs: u64, pid: u32, bytes: u64| {
            let mut s = sample(vec![Process::from_nvml(
                pid,
                ProcessKind::Compute,
                Some(bytes),
            )]);
            s.timestamp = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
            s
        };
        let samples = [
            at(10, 7, GIB),     // over a minute before
            at(50, 7, 2 * GIB), // kept
            at(60, 9, 8 * GIB), // another process
            at(100, 7, 3 * GIB),
            at(130, 7, 9 * GIB), // after the error
        ];
        let refs: Vec<&Sample> = samples.iter().collect();
        let until = SystemTime::UNIX_EPOCH + Duration::from_secs(110);
        assert_eq!(
            job_course(&refs, until, (0, 7), false),
            vec![2 * GIB, 3 * GIB]
        );
        // By the allocator's reserved, samples without the probe's figures are left out.
        assert!(job_course(&refs, until, (0, 7), true).is_empty());
        assert!(job_course(&refs, until, (1, 7), false).is_empty());
    }

    #[test]
    fn step_counts_are_grouped_by_thousands() {
        for (n, s) in [
            (0, "0"),
            (999, "999"),
            (2900, "2,900"),
            (1_234_567, "1,234,567"),
            (u64::MAX, "18,446,744,073,709,551,615"),
        ] {
            assert_eq!(group_digits(n), s);
        }
    }
}
