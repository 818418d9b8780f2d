//! The fleet snapshot (`once --remote`): every node's sample, or why it could not be read.

use std::fmt::Write as _;
use std::time::SystemTime;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::model::fleet::{GpuState, NodeReading, PromNode};
use crate::text::Paint;
use crate::units::fmt_bytes;

/// The version of `once --remote --json`'s schema (`docs/schema/fleet.schema.json`).
pub const SCHEMA_VERSION: u32 = 1;

/// The fleet as `once --remote --json` prints it.
pub struct FleetJson<'a> {
    pub timestamp: SystemTime,
    pub nodes: &'a [NodeReading],
}

struct NodeJson<'a>(&'a NodeReading);

impl Serialize for NodeJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.0;
        let mut m = s.serialize_struct("Node", 6)?;
        m.serialize_field("name", &n.name)?;
        m.serialize_field("endpoint", &n.address)?;
        m.serialize_field("error", &n.error)?;
        m.serialize_field("took_ms", &(n.took.as_millis() as u64))?;
        m.serialize_field("sample", &n.sample.as_ref().map(super::once::to_json))?;
        m.end()
    }
}

impl Serialize for FleetJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("Fleet", 4)?;
        m.serialize_field("schema_version", &SCHEMA_VERSION)?;
        m.serialize_field(
            "timestamp",
            &humantime::format_rfc3339_millis(self.timestamp).to_string(),
        )?;
        let (read, failed) = self
            .nodes
            .iter()
            .fold((0u32, 0u32), |(r, f), n| match n.sample {
                Some(_) => (r + 1, f),
                None => (r, f + 1),
            });
        m.serialize_field(
            "totals",
            &serde_json::json!({"nodes": self.nodes.len(), "read": read, "unreadable": failed}),
        )?;
        m.serialize_field(
            "nodes",
            &self.nodes.iter().map(NodeJson).collect::<Vec<_>>(),
        )?;
        m.end()
    }
}

/// The fleet as text: a line of totals, then each node's `once` report under its name, or its
/// error.
pub fn render(nodes: &[NodeReading], paint: Paint, width: usize) -> String {
    let mut out = String::new();
    let (mut gpus, mut used, mut total, mut unread) = (0usize, 0u64, 0u64, 0usize);
    for n in nodes {
        match &n.sample {
            Some(s) => {
                gpus += s.devices.len();
                for d in &s.devices {
                    used += d.memory.used_bytes.unwrap_or(0);
                    total += d.memory.total_bytes.unwrap_or(0);
                }
            }
            None => unread += 1,
        }
    }
    let _ = writeln!(
        out,
        "{}",
        paint.bold(&format!(
            "{} node{}, {} read: {gpus} GPU{}, {} of {} used{}",
            nodes.len(),
            if nodes.len() == 1 { "" } else { "s" },
            nodes.len() - unread,
            if gpus == 1 { "" } else { "s" },
            fmt_bytes(used),
            fmt_bytes(total),
            if unread > 0 {
                format!(", {unread} unreadable")
            } else {
                String::new()
            }
        ))
    );
    for n in nodes {
        let _ = writeln!(
            out,
            "\n{}",
            paint.bold(&format!(
                "── {} ({}) ──",
                crate::text::escape(&n.name),
                n.address
            ))
        );
        match (&n.sample, &n.error) {
            (Some(s), _) => out.push_str(&super::once::render_width(s, paint, width)),
            (None, Some(e)) => {
                let _ = writeln!(
                    out,
                    "{}",
                    paint.red(&format!("not read: {}", crate::text::escape(e)))
                );
            }
            (None, None) => {
                let _ = writeln!(out, "not read");
            }
        }
    }
    out
}

/// The fleet as a Prometheus has it (`once --prometheus --json`).
pub struct PrometheusJson<'a> {
    pub timestamp: SystemTime,
    /// The query asked.
    pub query: &'a str,
    pub nodes: &'a [PromNode],
}

impl Serialize for PrometheusJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("Fleet", 6)?;
        m.serialize_field("schema_version", &SCHEMA_VERSION)?;
        m.serialize_field(
            "timestamp",
            &humantime::format_rfc3339_millis(self.timestamp).to_string(),
        )?;
        m.serialize_field("source", "prometheus")?;
        m.serialize_field("query", self.query)?;
        let down = self.nodes.iter().filter(|n| n.2.is_some()).count();
        m.serialize_field(
            "totals",
            &serde_json::json!({"nodes": self.nodes.len(), "down": down}),
        )?;
        let nodes: Vec<serde_json::Value> = self
            .nodes
            .iter()
            .map(|(name, instance, down, summary)| {
                serde_json::json!({
                    "name": name,
                    "instance": instance,
                    "error": down,
                    "summary": summary,
                })
            })
            .collect();
        m.serialize_field("nodes", &nodes)?;
        m.end()
    }
}

/// The fleet as a Prometheus has it, as text: totals, then a line per node (its state,
/// utilisation, memory, the largest free GPU, its top user) and a line per GPU.
pub fn render_summaries(nodes: &[PromNode], paint: Paint) -> String {
    let mut out = String::new();
    let gpus: usize = nodes.iter().map(|n| n.3.gpus.len()).sum();
    let (used, total) = nodes.iter().fold((0, 0), |(u, t), n| {
        let (nu, nt) = n.3.memory();
        (u + nu, t + nt)
    });
    let down = nodes.iter().filter(|n| n.2.is_some()).count();
    let _ = writeln!(
        out,
        "{}",
        paint.bold(&format!(
            "{} node{}{}: {gpus} GPU{}, {} of {} used",
            nodes.len(),
            if nodes.len() == 1 { "" } else { "s" },
            if down > 0 {
                format!(" ({down} down)")
            } else {
                String::new()
            },
            if gpus == 1 { "" } else { "s" },
            fmt_bytes(used),
            fmt_bytes(total),
        ))
    );
    for (name, instance, down, s) in nodes {
        let name = crate::text::escape(name);
        let head = format!("── {name} ({}) ──", crate::text::escape(instance));
        let _ = writeln!(out, "\n{}", paint.bold(&head));
        if let Some(e) = down {
            let _ = writeln!(
                out,
                "{}",
                paint.red(&format!("down: {}", crate::text::escape(e)))
            );
        }
        if let Some(t) = &s.top_user {
            let _ = writeln!(
                out,
                "top user {} ({})",
                crate::text::escape(&t.user),
                fmt_bytes(t.bytes)
            );
        }
        for g in &s.gpus {
            let opt = |b: Option<u64>| b.map_or_else(|| "N/A".to_owned(), fmt_bytes);
            let what = match &g.mig_profile {
                Some(p) => format!("[{}] MIG {}", g.index, crate::text::escape(p)),
                None => format!(
                    "[{}] {}",
                    g.index,
                    crate::text::escape(g.name.as_deref().unwrap_or("N/A"))
                ),
            };
            let state = match g.state {
                GpuState::Ok => String::new(),
                GpuState::Late | GpuState::Stalled => paint.yellow("  stalled"),
                GpuState::Failed => paint.red("  lost"),
            };
            let _ = writeln!(
                out,
                "{what}  {} / {} used, {} free, util {}{state}",
                opt(g.used_bytes),
                opt(g.total_bytes),
                opt(g.free_bytes),
                g.util_percent
                    .map_or_else(|| "N/A".to_owned(), |u| format!("{u}%")),
            );
        }
    }
    out
}
