//! `gpumon log`: one record per device (or per process) per tick, as CSV, JSON lines or a table.
//!
//! Field names follow `nvidia-smi --query-gpu` / `--query-compute-apps` where one exists.
//! CSV and JSON lines carry raw numbers (bytes, watts, percent); the table is for people and
//! prints sizes in binary units.

use std::io::Write;

use serde_json::{Map, Value};

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

type DeviceGetter = fn(&Sample, &Device) -> Value;
type ProcessGetter = fn(&Sample, &Device, &Process) -> Value;

fn ts(s: &Sample) -> Value {
    Value::String(humantime::format_rfc3339_millis(s.timestamp).to_string())
}
fn opt<T: Into<Value>>(v: Option<T>) -> Value {
    v.map_or(Value::Null, Into::into)
}
fn text(v: &Option<String>) -> Value {
    opt(v.clone())
}
/// A part of the process's breakdown (the one place that does this arithmetic).
fn part(d: &Device, p: &Process, kind: PartKind) -> Value {
    opt(Breakdown::process(&d.memory, p.memory()).and_then(|b| b.get(kind)))
}

const DEVICE_FIELDS: &[(&str, Kind, DeviceGetter)] = &[
    ("timestamp", Kind::Text, |s, _| ts(s)),
    ("index", Kind::Number, |_, d| d.index.into()),
    ("uuid", Kind::Text, |_, d| text(&d.uuid)),
    ("name", Kind::Text, |_, d| text(&d.name)),
    ("pci.bus_id", Kind::Text, |_, d| text(&d.pci_bus_id)),
    ("memory.total", Kind::Bytes, |_, d| {
        opt(d.memory.total_bytes)
    }),
    ("memory.used", Kind::Bytes, |_, d| opt(d.memory.used_bytes)),
    ("memory.free", Kind::Bytes, |_, d| opt(d.memory.free_bytes)),
    ("memory.reserved", Kind::Bytes, |_, d| {
        opt(d.memory.reserved_bytes)
    }),
    ("memory.unattributed", Kind::Bytes, |_, d| {
        opt(crate::output::once::device_breakdown(d).and_then(|b| b.get(PartKind::Unattributed)))
    }),
    ("utilization.gpu", Kind::Number, |_, d| {
        opt(d.utilization.gpu_percent)
    }),
    ("utilization.memory", Kind::Number, |_, d| {
        opt(d.utilization.memory_percent)
    }),
    ("temperature.gpu", Kind::Number, |_, d| opt(d.temperature_c)),
    ("power.draw", Kind::Number, |_, d| opt(d.power_draw_w)),
    ("power.limit", Kind::Number, |_, d| opt(d.power_limit_w)),
    ("fan.speed", Kind::Number, |_, d| opt(d.fan_percent)),
    ("processes.count", Kind::Number, |_, d| {
        if d.processes_error.is_some() && d.processes.is_empty() {
            Value::Null
        } else {
            (d.processes.len() as u64).into()
        }
    }),
    ("error", Kind::Text, |_, d| text(&d.error)),
];

/// The device fields that stay filled for a stalled device: who it is, and why it is empty.
const IDENTITY_FIELDS: &[&str] = &["timestamp", "index", "uuid", "name", "pci.bus_id", "error"];

const PROCESS_FIELDS: &[(&str, Kind, ProcessGetter)] = &[
    ("timestamp", Kind::Text, |s, _, _| ts(s)),
    ("gpu_index", Kind::Number, |_, d, _| d.index.into()),
    ("gpu_uuid", Kind::Text, |_, d, _| text(&d.uuid)),
    ("gpu_bus_id", Kind::Text, |_, d, _| text(&d.pci_bus_id)),
    ("pid", Kind::Number, |_, _, p| p.pid.into()),
    ("type", Kind::Text, |_, _, p| p.kind.letter().into()),
    ("process_name", Kind::Text, |_, _, p| text(&p.name)),
    ("user", Kind::Text, |_, _, p| text(&p.user)),
    (
        "used_memory",
        Kind::Bytes,
        |_, _, p| opt(p.gpu_memory_bytes),
    ),
    ("cpu_percent", Kind::Number, |_, _, p| {
        opt(p.cpu_percent.map(|c| (c as f64 * 10.0).round() / 10.0))
    }),
    ("host_memory", Kind::Bytes, |_, _, p| {
        opt(p.host_memory_bytes)
    }),
    ("start_time", Kind::Number, |_, _, p| opt(p.start_time)),
    ("command", Kind::Text, |_, _, p| text(&p.command)),
    ("container", Kind::Text, |_, _, p| text(&p.container)),
    ("sm_percent", Kind::Number, |_, _, p| opt(p.sm_percent)),
    ("mem_bw_percent", Kind::Number, |_, _, p| {
        opt(p.mem_bw_percent)
    }),
    ("process.allocated", Kind::Bytes, |_, _, p| {
        opt(p.allocator.as_ref().and_then(|a| a.allocated_bytes))
    }),
    ("process.reserved", Kind::Bytes, |_, _, p| {
        opt(p.allocator.as_ref().and_then(|a| a.reserved_bytes))
    }),
    ("process.cached", Kind::Bytes, |_, d, p| {
        part(d, p, PartKind::Cached)
    }),
    ("process.non_framework", Kind::Bytes, |_, d, p| {
        part(d, p, PartKind::NonFramework)
    }),
    ("process.allocated_peak", Kind::Bytes, |_, _, p| {
        opt(p.allocator.as_ref().and_then(|a| a.allocated_peak_bytes))
    }),
    ("process.reserved_peak", Kind::Bytes, |_, _, p| {
        opt(p.allocator.as_ref().and_then(|a| a.reserved_peak_bytes))
    }),
];

const DEFAULT_DEVICE: &str = "timestamp,index,name,memory.total,memory.used,memory.free,\
memory.reserved,utilization.gpu,utilization.memory,temperature.gpu,power.draw,processes.count,error";
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

    /// The records of one sample: one per device, or one per process. A stalled device's
    /// readings are its last good ones, not this sample's: its record carries the error and
    /// leaves them empty, and its processes get no records.
    pub fn records(&self, sample: &Sample) -> Vec<Vec<Value>> {
        let mut rows = Vec::new();
        for d in &sample.devices {
            if self.processes {
                if d.stalled {
                    continue;
                }
                for p in &d.processes {
                    rows.push(
                        self.picks
                            .iter()
                            .map(|&i| (PROCESS_FIELDS[i].2)(sample, d, p))
                            .collect(),
                    );
                }
            } else {
                rows.push(
                    self.picks
                        .iter()
                        .map(|&i| {
                            let (name, _, get) = DEVICE_FIELDS[i];
                            if d.stalled && !IDENTITY_FIELDS.contains(&name) {
                                Value::Null
                            } else {
                                get(sample, d)
                            }
                        })
                        .collect(),
                );
            }
        }
        rows
    }
}

/// Writes records in one format; the header goes out once.
pub struct LogWriter<W: Write> {
    out: W,
    format: Format,
    columns: Columns,
    header_pending: bool,
    widths: Vec<usize>,
}

fn plain(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl<W: Write> LogWriter<W> {
    /// `header`: false when appending to a file that already has one.
    pub fn new(out: W, format: Format, columns: Columns, header: bool) -> Self {
        let widths = columns
            .names()
            .iter()
            .zip(columns.kinds())
            .map(|(n, k)| {
                n.len().max(match k {
                    Kind::Bytes => 10,
                    Kind::Number => 5,
                    Kind::Text => 8,
                })
            })
            .collect();
        LogWriter {
            out,
            format,
            columns,
            header_pending: header,
            widths,
        }
    }

    /// Writes one tick's records and flushes, so a crash loses nothing already logged.
    pub fn write(&mut self, sample: &Sample) -> anyhow::Result<()> {
        let rows = self.columns.records(sample);
        let names = self.columns.names();
        match self.format {
            Format::Csv => {
                let mut w = csv::WriterBuilder::new().from_writer(&mut self.out);
                if std::mem::take(&mut self.header_pending) {
                    w.write_record(&names)?;
                }
                for row in &rows {
                    w.write_record(row.iter().map(plain))?;
                }
                w.flush()?;
            }
            Format::Jsonl => {
                for row in rows {
                    let map: Map<String, Value> =
                        names.iter().map(|n| n.to_string()).zip(row).collect();
                    serde_json::to_writer(&mut self.out, &map)?;
                    self.out.write_all(b"\n")?;
                }
            }
            Format::Table => {
                let kinds = self.columns.kinds();
                let rows: Vec<Vec<String>> = rows
                    .iter()
                    .map(|row| {
                        row.iter()
                            .zip(&kinds)
                            .map(|(v, k)| match (v, k) {
                                (Value::Null, _) => "N/A".to_owned(),
                                (Value::Number(n), Kind::Bytes) => {
                                    n.as_u64().map_or_else(|| n.to_string(), fmt_bytes)
                                }
                                (v, _) => plain(v),
                            })
                            .collect()
                    })
                    .collect();
                if std::mem::take(&mut self.header_pending) {
                    // Columns are sized once, from the header and the first sample.
                    for row in &rows {
                        for (w, cell) in self.widths.iter_mut().zip(row) {
                            *w = (*w).max(cell.chars().count());
                        }
                    }
                    let line = self.line(names.iter().map(|n| n.to_string()).collect());
                    writeln!(self.out, "{line}")?;
                }
                for row in rows {
                    let line = self.line(row);
                    writeln!(self.out, "{line}")?;
                }
            }
        }
        self.out.flush()?;
        Ok(())
    }

    fn line(&self, cells: Vec<String>) -> String {
        let last = cells.len().saturating_sub(1);
        let kinds = self.columns.kinds();
        cells
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let w = self.widths[i];
                if i == last {
                    c
                } else if kinds[i] == Kind::Text {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
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
        p.name = Some("python".into());
        p.user = Some("alice".into());
        p.command = Some("python train.py --tag \"a,b\"\n--lr=3e-4 µ".into());
        p.cpu_percent = Some(97.25);
        p.host_memory_bytes = Some(3 * GIB + 12_345);
        p.start_time = Some(1_794_999_000);
        p.container = Some("k8s:team/trainer-0".into());
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

    #[test]
    fn the_default_fields_and_a_chosen_order() {
        let defaults = Columns::parse(None, false).expect("defaults");
        insta::assert_snapshot!(written(Format::Csv, defaults), @r#"
        timestamp,index,name,memory.total,memory.used,memory.free,memory.reserved,utilization.gpu,utilization.memory,temperature.gpu,power.draw,processes.count,error
        2026-11-18T11:06:40.123Z,0,NVIDIA H100 80GB HBM3,85899345920,12884901889,71940702208,536870912,93,40,61,412.5,2,
        2026-11-18T11:06:40.123Z,1,NVIDIA H100 80GB HBM3,,,,,,,,,,not responding for 12 s
        2026-11-18T11:06:40.123Z,2,NVIDIA H100 80GB HBM3,,,,,,,,,0,GPU is lost
        2026-11-18T11:06:40.123Z,3,,,,,,,,,,,
        2026-11-18T11:06:40.123Z,0,NVIDIA H100 80GB HBM3,85899345920,12884901889,71940702208,536870912,93,40,61,412.5,2,
        2026-11-18T11:06:40.123Z,1,NVIDIA H100 80GB HBM3,,,,,,,,,,not responding for 12 s
        2026-11-18T11:06:40.123Z,2,NVIDIA H100 80GB HBM3,,,,,,,,,0,GPU is lost
        2026-11-18T11:06:40.123Z,3,,,,,,,,,,,
        "#);
        let chosen = Columns::parse(Some("pid,command,gpu_index"), true).expect("fields");
        insta::assert_snapshot!(written(Format::Jsonl, chosen), @r#"
        {"command":"python train.py --tag \"a,b\"\n--lr=3e-4 µ","gpu_index":0,"pid":4242}
        {"command":null,"gpu_index":0,"pid":77}
        {"command":"python train.py --tag \"a,b\"\n--lr=3e-4 µ","gpu_index":0,"pid":4242}
        {"command":null,"gpu_index":0,"pid":77}
        "#);
    }
}
