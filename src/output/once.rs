//! `gpumon once`: a gpustat-style report, or the whole sample as JSON.

use std::fmt::Write as _;
use std::time::SystemTime;

use super::Paint;
use crate::model::breakdown::{Breakdown, PartKind};
use crate::model::{Device, Sample};
use crate::units::{fmt_bytes, fmt_opt_bytes};

const BAR: usize = 12;

/// A `width`-cell bar filled to `share`, with eighth-cell precision.
pub fn bar(share: f64, width: usize) -> String {
    const EIGHTHS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let cells = (share.clamp(0.0, 1.0) * (width * 8) as f64).round() as usize;
    let mut s: String = "█".repeat(cells / 8);
    if cells / 8 < width {
        s.push(EIGHTHS[cells % 8]);
        s.push_str(&" ".repeat(width - cells / 8 - 1));
    }
    s
}

fn na<T: std::fmt::Display>(v: Option<T>, unit: &str) -> String {
    v.map_or_else(|| "N/A".to_owned(), |v| format!("{v}{unit}"))
}

/// The sample as `once --json` prints it: the model, plus each device's breakdown (processes,
/// used-but-unattributed, driver reserved, free; the parts add up to the total).
pub fn to_json(sample: &Sample) -> serde_json::Value {
    let mut v = serde_json::to_value(sample).unwrap_or(serde_json::Value::Null);
    if let Some(devices) = v.get_mut("devices").and_then(|d| d.as_array_mut()) {
        for (json, d) in devices.iter_mut().zip(&sample.devices) {
            if let Some(obj) = json.as_object_mut() {
                obj.insert(
                    "breakdown".into(),
                    serde_json::to_value(device_breakdown(d)).unwrap_or_default(),
                );
            }
        }
    }
    v
}

/// The device's own split (`None` for a failed device or an unknown total). A stalled
/// device's split is that of its last good readings, like the rest of its fields.
pub fn device_breakdown(d: &Device) -> Option<Breakdown> {
    if d.error.is_some() && !d.stalled {
        return None;
    }
    let procs: Vec<(u32, Option<u64>)> = d
        .processes
        .iter()
        .map(|p| (p.pid, p.gpu_memory_bytes))
        .collect();
    Breakdown::device(&d.memory, &procs)
}

/// The text report, one block per GPU.
pub fn render(sample: &Sample, paint: Paint) -> String {
    let mut out = String::new();
    let time = humantime::format_rfc3339_seconds(sample.timestamp).to_string();
    let _ = writeln!(
        out,
        "{}  {}  driver {}  CUDA {}{}",
        paint.bold(sample.hostname.as_deref().unwrap_or("localhost")),
        time.replace('T', " ").trim_end_matches('Z'),
        sample.driver_version.as_deref().unwrap_or("N/A"),
        sample.cuda_version.as_deref().unwrap_or("N/A"),
        if sample.source == "simulated" {
            "  (simulated)"
        } else {
            ""
        },
    );
    if let Some(e) = &sample.error {
        let _ = writeln!(out, "{}", paint.red(&format!("error: {e}")));
    }
    if sample.devices.is_empty() && sample.error.is_none() {
        let _ = writeln!(out, "no GPUs found");
    }
    let name_width = sample
        .devices
        .iter()
        .filter_map(|d| d.name.as_ref().map(|n| n.chars().count()))
        .max()
        .unwrap_or(3);
    for d in &sample.devices {
        device(&mut out, d, name_width, paint, sample.timestamp);
    }
    out
}

fn device(out: &mut String, d: &Device, name_width: usize, paint: Paint, now: SystemTime) {
    let name = d.name.as_deref().unwrap_or("N/A");
    let _ = write!(
        out,
        "{} {:<name_width$} ",
        paint.cyan(&format!("[{}]", d.index)),
        name
    );
    if let Some(e) = &d.error {
        let _ = writeln!(out, "| {}", paint.red(e));
        return;
    }
    let temp = na(d.temperature_c, "°C");
    let util = na(d.utilization.gpu_percent, " %");
    let temp = match d.temperature_c {
        Some(t) => paint.level((t as f64 - 30.0) / 60.0, &format!("{temp:>5}")),
        None => format!("{temp:>5}"),
    };
    let _ = write!(out, "| {temp}, {util:>5} | ");
    let m = &d.memory;
    match (m.used_bytes, m.total_bytes, m.used_fraction()) {
        (Some(used), Some(total), Some(share)) => {
            let _ = write!(
                out,
                "{} {:>9} / {:>9}",
                paint.level(share, &bar(share, BAR)),
                fmt_bytes(used),
                fmt_bytes(total)
            );
        }
        _ => {
            let why = d.field_errors.get("memory").map_or("N/A", String::as_str);
            let _ = write!(out, "memory {why}");
        }
    }
    if let Some(r) = m.reserved_bytes.filter(|r| *r > 0) {
        let _ = write!(
            out,
            "{}",
            paint.dim(&format!(" (+{} reserved)", fmt_bytes(r)))
        );
    }
    // Used memory no listed process accounts for (another container, the driver): say so when
    // it is more than 1% of the card, so it is not mistaken for one of the rows below.
    let unattributed = device_breakdown(d).and_then(|b| {
        let u = b.get(PartKind::Unattributed)?;
        (u > 0 && u >= b.total / 100).then_some(u)
    });
    if let Some(u) = unattributed {
        let note = format!(" [{} not attributed]", fmt_bytes(u));
        let _ = write!(out, "{}", paint.yellow(&note));
    }
    if let Some(p) = d.power_draw_w {
        let _ = write!(out, " | {p:.0} W");
        if let Some(l) = d.power_limit_w {
            let _ = write!(out, " / {l:.0} W");
        }
    }
    out.push('\n');
    if let Some(e) = &d.processes_error {
        let _ = writeln!(out, "    {}", paint.yellow(e));
    }
    for p in &d.processes {
        let user = p.user.as_deref().unwrap_or("N/A");
        let mem = fmt_opt_bytes(p.gpu_memory_bytes);
        let cpu = p
            .cpu_percent
            .map_or_else(|| "N/A".to_owned(), |c| format!("{c:.0}%"));
        let host = fmt_opt_bytes(p.host_memory_bytes);
        let age = p.age_s(now).map_or_else(|| "N/A".to_owned(), fmt_age);
        let command = p
            .command
            .as_deref()
            .or(p.name.as_deref())
            .unwrap_or("(not visible from here)");
        let split = p.allocator.as_ref().map_or(String::new(), |a| {
            format!(
                " [alloc {} cache {}]",
                fmt_opt_bytes(a.allocated_bytes),
                fmt_opt_bytes(a.cached_bytes())
            )
        });
        let command = format!("{command}{}", paint.dim(&split));
        let _ = writeln!(
            out,
            "    {} {:>8} {:<3} {:>10}  {:>5} {:>10} {:>7}  {}",
            paint.bold(&format!("{user:<10}")),
            p.pid,
            p.kind.letter(),
            mem,
            cpu,
            host,
            age,
            command
        );
    }
}

/// "3d04h", "2h05m", "4m07s", "12s".
pub fn fmt_age(s: u64) -> String {
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        3600..=86399 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{:02}h", s / 86400, (s % 86400) / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_fill_by_eighths() {
        assert_eq!(bar(0.0, 4), "    ");
        assert_eq!(bar(1.0, 4), "████");
        assert_eq!(bar(0.5, 4), "██  ");
        assert_eq!(bar(1.0 / 32.0, 4), "▏   ");
        assert_eq!(bar(7.0, 2), "██");
        assert_eq!(bar(f64::NAN, 2).chars().count(), 2);
    }

    #[test]
    fn ages() {
        assert_eq!(fmt_age(5), "5s");
        assert_eq!(fmt_age(125), "2m05s");
        assert_eq!(fmt_age(7300), "2h01m");
        assert_eq!(fmt_age(90000), "1d01h");
    }
}
