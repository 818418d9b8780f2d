//! The Prometheus exposition of a [`Sample`]: what `/metrics` serves, built once per sample
//! with prometheus-client so that a scrape only copies bytes.
//!
//! Two families:
//! - dcgm-exporter's names, units and labels (`DCGM_FI_DEV_FB_USED` in MiB with `gpu`, `UUID`,
//!   `pci_bus_id`, `device`, `modelName`, `Hostname`), so existing dashboards and alerts work
//!   unchanged;
//! - `gpumon_*` in base units (bytes, ratios, seconds), with few labels: `gpu` and `UUID` per
//!   device, plus `pid` per process (and `user`, `command` only when asked for).
//!
//! A GPU that is stalled or lost exports no readings, only its state (`gpumon_gpu_up`,
//! `gpumon_gpu_stalled`, and the age of its data) and its counters (Xid, ECC, remapped rows,
//! kept from its last good reading until gpumon restarts: [`LastCounters`]): a scrape never
//! shows stale values as fresh, and never forgets the Xid 79 that came just before the loss.
//! Series of exited processes disappear with the next sample, since each exposition is built
//! from one sample alone. Every metric is a gauge but the Xid and ECC counters
//! (`gpumon_xid_errors_total`, `gpumon_ecc_errors_total`); the Prometheus text (0.0.4) is the
//! OpenMetrics body without its `# EOF` line, with the counters' HELP and TYPE lines named
//! as their samples are ([`prometheus_text`]).

pub mod shared;

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::text::encode_registry;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::metric_names::{dcgm, ours};
use crate::model::breakdown::{Breakdown, PartKind};
use crate::model::health::Health;
use crate::model::owner::OwnerKind;
use crate::model::{Device, Process, Sample};

type Labels = Vec<(&'static str, String)>;
type Int = Family<Labels, Gauge>;
type Float = Family<Labels, Gauge<f64, AtomicU64>>;
type Count = Family<Labels, prometheus_client::metrics::counter::Counter>;

/// Which per-process labels to add beyond `gpu`, `UUID` and `pid` (privacy and cardinality:
/// none by default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessLabels {
    pub user: bool,
    pub command: bool,
    /// dcgm-exporter's `pod`, `namespace` and `container`, for processes in a pod.
    pub pod: bool,
    /// `slurm_job` (`81234.0`), for processes in a Slurm job.
    pub job: bool,
}

impl ProcessLabels {
    /// Parses `--process-labels user,command,pod,job`.
    pub fn parse(list: &str) -> Result<ProcessLabels, String> {
        let mut out = ProcessLabels::default();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item {
                "user" => out.user = true,
                "command" => out.command = true,
                "pod" => out.pod = true,
                "job" => out.job = true,
                other => {
                    return Err(format!(
                        "unknown process label '{other}' (choose from: user, command, pod, job)"
                    ))
                }
            }
        }
        Ok(out)
    }

    /// Whether an owner of `kind` is shown: a pod (and any other container or service) with
    /// `pod`, a Slurm job with `job`.
    pub fn owner(&self, kind: OwnerKind) -> bool {
        match kind {
            OwnerKind::Slurm => self.job,
            _ => self.pod,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Also export dcgm-exporter's names (`--no-dcgm-names` turns them off).
    pub dcgm: bool,
    pub process_labels: ProcessLabels,
}

/// Longest `command` label value: a label is no place for a whole command line.
pub const MAX_COMMAND: usize = 128;
const MIB: u64 = 1 << 20;

/// A label value from text a process or the driver chose: the one escaping rule
/// ([`crate::text::escape`]), so that `curl /metrics` on a terminal prints no escape
/// sequence.
fn label(s: Option<&str>) -> String {
    s.map_or_else(String::new, |s| crate::text::escape(s).into_owned())
}

/// A command line cut to [`MAX_COMMAND`] characters: a label, or the JSON of a process, is no
/// place for a whole command line.
pub fn cut_command(command: Option<&str>) -> Option<String> {
    command.map(|c| c.chars().take(MAX_COMMAND).collect())
}

/// The sample as `/api/v1/sample` serves it: each process's user and command only when
/// `--process-labels` asks for them (command lines carry secrets, `--hf-token …`, and the
/// endpoint is as open as `/metrics`), the command cut as its label is. The JSON writer
/// escapes what is unsafe.
pub fn redact(sample: &Sample, labels: ProcessLabels) -> Sample {
    let mut s = sample.clone();
    let command = |c: &mut Option<String>| {
        *c = if labels.command {
            cut_command(c.as_deref())
        } else {
            None
        };
    };
    for d in &mut s.devices {
        // Every kind of row a sample carries, each by the same labels: processes,
        // holders (other containers' and orphaned workers' processes), owners.
        for p in &mut d.processes {
            if !labels.user {
                p.user = None;
            }
            command(&mut p.command);
            if !p
                .owner
                .as_deref()
                .map_or(labels.pod, |o| labels.owner(o.kind))
            {
                p.owner = None;
                p.container = None;
                // The cgroup's path names the owner as well.
                p.gpu_limit = None;
            }
        }
        for h in &mut d.holders {
            if !labels.user {
                h.user = None;
            }
            command(&mut h.command);
        }
        // The exited processes' users too, as the running ones' (their names are kept, as
        // the running ones' are).
        for e in d.accounting.iter_mut().flat_map(|a| a.exited.iter_mut()) {
            if !labels.user {
                e.user = None;
            }
        }
    }
    s
}

fn int(registry: &mut Registry, name: &str, help: &str) -> Int {
    let f = Int::default();
    registry.register(name, help, f.clone());
    f
}

/// A counter family; the name is given without `_total`, which the encoder adds.
fn count(registry: &mut Registry, name: &str, help: &str) -> Count {
    let f = Count::default();
    registry.register(name, help, f.clone());
    f
}

fn float(registry: &mut Registry, name: &str, help: &str) -> Float {
    let f = Float::default();
    registry.register(name, help, f.clone());
    f
}

/// A gauge with no labels (a family would print `{}`).
fn single(registry: &mut Registry, name: &str, help: &str, v: Option<f64>) {
    if let Some(v) = v.filter(|v| v.is_finite()) {
        let g = Gauge::<f64, AtomicU64>::default();
        g.set(v);
        registry.register(name, help, g);
    }
}

fn set_int(f: &Int, labels: &Labels, v: Option<u64>) {
    if let Some(v) = v {
        f.get_or_create(labels)
            .set(i64::try_from(v).unwrap_or(i64::MAX));
    }
}

fn set_float(f: &Float, labels: &Labels, v: Option<f64>) {
    if let Some(v) = v.filter(|v| v.is_finite()) {
        f.get_or_create(labels).set(v);
    }
}

struct Dcgm {
    fb_used: Int,
    fb_free: Int,
    fb_reserved: Int,
    gpu_util: Int,
    mem_copy_util: Int,
    gpu_temp: Int,
    power: Float,
    xid: Int,
    ecc_sbe_vol: Int,
    ecc_dbe_vol: Int,
    ecc_sbe_agg: Int,
    ecc_dbe_agg: Int,
    remap_corr: Int,
    remap_unc: Int,
    remap_pending: Int,
    remap_failure: Int,
    throttle: Int,
}

impl Dcgm {
    fn register(r: &mut Registry) -> Dcgm {
        // Help texts as dcgm-exporter's default counters file words them.
        Dcgm {
            fb_used: int(r, dcgm::FB_USED, "Framebuffer memory used (in MiB)"),
            fb_free: int(r, dcgm::FB_FREE, "Framebuffer memory free (in MiB)"),
            fb_reserved: int(r, dcgm::FB_RESERVED, "Framebuffer memory reserved (in MiB)"),
            gpu_util: int(r, dcgm::GPU_UTIL, "GPU utilization (in %)"),
            mem_copy_util: int(r, dcgm::MEM_COPY_UTIL, "Memory utilization (in %)"),
            gpu_temp: int(r, dcgm::GPU_TEMP, "GPU temperature (in C)"),
            power: float(r, dcgm::POWER_USAGE, "Power draw (in W)"),
            xid: int(
                r,
                dcgm::XID_ERRORS,
                "Value of the last XID error encountered",
            ),
            ecc_sbe_vol: int(
                r,
                dcgm::ECC_SBE_VOL_TOTAL,
                "Total number of single-bit volatile ECC errors",
            ),
            ecc_dbe_vol: int(
                r,
                dcgm::ECC_DBE_VOL_TOTAL,
                "Total number of double-bit volatile ECC errors",
            ),
            ecc_sbe_agg: int(
                r,
                dcgm::ECC_SBE_AGG_TOTAL,
                "Total number of single-bit persistent ECC errors",
            ),
            ecc_dbe_agg: int(
                r,
                dcgm::ECC_DBE_AGG_TOTAL,
                "Total number of double-bit persistent ECC errors",
            ),
            remap_corr: int(
                r,
                dcgm::CORRECTABLE_REMAPPED_ROWS,
                "Number of remapped rows for correctable errors",
            ),
            remap_unc: int(
                r,
                dcgm::UNCORRECTABLE_REMAPPED_ROWS,
                "Number of remapped rows for uncorrectable errors",
            ),
            remap_pending: int(
                r,
                dcgm::ROW_REMAP_PENDING,
                "Whether remapping of rows is pending (1) or not (0)",
            ),
            remap_failure: int(
                r,
                dcgm::ROW_REMAP_FAILURE,
                "Whether remapping of rows has failed",
            ),
            throttle: int(
                r,
                dcgm::CLOCK_THROTTLE_REASONS,
                "Current clock throttle reasons (bitmask of DCGM_CLOCKS_THROTTLE_REASON_*)",
            ),
        }
    }

    fn record(&self, d: &Device, hostname: &str) {
        let labels: Labels = vec![
            ("gpu", d.index.to_string()),
            ("UUID", label(d.uuid.as_deref())),
            ("pci_bus_id", label(d.pci_bus_id.as_deref())),
            ("device", format!("nvidia{}", d.index)),
            ("modelName", label(d.name.as_deref())),
            ("Hostname", label(Some(hostname))),
        ];
        let h = &d.health;
        // The last Xid's number, 0 while none has come: a gauge, as dcgm-exporter has it
        // (gpumon_xid_errors_total is the counter). Kept for a lost GPU, with its ECC
        // counts: Xid 79 comes just before the loss, and is what the alert is for.
        if h.xids_watched || !h.xids.is_empty() {
            set_int(
                &self.xid,
                &labels,
                Some(h.last_xid().map_or(0, |x| u64::from(x.xid))),
            );
        }
        if let Some(e) = h.ecc {
            set_int(&self.ecc_sbe_vol, &labels, e.volatile_corrected);
            set_int(&self.ecc_dbe_vol, &labels, e.volatile_uncorrected);
            set_int(&self.ecc_sbe_agg, &labels, e.aggregate_corrected);
            set_int(&self.ecc_dbe_agg, &labels, e.aggregate_uncorrected);
        }
        if let Some(r) = h.remapped_rows {
            set_int(&self.remap_corr, &labels, Some(r.corrected.into()));
            set_int(&self.remap_unc, &labels, Some(r.uncorrected.into()));
            set_int(&self.remap_pending, &labels, Some(r.pending.into()));
            set_int(&self.remap_failure, &labels, Some(r.failed.into()));
        }
        if !d.fresh() {
            // Lost, stalled or failed: its counters only, never old readings as if fresh.
            return;
        }
        // dcgm-exporter writes whole MiB.
        let mib = |b: Option<u64>| b.map(|b| b / MIB);
        set_int(&self.fb_used, &labels, mib(d.memory.used_bytes));
        set_int(&self.fb_free, &labels, mib(d.memory.free_bytes));
        set_int(&self.fb_reserved, &labels, mib(d.memory.reserved_bytes));
        set_int(
            &self.gpu_util,
            &labels,
            d.utilization.gpu_percent.map(u64::from),
        );
        set_int(
            &self.mem_copy_util,
            &labels,
            d.utilization.memory_percent.map(u64::from),
        );
        set_int(&self.gpu_temp, &labels, d.temperature_c.map(u64::from));
        set_float(&self.power, &labels, d.power_draw_w);
        set_int(&self.throttle, &labels, d.health.clock_event_reasons);
        // MIG devices: the parent's labels plus dcgm-exporter's GPU_I_PROFILE and GPU_I_ID.
        for m in &d.mig {
            let mut l = labels.clone();
            l.push(("GPU_I_PROFILE", label(m.profile.as_deref())));
            l.push((
                "GPU_I_ID",
                m.gpu_instance_id
                    .map_or_else(String::new, |g| g.to_string()),
            ));
            set_int(&self.fb_used, &l, mib(m.memory.used_bytes));
            set_int(&self.fb_free, &l, mib(m.memory.free_bytes));
            set_int(&self.gpu_util, &l, m.utilization.gpu_percent.map(u64::from));
        }
    }
}

struct Gpumon {
    info: Int,
    up: Int,
    stalled: Int,
    data_age: Float,
    total: Int,
    used: Int,
    free: Int,
    reserved: Int,
    unattributed: Int,
    util: Float,
    mem_util: Float,
    temp: Int,
    power: Float,
    power_limit: Float,
    fan: Float,
    processes: Int,
    proc_memory: Int,
    allocated: Int,
    alloc_reserved: Int,
    cached: Int,
    non_framework: Int,
    allocated_peak: Int,
    reserved_peak: Int,
    step_growth: Int,
    xids: Count,
    xid_watched: Int,
    ecc: Count,
    remapped: Int,
    remap_pending: Int,
    remap_failed: Int,
    clock_reason: Int,
}

impl Gpumon {
    fn register(r: &mut Registry) -> Gpumon {
        Gpumon {
            info: int(
                r,
                ours::GPU_INFO,
                "A GPU's identity: always 1, with its name and PCI bus id as labels",
            ),
            up: int(
                r,
                ours::GPU_UP,
                "1 when the GPU answered this sample, 0 when it is lost, stalled or failed",
            ),
            stalled: int(
                r,
                ours::GPU_STALLED,
                "1 when the GPU has not answered within its deadline (a driver call hangs)",
            ),
            data_age: float(
                r,
                ours::GPU_DATA_AGE_SECONDS,
                "How old the GPU's last readings were when the sample was taken",
            ),
            total: int(r, ours::MEMORY_TOTAL_BYTES, "Total GPU memory"),
            used: int(
                r,
                ours::MEMORY_USED_BYTES,
                "GPU memory in use (NVML v2: excludes the driver reservation)",
            ),
            free: int(r, ours::MEMORY_FREE_BYTES, "Free GPU memory"),
            reserved: int(
                r,
                ours::MEMORY_RESERVED_BYTES,
                "GPU memory reserved by the driver and firmware",
            ),
            unattributed: int(
                r,
                ours::MEMORY_UNATTRIBUTED_BYTES,
                "GPU memory in use by no listed process (other containers, the driver)",
            ),
            util: float(
                r,
                ours::GPU_UTILIZATION_RATIO,
                "Share of the last sample period in which a kernel ran",
            ),
            mem_util: float(
                r,
                ours::MEMORY_COPY_UTILIZATION_RATIO,
                "Share of the last sample period in which device memory was read or written",
            ),
            temp: int(r, ours::TEMPERATURE_CELSIUS, "GPU temperature"),
            power: float(r, ours::POWER_WATTS, "Power draw"),
            power_limit: float(r, ours::POWER_LIMIT_WATTS, "Enforced power limit"),
            fan: float(r, ours::FAN_RATIO, "Fan speed as a share of its maximum"),
            processes: int(r, ours::PROCESSES, "Processes listed on the GPU"),
            proc_memory: int(
                r,
                ours::PROCESS_MEMORY_BYTES,
                "GPU memory of one process, as NVML counts it (its CUDA context included)",
            ),
            allocated: int(
                r,
                ours::ALLOCATOR_ALLOCATED_BYTES,
                "Memory the framework's allocator has handed out (under gpumon run)",
            ),
            alloc_reserved: int(
                r,
                ours::ALLOCATOR_RESERVED_BYTES,
                "Memory the framework's caching allocator holds: allocated plus cached (under gpumon run)",
            ),
            cached: int(
                r,
                ours::ALLOCATOR_CACHED_BYTES,
                "Memory the caching allocator holds but has not handed out (under gpumon run)",
            ),
            non_framework: int(
                r,
                ours::ALLOCATOR_NON_FRAMEWORK_BYTES,
                "A process's GPU memory outside the framework's allocator: CUDA context, libraries (under gpumon run)",
            ),
            allocated_peak: int(
                r,
                ours::ALLOCATOR_ALLOCATED_PEAK_BYTES,
                "Peak of allocated memory (under gpumon run)",
            ),
            reserved_peak: int(
                r,
                ours::ALLOCATOR_RESERVED_PEAK_BYTES,
                "Peak of reserved memory (under gpumon run)",
            ),
            step_growth: int(
                r,
                ours::RUN_STEP_GROWTH_BYTES,
                "Bytes a training step by which a process's allocated memory (or, when only the cache grows, its reserved memory) rises steadily step after step; absent until such growth is found (under gpumon run)",
            ),
            xids: count(
                r,
                ours::XID_ERRORS,
                "Xid errors (NVML's event API) since gpumon started, by Xid number",
            ),
            xid_watched: int(
                r,
                ours::XID_WATCHED,
                "1 when Xid errors are watched on the GPU, 0 when the driver cannot (the reason as a label)",
            ),
            ecc: count(
                r,
                ours::ECC_ERRORS,
                "ECC errors: volatile since the driver loaded, aggregate over the GPU's life",
            ),
            remapped: int(
                r,
                ours::REMAPPED_ROWS,
                "Memory rows remapped for correctable or uncorrectable errors",
            ),
            remap_pending: int(
                r,
                ours::REMAPPED_ROWS_PENDING,
                "1 when a row remapping waits for the next GPU reset",
            ),
            remap_failed: int(
                r,
                ours::REMAPPED_ROWS_FAILED,
                "1 when a row remapping failed: the GPU needs service",
            ),
            clock_reason: int(
                r,
                ours::CLOCK_EVENT_REASON,
                "1 for each clock event (throttle) reason in force, 0 for the others",
            ),
        }
    }

    fn record(&self, d: &Device, opts: &Options) {
        let labels: Labels = vec![
            ("gpu", d.index.to_string()),
            ("UUID", label(d.uuid.as_deref())),
        ];
        let mut info = labels.clone();
        info.push(("name", label(d.name.as_deref())));
        info.push(("pci_bus_id", label(d.pci_bus_id.as_deref())));
        set_int(&self.info, &info, Some(1));
        set_int(&self.up, &labels, Some(u64::from(d.fresh())));
        set_int(&self.stalled, &labels, Some(u64::from(d.stalled)));
        set_float(
            &self.data_age,
            &labels,
            d.data_age_ms.map(|ms| ms as f64 / 1000.0),
        );
        if !d.fresh() {
            // Lost, stalled or failed: its state and its counters (Xid, ECC, remapped rows:
            // known, and what tells why it was lost), never old readings as if fresh.
            self.record_health(d, &labels);
            return;
        }
        let m = &d.memory;
        set_int(&self.total, &labels, m.total_bytes);
        set_int(&self.used, &labels, m.used_bytes);
        set_int(&self.free, &labels, m.free_bytes);
        set_int(&self.reserved, &labels, m.reserved_bytes);
        set_int(
            &self.unattributed,
            &labels,
            d.breakdown().and_then(|b| b.get(PartKind::Unattributed)),
        );
        let ratio = |p: Option<u32>| p.map(|p| f64::from(p) / 100.0);
        set_float(&self.util, &labels, ratio(d.utilization.gpu_percent));
        set_float(&self.mem_util, &labels, ratio(d.utilization.memory_percent));
        set_int(&self.temp, &labels, d.temperature_c.map(u64::from));
        set_float(&self.power, &labels, d.power_draw_w);
        set_float(&self.power_limit, &labels, d.power_limit_w);
        set_float(&self.fan, &labels, ratio(d.fan_percent));
        if d.processes_error.is_none() || !d.processes.is_empty() {
            set_int(&self.processes, &labels, Some(d.processes.len() as u64));
        }
        for p in &d.processes {
            self.record_process(d, p, &labels, opts);
        }
        self.record_health(d, &labels);
        // MIG devices on the same memory series, with dcgm-exporter's GPU_I_ID and
        // GPU_I_PROFILE (`{GPU_I_ID=""}` selects whole GPUs).
        for m in &d.mig {
            let mut l = labels.clone();
            l.push((
                "GPU_I_ID",
                m.gpu_instance_id
                    .map_or_else(String::new, |g| g.to_string()),
            ));
            l.push(("GPU_I_PROFILE", label(m.profile.as_deref())));
            set_int(&self.total, &l, m.memory.total_bytes);
            set_int(&self.used, &l, m.memory.used_bytes);
            set_int(&self.free, &l, m.memory.free_bytes);
            set_int(
                &self.unattributed,
                &l,
                m.breakdown(d).and_then(|b| b.get(PartKind::Unattributed)),
            );
            set_float(&self.util, &l, ratio(m.utilization.gpu_percent));
            set_int(&self.processes, &l, Some(m.processes(d).count() as u64));
        }
    }

    fn record_health(&self, d: &Device, labels: &Labels) {
        let h = &d.health;
        let with = |k: &'static str, v: String| {
            let mut l = labels.clone();
            l.push((k, v));
            l
        };
        if h.xids_watched {
            set_int(&self.xid_watched, labels, Some(1));
        } else if let Some(why) = &h.events_error {
            set_int(
                &self.xid_watched,
                &with("reason", label(Some(why))),
                Some(0),
            );
        }
        // The counts seen stay counted when watching stops (a lost GPU's waiter ends).
        for x in &h.xids {
            self.xids
                .get_or_create(&with("xid", x.xid.to_string()))
                .inc_by(x.count);
        }
        if let Some(e) = h.ecc {
            let counts = [
                ("corrected", "volatile", e.volatile_corrected),
                ("uncorrected", "volatile", e.volatile_uncorrected),
                ("corrected", "aggregate", e.aggregate_corrected),
                ("uncorrected", "aggregate", e.aggregate_uncorrected),
            ];
            for (kind, scope, n) in counts {
                let Some(n) = n else { continue };
                let mut l = with("type", kind.to_owned());
                l.push(("counter", scope.to_owned()));
                self.ecc.get_or_create(&l).inc_by(n);
            }
        }
        if let Some(r) = h.remapped_rows {
            let corrected = with("type", "corrected".to_owned());
            set_int(&self.remapped, &corrected, Some(r.corrected.into()));
            let uncorrected = with("type", "uncorrected".to_owned());
            set_int(&self.remapped, &uncorrected, Some(r.uncorrected.into()));
            set_int(&self.remap_pending, labels, Some(r.pending.into()));
            set_int(&self.remap_failed, labels, Some(r.failed.into()));
        }
        if let Some(mask) = h.clock_event_reasons.filter(|_| d.fresh()) {
            for (bit, name) in crate::model::health::CLOCK_REASONS {
                set_int(
                    &self.clock_reason,
                    &with("reason", (*name).to_owned()),
                    Some(u64::from(mask & bit != 0)),
                );
            }
        }
    }

    fn record_process(&self, d: &Device, p: &Process, device: &Labels, opts: &Options) {
        let mut labels = device.clone();
        labels.push(("pid", p.pid.to_string()));
        if opts.process_labels.user {
            labels.push(("user", label(p.user.as_deref())));
        }
        if opts.process_labels.command {
            let command = p.command.as_deref().or(p.name.as_deref());
            labels.push(("command", label(cut_command(command).as_deref())));
        }
        owner_labels(p.owner.as_deref(), opts.process_labels, &mut labels);
        // Last, so every series lists its labels in one order.
        if let Some(gi) = p.gpu_instance_id {
            labels.push(("GPU_I_ID", gi.to_string()));
        }
        set_int(&self.proc_memory, &labels, p.gpu_memory_bytes);
        let Some(a) = &p.allocator else { return };
        set_int(&self.allocated, &labels, a.allocated_bytes);
        set_int(&self.alloc_reserved, &labels, a.reserved_bytes);
        // The same arithmetic as everywhere else: the breakdown model's.
        let split = Breakdown::process(&d.memory, p.memory());
        let part = |k| split.as_ref().and_then(|b| b.get(k));
        set_int(&self.cached, &labels, part(PartKind::Cached));
        set_int(&self.non_framework, &labels, part(PartKind::NonFramework));
        set_int(&self.allocated_peak, &labels, a.allocated_peak_bytes);
        set_int(&self.reserved_peak, &labels, a.reserved_peak_bytes);
        set_int(
            &self.step_growth,
            &labels,
            a.step_growth.as_ref().map(|g| g.bytes_per_step),
        );
    }
}

/// What serve counts over time, beside one sample: memory held by idle processes per GPU,
/// and memory per user.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    /// Per GPU index: memory of processes at 0% SM for `--idle-after` (`None` until serve has
    /// watched that long).
    pub idle_held: Vec<(u32, Option<u64>)>,
    /// Per user: the GPU memory their processes hold.
    pub user_memory: Vec<(String, u64)>,
}

/// What serve knows of each GPU's counters from its last good reading, by index: a lost GPU
/// answers no more, but its ECC counts and remapped rows are still what they were, and are
/// exported (with `gpumon_gpu_up 0`) until gpumon restarts.
#[derive(Debug, Clone, Default)]
pub struct LastCounters(std::collections::BTreeMap<u32, (Option<String>, Health)>);

impl LastCounters {
    /// Remembers the counters of `sample`'s fresh GPUs, and gives each GPU that is not fresh
    /// the counters it last had (the same GPU: its UUID unchanged).
    pub fn carry(&mut self, sample: &mut Sample) {
        for d in &mut sample.devices {
            if d.fresh() {
                self.0.insert(d.index, (d.uuid.clone(), d.health.clone()));
                continue;
            }
            let Some((uuid, last)) = self.0.get(&d.index) else {
                continue;
            };
            if d.uuid.is_some() && d.uuid != *uuid {
                continue;
            }
            let h = &mut d.health;
            if h.ecc.is_none() {
                h.ecc = last.ecc;
            }
            if h.remapped_rows.is_none() {
                h.remapped_rows = last.remapped_rows;
            }
            // The sampler's watcher keeps every Xid; should a view have none, the last.
            if h.xids.is_empty() {
                h.xids.clone_from(&last.xids);
            }
        }
    }
}

/// The exposition of `sample` (without the OpenMetrics `# EOF`): every GPU, its processes,
/// and gpumon's own facts. `sampled_in` is how long the sample took.
pub fn encode(sample: &Sample, sampled_in: Duration, opts: &Options) -> String {
    encode_with(sample, sampled_in, opts, &Usage::default())
}

/// A process's owner's labels, as `--process-labels` asks for them: dcgm-exporter's `pod`,
/// `namespace` and `container` for a pod with `pod`, `slurm_job` with `job`.
pub(super) fn owner_labels(
    owner: Option<&crate::model::owner::Owner>,
    asked: ProcessLabels,
    labels: &mut Labels,
) {
    if asked.pod {
        if let Some(o) = owner.filter(|o| o.kind == OwnerKind::Kubernetes) {
            // Kubernetes bounds these (253 characters), and so does the kubelet module.
            labels.push(("pod", label(Some(&o.name))));
            labels.push(("namespace", label(o.namespace.as_deref())));
            labels.push(("container", label(o.container.as_deref())));
        }
    }
    if asked.job {
        if let Some(o) = owner.filter(|o| o.kind == OwnerKind::Slurm) {
            labels.push(("slurm_job", label(o.job.as_deref().or(Some(&o.name)))));
        }
    }
}

/// [`encode`] with what serve counts over time.
pub fn encode_with(sample: &Sample, sampled_in: Duration, opts: &Options, usage: &Usage) -> String {
    let mut r = Registry::default();
    let dcgm = opts.dcgm.then(|| Dcgm::register(&mut r));
    let g = Gpumon::register(&mut r);
    let shared = shared::Series::register_for(&mut r, sample);
    let idle = int(
        &mut r,
        ours::IDLE_HELD_BYTES,
        "GPU memory held by processes that did nothing on the GPU (0% SM) for at least \
         --idle-after; absent until serve has watched that long",
    );
    for (index, held) in &usage.idle_held {
        if let Some(d) = sample
            .devices
            .iter()
            .find(|d| d.index == *index && d.fresh())
        {
            let labels: Labels = vec![
                ("gpu", d.index.to_string()),
                ("UUID", label(d.uuid.as_deref())),
            ];
            set_int(&idle, &labels, *held);
        }
    }
    if opts.process_labels.user {
        let users = int(
            &mut r,
            ours::USER_MEMORY_BYTES,
            "GPU memory held by each user's processes, on every GPU together (with \
             --process-labels user)",
        );
        for (user, bytes) in &usage.user_memory {
            set_int(&users, &vec![("user", label(Some(user)))], Some(*bytes));
        }
    }
    let build = int(
        &mut r,
        ours::BUILD_INFO,
        "gpumon's version, data source and host: always 1",
    );
    let errors = int(
        &mut r,
        ours::SAMPLE_ERROR,
        "1 when no GPU could be listed at all (the driver failed), with the reason as a label",
    );
    let hostname = label(sample.hostname.as_deref());
    for d in &sample.devices {
        if let Some(dcgm) = &dcgm {
            dcgm.record(d, &hostname);
        }
        g.record(d, opts);
        if let Some(shared) = &shared {
            shared.record(d);
            shared.record_owners(d, opts.process_labels);
        }
    }
    set_int(
        &build,
        &vec![
            ("version", env!("CARGO_PKG_VERSION").to_owned()),
            ("source", sample.source.to_owned()),
            ("driver_version", label(sample.driver_version.as_deref())),
            // The node's name, as dcgm-exporter's `Hostname`: a fleet read from a
            // Prometheus names the node by it without reading dcgm-exporter's names too.
            ("Hostname", hostname.clone()),
        ],
        Some(1),
    );
    single(
        &mut r,
        ours::SAMPLE_DURATION_SECONDS,
        "How long the last sample took, waiting for the GPUs included",
        Some(sampled_in.as_secs_f64()),
    );
    single(
        &mut r,
        ours::SAMPLE_TIMESTAMP_SECONDS,
        "When the last sample was taken, in Unix seconds",
        sample
            .timestamp
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs_f64()),
    );
    if let Some(e) = &sample.error {
        set_int(&errors, &vec![("error", label(Some(e)))], Some(1));
    }
    let mut out = String::with_capacity(64 * 1024);
    // Writing into a String cannot fail.
    let _ = encode_registry(&mut out, &r);
    out
}

/// The Prometheus text format (0.0.4) of an OpenMetrics body: a counter's HELP and TYPE
/// lines name it with its `_total`, as its samples do (OpenMetrics names the family without).
pub fn prometheus_text(openmetrics: &str) -> String {
    let counters: Vec<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len() + 64);
    for line in openmetrics.split_inclusive('\n') {
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|prefix| {
            let rest = line.strip_prefix(prefix)?;
            let name = counters
                .iter()
                .find(|c| rest.strip_prefix(**c).is_some_and(|r| r.starts_with(' ')))?;
            Some(format!("{prefix}{name}_total{}", &rest[name.len()..]))
        });
        match renamed {
            Some(l) => out.push_str(&l),
            None => out.push_str(line),
        }
    }
    out
}

/// gpumon's own serving cost: the last scrape answered before this exposition was encoded
/// (Prometheus records each scrape's own duration as `scrape_duration_seconds`).
pub fn encode_scrape(last_scrape: Option<Duration>) -> String {
    let mut r = Registry::default();
    single(
        &mut r,
        ours::SCRAPE_DURATION_SECONDS,
        "How long the last scrape before this sample took to answer, from request to response",
        last_scrape.map(|d| d.as_secs_f64()),
    );
    let mut out = String::new();
    let _ = encode_registry(&mut out, &r);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AllocatorStats, Memory, ProcessKind, Utilization};
    use std::time::SystemTime;

    const GIB: u64 = 1 << 30;

    fn sample() -> Sample {
        let mut p = Process::from_nvml(4242, ProcessKind::Compute, Some(10 * GIB));
        p.user = Some("alice".into());
        p.command = Some("python train.py".into());
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
        let healthy = Device {
            index: 0,
            uuid: Some("GPU-aaaa".into()),
            name: Some("NVIDIA H100".into()),
            pci_bus_id: Some("00000000:01:00.0".into()),
            memory: Memory {
                total_bytes: Some(80 * GIB),
                used_bytes: Some(12 * GIB),
                free_bytes: Some(67 * GIB),
                reserved_bytes: Some(GIB),
            },
            utilization: Utilization {
                gpu_percent: Some(93),
                memory_percent: Some(40),
            },
            temperature_c: Some(61),
            power_draw_w: Some(412.5),
            processes: vec![p],
            data_age_ms: Some(1),
            ..Device::default()
        };
        let stalled = Device {
            index: 1,
            uuid: Some("GPU-bbbb".into()),
            memory: Memory {
                used_bytes: Some(5 * GIB),
                ..Memory::default()
            },
            stalled: true,
            error: Some("not responding for 12 s".into()),
            data_age_ms: Some(12_000),
            ..Device::default()
        };
        Sample {
            timestamp: SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000),
            hostname: Some("node-7".into()),
            source: "nvml",
            driver_version: Some("550.54.15".into()),
            cuda_version: None,
            devices: vec![healthy, stalled],
            error: None,
            host: None,
        }
    }

    fn opts() -> Options {
        Options {
            dcgm: true,
            process_labels: ProcessLabels::default(),
        }
    }

    #[test]
    fn the_prometheus_text_names_counters_with_their_total() {
        let om = "# HELP a_things Things.\n# TYPE a_things counter\na_things_total{x=\"1\"} 3\n\
                  # HELP a_things_seen Seen.\n# TYPE a_things_seen gauge\na_things_seen 1\n";
        assert_eq!(
            prometheus_text(om),
            "# HELP a_things_total Things.\n# TYPE a_things_total counter\na_things_total{x=\"1\"} 3\n\
             # HELP a_things_seen Seen.\n# TYPE a_things_seen gauge\na_things_seen 1\n",
            "a gauge whose name starts with a counter's stays as it is"
        );
    }

    #[test]
    fn dcgm_names_units_and_labels() {
        let text = encode(&sample(), Duration::from_millis(3), &opts());
        assert!(text.contains(
            "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:01:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100\",Hostname=\"node-7\"} 12288\n"
        ), "{text}");
        assert!(text.contains("# TYPE DCGM_FI_DEV_FB_USED gauge\n"));
        assert!(text.contains("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\""));
        // The stalled GPU has no dcgm series at all.
        assert!(!text.contains("GPU-bbbb\",pci_bus_id"), "{text}");
        let off = encode(
            &sample(),
            Duration::ZERO,
            &Options {
                dcgm: false,
                ..opts()
            },
        );
        assert!(!off.contains("DCGM_"));
    }

    #[test]
    fn growth_step_after_step_is_exported_only_when_found() {
        let flat = encode(&sample(), Duration::ZERO, &opts());
        assert!(!flat.contains("gpumon_run_step_growth_bytes{"), "{flat}");
        let mut s = sample();
        let p = &mut s.devices[0].processes[0];
        if let Some(a) = p.allocator.as_mut() {
            a.step_growth = Some(crate::model::StepGrowth {
                measure: "allocated".into(),
                bytes_per_step: 13 << 20,
                since_step: 11,
                last_step: 60,
                micros_per_step: Some(5000),
                steps_to_full: Some(300),
            });
        }
        let text = encode(&s, Duration::ZERO, &opts());
        let want = format!(
            "gpumon_run_step_growth_bytes{{gpu=\"0\",UUID=\"GPU-aaaa\",pid=\"4242\"}} {}\n",
            13u64 << 20
        );
        assert!(text.contains(&want), "{text}");
        assert!(
            text.contains("# HELP gpumon_run_step_growth_bytes Bytes a training step"),
            "{text}"
        );
    }

    #[test]
    fn base_units_state_and_the_allocator_split() {
        let text = encode(&sample(), Duration::from_millis(3), &opts());
        let g0 = "{gpu=\"0\",UUID=\"GPU-aaaa\"}";
        for line in [
            format!("gpumon_memory_used_bytes{g0} {}", 12 * GIB),
            format!("gpumon_memory_reserved_bytes{g0} {GIB}"),
            format!("gpumon_memory_unattributed_bytes{g0} {}", 2 * GIB),
            format!("gpumon_gpu_utilization_ratio{g0} 0.93"),
            format!("gpumon_gpu_up{g0} 1"),
            "gpumon_gpu_up{gpu=\"1\",UUID=\"GPU-bbbb\"} 0".to_owned(),
            "gpumon_gpu_stalled{gpu=\"1\",UUID=\"GPU-bbbb\"} 1".to_owned(),
            "gpumon_gpu_data_age_seconds{gpu=\"1\",UUID=\"GPU-bbbb\"} 12.0".to_owned(),
            format!(
                "gpumon_process_memory_bytes{{gpu=\"0\",UUID=\"GPU-aaaa\",pid=\"4242\"}} {}",
                10 * GIB
            ),
            format!(
                "gpumon_allocator_cached_bytes{{gpu=\"0\",UUID=\"GPU-aaaa\",pid=\"4242\"}} {}",
                2 * GIB
            ),
            format!(
                "gpumon_allocator_non_framework_bytes{{gpu=\"0\",UUID=\"GPU-aaaa\",pid=\"4242\"}} {}",
                2 * GIB
            ),
        ] {
            assert!(text.contains(&format!("{line}\n")), "missing {line}:\n{text}");
        }
        // A stalled GPU's old readings are not exported.
        assert!(
            !text.contains("gpumon_memory_used_bytes{gpu=\"1\""),
            "{text}"
        );
        // No user or command by default.
        assert!(!text.contains("alice") && !text.contains("train.py"));
        let labelled = encode(
            &sample(),
            Duration::ZERO,
            &Options {
                process_labels: ProcessLabels::parse("user,command").expect("valid"),
                ..opts()
            },
        );
        assert!(labelled.contains("pid=\"4242\",user=\"alice\",command=\"python train.py\"}"));
        assert!(ProcessLabels::parse("user,cmdline").is_err());
    }

    /// W1: a GPU lost right after an Xid 79 keeps its Xid, ECC and DCGM_FI_DEV_XID_ERRORS
    /// series (with gpumon_gpu_up 0), so the alert on them fires; its readings go.
    #[test]
    fn a_lost_gpus_counters_stay_exported() {
        use crate::model::health::EccCounts;
        let mut counters = LastCounters::default();
        let mut before = sample();
        let d = &mut before.devices[0];
        d.health.xids_watched = true;
        d.health.add_xid(
            79,
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000),
            None,
        );
        d.health.ecc = Some(EccCounts {
            volatile_uncorrected: Some(2),
            ..EccCounts::default()
        });
        counters.carry(&mut before);
        let mut lost = sample();
        let xids = before.devices[0].health.xids.clone();
        lost.devices[0] = Device {
            name: Some("NVIDIA H100".into()),
            uuid: Some("GPU-aaaa".into()),
            pci_bus_id: Some("00000000:01:00.0".into()),
            ..Device::failed(0, "GPU is lost".into())
        };
        // The sampler's watcher keeps the Xids; it stops watching a lost GPU.
        lost.devices[0].health.xids = xids;
        counters.carry(&mut lost);
        let text = encode(&lost, Duration::ZERO, &opts());
        let g0 = "gpu=\"0\",UUID=\"GPU-aaaa\"";
        for line in [
            format!("gpumon_gpu_up{{{g0}}} 0"),
            format!("gpumon_xid_errors_total{{{g0},xid=\"79\"}} 1"),
            format!("gpumon_ecc_errors_total{{{g0},type=\"uncorrected\",counter=\"volatile\"}} 2"),
        ] {
            assert!(text.lines().any(|l| l == line), "no {line} in:\n{text}");
        }
        assert!(
            text.lines()
                .any(|l| l.starts_with("DCGM_FI_DEV_XID_ERRORS{gpu=\"0\"") && l.ends_with(" 79")),
            "{text}"
        );
        assert!(
            !text.contains(&format!("gpumon_memory_used_bytes{{{g0}}}")),
            "no readings of a lost GPU: {text}"
        );
        assert!(!text.contains("DCGM_FI_DEV_FB_USED{gpu=\"0\""), "{text}");
    }

    #[test]
    fn an_exited_processs_user_is_served_only_where_asked_and_its_peak_always() {
        let mut s = sample();
        s.devices[0].accounting = Some(crate::model::accounting::Accounting {
            enabled: Some(true),
            exited: vec![crate::model::accounting::ExitedProcess {
                pid: 4121,
                peak_bytes: Some(31 * GIB),
                started_at: None,
                ended_at: None,
                user: Some("alice".into()),
                name: Some("python".into()),
            }],
            ..Default::default()
        });
        let exited = |labels| {
            redact(&s, labels).devices[0]
                .accounting
                .as_ref()
                .map(|a| a.exited[0].clone())
        };
        let hidden = exited(ProcessLabels::default()).expect("kept");
        assert_eq!((hidden.user, hidden.peak_bytes), (None, Some(31 * GIB)));
        let asked = exited(ProcessLabels::parse("user").expect("labels")).expect("kept");
        assert_eq!(asked.user.as_deref(), Some("alice"));
    }
}
