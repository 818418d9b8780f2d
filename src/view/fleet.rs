//! The fleet snapshot (`once --remote`): every node's sample, or why it could not be read.

use std::fmt::Write as _;
use std::time::SystemTime;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::collect::remote::Node;
use crate::text::Paint;
use crate::units::fmt_bytes;

/// The version of `once --remote --json`'s schema (`docs/schema/fleet.schema.json`).
pub const SCHEMA_VERSION: u32 = 1;

/// The fleet as `once --remote --json` prints it.
pub struct FleetJson<'a> {
    pub timestamp: SystemTime,
    pub nodes: &'a [Node],
}

struct NodeJson<'a>(&'a Node);

impl Serialize for NodeJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.0;
        let mut m = s.serialize_struct("Node", 6)?;
        m.serialize_field("name", &n.endpoint.name)?;
        m.serialize_field(
            "endpoint",
            &format!("{}:{}", n.endpoint.host, n.endpoint.port),
        )?;
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
pub fn render(nodes: &[Node], paint: Paint, width: usize) -> String {
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
                "── {} ({}:{}) ──",
                crate::text::escape(&n.endpoint.name),
                n.endpoint.host,
                n.endpoint.port
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_fleet_reads_the_schema_once_writes() {
        assert_eq!(
            crate::collect::remote::SCHEMA,
            u64::from(super::super::once::SCHEMA_VERSION)
        );
    }
}
