//! The series of shared memory and container limits ([`crate::model::unified`]): a container's
//! GPU memory limit and its use, and on unified or coherent parts the GPU-held figure with its
//! method and the headroom. Registered only when some GPU has either, so a discrete GPU
//! without a limit exposes exactly what it did before.

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::model::unified::LimitSource;
use crate::model::Device;

type Labels = Vec<(&'static str, String)>;
type Int = Family<Labels, Gauge>;

/// The families, registered once per exposition.
pub struct Series {
    limit: Int,
    used: Int,
    held: Int,
    headroom: Int,
}

fn int(r: &mut Registry, name: &str, help: &str) -> Int {
    let f = Int::default();
    r.register(name, help, f.clone());
    f
}

fn set(f: &Int, labels: &Labels, v: Option<u64>) {
    if let Some(v) = v {
        f.get_or_create(labels)
            .set(i64::try_from(v).unwrap_or(i64::MAX));
    }
}

fn source(s: LimitSource) -> &'static str {
    match s {
        LimitSource::Dmem => "dmem",
        LimitSource::Nvml => "nvml",
    }
}

fn label(s: &str) -> String {
    crate::text::escape(s).into_owned()
}

impl Series {
    /// The families, when some device of `sample` has a limit or shared memory.
    pub fn register_for(r: &mut Registry, sample: &crate::model::Sample) -> Option<Series> {
        sample
            .devices
            .iter()
            .any(|d| {
                d.container_limit.is_some()
                    || d.shared_memory.is_some()
                    || d.processes.iter().any(|p| p.gpu_limit.is_some())
            })
            .then(|| Series::register(r))
    }

    fn register(r: &mut Registry) -> Series {
        Series {
            limit: int(
                r,
                "gpumon_cgroup_memory_limit_bytes",
                "The hard GPU memory limit of a cgroup on this GPU (dmem.max or nvmlDeviceGetMemoryLimits_v1): the one gpumon runs in, and those holding GPU processes whose owners --process-labels shows (labelled as their processes are); absent without one",
            ),
            used: int(
                r,
                "gpumon_cgroup_memory_used_bytes",
                "GPU memory the limited cgroup holds on this GPU (dmem.current or NVML's currentUsed)",
            ),
            held: int(
                r,
                "gpumon_shared_memory_gpu_held_bytes",
                "On a unified or coherent part: the GPU's processes' memory; method=\"nvml\" measured, method=\"process_sum\" derived from the listed processes (NVML reports no device memory)",
            ),
            headroom: int(
                r,
                "gpumon_shared_memory_headroom_bytes",
                "On a unified or coherent part: what the system can still give (MemAvailable, within the cgroup's limit); derived",
            ),
        }
    }

    /// The limits of the cgroups holding `d`'s processes, each once, labelled with the owner
    /// as the process series are: only where `asked` shows that owner (a cgroup's path names
    /// its pod or job as well), and not again for the cgroup gpumon runs in ([`Series::record`]
    /// has it).
    pub fn record_owners(&self, d: &Device, asked: super::ProcessLabels) {
        if !d.fresh() {
            return;
        }
        let own = d.container_limit.as_ref().map(|l| l.cgroup.as_str());
        let mut done = std::collections::BTreeSet::new();
        for p in &d.processes {
            let Some(l) = p.gpu_limit.as_deref() else {
                continue;
            };
            let shown = p
                .owner
                .as_deref()
                .map_or(asked.pod, |o| asked.owner(o.kind));
            if !shown || own == Some(l.cgroup.as_str()) || !done.insert(l.cgroup.as_str()) {
                continue;
            }
            let mut labels: Labels = vec![
                ("gpu", d.index.to_string()),
                ("UUID", label(d.uuid.as_deref().unwrap_or(""))),
            ];
            super::owner_labels(p.owner.as_deref(), asked, &mut labels);
            labels.push(("cgroup", label(&l.cgroup)));
            labels.push(("source", source(l.source).to_owned()));
            set(&self.limit, &labels, l.hard_bytes);
            set(&self.used, &labels, l.used_bytes);
        }
    }

    /// One device's series; nothing for a device that is not fresh.
    pub fn record(&self, d: &Device) {
        if !d.fresh() {
            return;
        }
        let labels: Labels = vec![
            ("gpu", d.index.to_string()),
            ("UUID", label(d.uuid.as_deref().unwrap_or(""))),
        ];
        if let Some(l) = &d.container_limit {
            let mut with = labels.clone();
            with.push(("cgroup", label(&l.cgroup)));
            with.push(("source", source(l.source).to_owned()));
            set(&self.limit, &with, l.hard_bytes);
            set(&self.used, &with, l.used_bytes);
        }
        if let Some(s) = &d.shared_memory {
            let mut with = labels.clone();
            with.push(("method", s.method.as_str().to_owned()));
            set(&self.held, &with, s.gpu_held_bytes);
            set(&self.headroom, &labels, s.headroom_bytes);
        }
    }
}
