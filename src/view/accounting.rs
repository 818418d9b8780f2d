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

/// One user's exited processes, for the dashboard's per-user view: the one with the highest
/// peak (the newest where peaks tie or none is known) and how many exited.
#[derive(Debug)]
pub struct UserPeak<'a> {
    pub user: Option<&'a str>,
    pub top: ExitedJson<'a>,
    pub exited: usize,
}

/// The exited processes of `sample`, per user (as seen while they ran), the highest peak
/// first; a peak the driver could not say (`None`) sorts last and is never taken for 0.
pub fn per_user(sample: &Sample) -> Vec<UserPeak<'_>> {
    let mut users: Vec<UserPeak<'_>> = Vec::new();
    for e in exited(sample) {
        match users.iter_mut().find(|u| u.user == e.user) {
            Some(u) => {
                u.exited += 1;
                if (e.peak_bytes, e.ended_at) > (u.top.peak_bytes, u.top.ended_at) {
                    u.top = e;
                }
            }
            None => users.push(UserPeak {
                user: e.user,
                top: e,
                exited: 1,
            }),
        }
    }
    users.sort_by(|a, b| {
        b.top
            .peak_bytes
            .cmp(&a.top.peak_bytes)
            .then_with(|| a.user.cmp(&b.user))
    });
    users
}

/// The per-user view's section on exited processes, line by line (the title first): per
/// user, the highest peak among the processes that exited in the last [`KEEP_EXITED`], with
/// its pid, GPU and how long ago; then, where some GPU's accounting is off, that their peaks
/// are N/A. Empty where there is neither. `sample` is already escaped.
///
/// [`KEEP_EXITED`]: crate::model::accounting::KEEP_EXITED
pub fn user_lines(sample: &Sample) -> Vec<String> {
    let users = per_user(sample);
    let mut lines = Vec::new();
    if !users.is_empty() {
        lines.push(format!(
            "exited in the last {} (the driver's accounting): each user's highest peak",
            humantime::format_duration(crate::model::accounting::KEEP_EXITED)
        ));
        let width = users
            .iter()
            .map(|u| u.user.unwrap_or("N/A").chars().count())
            .max()
            .unwrap_or(0)
            .clamp(4, 24);
        for u in &users {
            let name: String = u.user.unwrap_or("N/A").chars().take(width).collect();
            let when = match u.top.ended_at.map(|t| sample.timestamp.duration_since(t)) {
                Some(Ok(age)) => format!(", exited {} ago", fmt_age(age.as_secs())),
                _ => String::new(),
            };
            let more = match u.exited {
                1 => String::new(),
                n => format!(" · {n} exited"),
            };
            lines.push(format!(
                "{name:<width$}  peak {:>10}  pid {}{} on GPU {}{when}{more}",
                fmt_opt_bytes(u.top.peak_bytes),
                u.top.pid,
                u.top.name.map(|n| format!(" ({n})")).unwrap_or_default(),
                u.top.gpu,
            ));
        }
    }
    let off = off_on(&sample.devices);
    if !off.is_empty() {
        let list: Vec<String> = off.iter().map(u32::to_string).collect();
        let gpus = if off.len() == 1 { "GPU" } else { "GPUs" };
        lines.push(format!(
            "exited processes' peaks: N/A on {gpus} {} (accounting off: nvidia-smi -i {} -am 1)",
            list.join(", "),
            list.join(",")
        ));
    }
    lines
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

    fn gone(pid: u32, user: Option<&str>, peak: Option<u64>, ended_s: u64) -> ExitedProcess {
        ExitedProcess {
            pid,
            peak_bytes: peak,
            started_at: None,
            ended_at: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(ended_s)),
            user: user.map(Into::into),
            name: Some("python".into()),
        }
    }

    #[test]
    fn per_user_the_highest_peak_is_named_with_its_pid_and_age_and_unknown_is_not_zero() {
        let on = |exited| {
            Some(Accounting {
                enabled: Some(true),
                exited,
                ..Accounting::default()
            })
        };
        let s = sample(vec![
            on(vec![
                gone(11, Some("alice"), Some(2 << 30), 1_799_999_990),
                gone(12, Some("bob"), None, 1_799_999_999),
            ]),
            on(vec![gone(13, Some("alice"), Some(31 << 30), 1_799_999_880)]),
            Some(Accounting {
                enabled: Some(false),
                ..Accounting::default()
            }),
        ]);
        let users = per_user(&s);
        let who: Vec<_> = users
            .iter()
            .map(|u| (u.user, u.top.pid, u.exited))
            .collect();
        assert_eq!(who, [(Some("alice"), 13, 2), (Some("bob"), 12, 1)]);
        let lines = user_lines(&s);
        assert!(lines[0].contains("exited in the last 10m"), "{lines:?}");
        assert!(
            lines[1].starts_with("alice")
                && lines[1].contains("31.0 GiB  pid 13 (python) on GPU 1, exited 2m00s ago")
                && lines[1].ends_with("· 2 exited"),
            "{lines:?}"
        );
        assert!(lines[2].contains("N/A  pid 12"), "{lines:?}");
        assert!(!lines[2].contains(" 0 B"), "{lines:?}");
        assert!(
            lines[3].contains("N/A on GPU 2 (accounting off"),
            "{lines:?}"
        );
        assert_eq!(lines.len(), 4);
        assert!(
            user_lines(&sample(vec![None])).is_empty(),
            "unsupported: nothing"
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
