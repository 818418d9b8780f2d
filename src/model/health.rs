//! A GPU's health beside its memory: Xid errors (from NVML's event API), ECC error counts,
//! remapped rows and the clock event (throttle) reasons, with NVIDIA's Xid catalogue to say
//! what an Xid means and what the operator should do.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::time::SystemTime;

/// Each part is `None` where it was not read, or the GPU does not support it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Health {
    /// Xid errors seen since gpumon began watching this GPU, one entry per Xid number
    /// (ascending), with its count and the time of the last one.
    #[serde(default)]
    pub xids: Vec<XidCount>,
    /// Whether Xid errors are being watched on this GPU (`once` does not watch: an Xid is
    /// only reported to a watcher registered before it).
    #[serde(default)]
    pub xids_watched: bool,
    /// Why Xid errors are not being watched on this GPU ("not supported" on GPUs and drivers
    /// without the event API); `None` while they are, or where nobody asked.
    #[serde(default)]
    pub events_error: Option<String>,
    #[serde(default)]
    pub ecc: Option<EccCounts>,
    #[serde(default)]
    pub remapped_rows: Option<RemappedRows>,
    /// The clock event (throttle) reasons in force, by name (`sw_power_cap`,
    /// `hw_slowdown`, …; `gpu_idle` is the normal state of an idle GPU).
    #[serde(
        default,
        serialize_with = "reasons_out",
        deserialize_with = "reasons_in"
    )]
    pub clock_event_reasons: Option<u64>,
}

/// How often one Xid occurred.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct XidCount {
    pub xid: u32,
    pub count: u64,
    /// When the last one arrived.
    #[serde(
        serialize_with = "super::rfc3339",
        deserialize_with = "super::from_rfc3339"
    )]
    pub last: SystemTime,
    /// The MIG GPU instance the last one was tied to, if any.
    #[serde(default)]
    pub gpu_instance_id: Option<u32>,
}

/// `nvmlDeviceGetTotalEccErrors`: volatile counts since the driver loaded, aggregate over the
/// GPU's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EccCounts {
    pub volatile_corrected: Option<u64>,
    pub volatile_uncorrected: Option<u64>,
    pub aggregate_corrected: Option<u64>,
    pub aggregate_uncorrected: Option<u64>,
}

/// `nvmlDeviceGetRemappedRows` (A100 and later): rows remapped for correctable and
/// uncorrectable errors, a remapping waiting for the next GPU reset, and a remapping that
/// failed (the GPU needs service).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemappedRows {
    pub corrected: u32,
    pub uncorrected: u32,
    pub pending: bool,
    pub failed: bool,
}

impl Health {
    /// The most recent Xid.
    pub fn last_xid(&self) -> Option<&XidCount> {
        self.xids.iter().max_by_key(|x| x.last)
    }

    /// Whether nothing was read at all (a view can leave the health line out).
    pub fn is_empty(&self) -> bool {
        self == &Health::default()
    }

    /// Records one Xid at `at`.
    pub fn add_xid(&mut self, xid: u32, at: SystemTime, gpu_instance_id: Option<u32>) {
        match self.xids.binary_search_by_key(&xid, |x| x.xid) {
            Ok(i) => {
                let x = &mut self.xids[i];
                x.count += 1;
                x.last = x.last.max(at);
                x.gpu_instance_id = gpu_instance_id;
            }
            Err(i) => self.xids.insert(
                i,
                XidCount {
                    xid,
                    count: 1,
                    last: at,
                    gpu_instance_id,
                },
            ),
        }
    }

    /// The throttling reasons in force that slow the GPU down (idle, application clocks and
    /// the display clock are not slowdowns).
    pub fn slowdowns(&self) -> Vec<&'static str> {
        reason_names(self.clock_event_reasons.unwrap_or(0) & SLOWDOWNS)
    }
}

/// One thing a view should say about a GPU's health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub text: String,
    /// The GPU needs an operator (reset, reboot, service), not only the application.
    pub critical: bool,
}

impl Health {
    /// What to say about this GPU, most important first: the last Xid with its age, meaning
    /// and the catalogue's action; a failed or pending row remapping; uncorrected ECC errors
    /// since boot; the slowdowns in force. Empty for a healthy GPU.
    pub fn notes(&self, now: SystemTime) -> Vec<Note> {
        let mut notes = Vec::new();
        if let Some(x) = self.last_xid() {
            let age = now.duration_since(x.last).map_or(0, |a| a.as_secs());
            let count: u64 = self.xids.iter().map(|x| x.count).sum();
            let more = if count > 1 {
                format!(" ({count} Xids since start)")
            } else {
                String::new()
            };
            let mig = x
                .gpu_instance_id
                .map_or(String::new(), |gi| format!(" (MIG GI {gi})"));
            let age = crate::units::fmt_age(age);
            notes.push(match xid_info(x.xid) {
                Some(info) => Note {
                    text: format!(
                        "Xid {}{mig} {age} ago: {} → {}{more}",
                        x.xid,
                        info.meaning,
                        info.action.describe()
                    ),
                    critical: !matches!(info.action, XidAction::RestartApp | XidAction::None),
                },
                None => Note {
                    text: format!(
                        "Xid {}{mig} {age} ago (see NVIDIA's Xid catalogue){more}",
                        x.xid
                    ),
                    critical: false,
                },
            });
        }
        if let Some(r) = self.remapped_rows {
            if r.failed {
                notes.push(Note {
                    text: "row remapping failed: the GPU needs service".into(),
                    critical: true,
                });
            } else if r.pending {
                notes.push(Note {
                    text: "row remapping pending: reset the GPU to apply it".into(),
                    critical: false,
                });
            }
        }
        if let Some(n) = self
            .ecc
            .and_then(|e| e.volatile_uncorrected)
            .filter(|n| *n > 0)
        {
            notes.push(Note {
                text: format!(
                    "{n} uncorrected ECC error{} since boot",
                    if n == 1 { "" } else { "s" }
                ),
                critical: true,
            });
        }
        let slow = self.slowdowns();
        if !slow.is_empty() {
            notes.push(Note {
                text: format!("throttled: {}", slow.join(", ")),
                critical: false,
            });
        }
        notes
    }
}

impl Health {
    /// A word or two for a one-line view: "Xid 79", "remap failed", "remap pending",
    /// "ECC", "throttled"; and whether the GPU needs an operator.
    pub fn flag(&self) -> Option<(String, bool)> {
        if let Some(x) = self.last_xid() {
            let critical = xid_info(x.xid)
                .is_some_and(|i| !matches!(i.action, XidAction::RestartApp | XidAction::None));
            return Some((format!("Xid {}", x.xid), critical));
        }
        match self.remapped_rows {
            Some(r) if r.failed => return Some(("remap failed".into(), true)),
            Some(r) if r.pending => return Some(("remap pending".into(), false)),
            _ => {}
        }
        if self
            .ecc
            .and_then(|e| e.volatile_uncorrected)
            .is_some_and(|n| n > 0)
        {
            return Some(("ECC".into(), true));
        }
        (!self.slowdowns().is_empty()).then(|| ("throttled".to_owned(), false))
    }
}

/// NVML's clock event reasons, by bit (`nvmlClocksEventReason*`).
pub const CLOCK_REASONS: &[(u64, &str)] = &[
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
];

/// The reasons that mean the GPU runs slower than it could: power cap, hardware slowdown,
/// thermal slowdowns, power brake.
pub const SLOWDOWNS: u64 = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

/// The names of the bits set in `mask`; bits NVML may add later are named by value.
pub fn reason_names(mask: u64) -> Vec<&'static str> {
    CLOCK_REASONS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, name)| *name)
        .collect()
}

fn reasons_out<S: Serializer>(mask: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match mask {
        Some(m) => s.collect_seq(reason_names(*m)),
        None => s.serialize_none(),
    }
}

fn reasons_in<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let names = Option::<Vec<String>>::deserialize(d)?;
    Ok(names.map(|names| {
        names
            .iter()
            .filter_map(|n| CLOCK_REASONS.iter().find(|(_, name)| name == n))
            .fold(0, |acc, (bit, _)| acc | bit)
    }))
}

/// What the operator should do, as NVIDIA's Xid catalogue buckets it ("Resolution Bucket
/// (Immediate Action)").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XidAction {
    /// Only the application that hit it is affected: restart it (and check it, for an
    /// application fault).
    RestartApp,
    /// Drain the GPU and reset it (`nvidia-smi -r`), or reboot the node.
    ResetGpu,
    /// Reboot (power-cycle) the node.
    RebootNode,
    /// Nothing to do now; follows another error, or is informational.
    None,
    /// Check `nvidia-smi -q` and contact NVIDIA support if it repeats.
    ContactSupport,
}

impl XidAction {
    pub fn describe(self) -> &'static str {
        match self {
            XidAction::RestartApp => "restart the application",
            XidAction::ResetGpu => "drain and reset the GPU (nvidia-smi -r)",
            XidAction::RebootNode => "drain and reboot the node",
            XidAction::None => "no action (follows another error)",
            XidAction::ContactSupport => "contact NVIDIA support if it repeats",
        }
    }
}

/// One Xid's meaning and action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XidInfo {
    pub meaning: &'static str,
    pub action: XidAction,
}

/// NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors), for the Xids an operator of
/// datacenter GPUs meets; `None` for the others (the catalogue has the whole list).
pub fn xid_info(xid: u32) -> Option<XidInfo> {
    use XidAction::*;
    let (meaning, action) = match xid {
        8 => ("GPU stopped processing (channel idle timeout)", RestartApp),
        13 => (
            "graphics engine exception (usually an application fault)",
            RestartApp,
        ),
        31 => (
            "GPU memory page fault (usually an application's bad address)",
            RestartApp,
        ),
        32 => ("invalid or corrupted push buffer stream", RestartApp),
        38 => ("driver firmware error", ResetGpu),
        43 => (
            "GPU stopped an application's channel (application fault)",
            RestartApp,
        ),
        45 => ("preemptive cleanup after earlier errors", None),
        46 => ("GPU stopped processing", ResetGpu),
        48 => (
            "double-bit ECC error (uncorrectable memory error)",
            ResetGpu,
        ),
        61 => ("internal micro-controller breakpoint/warning", ResetGpu),
        62 => ("internal micro-controller halt", ResetGpu),
        63 => (
            "row remapping recorded: applies at the next GPU reset",
            ResetGpu,
        ),
        64 => (
            "row remapping failed (ECC page retirement failure)",
            ResetGpu,
        ),
        69 => ("graphics engine class error", RestartApp),
        74 => ("NVLink error", ResetGpu),
        79 => ("GPU has fallen off the bus", RebootNode),
        92 => ("high single-bit ECC error rate", ContactSupport),
        94 => (
            "contained ECC error (only the apps on the bad memory)",
            RestartApp,
        ),
        95 => ("uncontained ECC error (every app on the GPU)", ResetGpu),
        109 => ("context switch timeout", RestartApp),
        119 => ("GSP RPC timeout (the GPU's system processor)", ResetGpu),
        120 => ("GSP error (the GPU's system processor)", ResetGpu),
        121 => ("C2C (chip-to-chip) link error", ResetGpu),
        140 => ("unrecovered ECC error", ResetGpu),
        154 => (
            "GPU recovery action changed (see nvidia-smi -q)",
            ContactSupport,
        ),
        _ => return Option::None,
    };
    Some(XidInfo { meaning, action })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn xids_are_counted_per_number_and_the_last_is_the_latest() {
        let t = |s| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        let mut h = Health::default();
        h.add_xid(79, t(10), None);
        h.add_xid(13, t(20), Some(1));
        h.add_xid(79, t(30), None);
        assert_eq!(
            h.xids.iter().map(|x| (x.xid, x.count)).collect::<Vec<_>>(),
            vec![(13, 1), (79, 2)]
        );
        assert_eq!(h.last_xid().map(|x| x.xid), Some(79));
        assert!(!h.is_empty());
        assert!(Health::default().is_empty());
    }

    #[test]
    fn reasons_by_name_and_back() {
        let h = Health {
            clock_event_reasons: Some(0x1 | 0x4 | 0x40),
            ..Health::default()
        };
        assert_eq!(h.slowdowns(), vec!["sw_power_cap", "hw_thermal_slowdown"]);
        let json = serde_json::to_value(&h).expect("json");
        assert_eq!(
            json["clock_event_reasons"],
            serde_json::json!(["gpu_idle", "sw_power_cap", "hw_thermal_slowdown"])
        );
        let back: Health = serde_json::from_value(json).expect("back");
        assert_eq!(back, h);
    }

    #[test]
    fn the_catalogue_names_the_critical_xids() {
        for xid in [13, 31, 43, 48, 63, 64, 79, 94, 95, 119, 120] {
            assert!(xid_info(xid).is_some(), "Xid {xid}");
        }
        assert_eq!(xid_info(79).map(|i| i.action), Some(XidAction::RebootNode));
        assert_eq!(xid_info(94).map(|i| i.action), Some(XidAction::RestartApp));
        assert_eq!(xid_info(95).map(|i| i.action), Some(XidAction::ResetGpu));
        assert_eq!(xid_info(1234), None);
    }
}
