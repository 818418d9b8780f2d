//! `gpumon once`: a gpustat-style report, or the whole sample as JSON.

use std::fmt::Write as _;
use std::time::SystemTime;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::model::breakdown::{Breakdown, PartKind};
use crate::model::queue::Entry;
use crate::model::{Device, HostStats, Sample};
use crate::text::Paint;
use crate::units::{fmt_age, fmt_bytes, fmt_opt_bytes};

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

/// The version of `once --json`'s schema (`docs/schema/once.schema.json`), also served at
/// `/api/v1/sample`. Fields are only added within a version; a rename or a removal would be a
/// new version.
pub const SCHEMA_VERSION: u32 = 1;

/// The sample as `once --json` prints it: its schema version, the model, plus each device's
/// breakdown (processes,
/// used-but-unattributed, driver reserved, free; the parts add up to the total). Serialised
/// straight from the model, with no intermediate JSON tree.
pub fn to_json(sample: &Sample) -> SampleJson<'_> {
    SampleJson(sample, None)
}

/// [`to_json`] with the host's queue of `gpumon run --gpus` jobs (`queue`).
pub fn to_json_with_queue<'a>(sample: &'a Sample, queue: &'a [Entry]) -> SampleJson<'a> {
    SampleJson(sample, Some(queue))
}

/// See [`to_json`].
pub struct SampleJson<'a>(&'a Sample, Option<&'a [Entry]>);

/// A device with its breakdown, for [`SampleJson`].
#[derive(Serialize)]
struct DeviceJson<'a> {
    #[serde(flatten)]
    device: &'a Device,
    breakdown: Option<Breakdown>,
}

struct DevicesJson<'a>(&'a [Device]);

impl Serialize for DevicesJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|d| DeviceJson {
            device: d,
            breakdown: d.breakdown(),
        }))
    }
}

impl Serialize for SampleJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let x = self.0;
        // The fields of `Sample`, in its order, with `devices` carrying their breakdowns.
        let mut m = s.serialize_struct("Sample", 10)?;
        m.serialize_field("schema_version", &SCHEMA_VERSION)?;
        m.serialize_field(
            "timestamp",
            &humantime::format_rfc3339_millis(x.timestamp).to_string(),
        )?;
        m.serialize_field("hostname", &x.hostname)?;
        m.serialize_field("source", &x.source)?;
        m.serialize_field("driver_version", &x.driver_version)?;
        m.serialize_field("cuda_version", &x.cuda_version)?;
        m.serialize_field("devices", &DevicesJson(&x.devices))?;
        m.serialize_field("error", &x.error)?;
        m.serialize_field("host", &x.host)?;
        if let Some(queue) = self.1 {
            m.serialize_field("queue", queue)?;
        }
        m.end()
    }
}

/// The host's queue of `gpumon run --gpus` jobs, one short part per job in the queue's order
/// (`now`: Unix seconds): "1. ana `python train.py` wants 1×20.0 GiB, waiting 3m12s", "bob
/// `python eval.py` on 1, holding 12.0 GiB for 40s". Text from other users is escaped.
pub fn queue_parts(entries: &[Entry], now: f64) -> Vec<String> {
    use crate::model::queue::State;
    let mut n = 0;
    entries
        .iter()
        .map(|e| {
            let who = crate::text::escape(e.user.as_deref().unwrap_or("?")).into_owned();
            let cmd: String = crate::text::escape(&e.command).chars().take(40).collect();
            let since = |t: f64| fmt_age((now - t).max(0.0) as u64);
            match e.state {
                State::Waiting => {
                    n += 1;
                    let want = match e.need_bytes {
                        Some(b) => format!("{}×{}", e.count, fmt_bytes(b)),
                        None => format!(
                            "{} idle GPU{}",
                            e.count,
                            if e.count == 1 { "" } else { "s" }
                        ),
                    };
                    format!(
                        "{n}. {who} `{cmd}` wants {want}, waiting {}",
                        since(e.enqueued_at)
                    )
                }
                State::Launched => {
                    let held: u64 = e.holds.iter().map(|h| h.bytes).sum();
                    let left = e
                        .launched_at
                        .map(|t| fmt_age((e.grace_s - (now - t)).max(0.0) as u64))
                        .unwrap_or_default();
                    format!(
                        "{who} `{cmd}` on {}, holding {} for {left}",
                        crate::text::escape(e.gpus.as_deref().unwrap_or("?")),
                        fmt_bytes(held)
                    )
                }
            }
        })
        .collect()
}

/// The host's figures as short fields, in the order they are shown, each with its rank for
/// narrow screens (0 kept longest): memory first (host OOM kills), then CPU, load, swap and
/// uptime.
pub fn host_fields(h: &HostStats) -> Vec<(u8, String)> {
    let cpu = match (h.cpu_percent, h.cpu_count) {
        (Some(p), Some(n)) => format!("CPU {p:.0}% of {n}"),
        (Some(p), None) => format!("CPU {p:.0}%"),
        (None, Some(n)) => format!("{n} CPUs"),
        (None, None) => "CPU N/A".to_owned(),
    };
    let mem = match (h.memory_used_bytes, h.memory_total_bytes) {
        (Some(u), Some(t)) => format!("mem {} of {}", fmt_bytes(u), fmt_bytes(t)),
        _ => "mem N/A".to_owned(),
    };
    let swap = match (h.swap_used_bytes, h.swap_total_bytes) {
        (_, Some(0)) => "no swap".to_owned(),
        (Some(u), Some(t)) => format!("swap {} of {}", fmt_bytes(u), fmt_bytes(t)),
        _ => "swap N/A".to_owned(),
    };
    let load = h.load_average.map_or_else(
        || "load N/A".to_owned(),
        |[a, b, c]| format!("load {a:.2} {b:.2} {c:.2}"),
    );
    let up = h
        .uptime_s
        .map_or_else(|| "up N/A".to_owned(), |s| format!("up {}", fmt_age(s)));
    vec![(1, cpu), (0, mem), (3, swap), (2, load), (4, up)]
}

/// What the views say when [`Sample::pids_hidden`](crate::model::Sample::pids_hidden).
pub const PIDS_HIDDEN: &str = "in a container: GPU processes' users and commands are not \
visible (run with --pid=host to see them)";

/// [`host_fields`] joined by `sep`, the lowest-ranked dropped until the line fits `width`;
/// `None` when not even one fits.
pub fn host_line(h: &HostStats, width: usize, sep: &str) -> Option<String> {
    let mut fields = host_fields(h);
    loop {
        let line = fields
            .iter()
            .map(|(_, f)| f.as_str())
            .collect::<Vec<_>>()
            .join(sep);
        if line.chars().count() <= width {
            return (!fields.is_empty()).then_some(line);
        }
        let worst = fields.iter().enumerate().max_by_key(|(_, (r, _))| *r)?.0;
        fields.remove(worst);
    }
}

/// Text cut to `width` characters, with an ellipsis when cut.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_owned()
    } else {
        let mut t: String = text.chars().take(width.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// The text report, one block per GPU, no line wider than `width`: fields and columns drop
/// as the dashboard's do (power, the reservation note, temperature; host memory and type),
/// and commands are cut with an ellipsis.
pub fn render_width(sample: &Sample, paint: Paint, width: usize) -> String {
    // Commands, users and GPU names through the one escaping rule.
    let sample = &*sample.escaped();
    let width = width.max(40);
    let mut out = String::new();
    let time = humantime::format_rfc3339_seconds(sample.timestamp).to_string();
    let head = format!(
        "{}  {}  driver {}  CUDA {}{}",
        sample.hostname.as_deref().unwrap_or("localhost"),
        time.replace('T', " ").trim_end_matches('Z'),
        sample.driver_version.as_deref().unwrap_or("N/A"),
        sample.cuda_version.as_deref().unwrap_or("N/A"),
        if sample.source == "simulated" {
            "  (simulated)"
        } else {
            ""
        },
    );
    let _ = writeln!(out, "{}", paint.bold(&fit(&head, width)));
    if let Some(line) = sample
        .host
        .as_ref()
        .and_then(|h| host_line(h, width.saturating_sub(6), "  "))
    {
        let _ = writeln!(out, "host  {line}");
    }
    if let Some(e) = &sample.error {
        let _ = writeln!(out, "{}", paint.red(&format!("error: {e}")));
    }
    if sample.pids_hidden() {
        let _ = writeln!(out, "{}", paint.yellow(&fit(PIDS_HIDDEN, width)));
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
    let containers = sample.devices.iter().any(|d| {
        d.processes
            .iter()
            .any(|p| p.owner.is_some() || p.container.is_some())
    });
    let columns = Columns::at(width, containers);
    let any_processes = sample.devices.iter().any(|d| !d.processes.is_empty());
    for d in &sample.devices {
        device(&mut out, d, name_width, paint, width);
    }
    if any_processes {
        out.push('\n');
        let _ = writeln!(out, "{}", paint.dim(&columns.header()));
        for d in &sample.devices {
            processes(&mut out, d, paint, &columns, sample.timestamp);
        }
    }
    holders(&mut out, sample, paint, width);
    super::accounting::append(&mut out, sample, paint, width);
    out
}

/// Who holds the memory that the process list does not explain, GPU by GPU.
fn holders(out: &mut String, sample: &Sample, paint: Paint, width: usize) {
    if sample.devices.iter().all(|d| d.holders.is_empty()) {
        return;
    }
    out.push('\n');
    let _ = writeln!(out, "{}", paint.bold("Holders outside the process list"));
    for d in sample.devices.iter().filter(|d| !d.holders.is_empty()) {
        let head = match d.unattributed_bytes().filter(|u| *u > 0) {
            Some(u) => format!("[{}] {} used, not attributed", d.index, fmt_bytes(u)),
            None => format!("[{}]", d.index),
        };
        let _ = writeln!(out, "{}", paint.cyan(&fit(&head, width)));
        for h in &d.holders {
            let opts = textwrap::Options::new(width.max(20))
                .initial_indent("  ")
                .subsequent_indent("      ");
            for line in textwrap::wrap(&h.describe(), opts) {
                let painted = match h.reason {
                    crate::model::HolderReason::Zombie => paint.red(&line),
                    _ => paint.yellow(&line),
                };
                let _ = writeln!(out, "{painted}");
            }
        }
    }
}

/// One piece of a GPU's line: its text without colour (for the width), and painted.
struct Piece {
    plain: String,
    painted: String,
}

impl Piece {
    fn new(plain: String, painted: String) -> Self {
        Piece { plain, painted }
    }
    fn plain(s: String) -> Self {
        Piece {
            painted: s.clone(),
            plain: s,
        }
    }
}

/// One GPU's line (or its error), then its health and unified-memory notes and its MIG
/// devices.
fn device(out: &mut String, d: &Device, name_width: usize, paint: Paint, width: usize) {
    let index = format!("[{}]", d.index);
    let name = d.name.as_deref().unwrap_or("N/A");
    if let Some(e) = &d.error {
        let _ = writeln!(
            out,
            "{} {} | {}",
            paint.cyan(&index),
            fit(
                name,
                width
                    .saturating_sub(index.len() + 4 + e.chars().count())
                    .max(8)
            ),
            paint.red(e)
        );
        return;
    }
    let pieces = Pieces::of(d, paint);
    let kept = pieces.fit(&index, name_width, width);
    let _ = write!(
        out,
        "{} {:<w$} | ",
        paint.cyan(&index),
        fit(name, kept.name_w),
        w = kept.name_w
    );
    pieces.write(out, &kept);
    out.push('\n');
    notes(out, d, paint, width);
    for (i, m) in d.mig.iter().enumerate() {
        mig_line(out, d, m, i + 1 == d.mig.len(), paint, width);
    }
}

/// The pieces of a GPU's line after its name; those that may be dropped are `Option`s.
struct Pieces<'a> {
    d: &'a Device,
    paint: Paint,
    temp: Option<Piece>,
    util: Piece,
    reserved: Option<Piece>,
    unattributed: Option<Piece>,
    power: Option<Piece>,
}

/// What of a GPU's line is kept in the width: which optional pieces, the bar's and the name's
/// widths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kept {
    reserved: bool,
    power: bool,
    temp: bool,
    bar_w: usize,
    name_w: usize,
}

impl Kept {
    /// One step of giving up room, in this order: the reservation note, power, temperature,
    /// then the bar shrinks (to 4), then the name is cut (to 8); `false` when nothing is left
    /// to give.
    fn shrink(&mut self) -> bool {
        if self.reserved {
            self.reserved = false;
        } else if self.power {
            self.power = false;
        } else if self.temp {
            self.temp = false;
        } else if self.bar_w > 4 {
            self.bar_w -= 1;
        } else if self.name_w > 8 {
            self.name_w -= 1;
        } else {
            return false;
        }
        true
    }
}

/// Used memory no listed process accounts for (another container, the driver), when it is
/// more than 1% of the card, so it is not mistaken for one of the process rows.
fn unattributed_piece(d: &Device, paint: Paint) -> Option<Piece> {
    let u = d.breakdown().and_then(|b| {
        let u = b.get(PartKind::Unattributed)?;
        (u > 0 && u >= b.total / 100).then_some(u)
    })?;
    let t = format!("[{} not attributed]", fmt_bytes(u));
    Some(Piece::new(t.clone(), paint.yellow(&t)))
}

impl<'a> Pieces<'a> {
    fn of(d: &'a Device, paint: Paint) -> Self {
        Pieces {
            d,
            paint,
            temp: d.temperature_c.map(|t| {
                let text = format!("{t}°C");
                Piece::new(text.clone(), paint.level((t as f64 - 30.0) / 60.0, &text))
            }),
            util: Piece::plain(na(d.utilization.gpu_percent, "%")),
            reserved: d.memory.reserved_bytes.filter(|r| *r > 0).map(|r| {
                let t = format!("(+{} reserved)", fmt_bytes(r));
                Piece::new(t.clone(), paint.dim(&t))
            }),
            unattributed: unattributed_piece(d, paint),
            power: d.power_draw_w.map(|p| {
                Piece::plain(match d.power_limit_w {
                    Some(l) => format!("{p:.0} / {l:.0} W"),
                    None => format!("{p:.0} W"),
                })
            }),
        }
    }

    /// The memory bar `bar_w` cells wide and its figures, or why memory is unknown.
    fn memory(&self, bar_w: usize) -> Piece {
        let m = &self.d.memory;
        match (m.used_bytes, m.total_bytes, m.used_fraction()) {
            (Some(used), Some(total), Some(share)) => {
                let figures = format!("{:>9} / {:>9}", fmt_bytes(used), fmt_bytes(total));
                let b = bar(share, bar_w);
                Piece::new(
                    format!("{b} {figures}"),
                    format!("{} {figures}", self.paint.level(share, &b)),
                )
            }
            // A part whose memory is the system's: the dashboard's gauge figures, in short.
            _ => match crate::model::unified::shared_split(self.d) {
                Some(split) => Piece::plain(crate::model::unified::split_text(&split, true)),
                None => Piece::plain(format!(
                    "memory {}",
                    self.d
                        .field_errors
                        .get("memory")
                        .map_or("N/A", String::as_str)
                )),
            },
        }
    }

    /// The line's length in characters with `k` kept, after an index `index_len` long.
    fn len(&self, index_len: usize, k: &Kept) -> usize {
        let chars = |p: &Option<Piece>| p.as_ref().map_or(0, |p| p.plain.chars().count());
        let mut n = index_len + 1 + k.name_w + 3;
        if k.temp {
            n += chars(&self.temp) + 2;
        }
        n += self.util.plain.chars().count() + 3;
        n += self.memory(k.bar_w).plain.chars().count();
        if k.reserved {
            n += 1 + chars(&self.reserved);
        }
        n += self
            .unattributed
            .as_ref()
            .map_or(0, |u| 1 + u.plain.chars().count());
        if k.power {
            n += 3 + chars(&self.power);
        }
        n
    }

    /// What fits in `width`: every piece there is, then as many steps of [`Kept::shrink`] as
    /// it takes (at most 64).
    fn fit(&self, index: &str, name_width: usize, width: usize) -> Kept {
        let mut k = Kept {
            reserved: self.reserved.is_some(),
            power: self.power.is_some(),
            temp: self.temp.is_some(),
            bar_w: BAR,
            name_w: name_width,
        };
        let mut steps = 0;
        while self.len(index.len(), &k) > width && steps < 64 {
            steps += 1;
            if !k.shrink() {
                break;
            }
        }
        k
    }

    /// The pieces kept, painted, after the name.
    fn write(&self, out: &mut String, k: &Kept) {
        if let Some(t) = self.temp.as_ref().filter(|_| k.temp) {
            let _ = write!(out, "{}, ", t.painted);
        }
        let _ = write!(
            out,
            "{} | {}",
            self.util.painted,
            self.memory(k.bar_w).painted
        );
        if let Some(r) = self.reserved.as_ref().filter(|_| k.reserved) {
            let _ = write!(out, " {}", r.painted);
        }
        if let Some(u) = &self.unattributed {
            let _ = write!(out, " {}", u.painted);
        }
        if let Some(p) = self.power.as_ref().filter(|_| k.power) {
            let _ = write!(out, " | {}", p.painted);
        }
    }
}

/// A GPU's health notes (critical in red) and unified-memory notes, indented under it.
fn notes(out: &mut String, d: &Device, paint: Paint, width: usize) {
    for n in d.health.notes(std::time::SystemTime::now()) {
        let text = format!("    {}", n.text);
        let text = fit(&text, width);
        let _ = writeln!(
            out,
            "{}",
            if n.critical {
                paint.red(&text)
            } else {
                paint.yellow(&text)
            }
        );
    }
    for n in crate::model::unified::notes(d) {
        let _ = writeln!(out, "{}", fit(&format!("    {n}"), width));
    }
}

/// A MIG device under its GPU: "  └ MIG 3g.40gb GI 1 | ▕bar▏ 14.8 GiB / 39.5 GiB".
fn mig_line(
    out: &mut String,
    d: &Device,
    m: &crate::model::MigDevice,
    last: bool,
    paint: Paint,
    width: usize,
) {
    let head = format!(
        "  {} MIG {} GI {}",
        if last { "└" } else { "├" },
        m.profile.as_deref().unwrap_or("?"),
        m.gpu_instance_id.map_or("?".into(), |g| g.to_string())
    );
    let mem = &m.memory;
    let figures = match (mem.used_bytes, mem.total_bytes, mem.used_fraction()) {
        (Some(used), Some(total), Some(share)) => {
            let figures = format!("{:>9} / {:>9}", fmt_bytes(used), fmt_bytes(total));
            let room = width.saturating_sub(head.chars().count() + figures.len() + 4);
            let b = bar(share, room.min(BAR));
            format!("{} {figures}", paint.level(share, &b))
        }
        _ => "memory N/A".to_owned(),
    };
    let unattributed = m
        .breakdown(d)
        .and_then(|b| b.get(PartKind::Unattributed))
        .filter(|u| *u > 0)
        .map(|u| {
            let t = format!(" [{} not attributed]", fmt_bytes(u));
            paint.yellow(&t)
        })
        .unwrap_or_default();
    let _ = writeln!(out, "{} | {figures}{unattributed}", paint.cyan(&head));
}

/// The process columns that fit a width, as the dashboard drops them.
struct Columns {
    width: usize,
    container: bool,
    sm: bool,
    kind: bool,
    host: bool,
    time: bool,
}

impl Columns {
    fn at(width: usize, containers: bool) -> Self {
        Columns {
            width,
            container: containers && width >= 120,
            sm: width >= 70,
            time: width >= 60,
            kind: width >= 95,
            host: width >= 95,
        }
    }

    fn row(&self, cells: [&str; 10]) -> String {
        let [gpu, user, container, pid, kind, mem, sm, cpu, host, time] = cells;
        let mut s = format!("{gpu:>3} {user:<10}");
        if self.container {
            let _ = write!(s, " {:<20}", fit(container, 20));
        }
        let _ = write!(s, " {pid:>8}");
        if self.kind {
            let _ = write!(s, " {kind:<4}");
        }
        let _ = write!(s, " {mem:>10}");
        if self.sm {
            let _ = write!(s, " {sm:>4}");
        }
        let _ = write!(s, " {cpu:>5}");
        if self.host {
            let _ = write!(s, " {host:>10}");
        }
        if self.time {
            let _ = write!(s, " {time:>6}");
        }
        s.push(' ');
        s
    }

    fn header(&self) -> String {
        let head = self.row([
            "GPU", "USER", "OWNER", "PID", "TYPE", "GPU MEM", "%SM", "%CPU", "HOST MEM", "TIME",
        ]);
        fit(&format!("{head}COMMAND"), self.width)
    }
}

fn processes(out: &mut String, d: &Device, paint: Paint, cols: &Columns, now: SystemTime) {
    if !d.has_readings() {
        return;
    }
    if let Some(e) = &d.processes_error {
        let _ = writeln!(out, "{:>3} {}", d.index, paint.yellow(e));
    }
    for p in &d.processes {
        let user = fit(p.user.as_deref().unwrap_or("N/A"), 10);
        let cpu = p
            .cpu_percent
            .map_or_else(|| "N/A".to_owned(), |c| format!("{c:.0}%"));
        let age = p.age_s(now).map_or_else(|| "N/A".to_owned(), fmt_age);
        let command = p
            .command
            .as_deref()
            .or(p.name.as_deref())
            .unwrap_or("(not visible from here)");
        let owner = p.owner_label().unwrap_or_default();
        let row = cols.row([
            &d.index.to_string(),
            &user,
            &owner,
            &p.pid.to_string(),
            p.kind.letter(),
            &fmt_opt_bytes(p.gpu_memory_bytes),
            &na(p.sm_percent, ""),
            &cpu,
            &fmt_opt_bytes(p.host_memory_bytes),
            &age,
        ]);
        let room = cols.width.saturating_sub(row.chars().count()).max(8);
        let _ = writeln!(out, "{row}{}", fit(command, room));
        if let Some(a) = &p.allocator {
            let split = format!(
                "{:>16}{} allocator: allocated {} · cached {}",
                "",
                if a.framework == "pytorch" {
                    "PyTorch"
                } else {
                    a.framework.as_str()
                },
                fmt_opt_bytes(a.allocated_bytes),
                fmt_opt_bytes(a.cached_bytes())
            );
            let _ = writeln!(out, "{}", paint.dim(&fit(&split, cols.width)));
            if let Some(g) = &a.step_growth {
                let line = format!("{:>16}{}", "", g.describe());
                let _ = writeln!(out, "{}", paint.bold(&fit(&line, cols.width)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue entry as `gpumon run --gpus` writes it.
    fn queued(user: &str, at: f64, need_gib: Option<u64>) -> Entry {
        Entry {
            command: "python train.py --lr 3e-4".into(),
            ..crate::model::queue::example(user, at, need_gib)
        }
    }

    #[test]
    fn the_queue_in_its_order_with_what_each_job_wants_or_holds() {
        use crate::model::queue::{Hold, State};
        let mut launched = queued("carl", 900.0, Some(12));
        launched.state = State::Launched;
        launched.launched_at = Some(950.0);
        launched.gpus = Some("1".into());
        launched.holds = vec![Hold {
            id: "1".into(),
            index: 1,
            bytes: 8 << 30,
        }];
        let mut two = queued("bob\x1b[2J", 990.0, None);
        two.count = 2;
        let parts = queue_parts(&[launched, queued("ana", 808.0, Some(20)), two], 1000.0);
        assert_eq!(
            parts,
            [
                "carl `python train.py --lr 3e-4` on 1, holding 8.0 GiB for 1m10s",
                "1. ana `python train.py --lr 3e-4` wants 1×20.0 GiB, waiting 3m12s",
                "2. bob\\u{1b}[2J `python train.py --lr 3e-4` wants 2 idle GPUs, waiting 10s",
            ]
        );
    }

    #[test]
    fn a_gpu_line_gives_up_room_in_its_order() {
        let mut k = Kept {
            reserved: true,
            power: true,
            temp: true,
            bar_w: 5,
            name_w: 9,
        };
        let mut seen = vec![k];
        while k.shrink() {
            seen.push(k);
        }
        let kept = |r, p, t, bar_w, name_w| Kept {
            reserved: r,
            power: p,
            temp: t,
            bar_w,
            name_w,
        };
        assert_eq!(
            seen,
            [
                kept(true, true, true, 5, 9),
                kept(false, true, true, 5, 9),
                kept(false, false, true, 5, 9),
                kept(false, false, false, 5, 9),
                kept(false, false, false, 4, 9),
                kept(false, false, false, 4, 8),
            ]
        );
    }

    #[test]
    fn a_gpu_line_fits_by_dropping_the_reservation_first_and_measures_what_it_writes() {
        const GIB: u64 = 1 << 30;
        let mut d = Device {
            index: 3,
            name: Some("NVIDIA H100 80GB HBM3".into()),
            ..Device::default()
        };
        (d.temperature_c, d.power_draw_w, d.power_limit_w) = (Some(61), Some(310.0), Some(700.0));
        let m = &mut d.memory;
        (m.total_bytes, m.used_bytes) = (Some(80 * GIB), Some(20 * GIB));
        (m.free_bytes, m.reserved_bytes) = (Some(59 * GIB), Some(GIB));
        let pieces = Pieces::of(&d, Paint(false));
        let all = pieces.fit("[3]", 21, 500);
        assert!(all.reserved && all.power && all.temp, "{all:?}");
        // The length counted is the length written.
        let mut out = format!("[3] {:<21} | ", "NVIDIA H100 80GB HBM3");
        pieces.write(&mut out, &all);
        assert_eq!(out.chars().count(), pieces.len(3, &all));
        assert!(
            out.contains("(+1.0 GiB reserved)") && out.ends_with("| 310 / 700 W"),
            "{out}"
        );
        let one_less = pieces.fit("[3]", 21, pieces.len(3, &all) - 1);
        assert!(!one_less.reserved && one_less.power, "{one_less:?}");
        // However narrow, it stops at a 4-cell bar and an 8-character name.
        let tiny = pieces.fit("[3]", 21, 10);
        assert_eq!((tiny.temp, tiny.bar_w, tiny.name_w), (false, 4, 8));
    }

    #[test]
    fn json_straight_from_the_model_matches_the_model_plus_breakdowns() {
        use crate::model::{Memory, Process, ProcessKind};
        let mut d = Device {
            index: 0,
            name: Some("G".into()),
            memory: Memory {
                total_bytes: Some(100),
                used_bytes: Some(60),
                free_bytes: Some(35),
                reserved_bytes: Some(5),
            },
            ..Device::default()
        };
        d.processes = vec![Process::from_nvml(7, ProcessKind::Both, Some(50))];
        d.field_errors.insert("fan", "not supported".into());
        let lost = Device::failed(1, "GPU is lost".into());
        let sample = Sample {
            timestamp: SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_795_000_000_123),
            hostname: Some("h".into()),
            source: "nvml",
            driver_version: None,
            cuda_version: Some("12.4".into()),
            devices: vec![d, lost],
            error: None,
            host: None,
        };
        // What the model serialises to, with each device's breakdown added.
        let mut sample_json = serde_json::to_value(&sample).expect("model");
        for (json, d) in sample_json["devices"]
            .as_array_mut()
            .expect("devices")
            .iter_mut()
            .zip(&sample.devices)
        {
            json["breakdown"] = serde_json::to_value(d.breakdown()).expect("breakdown");
        }
        let mut want = serde_json::json!({"schema_version": SCHEMA_VERSION})
            .as_object()
            .cloned()
            .expect("object");
        want.extend(serde_json::from_value::<serde_json::Map<_, _>>(sample_json).expect("object"));
        let want = serde_json::Value::Object(want);
        let got = serde_json::to_value(to_json(&sample)).expect("direct");
        assert_eq!(got, want);
        // Same key order as the model (the text is what users diff).
        let text = serde_json::to_string(&to_json(&sample)).expect("text");
        let keys = [
            "\"schema_version\"",
            "\"timestamp\"",
            "\"hostname\"",
            "\"devices\"",
            "\"breakdown\"",
        ];
        let at: Vec<usize> = keys.iter().map(|k| text.find(k).expect("key")).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(text.ends_with("],\"error\":null,\"host\":null}"), "{text}");
    }

    #[test]
    fn the_host_line_drops_its_lowest_ranked_fields_first_and_says_n_a_for_unknowns() {
        let gib = 1u64 << 30;
        let h = HostStats {
            cpu_percent: Some(37.5),
            cpu_count: Some(96),
            memory_total_bytes: Some(1024 * gib),
            memory_used_bytes: Some(412 * gib),
            memory_available_bytes: Some(612 * gib),
            swap_total_bytes: Some(8 * gib),
            swap_used_bytes: Some(0),
            load_average: Some([35.2, 33.9, 30.1]),
            uptime_s: Some(12 * 86400 + 4 * 3600),
            pids_hidden: false,
        };
        assert_eq!(
            host_line(&h, 200, "  ").as_deref(),
            Some(
                "CPU 38% of 96  mem 412.0 GiB of 1.0 TiB  swap 0 B of 8.0 GiB  \
                 load 35.20 33.90 30.10  up 12d04h"
            )
        );
        // Uptime, then swap, then load go first; memory stays longest.
        assert_eq!(
            host_line(&h, 66, "  ").as_deref(),
            Some("CPU 38% of 96  mem 412.0 GiB of 1.0 TiB  load 35.20 33.90 30.10")
        );
        assert_eq!(
            host_line(&h, 30, "  ").as_deref(),
            Some("mem 412.0 GiB of 1.0 TiB")
        );
        assert_eq!(host_line(&h, 5, "  "), None);
        // A first reading (once) has no CPU share; no swap is said so.
        let first = HostStats {
            cpu_percent: None,
            swap_total_bytes: Some(0),
            ..h
        };
        let line = host_line(&first, 200, "  ").expect("fits");
        assert!(line.starts_with("96 CPUs  mem 412.0 GiB"), "{line}");
        assert!(line.contains("no swap"), "{line}");
        assert_eq!(
            host_line(&HostStats::default(), 200, " | ").as_deref(),
            Some("CPU N/A | mem N/A | swap N/A | load N/A | up N/A")
        );
    }

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
