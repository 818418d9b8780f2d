//! The fleet read from a Prometheus (`--prometheus URL`): one instant query a refresh for
//! gpumon's metric family and dcgm-exporter's, grouped by scrape target into the rows the
//! fleet shows. A fleet that already runs dcgm-exporter works unchanged; gpumon's own series,
//! where a node has them, add the memory's split and the top user.

use std::collections::BTreeMap;
use std::time::Duration;

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde::Deserialize;

use super::remote::{answer, request, Client, Endpoint};
use crate::model::fleet::{GpuState, GpuSummary, NodeSummary, TopUser, SUMMARY_VERSION};

const MIB: f64 = 1_048_576.0;

/// The series a refresh reads, by name: one query for all of them.
const NAMES: &str = "up|gpumon_gpu_info|gpumon_gpu_up|gpumon_gpu_stalled|\
gpumon_memory_(total|used|free|reserved|unattributed)_bytes|gpumon_idle_held_bytes|\
gpumon_gpu_utilization_ratio|gpumon_processes|gpumon_user_memory_bytes|\
DCGM_FI_DEV_FB_(USED|FREE|RESERVED)|DCGM_FI_DEV_GPU_UTIL";

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

    /// The PromQL of a refresh.
    pub fn query(&self) -> String {
        let mut q = format!("{{__name__=~\"{NAMES}\"");
        if !self.matchers.is_empty() {
            q.push(',');
            q.push_str(&self.matchers);
        }
        q.push('}');
        q
    }

    /// Every node Prometheus has, each with why it is down (its target's last scrape failed),
    /// within `deadline`. `Err`: Prometheus itself could not be read or answered an error.
    pub async fn read(&self, client: &Client, deadline: Duration) -> Result<Vec<PromNode>, String> {
        let path = format!(
            "{}/api/v1/query?query={}",
            self.prefix,
            utf8_percent_encode(&self.query(), NON_ALPHANUMERIC)
        );
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
                    return Err(format!("Prometheus: {e} (HTTP {status})"));
                }
            }
        }
        nodes(&answer(status, body).map_err(|e| format!("Prometheus: {e}"))?)
    }
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

#[derive(Deserialize)]
struct Series {
    metric: BTreeMap<String, String>,
    value: (f64, String),
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

/// A node as a Prometheus has it: its name (the `Hostname` label where dcgm-exporter gives
/// one, else the target), its scrape target (`instance`), why it is down, and its summary.
pub type PromNode = (String, String, Option<String>, NodeSummary);

/// An instant query's answer, grouped by scrape target (`instance`).
pub fn nodes(body: &[u8]) -> Result<Vec<PromNode>, String> {
    let r: Response =
        serde_json::from_slice(body).map_err(|e| format!("Prometheus: not an API answer: {e}"))?;
    if r.status != "success" {
        return Err(format!(
            "Prometheus: {}",
            r.error.unwrap_or_else(|| r.status.clone())
        ));
    }
    let data = r.data.ok_or("Prometheus: an answer without data")?;
    if data.result_type != "vector" {
        return Err(format!(
            "Prometheus: a {} where a vector was asked for",
            data.result_type
        ));
    }
    let mut by_instance: BTreeMap<String, Node> = BTreeMap::new();
    for s in data.result {
        let m = &s.metric;
        let Some(instance) = m.get("instance") else {
            continue;
        };
        let Ok(v) = s.value.1.parse::<f64>() else {
            continue;
        };
        let name = m.get("__name__").map_or("", String::as_str);
        let node = by_instance.entry(instance.clone()).or_default();
        if node.hostname.is_none() {
            node.hostname = m.get("Hostname").cloned();
        }
        match name {
            "up" => {
                if v == 0.0 {
                    node.down = Some("its last scrape failed (up == 0)".into());
                }
                continue;
            }
            "gpumon_user_memory_bytes" => {
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
}

fn gpu(index: u32, g: Gpu) -> GpuSummary {
    let bytes = |v: Option<f64>| v.filter(|v| v.is_finite() && *v >= 0.0).map(|v| v as u64);
    let own = |k: &str| g.gpumon.get(k).copied();
    let dcgm_mib = |k: &str| g.dcgm.get(k).map(|v| v * MIB);
    let used = bytes(own("gpumon_memory_used_bytes").or_else(|| dcgm_mib("DCGM_FI_DEV_FB_USED")));
    let free = bytes(own("gpumon_memory_free_bytes").or_else(|| dcgm_mib("DCGM_FI_DEV_FB_FREE")));
    let reserved =
        bytes(own("gpumon_memory_reserved_bytes").or_else(|| dcgm_mib("DCGM_FI_DEV_FB_RESERVED")));
    // dcgm-exporter has no total: used + free + reserved is the card's.
    let total = bytes(own("gpumon_memory_total_bytes"))
        .or_else(|| Some(used? + free? + reserved.unwrap_or(0)));
    let unattributed = bytes(own("gpumon_memory_unattributed_bytes"));
    let idle = bytes(own("gpumon_idle_held_bytes"));
    // What the processes hold: used less what no process explains, less the idle holds.
    let busy = match (used, unattributed) {
        (Some(u), Some(x)) => Some(u.saturating_sub(x).saturating_sub(idle.unwrap_or(0))),
        _ => None,
    };
    let util = own("gpumon_gpu_utilization_ratio")
        .map(|r| r * 100.0)
        .or_else(|| g.dcgm.get("DCGM_FI_DEV_GPU_UTIL").copied())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| v.round() as u32);
    let state = if own("gpumon_gpu_stalled") == Some(1.0) {
        GpuState::Stalled
    } else if own("gpumon_gpu_up") == Some(0.0) {
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
        processes: own("gpumon_processes").map_or(0, |p| p.max(0.0) as u32),
        state,
        last_xid: None,
    }
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
        assert!(s.query().ends_with(r#",job="gpumon"}"#));
        assert!(Source::parse("prom:9090", Some("job=gpumon")).is_err());
    }
}
