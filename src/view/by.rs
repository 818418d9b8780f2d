//! `once --by user|owner`: the per-user (or per-owner) rollup as a table, and its JSON.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::model::rollup::{GroupBy, Row};
use crate::text::Paint;
use crate::units::{fmt_bytes, fmt_opt_bytes};

/// `once --by --json`'s schema version (docs/schema/by.schema.json).
pub const SCHEMA_VERSION: u32 = 1;

/// The rollup as JSON.
#[derive(Debug, Serialize)]
pub struct ByJson<'a> {
    pub schema_version: u32,
    #[serde(serialize_with = "crate::model::rfc3339")]
    pub timestamp: SystemTime,
    pub hostname: Option<&'a str>,
    pub by: GroupBy,
    /// Seconds of 0% SM after which a process's memory is an idle hold.
    pub idle_after_s: u64,
    pub rows: &'a [Row],
    /// Processes that accounting says have exited, with their peaks (absent where none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exited: Vec<super::accounting::ExitedJson<'a>>,
}

/// The column heads, in order; the first names what a row is (the dashboard's view has the
/// same).
pub fn heads(by: GroupBy) -> [&'static str; 7] {
    [
        match by {
            GroupBy::User => "USER",
            GroupBy::Owner => "OWNER",
        },
        "GPUS",
        "PROCS",
        "GPU MEM",
        "MEAN %SM",
        "GPU-HOURS",
        "IDLE HOLDS",
    ]
}

/// The cells of a row, as the table and the dashboard's view print them.
pub fn cells(r: &Row) -> [String; 7] {
    let gpus: Vec<String> = r.gpus.iter().map(u32::to_string).collect();
    [
        // A user's or owner's name (a cgroup's, a pod's): through the one escaping rule, as
        // every view prints it.
        crate::text::escape(&r.key).into_owned(),
        gpus.join(","),
        r.processes.to_string(),
        fmt_bytes(r.memory_bytes),
        r.mean_sm_percent
            .map_or_else(|| "N/A".into(), |v| format!("{v:.0}")),
        r.gpu_hours
            .map_or_else(|| "N/A".into(), |h| format!("{h:.2}")),
        fmt_opt_bytes(r.idle_bytes),
    ]
}

/// A row's GPU memory limit as the dashboard's per-owner view says it: "limit 8.0 GiB, 7.2
/// GiB used" for the limit with the least room left (a hard limit unknown, or its use, is
/// N/A), "+N" where the row's processes are under more limits (other GPUs, other cgroups);
/// "" without a limit. Figures only: no cgroup path, nothing to escape.
pub fn limit_cell(r: &Row) -> String {
    // Least room first; a limit whose room is unknown after those known.
    let Some(tight) = r
        .limits
        .iter()
        .min_by_key(|l| (l.limit.room_bytes().is_none(), l.limit.room_bytes()))
    else {
        return String::new();
    };
    let more = match r.limits.len().saturating_sub(1) {
        0 => String::new(),
        n => format!(" +{n}"),
    };
    format!(
        "limit {}, {} used{more}",
        fmt_opt_bytes(tight.limit.hard_bytes),
        fmt_opt_bytes(tight.limit.used_bytes)
    )
}

/// The columns' widths for `heads` (each `head_extra` wider: room for a sort mark) and
/// `body`, at most `width` in all: the first column (the name) gives way first, to 8.
pub fn widths<const N: usize>(
    heads: &[&str; N],
    head_extra: usize,
    body: &[[String; N]],
    width: usize,
) -> [usize; N] {
    let mut w = heads.map(|h| h.chars().count() + head_extra);
    for r in body {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let rest: usize = w.iter().skip(1).map(|x| x + 2).sum();
    if let Some(first) = w.first_mut() {
        *first = (*first).min(width.saturating_sub(rest).max(8));
    }
    w
}

/// One line of the table at widths `w`: the name left-aligned, the figures right-aligned two
/// apart; a cell longer than its column is cut with "…".
pub fn row<S: AsRef<str>, const N: usize>(cells: &[S], w: &[usize; N]) -> String {
    let mut l = String::new();
    for (i, c) in cells.iter().enumerate().take(N) {
        let c = c.as_ref();
        let c: String = if c.chars().count() > w[i] {
            let cut: String = c.chars().take(w[i].saturating_sub(1)).collect();
            format!("{cut}…")
        } else {
            c.to_owned()
        };
        if i == 0 {
            let _ = write!(l, "{c:<width$}", width = w[0]);
        } else {
            let _ = write!(l, "  {c:>width$}", width = w[i]);
        }
    }
    l
}

/// The rollup as a table at most `width` wide (the key column is cut first), with a note on
/// what one sample cannot know.
pub fn render(
    rows: &[Row],
    by: GroupBy,
    idle_after: Duration,
    paint: Paint,
    width: usize,
) -> String {
    let mut out = String::new();
    let heads = heads(by);
    let body: Vec<[String; 7]> = rows.iter().map(cells).collect();
    let w = widths(&heads, 0, &body, width);
    let line = |cells: [&str; 7]| row(&cells, &w).trim_end().to_owned();
    let _ = writeln!(out, "{}", paint.dim(&line(heads)));
    if body.is_empty() {
        let _ = writeln!(out, "no GPU processes");
    }
    for r in &body {
        let _ = writeln!(out, "{}", line(r.each_ref().map(String::as_str)));
    }
    out.push_str(&limits(rows));
    if rows
        .iter()
        .any(|r| r.gpu_hours.is_none() || r.idle_bytes.is_none())
    {
        let note = format!(
            "GPU-hours and idle holds (memory of processes at 0% SM for {} or more) need time: \
             the dashboard (Tab) and serve count them while they run.",
            humantime::format_duration(idle_after)
        );
        let opts = textwrap::Options::new(width.max(20));
        for l in textwrap::wrap(&note, opts) {
            let _ = writeln!(out, "{}", paint.dim(&l));
        }
    }
    out
}

/// The GPU memory limits of the rows' cgroups, one line each under the table ("" without
/// any), not wrapped: a cgroup's path is copied whole. The key and the cgroup are escaped,
/// as every view prints them.
fn limits(rows: &[Row]) -> String {
    let mut out = String::new();
    for r in rows {
        for l in &r.limits {
            let text = format!(
                "{} on GPU {}: {}",
                r.key,
                l.gpu,
                crate::model::unified::limit_text(&l.limit)
            );
            let _ = writeln!(out, "{}", crate::text::escape(&text));
        }
    }
    if out.is_empty() {
        out
    } else {
        format!("GPU memory limits:\n{out}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, idle: Option<u64>) -> Row {
        Row {
            key: key.into(),
            gpus: vec![0, 3],
            processes: 2,
            memory_bytes: 20 << 30,
            mean_sm_percent: Some(12.4),
            gpu_hours: Some(1.5),
            idle_bytes: idle,
            limits: Vec::new(),
        }
    }

    #[test]
    fn a_table_that_fits_and_says_what_one_sample_cannot_know() {
        let rows = [
            row("alice", Some(0)),
            row("a-very-long-user-name-from-ldap", None),
        ];
        let t = render(
            &rows,
            GroupBy::User,
            Duration::from_secs(600),
            Paint(false),
            70,
        );
        let lines: Vec<&str> = t.lines().collect();
        let mut at = 0;
        for h in heads(GroupBy::User) {
            let i = lines[0][at..].find(h).map(|i| i + at);
            assert!(i.is_some(), "{h} in order: {}", lines[0]);
            at = i.unwrap_or(0) + h.len();
        }
        assert!(lines.iter().all(|l| l.chars().count() <= 70), "{t}");
        assert!(lines[1].starts_with("alice "), "{t}");
        assert!(lines[1].ends_with("0 B"), "{t}");
        assert!(lines[2].contains('…') && lines[2].ends_with("N/A"), "{t}");
        assert!(
            t.replace('\n', " ")
                .contains("idle holds (memory of processes at 0% SM for 10m"),
            "{t}"
        );
        let t = render(
            &rows[..1],
            GroupBy::Owner,
            Duration::from_secs(600),
            Paint(false),
            100,
        );
        assert!(t.starts_with("OWNER"), "{t}");
        assert!(!t.contains("need time"), "{t}");
    }

    /// S4: an owner named by a cgroup or a pod (anyone's) is printed escaped.
    #[test]
    fn hostile_owner_names_are_escaped() {
        let rows = [row(
            "ns/\u{1b}]2;CGPWN\u{7}\u{1b}[2J\u{202e}evil.service",
            None,
        )];
        let t = render(
            &rows,
            GroupBy::Owner,
            Duration::from_secs(600),
            Paint(false),
            200,
        );
        assert!(
            !t.chars().any(|c| c != '\n' && crate::text::is_unsafe(c)),
            "{t:?}"
        );
        assert!(t.contains("evil.service"), "{t}");
    }

    /// An owner's cgroup limits are said under the table, one line per cgroup and GPU, the
    /// cgroup escaped; without limits there is no such section.
    #[test]
    fn owner_limits_under_the_table() {
        use crate::model::rollup::OwnerLimit;
        use crate::model::unified::{GpuLimit, LimitSource};
        let mut r = row("k8s ml/train", None);
        r.limits = vec![OwnerLimit {
            gpu: 3,
            limit: GpuLimit {
                cgroup: "/kubepods/pod-1/c\u{1b}[2J1".into(),
                source: LimitSource::Dmem,
                hard_bytes: Some(8 << 30),
                soft_bytes: None,
                used_bytes: Some(7 << 30),
            },
        }];
        let render = |rows: &[Row]| {
            render(
                rows,
                GroupBy::Owner,
                Duration::from_secs(600),
                Paint(false),
                200,
            )
        };
        let t = render(std::slice::from_ref(&r));
        assert!(t.contains("GPU memory limits:\n"), "{t}");
        assert!(
            t.contains(
                "k8s ml/train on GPU 3: 7.0 GiB of 8.0 GiB (dmem limit of cgroup /kubepods/pod-1/c"
            ),
            "{t}"
        );
        assert!(
            !t.chars().any(|c| c != '\n' && crate::text::is_unsafe(c)),
            "{t:?}"
        );
        assert!(!render(&[row("host", None)]).contains("limits"));
    }

    /// The dashboard's limit cell: the limit with the least room left, N/A for what is not
    /// known (never 0), "+N" for the others, "" without a limit.
    #[test]
    fn the_limit_cell_says_the_tightest_limit() {
        use crate::model::rollup::OwnerLimit;
        use crate::model::unified::{GpuLimit, LimitSource};
        let limit = |gpu: u32, hard: Option<u64>, used: Option<u64>| OwnerLimit {
            gpu,
            limit: GpuLimit {
                cgroup: "/kubepods/pod-1/c1".into(),
                source: LimitSource::Nvml,
                hard_bytes: hard,
                soft_bytes: None,
                used_bytes: used,
            },
        };
        let mut r = row("k8s ml/train", None);
        assert_eq!(limit_cell(&r), "");
        r.limits = vec![limit(0, Some(8 << 30), Some(7 << 30))];
        assert_eq!(limit_cell(&r), "limit 8.0 GiB, 7.0 GiB used");
        r.limits = vec![limit(0, None, Some(1 << 30))];
        assert_eq!(limit_cell(&r), "limit N/A, 1.0 GiB used");
        r.limits = vec![
            limit(0, None, None),
            limit(1, Some(16 << 30), Some(4 << 30)),
            limit(2, Some(8 << 30), Some(7 << 30)),
        ];
        assert_eq!(limit_cell(&r), "limit 8.0 GiB, 7.0 GiB used +2");
    }
}
