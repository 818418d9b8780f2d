//! `gpumon log`: one record per device (or per process) per tick, as CSV, JSON lines or a table.
//!
//! Field names follow `nvidia-smi --query-gpu` / `--query-compute-apps` where one exists.
//! CSV and JSON lines carry raw numbers (bytes, watts, percent); the table is for people and
//! prints sizes in binary units.
//!
//! Each field reads its value straight from the sample (a `Cell` borrowing the model's
//! strings); a tick's records are written into one buffer and go out in one `write`.

use std::convert::Infallible;
use std::io::Write;

use crate::model::breakdown::{Breakdown, PartKind};
use crate::model::{Device, Process, Sample};
use crate::units::fmt_bytes;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Csv,
    Jsonl,
    Table,
}

/// What a field holds, for the table's formatting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Bytes,
    Number,
}

/// One field of one record, borrowed from the sample.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Cell<'a> {
    /// Unknown: empty in CSV, `null` in JSON, N/A in the table.
    Null,
    Text(&'a str),
    Int(u64),
    /// Always finite (JSON has no NaN or infinity): see [`Cell::float`].
    Float(f64),
}

impl<'a> Cell<'a> {
    fn int<T: Into<u64>>(v: Option<T>) -> Self {
        v.map_or(Cell::Null, |v| Cell::Int(v.into()))
    }
    fn float(v: Option<f64>) -> Self {
        match v {
            Some(f) if f.is_finite() => Cell::Float(f),
            _ => Cell::Null,
        }
    }
    fn text(v: &'a Option<String>) -> Self {
        v.as_deref().map_or(Cell::Null, Cell::Text)
    }

    fn opt(v: Option<&'a str>) -> Self {
        v.map_or(Cell::Null, Cell::Text)
    }

    /// The cell as a JSON value, as serde_json writes it (`412.5`, `700.0`, `1e+21` for a
    /// float), the same digits as `once --json` prints.
    fn write_json(self, buf: &mut Vec<u8>) {
        // Writing into a Vec cannot fail.
        let _ = match self {
            Cell::Null => serde_json::to_writer(buf, &()),
            Cell::Text(s) => crate::text::write_json(buf, s),
            Cell::Int(n) => serde_json::to_writer(buf, &n),
            Cell::Float(f) => serde_json::to_writer(buf, &f),
        };
    }
}

/// A device field: the sample's timestamp (formatted once per tick) and the device.
type DeviceGetter = for<'a> fn(&'a str, &'a Device) -> Cell<'a>;
type ProcessGetter = for<'a> fn(&'a str, &'a Device, &'a Process) -> Cell<'a>;

/// Milliseconds since the Unix epoch (`None` before it).
fn unix_ms(t: std::time::SystemTime) -> Option<u64> {
    let ms = t.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis();
    u64::try_from(ms).ok()
}

/// A part of the process's breakdown (the one place that does this arithmetic).
fn part(d: &Device, p: &Process, kind: PartKind) -> Cell<'static> {
    Cell::int(Breakdown::process(&d.memory, p.memory()).and_then(|b| b.get(kind)))
}

const DEVICE_FIELDS: &[(&str, Kind, DeviceGetter)] = &[
    ("timestamp", Kind::Text, |t, _| Cell::Text(t)),
    ("index", Kind::Number, |_, d| Cell::Int(d.index.into())),
    ("uuid", Kind::Text, |_, d| Cell::text(&d.uuid)),
    ("name", Kind::Text, |_, d| Cell::text(&d.name)),
    ("pci.bus_id", Kind::Text, |_, d| Cell::text(&d.pci_bus_id)),
    ("memory.total", Kind::Bytes, |_, d| {
        Cell::int(d.memory.total_bytes)
    }),
    ("memory.used", Kind::Bytes, |_, d| {
        Cell::int(d.memory.used_bytes)
    }),
    ("memory.free", Kind::Bytes, |_, d| {
        Cell::int(d.memory.free_bytes)
    }),
    // The peak-hold (`--peak-rate`): the highest used memory since the previous record, when
    // it was read (Unix ms) and the window it covers; empty where not measured.
    ("memory.peak", Kind::Bytes, |_, d| {
        Cell::int(d.peak.map(|p| p.used_bytes))
    }),
    ("memory.peak.at_ms", Kind::Number, |_, d| {
        Cell::int(d.peak.and_then(|p| unix_ms(p.at)))
    }),
    ("memory.peak.window_ms", Kind::Number, |_, d| {
        Cell::int(d.peak.map(|p| p.window_ms))
    }),
    ("memory.reserved", Kind::Bytes, |_, d| {
        Cell::int(d.memory.reserved_bytes)
    }),
    ("memory.unattributed", Kind::Bytes, |_, d| {
        Cell::int(d.breakdown().and_then(|b| b.get(PartKind::Unattributed)))
    }),
    ("utilization.gpu", Kind::Number, |_, d| {
        Cell::int(d.utilization.gpu_percent)
    }),
    ("utilization.memory", Kind::Number, |_, d| {
        Cell::int(d.utilization.memory_percent)
    }),
    ("temperature.gpu", Kind::Number, |_, d| {
        Cell::int(d.temperature_c)
    }),
    ("power.draw", Kind::Number, |_, d| {
        Cell::float(d.power_draw_w)
    }),
    ("power.limit", Kind::Number, |_, d| {
        Cell::float(d.power_limit_w)
    }),
    ("fan.speed", Kind::Number, |_, d| Cell::int(d.fan_percent)),
    ("processes.count", Kind::Number, |_, d| {
        if d.processes_error.is_some() && d.processes.is_empty() {
            Cell::Null
        } else {
            Cell::Int(d.processes.len() as u64)
        }
    }),
    ("error", Kind::Text, |_, d| Cell::text(&d.error)),
    // MIG: a GPU with MIG on has a record of its own for each MIG device after its own.
    ("mig.profile", Kind::Text, |_, d| {
        Cell::opt(d.as_mig().and_then(|m| m.profile.as_deref()))
    }),
    ("mig.gpu_instance_id", Kind::Number, |_, d| {
        Cell::int(d.as_mig().and_then(|m| m.gpu_instance_id))
    }),
    ("mig.compute_instance_id", Kind::Number, |_, d| {
        Cell::int(d.as_mig().and_then(|m| m.compute_instance_id))
    }),
    ("mig.count", Kind::Number, |_, d| {
        if d.as_mig().is_some() {
            Cell::Null
        } else {
            Cell::Int(d.mig.len() as u64)
        }
    }),
    // Health: Xid errors since gpumon started, ECC, row remapping, throttling.
    ("xid.last", Kind::Number, |_, d| {
        Cell::int(d.health.last_xid().map(|x| x.xid))
    }),
    ("xid.count", Kind::Number, |_, d| {
        if !d.health.xids_watched || d.as_mig().is_some() {
            Cell::Null
        } else {
            Cell::Int(d.health.xids.iter().map(|x| x.count).sum())
        }
    }),
    (
        "ecc.errors.corrected.volatile.total",
        Kind::Number,
        |_, d| Cell::int(d.health.ecc.and_then(|e| e.volatile_corrected)),
    ),
    (
        "ecc.errors.uncorrected.volatile.total",
        Kind::Number,
        |_, d| Cell::int(d.health.ecc.and_then(|e| e.volatile_uncorrected)),
    ),
    (
        "ecc.errors.corrected.aggregate.total",
        Kind::Number,
        |_, d| Cell::int(d.health.ecc.and_then(|e| e.aggregate_corrected)),
    ),
    (
        "ecc.errors.uncorrected.aggregate.total",
        Kind::Number,
        |_, d| Cell::int(d.health.ecc.and_then(|e| e.aggregate_uncorrected)),
    ),
    ("remapped_rows.correctable", Kind::Number, |_, d| {
        Cell::int(d.health.remapped_rows.map(|r| r.corrected))
    }),
    ("remapped_rows.uncorrectable", Kind::Number, |_, d| {
        Cell::int(d.health.remapped_rows.map(|r| r.uncorrected))
    }),
    ("remapped_rows.pending", Kind::Number, |_, d| {
        Cell::int(d.health.remapped_rows.map(|r| u64::from(r.pending)))
    }),
    ("remapped_rows.failure", Kind::Number, |_, d| {
        Cell::int(d.health.remapped_rows.map(|r| u64::from(r.failed)))
    }),
    ("clocks_event_reasons.active", Kind::Number, |_, d| {
        Cell::int(d.health.clock_event_reasons)
    }),
    // Unified memory and this container's GPU memory limit (`crate::model::unified`): how
    // the GPU-held figure was obtained (`nvml` measured, `process_sum` derived), the
    // system's room, PSI, and the limit; empty where they do not apply.
    ("memory.method", Kind::Text, |_, d| {
        Cell::opt(crate::model::unified::method_of(d).map(|m| m.as_str()))
    }),
    ("memory.gpu_held", Kind::Bytes, |_, d| {
        Cell::int(crate::model::unified::gpu_held_of(d))
    }),
    ("memory.headroom", Kind::Bytes, |_, d| {
        Cell::int(d.shared_memory.as_ref().and_then(|s| s.headroom_bytes))
    }),
    ("memory.pressure", Kind::Number, |_, d| {
        Cell::float(
            d.shared_memory
                .as_ref()
                .and_then(|s| s.pressure)
                .map(|p| p.some_avg10),
        )
    }),
    ("cgroup.name", Kind::Text, |_, d| {
        Cell::opt(d.container_limit.as_ref().map(|l| l.cgroup.as_str()))
    }),
    ("cgroup.limit", Kind::Bytes, |_, d| {
        Cell::int(d.container_limit.as_ref().and_then(|l| l.hard_bytes))
    }),
    ("cgroup.used", Kind::Bytes, |_, d| {
        Cell::int(d.container_limit.as_ref().and_then(|l| l.used_bytes))
    }),
];

/// The device fields that stay filled for a stalled or failed device: who it is, and why it
/// is empty.
const IDENTITY_FIELDS: &[&str] = &["timestamp", "index", "uuid", "name", "pci.bus_id", "error"];

const PROCESS_FIELDS: &[(&str, Kind, ProcessGetter)] = &[
    ("timestamp", Kind::Text, |t, _, _| Cell::Text(t)),
    ("gpu_index", Kind::Number, |_, d, _| {
        Cell::Int(d.index.into())
    }),
    ("gpu_uuid", Kind::Text, |_, d, _| Cell::text(&d.uuid)),
    ("gpu_instance_id", Kind::Number, |_, _, p| {
        Cell::int(p.gpu_instance_id)
    }),
    ("compute_instance_id", Kind::Number, |_, _, p| {
        Cell::int(p.compute_instance_id)
    }),
    ("gpu_bus_id", Kind::Text, |_, d, _| {
        Cell::text(&d.pci_bus_id)
    }),
    ("pid", Kind::Number, |_, _, p| Cell::Int(p.pid.into())),
    ("type", Kind::Text, |_, _, p| Cell::Text(p.kind.letter())),
    ("process_name", Kind::Text, |_, _, p| Cell::text(&p.name)),
    ("user", Kind::Text, |_, _, p| Cell::text(&p.user)),
    ("used_memory", Kind::Bytes, |_, _, p| {
        Cell::int(p.gpu_memory_bytes)
    }),
    ("cpu_percent", Kind::Number, |_, _, p| {
        Cell::float(p.cpu_percent.map(|c| (c as f64 * 10.0).round() / 10.0))
    }),
    ("host_memory", Kind::Bytes, |_, _, p| {
        Cell::int(p.host_memory_bytes)
    }),
    ("start_time", Kind::Number, |_, _, p| {
        Cell::int(p.start_time)
    }),
    ("command", Kind::Text, |_, _, p| Cell::text(&p.command)),
    ("container", Kind::Text, |_, _, p| Cell::text(&p.container)),
    ("owner.kind", Kind::Text, |_, _, p| {
        Cell::opt(p.owner.as_deref().map(|o| o.kind.name()))
    }),
    ("owner.name", Kind::Text, |_, _, p| {
        Cell::opt(p.owner.as_deref().map(|o| o.name.as_str()))
    }),
    ("owner.namespace", Kind::Text, |_, _, p| {
        Cell::opt(p.owner.as_deref().and_then(|o| o.namespace.as_deref()))
    }),
    ("owner.container", Kind::Text, |_, _, p| {
        Cell::opt(p.owner.as_deref().and_then(|o| o.container.as_deref()))
    }),
    ("owner.job", Kind::Text, |_, _, p| {
        Cell::opt(p.owner.as_deref().and_then(|o| o.job.as_deref()))
    }),
    ("sm_percent", Kind::Number, |_, _, p| {
        Cell::int(p.sm_percent)
    }),
    ("mem_bw_percent", Kind::Number, |_, _, p| {
        Cell::int(p.mem_bw_percent)
    }),
    ("process.allocated", Kind::Bytes, |_, _, p| {
        Cell::int(p.allocator.as_ref().and_then(|a| a.allocated_bytes))
    }),
    ("process.reserved", Kind::Bytes, |_, _, p| {
        Cell::int(p.allocator.as_ref().and_then(|a| a.reserved_bytes))
    }),
    ("process.cached", Kind::Bytes, |_, d, p| {
        part(d, p, PartKind::Cached)
    }),
    ("process.non_framework", Kind::Bytes, |_, d, p| {
        part(d, p, PartKind::NonFramework)
    }),
    ("process.allocated_peak", Kind::Bytes, |_, _, p| {
        Cell::int(p.allocator.as_ref().and_then(|a| a.allocated_peak_bytes))
    }),
    ("process.reserved_peak", Kind::Bytes, |_, _, p| {
        Cell::int(p.allocator.as_ref().and_then(|a| a.reserved_peak_bytes))
    }),
    // The driver's accounting (empty where it is off).
    ("peak_memory", Kind::Bytes, |_, _, p| {
        Cell::int(p.peak_bytes)
    }),
];

const DEFAULT_DEVICE: &str = "timestamp,index,name,memory.total,memory.used,memory.peak,\
memory.free,memory.reserved,utilization.gpu,utilization.memory,temperature.gpu,power.draw,processes.count,error";
const DEFAULT_PROCESS: &str =
    "timestamp,gpu_index,pid,type,user,process_name,used_memory,cpu_percent,host_memory,command";

/// All field names, for `--help` and error messages.
pub fn field_names(processes: bool) -> Vec<&'static str> {
    if processes {
        PROCESS_FIELDS.iter().map(|f| f.0).collect()
    } else {
        DEVICE_FIELDS.iter().map(|f| f.0).collect()
    }
}

/// Chosen columns, resolved to indices into the field tables.
#[derive(Debug, Clone)]
pub struct Columns {
    processes: bool,
    picks: Vec<usize>,
}

impl Columns {
    /// Parses `--fields` (comma-separated; `None` for the defaults).
    pub fn parse(fields: Option<&str>, processes: bool) -> Result<Columns, String> {
        let names = field_names(processes);
        let spec = fields.unwrap_or(if processes {
            DEFAULT_PROCESS
        } else {
            DEFAULT_DEVICE
        });
        let mut picks = Vec::new();
        for name in spec.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(name)) else {
                // A field of the other kind of record: say which flag makes it.
                let other = field_names(!processes);
                if other.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                    return Err(if processes {
                        format!(
                            "'{name}' is a per-GPU field; with --processes each record is a \
                             process (known fields: {})",
                            names.join(", ")
                        )
                    } else {
                        format!(
                            "'{name}' is a per-process field: add --processes (one record per \
                             GPU process)"
                        )
                    });
                }
                return Err(format!(
                    "unknown field '{name}'{}; known fields: {}",
                    if processes { " for --processes" } else { "" },
                    names.join(", ")
                ));
            };
            picks.push(i);
        }
        if picks.is_empty() {
            return Err("--fields names no field".into());
        }
        Ok(Columns { processes, picks })
    }

    /// Whether a column shows per-process utilisation (`sm_percent`, `mem_bw_percent`).
    pub fn read_process_utilization(&self) -> bool {
        self.processes
            && self
                .names()
                .iter()
                .any(|n| matches!(*n, "sm_percent" | "mem_bw_percent"))
    }

    pub fn names(&self) -> Vec<&'static str> {
        let all = field_names(self.processes);
        self.picks.iter().map(|&i| all[i]).collect()
    }

    fn kinds(&self) -> Vec<Kind> {
        self.picks
            .iter()
            .map(|&i| {
                if self.processes {
                    PROCESS_FIELDS[i].1
                } else {
                    DEVICE_FIELDS[i].1
                }
            })
            .collect()
    }

    /// Calls `row` with the cells of each record of one sample: one per device, or one per
    /// process. A stalled device's readings are its last good ones, not this sample's, and a
    /// failed one has none: their records carry the error and leave the readings empty (never
    /// a count of 0 processes for a GPU that could not be asked), and their processes get no
    /// records.
    fn each_record<E>(
        &self,
        sample: &Sample,
        mut row: impl FnMut(&mut dyn Iterator<Item = Cell>) -> Result<(), E>,
    ) -> Result<(), E> {
        let stamp = humantime::format_rfc3339_millis(sample.timestamp).to_string();
        let stamp = stamp.as_str();
        for d in &sample.devices {
            if self.processes {
                if !d.fresh() {
                    continue;
                }
                for p in &d.processes {
                    row(&mut self
                        .picks
                        .iter()
                        .map(|&i| (PROCESS_FIELDS[i].2)(stamp, d, p)))?;
                }
            } else {
                let instances = d.mig.iter().map(|m| m.as_device(d));
                for d in std::iter::once(std::borrow::Cow::Borrowed(d))
                    .chain(instances.map(std::borrow::Cow::Owned))
                {
                    let d = d.as_ref();
                    row(&mut self.picks.iter().map(|&i| {
                        let (name, _, get) = DEVICE_FIELDS[i];
                        if d.fresh() || IDENTITY_FIELDS.contains(&name) {
                            get(stamp, d)
                        } else {
                            Cell::Null
                        }
                    }))?;
                }
            }
        }
        Ok(())
    }
}

/// Writes records in one format; the header goes out once.
pub struct LogWriter<W: Write> {
    sink: Sink<W>,
    columns: Columns,
    header_pending: bool,
    /// JSON lines and the table: the records of one tick, kept between ticks.
    buf: Vec<u8>,
    /// JSON lines: each column's `"name":`.
    keys: Vec<Vec<u8>>,
    table: Table,
}

enum Sink<W: Write> {
    /// The csv crate quotes into its own buffer, as large as a tick's records usually are.
    Csv(Box<csv::Writer<W>>),
    Jsonl(W),
    Table(W),
}

/// The table's columns: kind and width.
struct Table {
    kinds: Vec<Kind>,
    widths: Vec<usize>,
}

impl<W: Write> LogWriter<W> {
    /// `header`: false when appending to a file that already has one.
    pub fn new(out: W, format: Format, columns: Columns, header: bool) -> Self {
        let names = columns.names();
        let kinds = columns.kinds();
        let widths = names
            .iter()
            .zip(&kinds)
            .map(|(n, k)| {
                n.len().max(match k {
                    Kind::Bytes => 10,
                    Kind::Number => 5,
                    Kind::Text => 8,
                })
            })
            .collect();
        let keys = names
            .iter()
            .map(|n| {
                let mut key = Vec::new();
                Cell::Text(n).write_json(&mut key);
                key.push(b':');
                key
            })
            .collect();
        let sink = match format {
            Format::Csv => Sink::Csv(Box::new(
                csv::WriterBuilder::new()
                    .buffer_capacity(1 << 16)
                    .from_writer(out),
            )),
            Format::Jsonl => Sink::Jsonl(out),
            Format::Table => Sink::Table(out),
        };
        LogWriter {
            sink,
            columns,
            header_pending: header,
            buf: Vec::new(),
            keys,
            table: Table { kinds, widths },
        }
    }

    /// Writes one tick's records and flushes: one `write` (unless they pass 64 KiB), and a
    /// crash loses nothing already logged.
    pub fn write(&mut self, sample: &Sample) -> anyhow::Result<()> {
        let out = match &mut self.sink {
            Sink::Csv(w) => {
                write_csv(w, &self.columns, &mut self.header_pending, sample)?;
                return Ok(());
            }
            Sink::Jsonl(out) => {
                write_jsonl(&mut self.buf, &self.keys, &self.columns, sample);
                out
            }
            Sink::Table(out) => {
                let header = std::mem::take(&mut self.header_pending);
                self.table
                    .write(&mut self.buf, &self.columns, header, sample);
                out
            }
        };
        let written = out.write_all(&self.buf).and_then(|()| out.flush());
        self.buf.clear();
        written?;
        Ok(())
    }
}

#[cfg(test)]
impl<W: Write> LogWriter<W> {
    pub(crate) fn get_ref(&self) -> &W {
        match &self.sink {
            Sink::Csv(w) => w.get_ref(),
            Sink::Jsonl(out) | Sink::Table(out) => out,
        }
    }
}

fn write_csv<W: Write>(
    w: &mut csv::Writer<W>,
    columns: &Columns,
    header_pending: &mut bool,
    sample: &Sample,
) -> csv::Result<()> {
    if std::mem::take(header_pending) {
        w.write_record(columns.names())?;
    }
    let mut number = Vec::new();
    columns.each_record(sample, |cells| {
        for cell in cells {
            match cell {
                Cell::Null => w.write_field("")?,
                // The one escaping rule: a command line may carry a terminal escape.
                Cell::Text(s) => w.write_field(crate::text::escape(s).as_bytes())?,
                Cell::Int(_) | Cell::Float(_) => {
                    number.clear();
                    cell.write_json(&mut number);
                    w.write_field(&number)?
                }
            }
        }
        w.write_record(None::<&[u8]>)
    })?;
    w.flush()?;
    Ok(())
}

fn write_jsonl(buf: &mut Vec<u8>, keys: &[Vec<u8>], columns: &Columns, sample: &Sample) {
    let done: Result<(), Infallible> = columns.each_record(sample, |cells| {
        buf.push(b'{');
        for (i, (cell, key)) in cells.zip(keys).enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            buf.extend_from_slice(key);
            cell.write_json(buf);
        }
        buf.extend_from_slice(b"}\n");
        Ok(())
    });
    let Ok(()) = done;
}

impl Table {
    fn write(&mut self, buf: &mut Vec<u8>, columns: &Columns, header: bool, sample: &Sample) {
        let kinds = &self.kinds;
        let mut rows: Vec<Vec<String>> = Vec::new();
        let done: Result<(), Infallible> = columns.each_record(sample, |cells| {
            rows.push(
                cells
                    .zip(kinds)
                    .map(|(cell, kind)| match (cell, kind) {
                        (Cell::Null, _) => "N/A".to_owned(),
                        (Cell::Text(s), _) => crate::text::escape(s).into_owned(),
                        (Cell::Int(n), Kind::Bytes) => fmt_bytes(n),
                        (Cell::Int(n), _) => n.to_string(),
                        (cell @ Cell::Float(_), _) => {
                            let mut s = Vec::new();
                            cell.write_json(&mut s);
                            String::from_utf8_lossy(&s).into_owned()
                        }
                    })
                    .collect(),
            );
            Ok(())
        });
        let Ok(()) = done;
        if header {
            // Columns are sized once, from the header and the first sample.
            for row in &rows {
                for (w, cell) in self.widths.iter_mut().zip(row) {
                    *w = (*w).max(cell.chars().count());
                }
            }
            let names: Vec<String> = columns.names().into_iter().map(str::to_owned).collect();
            self.line(buf, &names);
        }
        for row in &rows {
            self.line(buf, row);
        }
    }

    /// One line: text left-aligned, numbers right-aligned, the last column as it is.
    fn line(&self, buf: &mut Vec<u8>, cells: &[String]) {
        let last = cells.len().saturating_sub(1);
        for (i, c) in cells.iter().enumerate() {
            let w = self.widths[i];
            // Writing into a Vec cannot fail.
            let _ = if i == last {
                write!(buf, "{c}")
            } else if self.kinds[i] == Kind::Text {
                write!(buf, "{c:<w$}  ")
            } else {
                write!(buf, "{c:>w$}  ")
            };
        }
        buf.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_named() {
        let e = Columns::parse(Some("index,bogus"), false).expect_err("bogus");
        assert!(e.contains("'bogus'"), "{e}");
        assert!(Columns::parse(Some("pid,used_memory"), true).is_ok());
        assert!(Columns::parse(Some("pid"), false).is_err());
        assert!(Columns::parse(Some(" , "), false).is_err());
    }

    #[test]
    fn defaults_resolve() {
        assert!(Columns::parse(None, false).is_ok());
        assert!(Columns::parse(None, true).is_ok());
    }

    const GIB: u64 = 1 << 30;

    /// A healthy GPU with two processes (one with awkward text and the probe's figures), a
    /// stalled GPU, a lost one, and one with odd figures and no process list.
    fn sample() -> Sample {
        use crate::model::{AllocatorStats, Memory, ProcessKind, Utilization};
        let mut p = Process::from_nvml(4242, ProcessKind::Both, Some(10 * GIB));
        p.peak_bytes = Some(12 * GIB);
        p.name = Some("python".into());
        p.user = Some("alice".into());
        p.command = Some("python train.py --tag \"a,b\"\n--lr=3e-4 µ".into());
        p.cpu_percent = Some(97.25);
        p.host_memory_bytes = Some(3 * GIB + 12_345);
        p.start_time = Some(1_794_999_000);
        p.container = Some("k8s pod 0f1e2d3c (containerd 3f4e5d6c7b8a)".into());
        let mut owner = crate::model::owner::Owner::new(
            crate::model::owner::OwnerKind::Kubernetes,
            "trainer-0",
        );
        owner.namespace = Some("team".into());
        owner.container = Some("pytorch".into());
        owner.pod_uid = Some("0f1e2d3c".into());
        p.owner = Some(std::sync::Arc::new(owner));
        p.sm_percent = Some(88);
        p.mem_bw_percent = Some(0);
        p.allocator = Some(Box::new(AllocatorStats {
            framework: "pytorch".into(),
            framework_version: None,
            allocated_bytes: Some(6 * GIB),
            allocated_peak_bytes: Some(7 * GIB),
            reserved_bytes: Some(8 * GIB),
            reserved_peak_bytes: Some(9 * GIB),
            active_bytes: None,
            inactive_split_bytes: None,
            num_alloc_retries: None,
            num_ooms: None,
            age_ms: 10,
            run_id: None,
            steps: None,
            step_growth: None,
            step_marker: None,
            steps_marked: None,
            held_sites: None,
        }));
        let bare = Process::from_nvml(77, ProcessKind::Graphics, None);
        let healthy = Device {
            index: 0,
            uuid: Some("GPU-aaaa".into()),
            name: Some("NVIDIA H100 80GB HBM3".into()),
            pci_bus_id: Some("00000000:01:00.0".into()),
            memory: Memory {
                total_bytes: Some(80 * GIB),
                used_bytes: Some(12 * GIB + 1),
                free_bytes: Some(67 * GIB),
                reserved_bytes: Some(GIB / 2),
            },
            peak: Some(crate::model::MemoryPeak {
                used_bytes: 78 * GIB,
                at: std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_795_000_000_100),
                window_ms: 1000,
                reads: 51,
            }),
            utilization: Utilization {
                gpu_percent: Some(93),
                memory_percent: Some(40),
            },
            temperature_c: Some(61),
            power_draw_w: Some(412.5),
            power_limit_w: Some(700.0),
            fan_percent: None,
            processes: vec![p, bare],
            data_age_ms: Some(1),
            ..Device::default()
        };
        let stalled = Device {
            index: 1,
            uuid: Some("GPU-bbbb".into()),
            name: Some("NVIDIA H100 80GB HBM3".into()),
            memory: Memory {
                used_bytes: Some(5 * GIB),
                ..Memory::default()
            },
            power_draw_w: Some(f64::NAN),
            processes: vec![Process::from_nvml(5, ProcessKind::Compute, Some(GIB))],
            stalled: true,
            error: Some("not responding for 12 s".into()),
            data_age_ms: Some(12_000),
            ..Device::default()
        };
        let lost = Device {
            name: Some("NVIDIA H100 80GB HBM3".into()),
            ..Device::failed(2, "GPU is lost".into())
        };
        let mut odd = Device {
            index: 3,
            power_draw_w: Some(f64::INFINITY),
            power_limit_w: Some(1e21),
            ..Device::default()
        };
        odd.processes_error = Some("cannot list processes: no permission".into());
        Sample {
            timestamp: std::time::SystemTime::UNIX_EPOCH
                + std::time::Duration::from_millis(1_795_000_000_123),
            hostname: Some("node-7".into()),
            source: "nvml",
            driver_version: Some("550.54.15".into()),
            cuda_version: None,
            devices: vec![healthy, stalled, lost, odd],
            error: None,
            host: None,
        }
    }

    /// Two samples through one writer.
    fn written(format: Format, columns: Columns) -> String {
        let mut out = Vec::new();
        let mut w = LogWriter::new(&mut out, format, columns, true);
        w.write(&sample()).expect("write");
        w.write(&sample()).expect("write");
        drop(w);
        String::from_utf8(out).expect("utf-8")
    }

    fn every(processes: bool) -> Columns {
        Columns::parse(Some(&field_names(processes).join(",")), processes).expect("fields")
    }

    #[test]
    fn every_field_in_every_format() {
        for format in [Format::Csv, Format::Jsonl, Format::Table] {
            for processes in [false, true] {
                let name = format!(
                    "{}_{}",
                    format!("{format:?}").to_lowercase(),
                    if processes { "processes" } else { "devices" }
                );
                insta::assert_snapshot!(name, written(format, every(processes)));
            }
        }
    }

    /// Counts the calls a writer gets.
    #[derive(Default)]
    struct Calls {
        writes: usize,
        flushes: usize,
        bytes: usize,
    }

    impl Write for &mut Calls {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.writes += 1;
            self.bytes += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.flushes += 1;
            Ok(())
        }
    }

    #[test]
    fn a_tick_is_one_write_and_one_flush() {
        for format in [Format::Csv, Format::Jsonl, Format::Table] {
            for processes in [false, true] {
                let mut calls = Calls::default();
                let mut w = LogWriter::new(&mut calls, format, every(processes), true);
                for tick in 1..=3 {
                    w.write(&sample()).expect("write");
                    let c = w.get_ref();
                    assert_eq!(
                        (c.writes, c.flushes),
                        (tick, tick),
                        "{format:?}, processes {processes}, tick {tick}"
                    );
                }
                drop(w);
                assert!(calls.bytes > 0);
            }
        }
    }

    #[test]
    fn a_write_error_is_returned_and_the_next_tick_starts_clean() {
        struct Broken(bool);
        impl Write for Broken {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                if std::mem::take(&mut self.0) {
                    Err(std::io::ErrorKind::BrokenPipe.into())
                } else {
                    Ok(buf.len())
                }
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        for format in [Format::Jsonl, Format::Table] {
            let mut w = LogWriter::new(Broken(true), format, every(false), true);
            let e = w.write(&sample()).expect_err("broken pipe");
            assert!(e.to_string().contains("roken pipe"), "{e}");
            w.write(&sample()).expect("the next tick");
            assert!(
                w.buf.is_empty(),
                "{format:?}: nothing of the failed tick is kept"
            );
        }
    }

    #[test]
    fn the_default_fields_and_a_chosen_order() {
        let defaults = Columns::parse(None, false).expect("defaults");
        insta::assert_snapshot!(written(Format::Csv, defaults), @r#"
        timestamp,index,name,memory.total,memory.used,memory.peak,memory.free,memory.reserved,utilization.gpu,utilization.memory,temperature.gpu,power.draw,processes.count,error
        2026-11-18T11:06:40.123Z,0,NVIDIA H100 80GB HBM3,85899345920,12884901889,83751862272,71940702208,536870912,93,40,61,412.5,2,
        2026-11-18T11:06:40.123Z,1,NVIDIA H100 80GB HBM3,,,,,,,,,,,not responding for 12 s
        2026-11-18T11:06:40.123Z,2,NVIDIA H100 80GB HBM3,,,,,,,,,,,GPU is lost
        2026-11-18T11:06:40.123Z,3,,,,,,,,,,,,
        2026-11-18T11:06:40.123Z,0,NVIDIA H100 80GB HBM3,85899345920,12884901889,83751862272,71940702208,536870912,93,40,61,412.5,2,
        2026-11-18T11:06:40.123Z,1,NVIDIA H100 80GB HBM3,,,,,,,,,,,not responding for 12 s
        2026-11-18T11:06:40.123Z,2,NVIDIA H100 80GB HBM3,,,,,,,,,,,GPU is lost
        2026-11-18T11:06:40.123Z,3,,,,,,,,,,,,
        "#);
        let chosen = Columns::parse(Some("pid,command,gpu_index"), true).expect("fields");
        insta::assert_snapshot!(written(Format::Jsonl, chosen), @r#"
        {"pid":4242,"command":"python train.py --tag \"a,b\"\n--lr=3e-4 µ","gpu_index":0}
        {"pid":77,"command":null,"gpu_index":0}
        {"pid":4242,"command":"python train.py --tag \"a,b\"\n--lr=3e-4 µ","gpu_index":0}
        {"pid":77,"command":null,"gpu_index":0}
        "#);
    }
}
