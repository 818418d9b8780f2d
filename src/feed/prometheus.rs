//! The fleet read from a Prometheus (`--prometheus URL`): one instant query a refresh for
//! gpumon's metric family and dcgm-exporter's, grouped by scrape target into the rows the
//! fleet shows. A fleet that already runs dcgm-exporter works unchanged; gpumon's own series,
//! where a node has them, add the memory's split and the top user.
//!
//! A node opened from the fleet is read from the same Prometheus: one instant query a refresh
//! for its GPUs and its processes ([`Source::read_node`]), and once, when it is opened, a
//! range query for the history its charts start with ([`Source::read_history`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde::Deserialize;

use super::remote::{answer, request, Client, Endpoint};
use crate::metric_names::{dcgm, ours, UP};
use crate::model::admit::unix_time;
use crate::model::fleet::{GpuState, GpuSummary, NodeSummary, PromNode, TopUser, SUMMARY_VERSION};
use crate::model::owner::{Owner, OwnerKind};
use crate::model::{
    AllocatorStats, Device, Memory, MigDevice, Process, ProcessKind, Sample, Utilization,
};

const MIB: f64 = 1_048_576.0;
/// The most of a Prometheus's own error text that a message quotes.
const MAX_ERROR: usize = 512;

/// gpumon's series a refresh of the fleet reads, by name.
const NAMES: &[&str] = &[
    UP,
    ours::BUILD_INFO,
    ours::GPU_INFO,
    ours::GPU_UP,
    ours::GPU_STALLED,
    ours::MEMORY_TOTAL_BYTES,
    ours::MEMORY_USED_BYTES,
    ours::MEMORY_FREE_BYTES,
    ours::MEMORY_RESERVED_BYTES,
    ours::MEMORY_UNATTRIBUTED_BYTES,
    ours::IDLE_HELD_BYTES,
    ours::GPU_UTILIZATION_RATIO,
    ours::PROCESSES,
    ours::USER_MEMORY_BYTES,
];

/// dcgm-exporter's, read only from targets without gpumon's (a gpumon node exports both).
const DCGM_NAMES: &[&str] = &[
    dcgm::FB_USED,
    dcgm::FB_FREE,
    dcgm::FB_RESERVED,
    dcgm::GPU_UTIL,
];

/// dcgm-exporter's memory figures, in MiB.
const DCGM_MIB: &[&str] = &[dcgm::FB_USED, dcgm::FB_FREE, dcgm::FB_RESERVED];

/// What an opened node's view reads each refresh: its GPUs, instances and processes.
const NODE_NAMES: &[&str] = &[
    ours::BUILD_INFO,
    ours::GPU_INFO,
    ours::GPU_UP,
    ours::GPU_STALLED,
    ours::GPU_DATA_AGE_SECONDS,
    ours::MEMORY_TOTAL_BYTES,
    ours::MEMORY_USED_BYTES,
    ours::MEMORY_FREE_BYTES,
    ours::MEMORY_RESERVED_BYTES,
    ours::GPU_UTILIZATION_RATIO,
    ours::MEMORY_COPY_UTILIZATION_RATIO,
    ours::TEMPERATURE_CELSIUS,
    ours::POWER_WATTS,
    ours::POWER_LIMIT_WATTS,
    ours::FAN_RATIO,
    ours::PROCESS_MEMORY_BYTES,
    ours::ALLOCATOR_ALLOCATED_BYTES,
    ours::ALLOCATOR_RESERVED_BYTES,
    ours::ALLOCATOR_ALLOCATED_PEAK_BYTES,
    ours::ALLOCATOR_RESERVED_PEAK_BYTES,
    dcgm::FB_USED,
    dcgm::FB_FREE,
    dcgm::FB_RESERVED,
    dcgm::GPU_UTIL,
    dcgm::MEM_COPY_UTIL,
    dcgm::GPU_TEMP,
    dcgm::POWER_USAGE,
];

/// What its history is made of: memory used and utilisation, and whether the GPU answered.
const HISTORY_NAMES: &[&str] = &[
    ours::GPU_UP,
    ours::GPU_STALLED,
    ours::MEMORY_USED_BYTES,
    ours::GPU_UTILIZATION_RATIO,
    dcgm::FB_USED,
    dcgm::GPU_UTIL,
];

/// The most readings a history query asks for per series: the step grows with the window.
const HISTORY_POINTS: u64 = 2000;

/// A Prometheus to read, and the series to read there.
#[derive(Debug, Clone)]
pub struct Source {
    pub endpoint: Endpoint,
    /// The path Prometheus is served under (`--web.route-prefix`), without the final `/`.
    pub prefix: String,
    /// Label matchers every series must also match, as typed inside `{…}`.
    pub matchers: String,
}

impl Source {
    /// `http[s]://[user:password@]host:port[/prefix]` and a selector like `{job="gpumon"}`.
    pub fn parse(url: &str, selector: Option<&str>) -> Result<Source, String> {
        let url = url.trim();
        let scheme_end = url.find("://").map_or(0, |i| i + 3);
        let (authority, prefix) = match url[scheme_end..].find('/') {
            Some(i) => url.split_at(scheme_end + i),
            None => (url, ""),
        };
        let endpoint = Endpoint::parse(authority).map_err(|e| format!("--prometheus: {e}"))?;
        let matchers = match selector.map(str::trim) {
            None | Some("") => String::new(),
            Some(s) => {
                let inner = s
                    .strip_prefix('{')
                    .and_then(|s| s.strip_suffix('}'))
                    .ok_or_else(|| {
                        format!(
                            "--selector: {s}: give label matchers in braces: {{job=\"gpumon\"}}"
                        )
                    })?;
                inner.trim().trim_end_matches(',').to_owned()
            }
        };
        Ok(Source {
            endpoint,
            prefix: prefix.trim_end_matches('/').to_owned(),
            matchers,
        })
    }

    /// `{__name__=~"names",<instance>,<the selector>}`.
    fn selector(&self, names: &[&str], instance: Option<&str>) -> String {
        let mut q = format!("{{__name__=~\"{}\"", names.join("|"));
        if let Some(i) = instance {
            q.push_str(",instance=\"");
            q.push_str(&promql_string(i));
            q.push('"');
        }
        if !self.matchers.is_empty() {
            q.push(',');
            q.push_str(&self.matchers);
        }
        q.push('}');
        q
    }

    /// The PromQL of a refresh: gpumon's series, and dcgm-exporter's from the targets that
    /// have none of gpumon's (a gpumon node exports dcgm-exporter's names too; reading both
    /// would parse 37% more series for nothing).
    pub fn query(&self) -> String {
        format!(
            "{} or ({} unless on(instance) {})",
            self.selector(NAMES, None),
            self.selector(DCGM_NAMES, None),
            self.selector(&[ours::GPU_INFO], None)
        )
    }

    /// The PromQL of an opened node's refresh (`instance`, its scrape target).
    pub fn node_query(&self, instance: &str) -> String {
        self.selector(NODE_NAMES, Some(instance))
    }

    /// GETs `path` (a query) within `deadline`; Prometheus's own error text when it refuses.
    async fn get(
        &self,
        client: &Client,
        deadline: Duration,
        path: &str,
    ) -> Result<Vec<u8>, String> {
        let path = format!("{}{path}", self.prefix);
        let (status, body) = tokio::time::timeout(deadline, request(&self.endpoint, client, &path))
            .await
            .map_err(|_| {
                format!(
                    "Prometheus: no answer within {}",
                    humantime::format_duration(deadline)
                )
            })?
            .map_err(|e| format!("Prometheus: {e}"))?;
        // Prometheus says what was wrong with a query in the body of a 400 or 422.
        if status.is_client_error() || status.is_server_error() {
            if let Ok(r) = serde_json::from_slice::<Response>(&body) {
                if let Some(e) = r.error {
                    return Err(format!(
                        "Prometheus: {} (HTTP {status})",
                        crate::text::escape(&crate::files::cut_message(&e, MAX_ERROR))
                    ));
                }
            }
        }
        Ok(answer(status, body)
            .map_err(|e| format!("Prometheus: {e}"))?
            .to_vec())
    }

    /// One node (`instance`, its scrape target) as the dashboard shows a GPU host: its GPUs,
    /// MIG instances and processes, from gpumon's series or dcgm-exporter's.
    pub async fn read_node(
        &self,
        client: &Client,
        deadline: Duration,
        instance: &str,
    ) -> Result<Sample, String> {
        let q = self.node_query(instance);
        let body = self
            .get(
                client,
                deadline,
                &format!("/api/v1/query?query={}", encode(&q)),
            )
            .await?;
        let result = result(&body, "vector")?;
        // A time no clock shows (1e300, before 1970) is not one: the latest of the others.
        let at = result
            .iter()
            .filter_map(|s| s.value.as_ref().and_then(|v| unix_time(v.0)))
            .max();
        if result.is_empty() {
            return Err("no recent series in Prometheus".into());
        }
        let series: Vec<(&Labels, f64)> = result
            .iter()
            .filter_map(|s| Some((&s.metric, value(s.value.as_ref()?)?)))
            .collect();
        Ok(node_sample(
            instance,
            at.unwrap_or_else(SystemTime::now),
            &series,
        ))
    }

    /// One node's memory and utilisation over the `window` before `now`, a sample a step
    /// (the refresh `interval`, longer for long windows), oldest first: the history its
    /// charts start with.
    pub async fn read_history(
        &self,
        client: &Client,
        deadline: Duration,
        instance: &str,
        window: Duration,
        interval: Duration,
        now: SystemTime,
    ) -> Result<Vec<Sample>, String> {
        let end = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_err(|_| "the clock is before 1970".to_owned())?
            .as_secs_f64();
        let step = interval
            .as_secs_f64()
            .max(window.as_secs_f64() / HISTORY_POINTS as f64)
            .max(0.001);
        let q = self.selector(HISTORY_NAMES, Some(instance));
        let path = format!(
            "/api/v1/query_range?query={}&start={:.3}&end={end:.3}&step={step:.3}",
            encode(&q),
            end - window.as_secs_f64(),
        );
        let body = self.get(client, deadline, &path).await?;
        Ok(history(instance, &result(&body, "matrix")?))
    }

    /// Every node Prometheus has, each with why it is down (its target's last scrape failed),
    /// within `deadline`. `Err`: Prometheus itself could not be read or answered an error.
    pub async fn read(&self, client: &Client, deadline: Duration) -> Result<Vec<PromNode>, String> {
        let path = format!("/api/v1/query?query={}", encode(&self.query()));
        nodes(&self.get(client, deadline, &path).await?)
    }
}

/// A query as a URL's query string value.
fn encode(q: &str) -> String {
    utf8_percent_encode(q, NON_ALPHANUMERIC).to_string()
}

/// A label value inside PromQL's double quotes.
fn promql_string(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// A sample's value; `None` for NaN and the infinities (a gauge never set).
fn value(v: &(f64, String)) -> Option<f64> {
    v.1.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The Prometheus `--prometheus URL --selector S --remote-config FILE` name, and the client
/// to reach it. `Err` is a usage message.
pub fn open(
    url: &str,
    selector: Option<&str>,
    config: Option<&std::path::Path>,
) -> Result<(Source, Client), String> {
    Ok((
        Source::parse(url, selector)?,
        super::remote::client(config)?,
    ))
}

/// Reads the fleet once from the Prometheus (on a runtime of its own).
pub fn read_once(
    source: &Source,
    client: &Client,
    deadline: Duration,
) -> Result<Vec<PromNode>, String> {
    super::remote::block_on(source.read(client, deadline))?
}

#[derive(Deserialize)]
struct Response {
    status: String,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    data: Option<Data>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<Series>,
}

type Labels = BTreeMap<String, String>;

#[derive(Deserialize)]
struct Series {
    metric: Labels,
    /// An instant query's one value: (unix seconds, the number as text).
    #[serde(default)]
    value: Option<(f64, String)>,
    /// A range query's values.
    #[serde(default)]
    values: Vec<(f64, String)>,
}

/// The series of an answer whose result is a `kind` ("vector", "matrix").
fn result(body: &[u8], kind: &str) -> Result<Vec<Series>, String> {
    let r: Response =
        serde_json::from_slice(body).map_err(|e| format!("Prometheus: not an API answer: {e}"))?;
    if r.status != "success" {
        // Its words, not ours: through the one escaping rule, and cut.
        let said = r.error.unwrap_or_else(|| r.status.clone());
        return Err(format!(
            "Prometheus: {}",
            crate::text::escape(&crate::files::cut_message(&said, MAX_ERROR))
        ));
    }
    let data = r.data.ok_or("Prometheus: an answer without data")?;
    if data.result_type != kind {
        return Err(format!(
            "Prometheus: a {} where a {kind} was asked for",
            crate::text::escape(&crate::files::cut_message(&data.result_type, 32))
        ));
    }
    Ok(data.result)
}

/// What one GPU (or MIG instance) has among the series.
#[derive(Default)]
struct Gpu {
    name: Option<String>,
    uuid: Option<String>,
    profile: Option<String>,
    gpumon: BTreeMap<String, f64>,
    dcgm: BTreeMap<String, f64>,
}

#[derive(Default)]
struct Node {
    hostname: Option<String>,
    down: Option<String>,
    /// By (gpu index, GPU instance id).
    gpus: BTreeMap<(u32, Option<u32>), Gpu>,
    users: BTreeMap<String, f64>,
}

/// An instant query's answer, grouped by scrape target (`instance`).
pub fn nodes(body: &[u8]) -> Result<Vec<PromNode>, String> {
    let mut by_instance: BTreeMap<String, Node> = BTreeMap::new();
    for s in result(body, "vector")? {
        let m = &s.metric;
        let Some(instance) = m.get("instance") else {
            continue;
        };
        let Some(v) = s.value.as_ref().and_then(value) else {
            continue;
        };
        let name = m.get("__name__").map_or("", String::as_str);
        let node = by_instance.entry(instance.clone()).or_default();
        if node.hostname.is_none() {
            node.hostname = m.get("Hostname").cloned();
        }
        match name {
            // Only for its `Hostname`.
            ours::BUILD_INFO => continue,
            UP => {
                if v == 0.0 {
                    node.down = Some("its last scrape failed (up == 0)".into());
                }
                continue;
            }
            ours::USER_MEMORY_BYTES => {
                if let Some(u) = m.get("user") {
                    *node.users.entry(u.clone()).or_default() += v;
                }
                continue;
            }
            _ => {}
        }
        let Some(index) = m.get("gpu").and_then(|g| g.parse::<u32>().ok()) else {
            continue;
        };
        let gi = m.get("GPU_I_ID").and_then(|g| g.parse::<u32>().ok());
        let gpu = node.gpus.entry((index, gi)).or_default();
        if gpu.uuid.is_none() {
            gpu.uuid = m.get("UUID").cloned();
        }
        if gpu.name.is_none() {
            gpu.name = m.get("modelName").or_else(|| m.get("name")).cloned();
        }
        if gpu.profile.is_none() {
            gpu.profile = m.get("GPU_I_PROFILE").cloned();
        }
        if name.starts_with("DCGM_") {
            gpu.dcgm.insert(name.to_owned(), v);
        } else {
            gpu.gpumon.insert(name.to_owned(), v);
        }
    }
    // A host name that two targets share names neither: those go by their target.
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    for n in by_instance.values() {
        if let Some(h) = &n.hostname {
            *names.entry(h.clone()).or_default() += 1;
        }
    }
    Ok(by_instance
        .into_iter()
        .map(|(instance, n)| {
            let name = n
                .hostname
                .clone()
                .filter(|h| names.get(h) == Some(&1))
                .unwrap_or_else(|| instance.clone());
            // Shown as is by every view: a label's text through the one escaping rule (the
            // target stays as Prometheus has it, to ask for it again).
            let name = crate::text::escape(&name).into_owned();
            (name, instance, n.down.clone(), summary(n))
        })
        .collect())
}

fn summary(n: Node) -> NodeSummary {
    // A GPU split into MIG instances is shown as its instances, as `NodeSummary::of` does.
    let split: Vec<u32> = n
        .gpus
        .keys()
        .filter(|(_, gi)| gi.is_some())
        .map(|(g, _)| *g)
        .collect();
    let gpus = n
        .gpus
        .into_iter()
        .filter(|((g, gi), _)| gi.is_some() || !split.contains(g))
        .map(|((index, _), g)| gpu(index, g))
        .collect();
    let top_user = n
        .users
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        .map(|(user, bytes)| TopUser {
            user,
            bytes: bytes.max(0.0) as u64,
        });
    NodeSummary {
        schema_version: SUMMARY_VERSION,
        hostname: n.hostname,
        error: None,
        gpus,
        top_user,
    }
    .admit()
}

fn gpu(index: u32, g: Gpu) -> GpuSummary {
    let bytes = |v: Option<f64>| v.filter(|v| v.is_finite() && *v >= 0.0).map(|v| v as u64);
    let own = |k: &str| g.gpumon.get(k).copied();
    let dcgm_mib = |k: &str| g.dcgm.get(k).map(|v| v * MIB);
    let used = bytes(own(ours::MEMORY_USED_BYTES).or_else(|| dcgm_mib(dcgm::FB_USED)));
    let free = bytes(own(ours::MEMORY_FREE_BYTES).or_else(|| dcgm_mib(dcgm::FB_FREE)));
    let reserved = bytes(own(ours::MEMORY_RESERVED_BYTES).or_else(|| dcgm_mib(dcgm::FB_RESERVED)));
    // dcgm-exporter has no total: used + free + reserved is the card's.
    let total = bytes(own(ours::MEMORY_TOTAL_BYTES))
        .or_else(|| used?.checked_add(free?)?.checked_add(reserved.unwrap_or(0)));
    let unattributed = bytes(own(ours::MEMORY_UNATTRIBUTED_BYTES));
    let idle = bytes(own(ours::IDLE_HELD_BYTES));
    // What the processes hold: used less what no process explains, less the idle holds.
    let busy = match (used, unattributed) {
        (Some(u), Some(x)) => Some(u.saturating_sub(x).saturating_sub(idle.unwrap_or(0))),
        _ => None,
    };
    let util = own(ours::GPU_UTILIZATION_RATIO)
        .map(|r| r * 100.0)
        .or_else(|| g.dcgm.get(dcgm::GPU_UTIL).copied())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| v.round() as u32);
    let state = if own(ours::GPU_STALLED) == Some(1.0) {
        GpuState::Stalled
    } else if own(ours::GPU_UP) == Some(0.0) {
        GpuState::Failed
    } else {
        GpuState::Ok
    };
    GpuSummary {
        index,
        uuid: g.uuid,
        name: g.name,
        mig_profile: g.profile,
        total_bytes: total,
        used_bytes: used,
        free_bytes: free,
        reserved_bytes: reserved,
        busy_bytes: busy,
        idle_bytes: idle,
        unattributed_bytes: unattributed,
        util_percent: util,
        processes: own(ours::PROCESSES).map_or(0, |p| p.max(0.0) as u32),
        state,
        last_xid: None,
    }
}

/// A thing's labels (those of the first of its series) and its values by series name.
type Figures = (Labels, BTreeMap<String, f64>);

/// What one GPU of an opened node has among the series: its own, its MIG instances' and its
/// processes'.
#[derive(Default)]
struct NodeGpu {
    labels: Labels,
    values: BTreeMap<String, f64>,
    /// By GPU instance id.
    mig: BTreeMap<u32, Figures>,
    /// By pid (and GPU instance).
    processes: BTreeMap<(u32, Option<u32>), Figures>,
}

/// One node at `at` (unix seconds) from its series, as the dashboard shows a host: the
/// figures gpumon exports where it does, dcgm-exporter's where it does not (MiB become bytes),
/// unknown (`None`) where neither says.
fn node_sample(instance: &str, timestamp: SystemTime, series: &[(&Labels, f64)]) -> Sample {
    let mut gpus: BTreeMap<u32, NodeGpu> = BTreeMap::new();
    let mut hostname = None;
    let mut driver = None;
    for (m, v) in series {
        let name = m.get("__name__").map_or("", String::as_str);
        if hostname.is_none() {
            hostname = m.get("Hostname").cloned();
        }
        if driver.is_none() {
            driver = m
                .get("driver_version")
                .or_else(|| m.get("DCGM_FI_DRIVER_VERSION"))
                .filter(|d| !d.is_empty())
                .cloned();
        }
        let Some(index) = m.get("gpu").and_then(|g| g.parse::<u32>().ok()) else {
            continue;
        };
        let gpu = gpus.entry(index).or_default();
        let gi = m.get("GPU_I_ID").and_then(|g| g.parse::<u32>().ok());
        let (labels, values) = if let Some(pid) = m.get("pid").and_then(|p| p.parse().ok()) {
            let (l, v) = gpu.processes.entry((pid, gi)).or_default();
            (l, v)
        } else if let Some(gi) = gi {
            let (l, v) = gpu.mig.entry(gi).or_default();
            (l, v)
        } else {
            (&mut gpu.labels, &mut gpu.values)
        };
        for (k, l) in *m {
            labels.entry(k.clone()).or_insert_with(|| l.clone());
        }
        values.insert(name.to_owned(), *v);
    }
    Sample {
        timestamp,
        hostname: hostname.or_else(|| Some(instance.to_owned())),
        source: "prometheus",
        driver_version: driver,
        cuda_version: None,
        devices: gpus
            .into_iter()
            .map(|(index, g)| node_device(index, g))
            .collect(),
        error: None,
        host: None,
    }
    // Labels and values from a Prometheus are anyone's who can push series to it.
    .admit()
}

/// A GPU's figures: gpumon's name first, then dcgm-exporter's (in MiB where `mib`).
fn figure(values: &BTreeMap<String, f64>, own: &str, dcgm: &str, scale: f64) -> Option<f64> {
    values
        .get(own)
        .map(|v| v * scale)
        .or_else(|| {
            let v = values.get(dcgm)?;
            Some(if DCGM_MIB.contains(&dcgm) {
                v * MIB
            } else {
                *v
            })
        })
        .filter(|v| v.is_finite() && *v >= 0.0)
}

fn memory(values: &BTreeMap<String, f64>) -> Memory {
    let bytes = |own: &str, dcgm: &str| figure(values, own, dcgm, 1.0).map(|v| v as u64);
    let used = bytes(ours::MEMORY_USED_BYTES, dcgm::FB_USED);
    let free = bytes(ours::MEMORY_FREE_BYTES, dcgm::FB_FREE);
    let reserved = bytes(ours::MEMORY_RESERVED_BYTES, dcgm::FB_RESERVED);
    // dcgm-exporter has no total: used + free + reserved is the card's.
    let total = bytes(ours::MEMORY_TOTAL_BYTES, "")
        .or_else(|| used?.checked_add(free?)?.checked_add(reserved.unwrap_or(0)));
    Memory {
        total_bytes: total,
        used_bytes: used,
        free_bytes: free,
        reserved_bytes: reserved,
    }
}

fn utilization(values: &BTreeMap<String, f64>) -> Utilization {
    let percent = |own: &str, dcgm: &str| {
        figure(values, own, dcgm, 100.0).map(|v| v.round().min(100.0) as u32)
    };
    Utilization {
        gpu_percent: percent(ours::GPU_UTILIZATION_RATIO, dcgm::GPU_UTIL),
        memory_percent: percent(ours::MEMORY_COPY_UTILIZATION_RATIO, dcgm::MEM_COPY_UTIL),
    }
}

fn node_device(index: u32, g: NodeGpu) -> Device {
    let v = &g.values;
    let label = |k: &str| g.labels.get(k).filter(|l| !l.is_empty()).cloned();
    let stalled = v.get(ours::GPU_STALLED) == Some(&1.0);
    let age = v
        .get(ours::GPU_DATA_AGE_SECONDS)
        .filter(|a| a.is_finite() && **a >= 0.0);
    let error = if stalled {
        Some(match age {
            Some(a) => format!(
                "not answering for {} (its node's gpumon says)",
                crate::units::fmt_age(*a as u64)
            ),
            None => "not answering (its node's gpumon says)".to_owned(),
        })
    } else if v.get(ours::GPU_UP) == Some(&0.0) {
        Some("failed or lost (its node's gpumon says)".to_owned())
    } else {
        None
    };
    let mig = g
        .mig
        .iter()
        .enumerate()
        .map(|(slot, (gi, (labels, values)))| MigDevice {
            index: slot as u32,
            uuid: labels.get("UUID").cloned(),
            name: labels
                .get("modelName")
                .or_else(|| labels.get("name"))
                .cloned(),
            profile: labels.get("GPU_I_PROFILE").cloned(),
            gpu_instance_id: Some(*gi),
            compute_instance_id: None,
            memory: memory(values),
            utilization: utilization(values),
            field_errors: BTreeMap::new(),
        })
        .collect();
    let processes = g
        .processes
        .into_iter()
        .map(|((pid, gi), (labels, values))| node_process(pid, gi, &labels, &values))
        .collect();
    let failed = error.is_some();
    Device {
        index,
        uuid: label("UUID"),
        name: label("modelName").or_else(|| label("name")),
        pci_bus_id: label("pci_bus_id"),
        // A GPU that failed has no figures: never its last ones as if fresh.
        memory: if failed { Memory::default() } else { memory(v) },
        utilization: if failed {
            Utilization::default()
        } else {
            utilization(v)
        },
        temperature_c: figure(v, ours::TEMPERATURE_CELSIUS, dcgm::GPU_TEMP, 1.0)
            .map(|t| t.round() as u32),
        power_draw_w: figure(v, ours::POWER_WATTS, dcgm::POWER_USAGE, 1.0),
        power_limit_w: figure(v, ours::POWER_LIMIT_WATTS, "", 1.0),
        fan_percent: figure(v, ours::FAN_RATIO, "", 100.0).map(|f| f.round() as u32),
        processes,
        error,
        stalled,
        data_age_ms: age.map(|a| (a * 1000.0) as u64),
        mig,
        ..Device::default()
    }
}

fn node_process(
    pid: u32,
    gi: Option<u32>,
    labels: &Labels,
    values: &BTreeMap<String, f64>,
) -> Process {
    let label = |k: &str| labels.get(k).filter(|l| !l.is_empty()).cloned();
    let bytes = |k: &str| {
        values
            .get(k)
            .filter(|v| v.is_finite() && **v >= 0.0)
            .map(|v| *v as u64)
    };
    let owner = if let Some(pod) = label("pod") {
        let mut o = Owner::new(OwnerKind::Kubernetes, pod);
        o.namespace = label("namespace");
        o.container = label("container");
        Some(Arc::new(o))
    } else {
        label("slurm_job").map(|job| {
            let mut o = Owner::new(OwnerKind::Slurm, job.clone());
            o.job = Some(job);
            Arc::new(o)
        })
    };
    let command = label("command");
    // Only `gpumon run`'s probe gives the allocator's figures, and it speaks for PyTorch.
    let allocator = (bytes(ours::ALLOCATOR_ALLOCATED_BYTES).is_some()
        || bytes(ours::ALLOCATOR_RESERVED_BYTES).is_some())
    .then(|| {
        Box::new(AllocatorStats::figures(
            "pytorch".into(),
            None,
            [
                bytes(ours::ALLOCATOR_ALLOCATED_BYTES),
                bytes(ours::ALLOCATOR_ALLOCATED_PEAK_BYTES),
            ],
            [
                bytes(ours::ALLOCATOR_RESERVED_BYTES),
                bytes(ours::ALLOCATOR_RESERVED_PEAK_BYTES),
            ],
        ))
    });
    Process {
        pid,
        kind: ProcessKind::Compute,
        gpu_memory_bytes: bytes(ours::PROCESS_MEMORY_BYTES),
        name: command
            .as_deref()
            .and_then(|c| c.split_whitespace().next())
            .map(|c| c.rsplit('/').next().unwrap_or(c).to_owned()),
        user: label("user"),
        command,
        cpu_percent: None,
        host_memory_bytes: None,
        start_time: None,
        container: owner.as_ref().map(|o| o.name.clone()),
        owner,
        sm_percent: None,
        mem_bw_percent: None,
        allocator,
        state: None,
        parent_pid: None,
        gpu_instance_id: gi,
        compute_instance_id: None,
        peak_bytes: None,
        cgroup: None,
        gpu_limit: None,
    }
}

/// A range query's series as samples, one per step, oldest first.
fn history(instance: &str, series: &[Series]) -> Vec<Sample> {
    // Every series of a range query is evaluated at the same steps: group by time (ms).
    let mut at: BTreeMap<SystemTime, Vec<(&Labels, f64)>> = BTreeMap::new();
    for s in series {
        for v in &s.values {
            if let (Some(x), Some(t)) = (value(v), unix_time(v.0)) {
                at.entry(t).or_default().push((&s.metric, x));
            }
        }
    }
    at.into_iter()
        .map(|(t, series)| node_sample(instance, t, &series))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn series(name: &str, labels: &[(&str, &str)], v: f64) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("__name__".into(), name.into());
        for (k, val) in labels {
            m.insert((*k).into(), (*val).into());
        }
        serde_json::json!({"metric": m, "value": [1.0, v.to_string()]})
    }

    fn answer(result: Vec<serde_json::Value>) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "status": "success",
            "data": {"resultType": "vector", "result": result}
        }))
        .expect("json")
    }

    #[test]
    fn dcgm_exporter_series_make_rows_in_bytes() {
        let g0 = [
            ("instance", "n1:9400"),
            ("gpu", "0"),
            ("Hostname", "node1"),
            ("modelName", "H100"),
        ];
        let body = answer(vec![
            series("DCGM_FI_DEV_FB_USED", &g0, 30720.0),
            series("DCGM_FI_DEV_FB_FREE", &g0, 50000.0),
            series("DCGM_FI_DEV_FB_RESERVED", &g0, 529.0),
            series("DCGM_FI_DEV_GPU_UTIL", &g0, 77.0),
            series("up", &[("instance", "n1:9400")], 1.0),
            series("up", &[("instance", "n2:9400")], 0.0),
        ]);
        let nodes = nodes(&body).expect("nodes");
        assert_eq!(nodes.len(), 2);
        let (name, instance, down, s) = &nodes[0];
        assert_eq!(
            (name.as_str(), instance.as_str(), down),
            ("node1", "n1:9400", &None)
        );
        let g = &s.gpus[0];
        assert_eq!(g.used_bytes, Some(30 * GIB));
        assert_eq!(g.total_bytes, Some((30720 + 50000 + 529) * (1 << 20)));
        assert_eq!(g.util_percent, Some(77));
        assert_eq!(g.name.as_deref(), Some("H100"));
        // No per-process split from dcgm-exporter: unknown, not 0.
        assert_eq!((g.busy_bytes, g.unattributed_bytes), (None, None));
        assert!(nodes[1].2.as_deref().is_some_and(|e| e.contains("up == 0")));
    }

    #[test]
    fn gpumon_series_split_memory_show_mig_instances_and_name_the_top_user() {
        let i = ("instance", "n1:9400");
        let body = answer(vec![
            series(
                "gpumon_memory_used_bytes",
                &[i, ("gpu", "0")],
                (40 * GIB) as f64,
            ),
            series(
                "gpumon_memory_total_bytes",
                &[i, ("gpu", "0")],
                (80 * GIB) as f64,
            ),
            series(
                "gpumon_memory_unattributed_bytes",
                &[i, ("gpu", "0")],
                (4 * GIB) as f64,
            ),
            series(
                "gpumon_idle_held_bytes",
                &[i, ("gpu", "0")],
                (6 * GIB) as f64,
            ),
            series("gpumon_gpu_utilization_ratio", &[i, ("gpu", "0")], 0.5),
            series("gpumon_gpu_stalled", &[i, ("gpu", "0")], 1.0),
            series("gpumon_memory_used_bytes", &[i, ("gpu", "1")], 1.0),
            series(
                "gpumon_memory_used_bytes",
                &[
                    i,
                    ("gpu", "1"),
                    ("GPU_I_ID", "1"),
                    ("GPU_I_PROFILE", "3g.40gb"),
                ],
                (10 * GIB) as f64,
            ),
            series(
                "gpumon_user_memory_bytes",
                &[i, ("user", "ana"), ("gpu", "0")],
                9.0,
            ),
            series(
                "gpumon_user_memory_bytes",
                &[i, ("user", "bob"), ("gpu", "0")],
                5.0,
            ),
            series(
                "gpumon_user_memory_bytes",
                &[i, ("user", "bob"), ("gpu", "1")],
                5.0,
            ),
        ]);
        let nodes = nodes(&body).expect("nodes");
        let s = &nodes[0].3;
        assert_eq!(s.gpus.len(), 2, "GPU 0, and GPU 1 as its one instance");
        assert_eq!(s.gpus[0].busy_bytes, Some(30 * GIB));
        assert_eq!(s.gpus[0].util_percent, Some(50));
        assert_eq!(s.gpus[0].state, GpuState::Stalled);
        assert_eq!(s.gpus[1].mig_profile.as_deref(), Some("3g.40gb"));
        assert_eq!(s.top_user.as_ref().map(|t| t.user.as_str()), Some("bob"));
    }

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn an_opened_node_is_a_sample_from_gpumon_series_or_dcgm_exporters() {
        let g0 = [("gpu", "0"), ("UUID", "GPU-a")];
        let p = [
            ("gpu", "0"),
            ("pid", "4242"),
            ("user", "alice"),
            ("command", "/usr/bin/python3 train.py"),
            ("pod", "trainer-0"),
            ("namespace", "ml"),
        ];
        let dcgm = [
            ("gpu", "2"),
            ("modelName", "NVIDIA A100"),
            ("Hostname", "dgx-7"),
        ];
        let mig = [
            ("gpu", "3"),
            ("GPU_I_ID", "2"),
            ("GPU_I_PROFILE", "3g.40gb"),
        ];
        let series = [
            (
                "gpumon_build_info",
                labels(&[("driver_version", "550.54.15")]),
                1.0,
            ),
            (
                "gpumon_gpu_info",
                labels(&[g0[0], g0[1], ("name", "H100")]),
                1.0,
            ),
            ("gpumon_memory_used_bytes", labels(&g0), (40 * GIB) as f64),
            ("gpumon_memory_total_bytes", labels(&g0), (80 * GIB) as f64),
            ("gpumon_gpu_utilization_ratio", labels(&g0), 0.42),
            ("gpumon_temperature_celsius", labels(&g0), 61.0),
            // gpumon's figure wins over dcgm-exporter's name for the same GPU.
            ("DCGM_FI_DEV_FB_USED", labels(&g0), 1.0),
            ("gpumon_process_memory_bytes", labels(&p), (30 * GIB) as f64),
            (
                "gpumon_allocator_allocated_bytes",
                labels(&p),
                (20 * GIB) as f64,
            ),
            (
                "gpumon_allocator_reserved_bytes",
                labels(&p),
                (26 * GIB) as f64,
            ),
            ("gpumon_gpu_up", labels(&[("gpu", "1")]), 0.0),
            ("gpumon_gpu_stalled", labels(&[("gpu", "1")]), 1.0),
            ("gpumon_gpu_data_age_seconds", labels(&[("gpu", "1")]), 75.0),
            ("DCGM_FI_DEV_FB_USED", labels(&dcgm), 1024.0),
            ("DCGM_FI_DEV_FB_FREE", labels(&dcgm), 3072.0),
            ("DCGM_FI_DEV_POWER_USAGE", labels(&dcgm), 250.5),
            ("gpumon_memory_used_bytes", labels(&mig), GIB as f64),
            ("gpumon_memory_total_bytes", labels(&mig), (40 * GIB) as f64),
        ];
        let mut named: Vec<Labels> = Vec::new();
        for (name, l, _) in &series {
            let mut l = l.clone();
            l.insert("__name__".into(), (*name).into());
            named.push(l);
        }
        let pairs: Vec<(&Labels, f64)> = named.iter().zip(&series).map(|(l, s)| (l, s.2)).collect();
        let s = node_sample("n1:9400", unix_time(1_700_000_000.5).expect("time"), &pairs);
        assert_eq!(s.hostname.as_deref(), Some("dgx-7"));
        assert_eq!(s.driver_version.as_deref(), Some("550.54.15"));
        assert_eq!(s.source, "prometheus");
        let d0 = &s.devices[0];
        assert_eq!(d0.name.as_deref(), Some("H100"));
        assert_eq!(d0.memory.used_bytes, Some(40 * GIB));
        assert_eq!(d0.memory.total_bytes, Some(80 * GIB));
        assert_eq!(d0.utilization.gpu_percent, Some(42));
        assert_eq!(d0.temperature_c, Some(61));
        let p = &d0.processes[0];
        assert_eq!(p.pid, 4242);
        assert_eq!(p.gpu_memory_bytes, Some(30 * GIB));
        assert_eq!(p.user.as_deref(), Some("alice"));
        assert_eq!(p.name.as_deref(), Some("python3"));
        let o = p.owner.as_deref().expect("its pod");
        assert_eq!(
            (o.name.as_str(), o.namespace.as_deref()),
            ("trainer-0", Some("ml"))
        );
        let a = p.allocator.as_deref().expect("allocator");
        assert_eq!(a.cached_bytes(), Some(6 * GIB));
        // Stalled: said, with its age, and no figures.
        let d1 = &s.devices[1];
        assert!(d1.stalled);
        assert!(
            d1.error.as_deref().is_some_and(|e| e.contains("1m15s")),
            "{:?}",
            d1.error
        );
        assert_eq!(d1.memory.used_bytes, None);
        // dcgm-exporter only: MiB to bytes, a total, and what it does not say unknown.
        let d2 = &s.devices[2];
        assert_eq!(d2.memory.used_bytes, Some(GIB));
        assert_eq!(d2.memory.total_bytes, Some(4 * GIB));
        assert_eq!(d2.power_draw_w, Some(250.5));
        assert_eq!((d2.utilization.gpu_percent, d2.temperature_c), (None, None));
        // A MIG instance under its GPU.
        let m = &s.devices[3].mig[0];
        assert_eq!(
            (
                m.gpu_instance_id,
                m.profile.as_deref(),
                m.memory.total_bytes
            ),
            (Some(2), Some("3g.40gb"), Some(40 * GIB))
        );
        let t = s
            .timestamp
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("time");
        assert_eq!(t.as_millis(), 1_700_000_000_500);
    }

    #[test]
    fn a_range_query_is_a_sample_a_step_oldest_first() {
        let body = serde_json::to_vec(&serde_json::json!({
            "status": "success",
            "data": {"resultType": "matrix", "result": [
                {"metric": {"__name__": "gpumon_memory_used_bytes", "gpu": "0"},
                 "values": [[1000.0, "1"], [1002.0, "2"], [1004.0, "3"]]},
                {"metric": {"__name__": "gpumon_gpu_utilization_ratio", "gpu": "0"},
                 "values": [[1002.0, "0.5"], [1004.0, "NaN"]]}
            ]}
        }))
        .expect("json");
        let h = history("n1:9400", &result(&body, "matrix").expect("matrix"));
        let used: Vec<_> = h.iter().map(|s| s.devices[0].memory.used_bytes).collect();
        assert_eq!(used, [Some(1), Some(2), Some(3)]);
        let util: Vec<_> = h
            .iter()
            .map(|s| s.devices[0].utilization.gpu_percent)
            .collect();
        assert_eq!(util, [None, Some(50), None], "NaN is unknown");
        assert!(h.windows(2).all(|w| w[0].timestamp < w[1].timestamp));
        assert!(result(&body, "vector").is_err());
    }

    #[test]
    fn the_fleet_query_reads_dcgm_exporters_names_only_where_gpumons_are_not() {
        let s = Source::parse("http://prom:9090", Some(r#"{job="gpu"}"#)).expect("ok");
        let q = s.query();
        assert!(
            q.contains(r#"unless on(instance) {__name__=~"gpumon_gpu_info",job="gpu"}"#),
            "{q}"
        );
        assert!(s
            .selector(NODE_NAMES, Some(r#"a"b\c:1"#))
            .contains(r#"instance="a\"b\\c:1",job="gpu""#));
    }

    /// S10: the credentials in a Prometheus's URL never appear in a message.
    #[test]
    fn credentials_are_never_quoted() {
        let Err(e) = Source::parse("http://alice:S3CRET@127.0.0.1", None) else {
            panic!("no port, yet parsed");
        };
        assert!(!e.contains("S3CRET"), "{e}");
    }

    #[test]
    fn errors_and_odd_answers_are_said() {
        assert!(nodes(br#"{"status":"error","error":"parse error"}"#)
            .expect_err("error")
            .contains("parse error"));
        assert!(nodes(b"<html>").is_err());
        assert!(
            nodes(br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#)
                .expect_err("matrix")
                .contains("matrix")
        );
        let s = Source::parse("http://prom:9090/prom/", Some(r#"{job="gpumon"}"#)).expect("ok");
        assert_eq!(s.prefix, "/prom");
        assert!(s.query().ends_with(r#",job="gpumon"})"#));
        assert!(Source::parse("prom:9090", Some("job=gpumon")).is_err());
    }

    /// S8, W3, P2, P3: what a hostile Prometheus answers reaches no view raw: its error text
    /// is escaped, dcgm totals that would wrap are unknown, an index of 2^32-1 is left out,
    /// a time of 1e300 is no time (it panicked the fleet's worker).
    #[test]
    fn hostile_answers_are_escaped_and_checked() {
        let json = |v: serde_json::Value| serde_json::to_vec(&v).expect("json");
        let e = nodes(&json(serde_json::json!({
            "status": "error", "error": "\u{1b}]2;PWN\u{7}boom\u{202e}"
        })))
        .expect_err("error");
        assert!(!e.chars().any(crate::text::is_unsafe), "{e}");
        assert!(e.contains("boom"), "{e}");
        let e = nodes(&json(serde_json::json!({
            "status": format!("\u{9b}2J{}", "x".repeat(10_000))
        })))
        .expect_err("status");
        assert!(
            !e.chars().any(crate::text::is_unsafe) && e.len() < 1_000,
            "{e}"
        );

        let big = "10000000000000"; // MiB: three of them overflow u64 bytes
        let body = answer(vec![
            series("up", &[("instance", "d:1")], 1.0),
            series(
                "DCGM_FI_DEV_FB_USED",
                &[("instance", "d:1"), ("gpu", "0")],
                big.parse().expect("n"),
            ),
            series(
                "DCGM_FI_DEV_FB_FREE",
                &[("instance", "d:1"), ("gpu", "0")],
                big.parse().expect("n"),
            ),
            series(
                "DCGM_FI_DEV_FB_RESERVED",
                &[("instance", "d:1"), ("gpu", "0")],
                big.parse().expect("n"),
            ),
            series(
                "DCGM_FI_DEV_GPU_UTIL",
                &[("instance", "d:1"), ("gpu", "0")],
                4294967295.0,
            ),
            series(
                "gpumon_gpu_info",
                &[("instance", "d:1"), ("gpu", "4294967295"), ("name", "x")],
                1.0,
            ),
            series(
                "up",
                &[("instance", "e:1"), ("Hostname", "\u{1b}[2Jevil\u{202e}")],
                1.0,
            ),
        ]);
        let all = nodes(&body).expect("nodes");
        let (_, _, _, d) = all.iter().find(|n| n.1 == "d:1").expect("d");
        assert_eq!(d.gpus.len(), 1, "index 4294967295 left out: {d:?}");
        let g = &d.gpus[0];
        assert!(
            g.total_bytes.is_none() || g.used_bytes.is_none(),
            "no wrapped total beside the parts: {g:?}"
        );
        assert_eq!(g.util_percent, None);
        assert!(d
            .error
            .as_deref()
            .is_some_and(|e| e.contains("impossible index")));
        let (name, _, _, e) = all.iter().find(|n| n.1 == "e:1").expect("e");
        assert!(!name.chars().any(crate::text::is_unsafe), "{name}");
        assert!(!e
            .hostname
            .as_deref()
            .unwrap_or("")
            .chars()
            .any(crate::text::is_unsafe));

        let labels = |pairs: &[(&str, &str)]| -> Labels {
            pairs
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect()
        };
        let (a, b, c) = (
            labels(&[("__name__", "DCGM_FI_DEV_FB_USED"), ("gpu", "0")]),
            labels(&[("__name__", "DCGM_FI_DEV_FB_FREE"), ("gpu", "0")]),
            labels(&[
                ("__name__", "gpumon_gpu_info"),
                ("gpu", "4294967295"),
                ("UUID", "\u{9b}x"),
            ]),
        );
        let pairs = [(&a, 1e13), (&b, 1e13), (&c, 1.0)];
        let s = node_sample("n:1", SystemTime::UNIX_EPOCH, &pairs);
        assert_eq!(s.devices.len(), 1, "{:?}", s.devices);
        let m = s.devices[0].memory;
        assert!(m.used_bytes.is_none() || m.total_bytes.is_none(), "{m:?}");

        let range: Vec<Series> = serde_json::from_value(serde_json::json!([{
            "metric": {"__name__": "gpumon_memory_used_bytes", "gpu": "0"},
            "values": [[1e300, "1"], [-5.0, "1"], [1_700_000_000.0, "2"]]
        }]))
        .expect("series");
        let h = history("n:1", &range);
        assert_eq!(h.len(), 1, "only the time a clock shows");
    }
}
