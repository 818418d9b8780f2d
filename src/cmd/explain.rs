//! `gpumon explain`: an out-of-memory error read from a file or standard input, explained.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use crate::cli::{Common, ExplainArgs};
use crate::console::{terminal_width, usage_error};
use crate::oom::scan::{for_each_line, Scanner};
use crate::oom::{diagnose::Sizing, render};
use crate::text::Paint;

pub fn run(common: &Common, args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    if let Some(path) = &args.snapshot {
        return snapshot(path, args.json);
    }
    let sizing = match args.estimate.as_deref().map(crate::cli::estimate_line) {
        None => None,
        Some(Ok((shape, _, run))) => Some(Sizing { shape, run }),
        Some(Err(e)) => {
            return Ok(usage_error(format!("--estimate: {e}")));
        }
    };
    let mut scanner = Scanner::new();
    // The last time stamp in the input: where a log's error is, for --recording.
    let mut stamp = LastStamp::default();
    // A file, or a pipe (`<(tail -f train.log)`): read as a stream, in bounded memory.
    let (read, input) = match args.file.as_deref() {
        Some(p) if p != std::path::Path::new("-") => {
            if p.is_dir() {
                return Ok(usage_error(format!(
                    "{} is a directory: give a log file",
                    p.display()
                )));
            }
            match std::fs::File::open(p) {
                Ok(file) => (
                    for_each_line(file, |l, quiet| {
                        stamp.see(l);
                        scanner.push_noted(l, quiet)
                    }),
                    p.display().to_string(),
                ),
                Err(e) => {
                    return Ok(usage_error(format!("cannot read {}: {e}", p.display())));
                }
            }
        }
        _ => {
            // Typed or pasted at a terminal, nothing says when the input is over: say how.
            if io::stdin().is_terminal() {
                eprintln!(
                    "gpumon explain: paste the error or the log, then press Ctrl-D on an \
                     empty line (Ctrl-C cancels)"
                );
            }
            (
                for_each_line(io::stdin().lock(), |l, quiet| {
                    stamp.see(l);
                    scanner.push_noted(l, quiet)
                }),
                "standard input".to_owned(),
            )
        }
    };
    if let Err(e) = read {
        return Ok(usage_error(format!("cannot read {input}: {e}")));
    }
    let analysis = scanner.finish();
    let (here, at_limit) = match analysis.main() {
        Some(oom) if !args.offline => holders_here(common, oom),
        _ => (None, None),
    };
    let before = match (&args.recording, analysis.main()) {
        (Some(path), Some(oom)) => {
            match before_in_recording(path, args.at.as_deref(), stamp.last(), oom) {
                Ok(b) => Some(b),
                Err(e) => {
                    return Ok(usage_error(format!("--recording: {e}")));
                }
            }
        }
        _ => None,
    };
    let at_limit = at_limit.or_else(|| before.as_ref().and_then(|b| b.at_limit.clone()));
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    if args.json {
        let mut json = serde_json::to_value(render::to_json_with(&analysis, sizing.as_ref()))?;
        if let Some(map) = json.as_object_mut() {
            map.insert("here".into(), serde_json::to_value(&here)?);
            map.insert("container_limit".into(), serde_json::to_value(&at_limit)?);
            map.insert("recording".into(), serde_json::to_value(&before)?);
        }
        crate::text::write_json_pretty(&mut out, &json)?;
        out.write_all(b"\n")?;
    } else {
        // Wrapped to the terminal (or COLUMNS, or 100), with hanging indents.
        let layout = render::Layout {
            width: Some(terminal_width()),
            sizing,
            ..render::Layout::default()
        };
        if analysis.main().is_some() {
            let paint = Paint::for_stdout();
            out.write_all(render::render_with(&analysis, paint, &layout).as_bytes())?;
            if let Some(v) = &at_limit {
                out.write_all(crate::view::limit::render(v, paint, terminal_width()).as_bytes())?;
            }
            if let Some(h) = &here {
                out.write_all(render_here(h, paint, terminal_width()).as_bytes())?;
            }
            if let Some(b) = &before {
                out.write_all(render_before(b, paint, terminal_width()).as_bytes())?;
            }
        } else {
            eprint!(
                "gpumon: {}",
                render::render_with(&analysis, Paint(false), &layout)
            );
        }
    }
    out.flush()?;
    Ok(if analysis.main().is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What this host's GPU says now of the memory an OOM could not attribute.
#[derive(Debug, serde::Serialize)]
struct Here {
    /// NVML's index of the GPU read.
    gpu: u32,
    /// How the GPU was recognised: `pid` (a process the error names is on it) or `index`
    /// (the error's GPU number and total capacity match it).
    matched_by: &'static str,
    #[serde(serialize_with = "rfc3339")]
    read_at: std::time::SystemTime,
    unattributed_bytes: Option<u64>,
    holders: Vec<crate::model::Holder>,
}

fn rfc3339<S: serde::Serializer>(t: &std::time::SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&humantime::format_rfc3339_seconds(*t))
}

/// Reads this host's GPUs (within a short deadline: explain never waits on a sick driver)
/// and, when one of them is the GPU of `oom`, who holds its unattributed memory now. `None`
/// where there is no driver, no such GPU, or nobody to name.
/// With it, whether the error was raised at this container's GPU memory limit while the GPU
/// had room ([`crate::model::unified::oom_at_limit`]).
fn holders_here(
    common: &Common,
    oom: &crate::oom::Oom,
) -> (Option<Here>, Option<crate::model::unified::LimitVerdict>) {
    read_here(common, oom).unwrap_or((None, None))
}

type HereAndLimit = (Option<Here>, Option<crate::model::unified::LimitVerdict>);

fn read_here(common: &Common, oom: &crate::oom::Oom) -> Option<HereAndLimit> {
    let pids: Vec<u32> = oom.facts.other_processes.iter().map(|p| p.pid).collect();
    if pids.is_empty() && oom.device_index.is_none() {
        return None;
    }
    let mut config = common.collect();
    config.timeout = Some(config.timeout.unwrap_or(HERE_TIMEOUT).min(HERE_TIMEOUT));
    let needs = crate::collect::Needs {
        processes: true,
        host: true,
        process_utilization: false,
        system: false,
    };
    let mut sampler = crate::collect::open_sampler(&config, needs).ok()?;
    let sample = sampler.tick();
    sampler.dismiss_readers();
    std::mem::forget(sampler);
    let sample = sample.escaped();
    let by_pid = sample
        .devices
        .iter()
        .find(|d| d.processes.iter().any(|p| pids.contains(&p.pid)));
    let limited = || {
        // Inside a limited cgroup CUDA reports the limit as the capacity: the GPU is the
        // error's number, whatever its own capacity.
        let d = sample
            .devices
            .iter()
            .find(|d| Some(d.index) == oom.device_index)?;
        crate::model::unified::oom_at_limit(oom.facts.total_bytes, oom.facts.requested_bytes, d)
    };
    let limit = by_pid
        .and_then(|d| {
            crate::model::unified::oom_at_limit(oom.facts.total_bytes, oom.facts.requested_bytes, d)
        })
        .or_else(limited);
    let (d, matched_by) = match by_pid {
        Some(d) => (d, "pid"),
        None => {
            let found = oom
                .device_index
                .and_then(|index| sample.devices.iter().find(|d| d.index == index))
                .filter(|d| oom.facts.total_bytes.is_some_and(|t| same_capacity(d, t)));
            match found {
                Some(d) => (d, "index"),
                None => return Some((None, limit)),
            }
        }
    };
    let here = (!d.holders.is_empty()).then(|| Here {
        gpu: d.index,
        matched_by,
        read_at: sample.timestamp,
        unattributed_bytes: d.unattributed_bytes(),
        holders: d.holders.clone(),
    });
    Some((here, limit))
}

/// How long explain waits for this host's driver.
const HERE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether a message's total capacity is this GPU's: frameworks print what CUDA reports,
/// NVML's total less the driver's reservation, to two decimals.
fn same_capacity(d: &crate::model::Device, said: u64) -> bool {
    let Some(total) = d.memory.total_bytes else {
        return false;
    };
    let low = total
        .saturating_sub(d.memory.reserved_bytes.unwrap_or(0))
        .saturating_sub(total / 100);
    (low..=total + total / 100).contains(&said)
}

fn render_here(h: &Here, paint: Paint, width: usize) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let at = humantime::format_rfc3339_seconds(h.read_at).to_string();
    let unattributed = match h.unattributed_bytes.filter(|u| *u > 0) {
        Some(u) => format!(
            "; {} is used by no process NVML lists",
            crate::units::fmt_bytes(u)
        ),
        None => String::new(),
    };
    let head = format!(
        "\nOn this host now (GPU {}, read at {}, after the error){unattributed}. Who holds \
         memory there that NVML cannot name:",
        h.gpu,
        at.replace('T', " ").trim_end_matches('Z'),
    );
    let opts = textwrap::Options::new(width.max(20));
    for line in textwrap::wrap(&head, opts) {
        let _ = writeln!(out, "{}", paint.bold(&line));
    }
    for holder in &h.holders {
        let opts = textwrap::Options::new(width.max(20))
            .initial_indent("  - ")
            .subsequent_indent("    ");
        for line in textwrap::wrap(&holder.describe(), opts) {
            let _ = writeln!(out, "{}", paint.yellow(&line));
        }
    }
    out
}

/// The last time stamp seen in the input, as logs write them: `2026-11-23 03:12:05`,
/// `2026-11-23T03:12:05.123Z`, with or without a zone (UTC then).
///
/// Only the last one counts, so a line is only kept (its head, in a ring of reused buffers)
/// when a quick look finds a date's digits in it; the stamps are read at the end, the newest
/// first, until one is a valid time. Reading each line's stamp as it came cost more than the
/// rest of `explain` on a log that stamps every line.
#[derive(Default)]
struct LastStamp {
    candidates: [String; STAMP_CANDIDATES],
    next: usize,
    seen: usize,
}

/// Lines with a date's digits kept, in case the last ones hold no valid time.
const STAMP_CANDIDATES: usize = 16;

fn stamp_re() -> Option<&'static regex::Regex> {
    static RE: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(
            r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?",
        )
        .ok()
    })
    .as_ref()
}

/// Whether `head` has `dddd-dd-dd` then `T` or a space and `dd:dd:dd` somewhere: the part of a
/// stamp the regex cannot do without, so a line it would read is always kept.
fn has_date_digits(head: &[u8]) -> bool {
    let digits = |from: usize, n: usize| {
        head.get(from..from + n)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    memchr::memchr_iter(b'-', head).any(|i| {
        i >= 4
            && digits(i - 4, 4)
            && digits(i + 1, 2)
            && head.get(i + 3) == Some(&b'-')
            && digits(i + 4, 2)
            && matches!(head.get(i + 6), Some(b'T' | b' '))
            && digits(i + 7, 2)
            && head.get(i + 9) == Some(&b':')
            && digits(i + 10, 2)
            && head.get(i + 12) == Some(&b':')
            && digits(i + 13, 2)
    })
}

impl LastStamp {
    fn see(&mut self, line: &str) {
        // Only the head of a line (200 characters) is a log's stamp; a long line is not
        // searched through.
        let end = if line.len() <= 200 {
            line.len()
        } else {
            line.char_indices().nth(200).map_or(line.len(), |(i, _)| i)
        };
        let head = &line[..end];
        if !has_date_digits(head.as_bytes()) {
            return;
        }
        let slot = &mut self.candidates[self.next];
        slot.clear();
        slot.push_str(head);
        self.next = (self.next + 1) % STAMP_CANDIDATES;
        self.seen += 1;
    }

    /// The last valid stamp among the lines kept.
    fn last(&self) -> Option<std::time::SystemTime> {
        (1..=self.seen.min(STAMP_CANDIDATES)).find_map(|back| {
            let i = (self.next + STAMP_CANDIDATES - back) % STAMP_CANDIDATES;
            read_stamp(&self.candidates[i])
        })
    }
}

/// The last time stamp in a line's head, in UTC.
fn read_stamp(head: &str) -> Option<std::time::SystemTime> {
    let re = stamp_re()?;
    let c = re.captures_iter(head).last()?;
    let text = format!("{}T{}Z", &c[1], &c[2]);
    let mut t = humantime::parse_rfc3339(&text).ok()?;
    if let Some(zone) = c.get(4).map(|z| z.as_str()).filter(|z| *z != "Z") {
        let digits: String = zone.chars().filter(char::is_ascii_digit).collect();
        let (h, m) = (
            digits
                .get(..2)
                .and_then(|h| h.parse::<u64>().ok())
                .unwrap_or(0),
            digits
                .get(2..)
                .and_then(|m| m.parse::<u64>().ok())
                .unwrap_or(0),
        );
        let off = std::time::Duration::from_secs(h * 3600 + m * 60);
        t = if zone.starts_with('+') {
            t.checked_sub(off).unwrap_or(t)
        } else {
            t + off
        };
    }
    Some(t)
}

/// What a recording says of the minute before an error.
#[derive(Debug, serde::Serialize)]
struct Before {
    file: String,
    #[serde(serialize_with = "rfc3339")]
    at: std::time::SystemTime,
    /// How the time was chosen: `at` (given) or `log` (the input's last time stamp).
    at_from: &'static str,
    gpu: u32,
    events: Vec<String>,
    /// The error was raised at the recorded container's GPU memory limit while the GPU had
    /// room (said as `container_limit`, as for this host).
    #[serde(skip)]
    at_limit: Option<crate::model::unified::LimitVerdict>,
}

fn before_in_recording(
    path: &std::path::Path,
    at: Option<&str>,
    stamp: Option<std::time::SystemTime>,
    oom: &crate::oom::Oom,
) -> Result<Before, String> {
    use crate::store::recording::{resolve_at, Reader};
    let reader = Reader::open(path).map_err(|e| e.to_string())?;
    let (first, last) = reader
        .span()
        .ok_or_else(|| format!("{} holds no sample", path.display()))?;
    let (at, at_from) = match (at, stamp) {
        (Some(t), _) => (resolve_at(t, first, last)?, "at"),
        (None, Some(t)) => (t, "log"),
        (None, None) => {
            return Err("the input has no time stamp to find the error by: give --at TIME".into())
        }
    };
    if at < first || at > last + std::time::Duration::from_secs(60) {
        return Err(format!(
            "{} runs from {} to {}, not at {}",
            path.display(),
            humantime::format_rfc3339_seconds(first),
            humantime::format_rfc3339_seconds(last),
            humantime::format_rfc3339_seconds(at)
        ));
    }
    let from = at
        .checked_sub(crate::model::timeline::WINDOW)
        .unwrap_or(first);
    let samples: Vec<crate::model::Sample> = reader
        .samples_from(from)
        .flatten()
        .take_while(|s| s.timestamp <= at)
        .map(|s| s.escaped().into_owned())
        .collect();
    let named: Vec<u32> = oom.facts.other_processes.iter().map(|p| p.pid).collect();
    let last_sample = samples
        .last()
        .ok_or("no sample in the minute before the error")?;
    // The GPU: the one a process the error names is on, else the error's number.
    let gpu = last_sample
        .devices
        .iter()
        .find(|d| d.processes.iter().any(|p| named.contains(&p.pid)))
        .map(|d| d.index)
        .or(oom.device_index)
        .unwrap_or(0);
    let at_limit = last_sample
        .devices
        .iter()
        .find(|d| d.index == gpu)
        .and_then(|d| {
            crate::model::unified::oom_at_limit(oom.facts.total_bytes, oom.facts.requested_bytes, d)
        });
    let mine = oom.facts.likely_self_pid;
    let refs: Vec<&crate::model::Sample> = samples.iter().collect();
    let events = crate::model::timeline::neighbours(&refs, gpu, &|p| Some(p.pid) == mine, at)
        .into_iter()
        .map(|e| e.text)
        .collect();
    Ok(Before {
        file: path.display().to_string(),
        at,
        at_from,
        gpu,
        events,
        at_limit,
    })
}

fn render_before(b: &Before, paint: Paint, width: usize) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let at = humantime::format_rfc3339_seconds(b.at).to_string();
    let head = format!(
        "\nIn the recording ({}), the minute before {} on GPU {}:",
        b.file,
        at.replace('T', " ").trim_end_matches('Z'),
        b.gpu
    );
    let opts = textwrap::Options::new(width.max(20));
    for line in textwrap::wrap(&head, opts) {
        let _ = writeln!(out, "{}", paint.bold(&line));
    }
    if b.events.is_empty() {
        let _ = writeln!(
            out,
            "  no process grew by 64 MiB or more, and no memory appeared without an owner"
        );
    }
    for e in &b.events {
        let opts = textwrap::Options::new(width.max(20))
            .initial_indent("  - ")
            .subsequent_indent("    ");
        for line in textwrap::wrap(e, opts) {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

/// `explain --snapshot`: a PyTorch memory snapshot summarised. The OOM's arguments come from the
/// sidecar `gpumon run --snapshot` writes (`….snapshot.json`) when there is one, else from the
/// snapshot's own trace.
fn snapshot(path: &std::path::Path, json: bool) -> anyhow::Result<ExitCode> {
    use crate::oom::snapshot;
    let shown = crate::text::escape(&path.display().to_string()).into_owned();
    let sidecar = snapshot::Sidecar::beside(path).unwrap_or_else(|e| {
        eprintln!(
            "gpumon: warning: {} (the snapshot is read without it)",
            crate::text::escape(&e)
        );
        None
    });
    let summary = match snapshot::read_file(path, sidecar.as_ref()) {
        Ok(s) => s,
        Err(e) => {
            return Ok(usage_error(format!(
                "{shown}: {}",
                crate::text::escape(&e.to_string())
            )));
        }
    };
    let mut out = io::stdout().lock();
    let written = if json {
        // Frame names and file names come from whoever made the snapshot.
        crate::text::write_json_pretty(&mut out, &snapshot::Json::new(&summary))
            .map_err(io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        let paint = Paint::for_stdout();
        let width = io::stdout().is_terminal().then(terminal_width);
        write!(
            out,
            "{}\n{}",
            paint.bold(&format!("PyTorch memory snapshot {shown}:")),
            snapshot::render(&summary, "  ", width)
        )
    };
    match written {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(e.into()),
        Ok(()) => Ok(ExitCode::SUCCESS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Option<std::time::SystemTime> {
        humantime::parse_rfc3339(text).ok()
    }

    /// The last valid stamp wins, whatever follows it; zones are taken out; a date without a
    /// time is no stamp.
    #[test]
    fn the_last_valid_stamp_is_kept() {
        let mut s = LastStamp::default();
        assert_eq!(s.last(), None);
        s.see("2026-11-23 03:12:05,123 INFO step 1");
        s.see("[rank0]: 2026-11-23T03:12:07.5+02:00 step 2");
        s.see("saved to run-2026-11-24.log");
        assert_eq!(s.last(), at("2026-11-23T01:12:07Z"));
        // Digits of a date that is none: passed over, the stamp before it kept.
        for _ in 0..3 {
            s.see("id 2026-13-45 99:99:99 in a table");
        }
        assert_eq!(s.last(), at("2026-11-23T01:12:07Z"));
        s.see(&format!("{} 2026-11-25 10:00:00", "x".repeat(300)));
        assert_eq!(
            s.last(),
            at("2026-11-23T01:12:07Z"),
            "past the head of a line"
        );
        s.see("2026-11-25 10:00:00 done");
        assert_eq!(s.last(), at("2026-11-25T10:00:00Z"));
    }
}
