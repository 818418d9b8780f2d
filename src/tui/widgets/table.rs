//! The process table: the selected process's line above it, the columns that fit, a row
//! per process (holders NVML does not list after them), sorted and filtered.

use std::time::SystemTime;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};

use super::super::app::{App, SortKey};
use super::super::theme;
use super::gpu::{self};
use crate::model::breakdown::{Breakdown, PartKind};
use crate::model::Sample;
use crate::units::fmt_age;
use crate::units::{fmt_bytes, fmt_opt_bytes};

pub fn draw_selection(buf: &mut Buffer, area: Rect, app: &App, sample: &Sample) {
    let Some(row) = app.selected_row() else {
        let msg = if app.table.filter.is_empty() {
            "no GPU processes"
        } else {
            "no process matches the filter"
        };
        buf.set_stringn(area.x, area.y, msg, area.width as usize, theme::dim());
        return;
    };
    let p = row.process;
    let Some(d) = sample.devices.iter().find(|d| d.index == row.gpu) else {
        return;
    };
    // The source first, then the process's parts: whole fields, the least important
    // dropped first when the line is narrow (never a word cut at the edge).
    let source = match &p.allocator {
        Some(a) if a.framework == "pytorch" => "PyTorch".to_owned(),
        Some(a) => a.framework.clone(),
        None => "NVML".to_owned(),
    };
    let head = format!("▶ pid {} GPU {} {source} ", p.pid, row.gpu);
    let colour = app
        .process_style(p.pid)
        .unwrap_or_else(theme::other_processes);
    buf.set_stringn(area.x, area.y, &head, area.width as usize, colour);
    let x = area.x + head.chars().count() as u16;
    // On a part whose memory is the system's, the shared pool ([`gpu::draw_gauge`]'s).
    let memory = crate::model::unified::shared_split(d).map_or(d.memory, |s| s.as_memory());
    let Some(b) = Breakdown::process(&memory, p.memory()) else {
        return;
    };
    let bar_w = (area.width / 10).clamp(6, 20);
    if area.right() <= x + bar_w + 2 {
        return;
    }
    gpu::draw_breakdown(buf, Rect::new(x, area.y, bar_w, 1), &b, colour, d.stale());
    // What matters most for this process: its own allocation, then free, then its cache,
    // then the other processes, then its memory outside the framework.
    let rank = |k: &PartKind| match k {
        PartKind::Allocated | PartKind::ThisProcess | PartKind::Reserved => 0,
        PartKind::Free => 1,
        PartKind::Cached => 2,
        PartKind::OtherApps => 3,
        _ => 4,
    };
    let mut fields: Vec<(u8, String)> = b
        .parts
        .iter()
        // The driver's reservation is on the GPU's own gauge already.
        .filter(|part| !matches!(part.kind, PartKind::Unaccounted | PartKind::DriverReserved))
        .filter_map(|part| {
            let bytes = part.bytes.filter(|b| *b > 0)?;
            Some((
                rank(&part.kind),
                format!("{} {}", part.kind.short_label(), fmt_bytes(bytes)),
            ))
        })
        .collect();
    let tx = x + bar_w + 1;
    let room = usize::from(area.right().saturating_sub(tx));
    let joined = |f: &[(u8, String)]| {
        f.iter()
            .map(|(_, t)| format!(" {t}"))
            .collect::<Vec<_>>()
            .join(" ·")
    };
    while !fields.is_empty() && joined(&fields).chars().count() > room {
        let Some(worst) = fields
            .iter()
            .enumerate()
            .max_by_key(|(i, (r, _))| (*r, *i))
            .map(|(i, _)| i)
        else {
            break;
        };
        fields.remove(worst);
    }
    buf.set_stringn(tx, area.y, joined(&fields), room, Style::new());
}

/// Which columns fit at a width. OWNER shows only when some process has one (a pod, a job, a
/// container, a service); PEAK only where some GPU's accounting is on (`peaks`); LIMIT only
/// where some process's cgroup has a GPU memory limit (`limits`).
fn columns(width: u16, containers: bool, peaks: bool, limits: bool) -> Vec<(SortKey, u16)> {
    let min = |k: SortKey| -> u16 {
        match k {
            SortKey::Owner if !containers => u16::MAX,
            SortKey::Peak if !peaks => u16::MAX,
            SortKey::Limit if !limits => u16::MAX,
            SortKey::Peak => 70,
            SortKey::Limit => 80,
            SortKey::Owner => 120,
            SortKey::User | SortKey::Cpu => 60,
            SortKey::Sm => 70,
            SortKey::Time => 80,
            SortKey::HostMem | SortKey::Type => 90,
            SortKey::MemBw => 110,
            _ => 0,
        }
    };
    let w = |k: SortKey| -> u16 {
        match k {
            SortKey::Pid => 8,
            SortKey::User | SortKey::GpuMem | SortKey::Peak | SortKey::Limit | SortKey::HostMem => {
                10
            }
            SortKey::Gpu => 4,
            SortKey::Type | SortKey::Sm => 5,
            SortKey::MemBw => 8,
            SortKey::Owner => 20,
            SortKey::Cpu => 6,
            SortKey::Time => 7,
            SortKey::Command => 0,
        }
    };
    SortKey::ALL
        .iter()
        .filter(|k| width >= min(**k))
        .map(|k| (*k, w(*k)))
        .collect()
}

fn cell(key: SortKey, row: &super::super::app::Row, now: SystemTime) -> String {
    let p = row.process;
    let na = || "N/A".to_owned();
    match key {
        SortKey::Pid => p.pid.to_string(),
        SortKey::User => p.user.clone().unwrap_or_else(na),
        // Blank for a host process.
        SortKey::Owner => p.owner_label().unwrap_or_default(),
        // A process in a MIG instance: GPU:GI, when that fits the column.
        SortKey::Gpu => match p.gpu_instance_id {
            Some(gi) if format!("{}:{gi}", row.gpu).len() <= 4 => format!("{}:{gi}", row.gpu),
            _ => row.gpu.to_string(),
        },
        SortKey::Type => p.kind.letter().to_owned(),
        SortKey::Sm => p.sm_percent.map_or_else(na, |v| v.to_string()),
        SortKey::MemBw => p.mem_bw_percent.map_or_else(na, |v| v.to_string()),
        SortKey::GpuMem => fmt_opt_bytes(p.gpu_memory_bytes),
        SortKey::Peak => fmt_opt_bytes(p.peak_bytes),
        // Blank without a limit; N/A for a limit whose hard figure is not known.
        SortKey::Limit => p
            .gpu_limit
            .as_ref()
            .map(|l| fmt_opt_bytes(l.hard_bytes))
            .unwrap_or_default(),
        SortKey::Cpu => p.cpu_percent.map_or_else(na, |c| format!("{c:.0}")),
        SortKey::HostMem => fmt_opt_bytes(p.host_memory_bytes),
        SortKey::Time => p.age_s(now).map_or_else(na, fmt_age),
        SortKey::Command => {
            let command = p
                .command
                .clone()
                .or_else(|| p.name.clone())
                .unwrap_or_else(|| "(not visible from here)".into());
            // Memory growing step after step leads the command: it is the job's news.
            let command = match p.allocator.as_ref().and_then(|a| a.step_growth.as_ref()) {
                Some(g) => format!("[{}] {command}", growth_tag(g)),
                None => command,
            };
            match row.holder {
                Some(r) => format!("[{}] {command}", holder_tag(r)),
                None => command,
            }
        }
    }
}

/// How a process row's command starts when its memory grows step after step: "allocated
/// +12.5 MiB/step".
pub fn growth_tag(g: &crate::model::StepGrowth) -> String {
    format!("{} +{}/step", g.measure, fmt_bytes(g.bytes_per_step))
}

/// How a holder row's command starts: why it holds memory outside NVML's list.
pub fn holder_tag(r: crate::model::HolderReason) -> &'static str {
    match r {
        crate::model::HolderReason::Zombie => "zombie",
        crate::model::HolderReason::NotListed => "not listed",
        crate::model::HolderReason::OtherNamespace => "other namespace",
        crate::model::HolderReason::Unreadable => "unreadable",
    }
}

pub fn draw(buf: &mut Buffer, area: Rect, app: &mut App) {
    if area.height == 0 {
        return;
    }
    let containers = app.sample.as_ref().is_some_and(|s| {
        s.devices.iter().any(|d| {
            d.processes
                .iter()
                .any(|p| p.owner.is_some() || p.container.is_some())
        })
    });
    let shown = |k: SortKey| app.sample.as_ref().is_some_and(|s| k.shown(s));
    let (peaks, limits) = (shown(SortKey::Peak), shown(SortKey::Limit));
    let cols = columns(area.width, containers, peaks, limits);
    let right_aligned = |k: SortKey| {
        matches!(
            k,
            SortKey::Pid
                | SortKey::GpuMem
                | SortKey::Peak
                | SortKey::Limit
                | SortKey::Sm
                | SortKey::MemBw
                | SortKey::Cpu
                | SortKey::HostMem
                | SortKey::Time
                | SortKey::Gpu
        )
    };
    let mut x = area.x;
    let mut x_titles_end = area.x;
    app.table.columns.clear();
    for (key, w) in &cols {
        let mut title = key.title().to_owned();
        if *key == app.table.sort {
            title.push(if app.table.descending { '▼' } else { '▲' });
        }
        if *key == SortKey::Command && app.table.command_offset > 0 {
            title.push_str(&format!(
                " (from character {}, ←)",
                app.table.command_offset + 1
            ));
        }
        let w = if *w == 0 {
            area.right().saturating_sub(x)
        } else {
            *w
        };
        let text = if right_aligned(*key) {
            format!("{title:>width$}", width = w.saturating_sub(1) as usize)
        } else {
            title
        };
        x_titles_end = x + (text.chars().count() as u16).min(w);
        app.table.columns.push((*key, x, w));
        buf.set_stringn(
            x,
            area.y,
            text,
            w as usize,
            theme::header().add_modifier(Modifier::UNDERLINED),
        );
        x = x.saturating_add(w);
    }
    let body = Rect::new(area.x, area.y + 1, area.width, area.height - 1);
    let now = app
        .sample
        .as_ref()
        .map_or(SystemTime::UNIX_EPOCH, |s| s.timestamp);
    let visible = body.height as usize;
    let first = if app.table.selected >= visible {
        app.table.selected + 1 - visible
    } else {
        0
    };
    // Where the view is, when not every row fits: "12–24 of 320".
    let n = app.row_count();
    if n > visible && visible > 0 {
        let counter = format!(" {}–{} of {n} ", first + 1, (first + visible).min(n));
        let w = counter.chars().count() as u16;
        // Only where it leaves the column titles whole.
        if area.right() > x_titles_end + w {
            buf.set_string(area.right() - w, area.y, counter, theme::warning());
        }
    }
    // Only the rows on screen are looked at.
    for i in first..(first + visible).min(app.row_count()) {
        let Some(row) = app.row(i) else { break };
        let y = body.y + (i - first) as u16;
        let mut x = body.x;
        for (key, w) in &cols {
            let w = if *w == 0 {
                body.right().saturating_sub(x)
            } else {
                *w
            };
            let mut value = cell(*key, &row, now);
            if *key == SortKey::Command && app.table.command_offset > 0 {
                value = value.chars().skip(app.table.command_offset).collect();
            }
            let text = if right_aligned(*key) {
                format!("{value:>width$} ", width = w.saturating_sub(1) as usize)
            } else {
                format!("{value} ")
            };
            let mut style = if row.stale {
                theme::stale()
            } else if *key == SortKey::Pid {
                app.process_style(row.process.pid).unwrap_or_default()
            } else {
                Style::new()
            };
            if i == app.table.selected {
                style = style.patch(theme::selected());
            }
            buf.set_stringn(x, y, text, w as usize, style);
            x = x.saturating_add(w);
        }
    }
    app.table.area = body;
    app.table.first = first;
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_process_whose_memory_grows_says_so_in_its_row() {
        use crate::model::{AllocatorStats, Process, ProcessKind, StepGrowth};
        let mut p = Process::from_nvml(4242, ProcessKind::Compute, Some(8 << 30));
        p.command = Some("python train.py".into());
        let row = |p: &Process| {
            let r = crate::tui::app::Row {
                gpu: 0,
                process: p,
                stale: false,
                holder: None,
            };
            super::cell(
                super::SortKey::Command,
                &r,
                std::time::SystemTime::UNIX_EPOCH,
            )
        };
        p.allocator = Some(Box::new(AllocatorStats {
            framework: "pytorch".into(),
            framework_version: None,
            allocated_bytes: Some(6 << 30),
            allocated_peak_bytes: None,
            reserved_bytes: Some(7 << 30),
            reserved_peak_bytes: None,
            active_bytes: None,
            inactive_split_bytes: None,
            num_alloc_retries: None,
            num_ooms: None,
            age_ms: 0,
            run_id: None,
            steps: None,
            step_growth: None,
            step_marker: Some("optimizer".into()),
            steps_marked: Some(60),
            held_sites: None,
        }));
        assert_eq!(row(&p), "python train.py", "a flat job says nothing");
        if let Some(a) = p.allocator.as_mut() {
            a.step_growth = Some(StepGrowth {
                measure: "allocated".into(),
                bytes_per_step: 25 << 19,
                since_step: 11,
                last_step: 60,
                micros_per_step: None,
                steps_to_full: None,
            });
        }
        assert_eq!(row(&p), "[allocated +12.5 MiB/step] python train.py");
    }
}
