//! A node of the fleet in a few hundred bytes: what one row of the fleet view shows, made from
//! a whole sample (by `serve`, for `/api/v1/summary`, or by the reader when a node's gpumon
//! has no such endpoint), and the rows' sorting and filtering.
//!
//! A full sample of 8 GPUs × 40 processes is 168 KiB of JSON; a row needs a few figures per
//! GPU and the node's top user. Reading summaries keeps the fleet's refresh proportional to
//! the rows, not to every process of every node.

use serde::{Deserialize, Serialize};

use super::Sample;

/// The `/api/v1/summary` schema version this gpumon writes and reads.
pub const SUMMARY_VERSION: u64 = 1;

/// One node of the fleet read once, whole (`once --remote`, `pick --remote`): what it is
/// called, where it was read (`host:port`), its sample or why it could not be read, and how
/// long the answer (or the failure) took. No credentials: what a view may show.
#[derive(Debug, Clone)]
pub struct NodeReading {
    pub name: String,
    pub address: String,
    pub sample: Option<Sample>,
    pub error: Option<String>,
    pub took: std::time::Duration,
}

/// A node as a Prometheus has it: its name (the `Hostname` label where dcgm-exporter gives
/// one, else the target), its scrape target (`instance`), why it is down, and its summary.
pub type PromNode = (String, String, Option<String>, NodeSummary);

/// One node as the fleet view shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeSummary {
    pub schema_version: u64,
    pub hostname: Option<String>,
    /// The node's sample could not read its GPUs at all (the driver failed).
    pub error: Option<String>,
    pub gpus: Vec<GpuSummary>,
    /// The user holding the most GPU memory on the node, with what they hold.
    pub top_user: Option<TopUser>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopUser {
    pub user: String,
    pub bytes: u64,
}

/// One GPU (or MIG instance: it is a GPU to a job) of a node. Unknown is `None`, never 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuSummary {
    pub index: u32,
    /// `MIG-…` for an instance.
    pub uuid: Option<String>,
    pub name: Option<String>,
    /// A MIG instance's profile (`3g.40gb`); `None` for a whole GPU.
    #[serde(default)]
    pub mig_profile: Option<String>,
    pub total_bytes: Option<u64>,
    pub used_bytes: Option<u64>,
    pub free_bytes: Option<u64>,
    /// NVML v2's driver reserve.
    pub reserved_bytes: Option<u64>,
    /// Held by listed processes that are computing (or whose %SM is unknown).
    pub busy_bytes: Option<u64>,
    /// Held by listed processes at 0% SM: memory an idle job keeps from others.
    pub idle_bytes: Option<u64>,
    /// Used, but by no listed process.
    pub unattributed_bytes: Option<u64>,
    pub util_percent: Option<u32>,
    pub processes: u32,
    pub state: GpuState,
    /// The last Xid seen on it.
    pub last_xid: Option<u32>,
}

/// Whether a GPU's figures are fresh.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuState {
    #[default]
    Ok,
    /// Slow to answer this time; the figures are its last good ones.
    Late,
    /// Not answering past its deadline (a hung driver call); its last good figures.
    Stalled,
    /// Lost or failed: no figures.
    Failed,
}

impl GpuSummary {
    /// Whether it runs nothing, or only processes at 0% SM (a GPU with processes whose
    /// memory is unknown is not called idle).
    pub fn idle(&self) -> bool {
        self.state != GpuState::Failed
            && match self.busy_bytes {
                Some(b) => b == 0,
                None => self.processes == 0,
            }
    }
}

impl NodeSummary {
    /// What the fleet shows of `sample`: each GPU, or each MIG instance of a GPU split into
    /// them.
    pub fn of(sample: &Sample) -> NodeSummary {
        let mut gpus = Vec::new();
        let mut users: std::collections::BTreeMap<&str, u64> = Default::default();
        for d in &sample.devices {
            for p in &d.processes {
                if let (Some(u), Some(b)) = (p.user.as_deref(), p.gpu_memory_bytes) {
                    let sum = users.entry(u).or_default();
                    *sum = sum.saturating_add(b);
                }
            }
            if d.mig.is_empty() {
                gpus.push(gpu(d, None));
            } else {
                for m in &d.mig {
                    let inst = m.as_device(d);
                    gpus.push(gpu(&inst, m.profile.clone()));
                }
            }
        }
        let top_user = users
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))
            .map(|(user, bytes)| TopUser {
                user: user.to_owned(),
                bytes,
            });
        NodeSummary {
            schema_version: SUMMARY_VERSION,
            hostname: sample.hostname.clone(),
            error: sample.error.clone(),
            gpus,
            top_user,
        }
    }

    /// Free memory of the GPU with the most, among those with figures.
    pub fn largest_free(&self) -> Option<u64> {
        self.gpus
            .iter()
            .filter(|g| g.state != GpuState::Failed)
            .filter_map(|g| g.free_bytes)
            .max()
    }

    /// Used and total memory over the GPUs with figures.
    pub fn memory(&self) -> (u64, u64) {
        self.gpus
            .iter()
            .filter(|g| g.state != GpuState::Failed)
            .fold((0, 0), |(u, t), g| {
                (
                    u.saturating_add(g.used_bytes.unwrap_or(0)),
                    t.saturating_add(g.total_bytes.unwrap_or(0)),
                )
            })
    }

    /// The mean utilisation of the GPUs that report one.
    pub fn mean_util(&self) -> Option<u32> {
        let known: Vec<u64> = self
            .gpus
            .iter()
            .filter_map(|g| g.util_percent.map(u64::from))
            .collect();
        let n = u64::try_from(known.len()).ok().filter(|n| *n > 0)?;
        u32::try_from(known.iter().sum::<u64>() / n).ok()
    }

    pub fn stalled(&self) -> usize {
        self.gpus
            .iter()
            .filter(|g| matches!(g.state, GpuState::Stalled | GpuState::Late))
            .count()
    }

    pub fn failed(&self) -> usize {
        self.gpus
            .iter()
            .filter(|g| g.state == GpuState::Failed)
            .count()
    }
}

fn gpu(d: &super::Device, mig_profile: Option<String>) -> GpuSummary {
    let state = if d.stalled {
        GpuState::Stalled
    } else if d.late {
        GpuState::Late
    } else if d.error.is_some() {
        GpuState::Failed
    } else {
        GpuState::Ok
    };
    let readings = d.has_readings();
    let known = |v: Option<u64>| v.filter(|_| readings);
    // Per-process memory is unknown on some drivers (WDDM, containers): then the split is
    // unknown, not zero.
    let (busy, idle) = d
        .processes
        .iter()
        .try_fold((0u64, 0u64), |(busy, idle), p| {
            let b = p.gpu_memory_bytes?;
            Some(if p.sm_percent == Some(0) {
                (busy, idle.saturating_add(b))
            } else {
                (busy.saturating_add(b), idle)
            })
        })
        .filter(|_| readings)
        .unzip();
    GpuSummary {
        index: d.index,
        uuid: d.uuid.clone(),
        name: d.name.clone(),
        mig_profile,
        total_bytes: known(d.memory.total_bytes),
        used_bytes: known(d.memory.used_bytes),
        free_bytes: known(d.memory.free_bytes),
        reserved_bytes: known(d.memory.reserved_bytes),
        busy_bytes: busy,
        idle_bytes: idle,
        unattributed_bytes: d.unattributed_bytes(),
        util_percent: d.utilization.gpu_percent.filter(|_| readings),
        processes: u32::try_from(d.processes.len()).unwrap_or(u32::MAX),
        state,
        last_xid: d.health.xids.iter().max_by_key(|x| x.last).map(|x| x.xid),
    }
}

/// What the fleet view's rows are sorted by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SortBy {
    /// As the nodes were given.
    #[default]
    Given,
    Name,
    /// The largest free GPU, most first.
    Free,
    /// Memory used, most first.
    Used,
    /// Mean utilisation, most first.
    Util,
    /// Trouble first: unreadable, then failed or stalled GPUs.
    Trouble,
}

impl SortBy {
    pub const ALL: [SortBy; 6] = [
        SortBy::Given,
        SortBy::Name,
        SortBy::Free,
        SortBy::Used,
        SortBy::Util,
        SortBy::Trouble,
    ];

    pub fn label(self) -> &'static str {
        match self {
            SortBy::Given => "as given",
            SortBy::Name => "name",
            SortBy::Free => "largest free GPU",
            SortBy::Used => "memory used",
            SortBy::Util => "utilisation",
            SortBy::Trouble => "trouble first",
        }
    }

    pub fn next(self) -> SortBy {
        let i = SortBy::ALL.iter().position(|s| *s == self).unwrap_or(0);
        SortBy::ALL[(i + 1) % SortBy::ALL.len()]
    }
}

/// One row to sort and filter: the node's name, its position as given, and its summary
/// (`None` while it has never been read).
pub struct RowRef<'a> {
    pub name: &'a str,
    pub given: usize,
    pub summary: Option<&'a NodeSummary>,
    /// It could not be read this time.
    pub unreadable: bool,
}

/// The order to show `rows` in, by `by` (ties by the order given).
pub fn order(rows: &[RowRef<'_>], by: SortBy) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..rows.len()).collect();
    let key_u64 = |r: &RowRef<'_>, f: &dyn Fn(&NodeSummary) -> Option<u64>| {
        r.summary.and_then(f).map_or(-1i128, i128::from)
    };
    idx.sort_by(|&a, &b| {
        let (ra, rb) = (&rows[a], &rows[b]);
        let ord = match by {
            SortBy::Given => std::cmp::Ordering::Equal,
            SortBy::Name => ra.name.cmp(rb.name),
            SortBy::Free => {
                key_u64(rb, &|s| s.largest_free()).cmp(&key_u64(ra, &|s| s.largest_free()))
            }
            SortBy::Used => {
                key_u64(rb, &|s| Some(s.memory().0)).cmp(&key_u64(ra, &|s| Some(s.memory().0)))
            }
            SortBy::Util => key_u64(rb, &|s| s.mean_util().map(u64::from))
                .cmp(&key_u64(ra, &|s| s.mean_util().map(u64::from))),
            SortBy::Trouble => trouble(rb).cmp(&trouble(ra)),
        };
        ord.then(ra.given.cmp(&rb.given))
    });
    idx
}

fn trouble(r: &RowRef<'_>) -> (bool, usize) {
    let s = r.summary;
    (
        r.unreadable || s.is_none(),
        s.map_or(0, |s| {
            s.failed() + s.stalled() + usize::from(s.error.is_some())
        }),
    )
}

/// A filter on the fleet's rows, as typed: words that must all hold. `free>=40G` (a GPU with
/// at least that much free), `idle` (a node with an idle GPU), `down` (unreadable or with a
/// failed or stalled GPU), `user:NAME` (the top user), anything else a part of the node's
/// name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    terms: Vec<Term>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Term {
    FreeAtLeast(u64),
    Idle,
    Down,
    User(String),
    Name(String),
}

impl Filter {
    /// Reads a typed filter; `Err` names the word that is not one.
    pub fn parse(text: &str) -> Result<Filter, String> {
        let mut terms = Vec::new();
        for word in text.split_whitespace() {
            let lower = word.to_ascii_lowercase();
            let size = ["free>=", "free>", "free:"]
                .iter()
                .find(|p| lower.starts_with(*p))
                .map(|p| &word[p.len()..]);
            let term = if let Some(size) = size {
                Term::FreeAtLeast(
                    crate::units::parse_size(size)
                        .ok_or_else(|| format!("{word}: not a size (free>=40G)"))?,
                )
            } else if lower == "idle" {
                Term::Idle
            } else if lower == "down" {
                Term::Down
            } else if let Some(u) = word.strip_prefix("user:") {
                Term::User(u.to_owned())
            } else {
                Term::Name(lower)
            };
            terms.push(term);
        }
        Ok(Filter { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    pub fn matches(&self, row: &RowRef<'_>) -> bool {
        self.terms.iter().all(|t| match t {
            Term::Name(n) => row.name.to_ascii_lowercase().contains(n.as_str()),
            Term::Down => trouble(row) != (false, 0),
            Term::FreeAtLeast(b) => {
                !row.unreadable && row.summary.and_then(NodeSummary::largest_free) >= Some(*b)
            }
            Term::Idle => {
                !row.unreadable && row.summary.is_some_and(|s| s.gpus.iter().any(|g| g.idle()))
            }
            Term::User(u) => row
                .summary
                .and_then(|s| s.top_user.as_ref())
                .is_some_and(|t| t.user == *u),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Device, Memory, Process, ProcessKind};

    const GIB: u64 = 1 << 30;

    fn process(pid: u32, user: &str, gib: u64, sm: Option<u32>) -> Process {
        let mut p = Process::from_nvml(pid, ProcessKind::Compute, Some(gib * GIB));
        p.user = Some(user.into());
        p.sm_percent = sm;
        p
    }

    fn device(index: u32, used: u64, processes: Vec<Process>) -> Device {
        Device {
            index,
            memory: Memory {
                total_bytes: Some(80 * GIB),
                used_bytes: Some(used * GIB),
                free_bytes: Some((80 - used) * GIB),
                reserved_bytes: None,
            },
            processes,
            ..Device::default()
        }
    }

    fn sample(devices: Vec<Device>) -> Sample {
        Sample {
            timestamp: std::time::SystemTime::UNIX_EPOCH,
            hostname: Some("n1".into()),
            source: "nvml",
            driver_version: None,
            cuda_version: None,
            devices,
            error: None,
            host: None,
        }
    }

    #[test]
    fn a_summary_splits_busy_idle_and_unattributed_memory_and_names_the_top_user() {
        let s = sample(vec![
            device(
                0,
                50,
                vec![
                    process(10, "ana", 30, Some(80)),
                    process(11, "bob", 12, Some(0)),
                ],
            ),
            device(1, 20, vec![process(12, "bob", 20, Some(0))]),
            device(2, 0, vec![]),
        ]);
        let n = NodeSummary::of(&s);
        let g0 = &n.gpus[0];
        assert_eq!(g0.busy_bytes, Some(30 * GIB));
        assert_eq!(g0.idle_bytes, Some(12 * GIB));
        assert_eq!(g0.unattributed_bytes, Some(8 * GIB));
        assert!(!g0.idle());
        assert!(n.gpus[1].idle(), "only a 0% SM process");
        assert!(n.gpus[2].idle());
        // bob holds 32 GiB across two GPUs, ana 30.
        assert_eq!(
            n.top_user,
            Some(TopUser {
                user: "bob".into(),
                bytes: 32 * GIB
            })
        );
        assert_eq!(n.largest_free(), Some(80 * GIB));
        assert_eq!(n.memory(), (70 * GIB, 240 * GIB));
    }

    #[test]
    fn unknown_process_memory_is_unknown_not_idle() {
        let mut p = process(10, "ana", 0, None);
        p.gpu_memory_bytes = None;
        let n = NodeSummary::of(&sample(vec![device(0, 10, vec![p])]));
        assert_eq!(n.gpus[0].busy_bytes, None);
        assert_eq!(n.gpus[0].unattributed_bytes, None);
        assert!(!n.gpus[0].idle());
    }

    #[test]
    fn a_lost_gpu_has_no_figures_and_a_stalled_one_keeps_its_last() {
        let lost = Device::failed(0, "GPU is lost".into());
        let mut stalled = device(1, 10, vec![]);
        stalled.stalled = true;
        stalled.error = Some("not answering for 5 s".into());
        let n = NodeSummary::of(&sample(vec![lost, stalled]));
        assert_eq!(n.gpus[0].state, GpuState::Failed);
        assert_eq!(n.gpus[0].total_bytes, None);
        assert!(!n.gpus[0].idle());
        assert_eq!(n.gpus[1].state, GpuState::Stalled);
        assert_eq!(n.gpus[1].used_bytes, Some(10 * GIB));
        assert_eq!((n.failed(), n.stalled()), (1, 1));
        assert_eq!(n.largest_free(), Some(70 * GIB));
    }

    #[test]
    fn rows_sort_and_filter() {
        let a = NodeSummary::of(&sample(vec![device(
            0,
            70,
            vec![process(1, "ana", 70, Some(90))],
        )]));
        let b = NodeSummary::of(&sample(vec![device(0, 10, vec![])]));
        let rows = [
            RowRef {
                name: "b-node",
                given: 0,
                summary: Some(&a),
                unreadable: false,
            },
            RowRef {
                name: "a-node",
                given: 1,
                summary: Some(&b),
                unreadable: false,
            },
            RowRef {
                name: "c-node",
                given: 2,
                summary: None,
                unreadable: true,
            },
        ];
        assert_eq!(order(&rows, SortBy::Given), [0, 1, 2]);
        assert_eq!(order(&rows, SortBy::Name), [1, 0, 2]);
        assert_eq!(order(&rows, SortBy::Free), [1, 0, 2]);
        assert_eq!(order(&rows, SortBy::Used), [0, 1, 2]);
        assert_eq!(order(&rows, SortBy::Trouble)[0], 2);
        let keep = |f: &str| -> Vec<&str> {
            let f = Filter::parse(f).expect("filter");
            rows.iter()
                .filter(|r| f.matches(r))
                .map(|r| r.name)
                .collect()
        };
        assert_eq!(keep("free>=40G"), ["a-node"]);
        assert_eq!(keep("free>=5GiB"), ["b-node", "a-node"]);
        assert_eq!(keep("idle"), ["a-node"]);
        assert_eq!(keep("down"), ["c-node"]);
        assert_eq!(keep("user:ana"), ["b-node"]);
        assert_eq!(keep("A-NO"), ["a-node"]);
        assert_eq!(keep("node free>=40G"), ["a-node"]);
        assert_eq!(keep(""), ["b-node", "a-node", "c-node"]);
        assert!(Filter::parse("free>=lots").is_err());
    }

    #[test]
    fn the_summary_round_trips_through_json() {
        let n = NodeSummary::of(&sample(vec![device(
            0,
            10,
            vec![process(1, "ana", 10, None)],
        )]));
        let text = serde_json::to_string(&n).expect("json");
        assert!(text.len() < 1024, "{text}");
        let back: NodeSummary = serde_json::from_str(&text).expect("json");
        assert_eq!(back, n);
    }
}
