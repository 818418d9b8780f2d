//! The driver's per-process peaks in text: the processes that accounting says exited (with
//! their peaks), and the one note on how to turn accounting on where it is off.

use std::fmt::Write as _;
use std::time::SystemTime;

use serde::Serialize;

use crate::model::accounting::{how_to_enable, off_on};
use crate::model::Sample;
use crate::text::Paint;
use crate::units::{fmt_age, fmt_opt_bytes};

/// One exited process, for `once --by --json`.
#[derive(Debug, Serialize)]
pub struct ExitedJson<'a> {
    pub gpu: u32,
    pub pid: u32,
    pub user: Option<&'a str>,
    pub name: Option<&'a str>,
    pub peak_bytes: Option<u64>,
    #[serde(serialize_with = "opt_time")]
    pub ended_at: Option<SystemTime>,
}

fn opt_time<S: serde::Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => crate::model::rfc3339(t, s),
        None => s.serialize_none(),
    }
}

/// Every exited process the sample carries, GPU by GPU, newest first.
pub fn exited(sample: &Sample) -> Vec<ExitedJson<'_>> {
    sample
        .devices
        .iter()
        .flat_map(|d| {
            d.accounting.iter().flat_map(move |a| {
                a.exited.iter().map(move |e| ExitedJson {
                    gpu: d.index,
                    pid: e.pid,
                    user: e.user.as_deref(),
                    name: e.name.as_deref(),
                    peak_bytes: e.peak_bytes,
                    ended_at: e.ended_at,
                })
            })
        })
        .collect()
}

/// "pid 4121 (alice, python) on GPU 0 peaked at 31.0 GiB and exited 2s ago".
pub fn exited_line(e: &ExitedJson<'_>, now: SystemTime) -> String {
    let who = match (e.user, e.name) {
        (Some(u), Some(n)) => format!(" ({u}, {n})"),
        (Some(x), None) | (None, Some(x)) => format!(" ({x})"),
        (None, None) => String::new(),
    };
    let when = match e.ended_at.map(|t| now.duration_since(t)) {
        Some(Ok(age)) => format!(" and exited {} ago", fmt_age(age.as_secs())),
        _ => " and exited".to_owned(),
    };
    format!(
        "pid {}{who} on GPU {} peaked at {}{when}",
        e.pid,
        e.gpu,
        fmt_opt_bytes(e.peak_bytes)
    )
}

/// The exited processes' peaks and the note on accounting, for a text report (`once`,
/// `once --by`); nothing where there is neither. `sample` is already escaped.
pub fn append(out: &mut String, sample: &Sample, paint: Paint, width: usize) {
    let list = exited(sample);
    if !list.is_empty() {
        out.push('\n');
        let _ = writeln!(
            out,
            "{}",
            paint.bold("Exited processes (the driver's accounting, peak over each one's life)")
        );
        for e in &list {
            let line: String = format!("  {}", exited_line(e, sample.timestamp))
                .chars()
                .take(width.max(20))
                .collect();
            let _ = writeln!(out, "{line}");
        }
    }
    if let Some(note) = how_to_enable(&off_on(&sample.devices)) {
        out.push('\n');
        for l in textwrap::wrap(&note, textwrap::Options::new(width.max(20))) {
            let _ = writeln!(out, "{}", paint.dim(&l));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::accounting::{Accounting, ExitedProcess};
    use crate::model::Device;
    use std::time::Duration;

    fn sample(acc: Vec<Option<Accounting>>) -> Sample {
        Sample {
            timestamp: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
            hostname: None,
            source: "nvml",
            driver_version: None,
            cuda_version: None,
            devices: acc
                .into_iter()
                .enumerate()
                .map(|(i, accounting)| Device {
                    index: i as u32,
                    accounting,
                    ..Device::default()
                })
                .collect(),
            error: None,
            host: None,
        }
    }

    #[test]
    fn an_exited_process_is_said_with_its_peak_and_when_it_ended() {
        let s = sample(vec![Some(Accounting {
            enabled: Some(true),
            exited: vec![ExitedProcess {
                pid: 4121,
                peak_bytes: Some(31 << 30),
                started_at: None,
                ended_at: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_799_999_998)),
                user: Some("alice".into()),
                name: None,
            }],
            ..Accounting::default()
        })]);
        let mut out = String::new();
        append(&mut out, &s, Paint(false), 100);
        assert!(
            out.contains("pid 4121 (alice) on GPU 0 peaked at 31.0 GiB and exited 2s ago"),
            "{out}"
        );
        assert!(
            !out.contains("nvidia-smi"),
            "accounting is on: no note\n{out}"
        );
    }

    #[test]
    fn the_note_comes_once_for_the_gpus_with_accounting_off_and_not_for_unsupported_ones() {
        let off = || {
            Some(Accounting {
                enabled: Some(false),
                ..Accounting::default()
            })
        };
        let s = sample(vec![off(), None, off()]);
        let mut out = String::new();
        append(&mut out, &s, Paint(false), 200);
        assert_eq!(out.matches("nvidia-smi").count(), 1, "{out}");
        assert!(out.contains("GPUs 0, 2;"), "{out}");
        let mut none = String::new();
        append(&mut none, &sample(vec![None]), Paint(false), 200);
        assert_eq!(none, "");
    }
}
