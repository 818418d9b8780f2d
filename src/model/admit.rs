//! The one boundary for samples that come from outside this process: a node's
//! `/api/v1/sample` or `/api/v1/summary`, a recording's samples, a Prometheus answer. Every
//! string is escaped for the terminal ([`Sample::escaped`]'s walk, which covers every string
//! field of the model) and every number is checked against what a real GPU, process or host
//! can have: an impossible reading becomes `None` (with a field error saying what was
//! reported), an impossible device (an index NVML could never give) is left out and said.
//! Local samples get the same number checks in the sampler ([`Device::check_readings`]) and
//! the same escaping in each view.
//!
//! Pure: no terminal, runtime or driver.

use std::time::{Duration, SystemTime};

use super::fleet::{GpuState, NodeSummary};
use super::{Device, HostStats, Memory, MigDevice, Sample, Utilization};

/// Bounds no real host crosses: beyond them the sender is lying (or broken).
pub mod limits {
    /// NVML numbers devices below 64 (`NVML_MAX_DEVICES`-style limits; no host has more).
    pub const MAX_DEVICES: u32 = 64;
    /// MIG devices on one GPU: 7 on the largest profiles; their slots below this.
    pub const MAX_MIG: u32 = 64;
    /// GPU and compute instance ids are small (an H100 has at most 7 of each).
    pub const MAX_INSTANCE_ID: u32 = 1024;
    /// Processes listed on one GPU: far above any real one (contexts cost memory each).
    pub const MAX_PROCESSES: usize = 4096;
    /// Holders named on one GPU.
    pub const MAX_HOLDERS: usize = 1024;
    /// Allocation sites named for memory held across steps (the probe names at most 8).
    pub const MAX_HELD_SITES: usize = 64;
    /// Distinct Xids on one GPU (the catalogue has a few hundred).
    pub const MAX_XIDS: usize = 1024;
    /// A process's CPU share can pass 100% (threads): not past 100% of this many CPUs.
    pub const MAX_CPUS: u32 = 1 << 16;
    /// Host memory (and a process's resident memory): 1 PiB.
    pub const MAX_HOST_MEMORY: u64 = 1 << 50;
    /// How old a process, a holder, a reading or a host's uptime can be: 30 years.
    pub const MAX_AGE: std::time::Duration = std::time::Duration::from_secs(30 * 365 * 86_400);
    /// A load average beyond this is not a reading.
    pub const MAX_LOAD: f64 = 1e6;
}

use limits::*;

impl Sample {
    /// The sample as every view may see it when it came from elsewhere: strings escaped,
    /// numbers checked, impossible devices left out (said in [`Sample::error`]).
    pub fn admit(self) -> Sample {
        let mut s = match self.escaped() {
            std::borrow::Cow::Borrowed(_) => self,
            std::borrow::Cow::Owned(s) => s,
        };
        s.check_numbers();
        s
    }

    /// The number half of [`Sample::admit`].
    fn check_numbers(&mut self) {
        let mut seen = std::collections::BTreeSet::new();
        let mut refused = Vec::new();
        self.devices.retain(|d| {
            let ok = d.index < MAX_DEVICES && seen.insert(d.index);
            if !ok {
                refused.push(d.index);
            }
            ok
        });
        if !refused.is_empty() {
            let list: Vec<String> = refused.iter().take(4).map(u32::to_string).collect();
            let more = if refused.len() > 4 { ", …" } else { "" };
            let why = format!(
                "left out {} device{} with an impossible or repeated index ({}{more}; NVML \
                 numbers devices 0–{})",
                refused.len(),
                if refused.len() == 1 { "" } else { "s" },
                list.join(", "),
                MAX_DEVICES - 1
            );
            self.error = Some(match self.error.take() {
                Some(e) => format!("{e}; {why}"),
                None => why,
            });
        }
        let now = self.timestamp;
        for d in &mut self.devices {
            d.check_admitted(now);
        }
        if let Some(h) = self.host.as_mut() {
            h.check();
        }
    }
}

/// Whether `t` (unix seconds) is a time something at `now` can have started: not after it,
/// not more than [`MAX_AGE`] before it.
fn plausible_start(t: u64, now: SystemTime) -> bool {
    let Ok(now) = now.duration_since(SystemTime::UNIX_EPOCH) else {
        return false;
    };
    t <= now.as_secs() && now.as_secs() - t <= MAX_AGE.as_secs()
}

/// `v` where `keep(v)`, else `None`.
fn keep<T: Copy>(v: &mut Option<T>, ok: impl Fn(T) -> bool) {
    if v.is_some_and(|x| !ok(x)) {
        *v = None;
    }
}

fn percent(x: u32) -> bool {
    x <= 100
}

fn memory_ok(m: &mut Memory) {
    if m.total_bytes
        .is_some_and(|t| t == 0 || t > super::bounds::MAX_MEMORY)
    {
        *m = Memory::default();
    }
    let limit = m.total_bytes.unwrap_or(super::bounds::MAX_MEMORY);
    for v in [&mut m.used_bytes, &mut m.free_bytes, &mut m.reserved_bytes] {
        keep(v, |x| x <= limit);
    }
}

fn utilization_ok(u: &mut Utilization) {
    keep(&mut u.gpu_percent, percent);
    keep(&mut u.memory_percent, percent);
}

impl Device {
    /// [`Device::check_readings`] and the rest of what a device from elsewhere can claim:
    /// processes, holders, MIG devices, health, ages.
    fn check_admitted(&mut self, now: SystemTime) {
        self.check_readings();
        let age_ms = MAX_AGE.as_millis() as u64;
        keep(&mut self.data_age_ms, |a| a <= age_ms);
        if self.processes.len() > MAX_PROCESSES {
            let n = self.processes.len();
            self.processes.truncate(MAX_PROCESSES);
            self.processes_error = Some(format!(
                "{n} processes listed; the first {MAX_PROCESSES} kept"
            ));
        }
        let limit = self.memory.total_bytes.unwrap_or(super::bounds::MAX_MEMORY);
        for p in &mut self.processes {
            keep(&mut p.cpu_percent, |c| {
                c.is_finite() && c >= 0.0 && c <= 100.0 * MAX_CPUS as f32
            });
            keep(&mut p.host_memory_bytes, |b| b <= MAX_HOST_MEMORY);
            keep(&mut p.start_time, |t| plausible_start(t, now));
            keep(&mut p.sm_percent, percent);
            keep(&mut p.mem_bw_percent, percent);
            keep(&mut p.gpu_instance_id, |i| i < MAX_INSTANCE_ID);
            keep(&mut p.compute_instance_id, |i| i < MAX_INSTANCE_ID);
            keep(&mut p.peak_bytes, |b| b <= limit);
            if let Some(l) = p.gpu_limit.as_mut() {
                let mut checked = Some(l.as_ref().clone());
                check_unified(&mut None, &mut checked);
                if let Some(c) = checked.filter(|c| c != l.as_ref()) {
                    *l = std::sync::Arc::new(c);
                }
            }
            if let Some(a) = p.allocator.as_mut() {
                for v in [
                    &mut a.allocated_bytes,
                    &mut a.allocated_peak_bytes,
                    &mut a.reserved_bytes,
                    &mut a.reserved_peak_bytes,
                    &mut a.active_bytes,
                    &mut a.inactive_split_bytes,
                ] {
                    keep(v, |b| b <= limit);
                }
                if let (Some(al), Some(re)) = (a.allocated_bytes, a.reserved_bytes) {
                    // PyTorch's allocated is part of its reserved: both cannot be right.
                    if al > re {
                        a.allocated_bytes = None;
                        a.reserved_bytes = None;
                    }
                }
                a.age_ms = a.age_ms.min(age_ms);
                if a.steps
                    .is_some_and(|s| s.peak_bytes > limit || s.held_bytes > limit)
                {
                    a.steps = None;
                }
                // Growth a step beyond the whole GPU, or a rise that ends before it starts,
                // is not a measurement.
                if a.step_growth
                    .as_ref()
                    .is_some_and(|g| g.bytes_per_step > limit || g.since_step > g.last_step)
                {
                    a.step_growth = None;
                }
                if let Some(h) = a.held_sites.as_mut() {
                    h.sites.truncate(MAX_HELD_SITES);
                    h.sites.retain(|s| s.bytes <= limit);
                }
            }
        }
        // A peak between samples above the GPU's memory was not read from it.
        // Nor one read at a time the sample cannot have seen.
        if self.peak.as_ref().is_some_and(|p| {
            p.used_bytes > limit
                || p.at > now + Duration::from_secs(60)
                || now.duration_since(p.at).is_ok_and(|age| age > MAX_AGE)
        }) {
            self.peak = None;
        }
        self.holders.truncate(MAX_HOLDERS);
        for h in &mut self.holders {
            keep(&mut h.bytes, |b| b <= limit);
            keep(&mut h.age_s, |a| a <= MAX_AGE.as_secs());
        }
        let mut seen = std::collections::BTreeSet::new();
        self.mig
            .retain(|m| m.index < MAX_MIG && seen.insert(m.index));
        for m in &mut self.mig {
            m.check(limit);
        }
        check_unified(&mut self.shared_memory, &mut self.container_limit);
        // A clock no GPU runs at (the sysfs reader's own bound): unknown.
        if let Some(g) = self.soc_gpu.as_mut() {
            if g.clock_mhz.is_some_and(|m| m == 0 || m > 10_000) {
                g.clock_mhz = None;
            }
        }
        let health = &mut self.health;
        health.xids.truncate(MAX_XIDS);
        if let Some(a) = self.accounting.as_mut() {
            super::accounting::admit(a, limit, now);
        }
    }
}

impl MigDevice {
    fn check(&mut self, parent_total: u64) {
        memory_ok(&mut self.memory);
        if self.memory.total_bytes.is_some_and(|t| t > parent_total) {
            self.memory = Memory::default();
        }
        utilization_ok(&mut self.utilization);
        keep(&mut self.gpu_instance_id, |i| i < MAX_INSTANCE_ID);
        keep(&mut self.compute_instance_id, |i| i < MAX_INSTANCE_ID);
    }
}

impl HostStats {
    fn check(&mut self) {
        keep(&mut self.cpu_percent, |c| {
            c.is_finite() && (0.0..=100.0).contains(&c)
        });
        keep(&mut self.cpu_count, |c| c > 0 && c <= MAX_CPUS);
        keep(&mut self.memory_total_bytes, |b| {
            b > 0 && b <= MAX_HOST_MEMORY
        });
        let total = self.memory_total_bytes.unwrap_or(MAX_HOST_MEMORY);
        keep(&mut self.memory_used_bytes, |b| b <= total);
        keep(&mut self.memory_available_bytes, |b| b <= total);
        keep(&mut self.swap_total_bytes, |b| b <= MAX_HOST_MEMORY);
        let swap = self.swap_total_bytes.unwrap_or(MAX_HOST_MEMORY);
        keep(&mut self.swap_used_bytes, |b| b <= swap);
        if self.load_average.is_some_and(|l| {
            l.iter()
                .any(|x| !x.is_finite() || *x < 0.0 || *x > MAX_LOAD)
        }) {
            self.load_average = None;
        }
        keep(&mut self.uptime_s, |u| u <= MAX_AGE.as_secs());
    }
}

impl NodeSummary {
    /// A fleet row from elsewhere (a node's `/api/v1/summary`, a Prometheus): strings
    /// escaped, numbers checked as [`Sample::admit`] checks a sample's, rows with an
    /// impossible index left out.
    pub fn admit(mut self) -> NodeSummary {
        let esc = |t: &mut Option<String>| {
            if let Some(v) = t.as_mut() {
                if let std::borrow::Cow::Owned(e) = crate::text::escape(v) {
                    *v = e;
                }
            }
        };
        esc(&mut self.hostname);
        esc(&mut self.error);
        if let Some(t) = self.top_user.as_mut() {
            if let std::borrow::Cow::Owned(e) = crate::text::escape(&t.user) {
                t.user = e;
            }
            t.bytes = t.bytes.min(MAX_HOST_MEMORY);
        }
        let before = self.gpus.len();
        self.gpus.retain(|g| g.index < MAX_DEVICES);
        self.gpus.truncate(MAX_DEVICES as usize * MAX_MIG as usize);
        if self.gpus.len() < before {
            let why = format!(
                "left out {} GPU{} with an impossible index",
                before - self.gpus.len(),
                if before - self.gpus.len() == 1 {
                    ""
                } else {
                    "s"
                }
            );
            self.error = Some(match self.error.take() {
                Some(e) => format!("{e}; {why}"),
                None => why,
            });
        }
        for g in &mut self.gpus {
            esc(&mut g.name);
            esc(&mut g.uuid);
            esc(&mut g.mig_profile);
            let mut m = Memory {
                total_bytes: g.total_bytes,
                used_bytes: g.used_bytes,
                free_bytes: g.free_bytes,
                reserved_bytes: g.reserved_bytes,
            };
            memory_ok(&mut m);
            let parts = [m.used_bytes, m.free_bytes, m.reserved_bytes.or(Some(0))];
            let sum = parts
                .iter()
                .try_fold(0u64, |acc, p| p.and_then(|p| acc.checked_add(p)));
            if let (Some(sum), Some(total)) = (sum, m.total_bytes) {
                if sum > total.saturating_add(super::bounds::MEMORY_SLACK) {
                    m.used_bytes = None;
                    m.free_bytes = None;
                }
            }
            (g.total_bytes, g.used_bytes, g.free_bytes, g.reserved_bytes) =
                (m.total_bytes, m.used_bytes, m.free_bytes, m.reserved_bytes);
            let limit = m.total_bytes.unwrap_or(super::bounds::MAX_MEMORY);
            for v in [
                &mut g.busy_bytes,
                &mut g.idle_bytes,
                &mut g.unattributed_bytes,
            ] {
                keep(v, |b| b <= limit);
            }
            keep(&mut g.util_percent, percent);
            g.processes = g.processes.min(MAX_PROCESSES as u32);
            if g.state == GpuState::Failed {
                g.util_percent = None;
            }
        }
        self
    }
}

/// A time from elsewhere (unix seconds, a float) as a `SystemTime`; `None` for one no clock
/// shows (before 1970, after 9999, NaN).
pub fn unix_time(secs: f64) -> Option<SystemTime> {
    const MAX: f64 = 253_402_300_799.0; // 9999-12-31T23:59:59Z
    if !(0.0..=MAX).contains(&secs) {
        return None;
    }
    SystemTime::UNIX_EPOCH.checked_add(Duration::try_from_secs_f64(secs).ok()?)
}

/// A sample with every field the model has filled in (one of each kind of row), every text
/// made by `text(field)`: what the tests feed through the boundary and the views.
#[cfg(test)]
pub(crate) fn full_sample(text: &dyn Fn(&str) -> String) -> Sample {
    use super::health::{EccCounts, Health, RemappedRows, XidCount};
    use super::owner::{Owner, OwnerKind};
    use super::{AllocatorStats, Holder, HolderReason, Process, ProcessKind, StepMeasure};
    let t = |f: &str| Some(text(f));
    let gib = 1u64 << 30;
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let mut p = Process::from_nvml(4242, ProcessKind::Compute, Some(3 * gib));
    (p.name, p.user, p.command, p.container) = (t("name"), t("user"), t("command"), t("container"));
    (p.cpu_percent, p.host_memory_bytes, p.start_time) =
        (Some(99.0), Some(gib), Some(1_799_999_000));
    (p.sm_percent, p.mem_bw_percent) = (Some(50), Some(20));
    (p.gpu_instance_id, p.compute_instance_id) = (Some(1), Some(0));
    p.peak_bytes = Some(4 * gib);
    p.owner = Some(std::sync::Arc::new(Owner {
        kind: OwnerKind::Kubernetes,
        name: text("pod"),
        namespace: t("namespace"),
        container: t("owner container"),
        job: t("job"),
        pod_uid: t("pod uid"),
        container_id: t("container id"),
    }));
    p.allocator = Some(Box::new(AllocatorStats {
        framework: text("framework"),
        framework_version: t("version"),
        allocated_bytes: Some(gib),
        allocated_peak_bytes: Some(2 * gib),
        reserved_bytes: Some(2 * gib),
        reserved_peak_bytes: Some(2 * gib),
        active_bytes: Some(gib),
        inactive_split_bytes: Some(1 << 20),
        num_alloc_retries: Some(0),
        num_ooms: Some(0),
        age_ms: 10,
        run_id: t("run id"),
        steps: Some(StepMeasure {
            batch: 8,
            steps: 3,
            held_bytes: gib,
            peak_bytes: 2 * gib,
            reserved_peak_bytes: Some(2 * gib),
            training: true,
        }),
        step_growth: Some(crate::model::StepGrowth {
            measure: text("growth measure"),
            bytes_per_step: 1 << 20,
            since_step: 10,
            last_step: 60,
            micros_per_step: Some(1000),
            steps_to_full: Some(100),
        }),
        step_marker: t("step marker"),
        steps_marked: Some(60),
        held_sites: Some(crate::model::HeldSites {
            step: 20,
            held_steps: 4,
            snapshot_micros: 100,
            own_history: true,
            sites: vec![crate::model::HeldSite {
                file: text("site file"),
                line: 42,
                function: text("site function"),
                blocks: 3,
                bytes: 1 << 20,
            }],
        }),
    }));
    let holder = Holder {
        pid: Some(77),
        user: t("holder user"),
        command: t("holder command"),
        state: t("holder state"),
        parent_pid: Some(1),
        reason: HolderReason::NotListed,
        bytes: Some(gib),
        count: 1,
        age_s: Some(60),
    };
    let mut mig = MigDevice {
        index: 0,
        uuid: t("mig uuid"),
        name: t("mig name"),
        profile: t("mig profile"),
        gpu_instance_id: Some(1),
        compute_instance_id: Some(0),
        memory: Memory {
            total_bytes: Some(40 * gib),
            used_bytes: Some(3 * gib),
            free_bytes: Some(37 * gib),
            reserved_bytes: None,
        },
        utilization: Utilization::default(),
        field_errors: Default::default(),
    };
    mig.field_errors
        .insert("utilization", text("mig field error"));
    let mut d = Device {
        index: 0,
        uuid: t("uuid"),
        name: t("gpu name"),
        pci_bus_id: t("bus id"),
        memory: Memory {
            total_bytes: Some(80 * gib),
            used_bytes: Some(10 * gib),
            free_bytes: Some(69 * gib),
            reserved_bytes: Some(gib),
        },
        utilization: Utilization {
            gpu_percent: Some(40),
            memory_percent: Some(10),
        },
        temperature_c: Some(60),
        power_draw_w: Some(300.0),
        power_limit_w: Some(700.0),
        fan_percent: Some(30),
        minor_number: Some(0),
        processes: vec![p],
        holders: vec![holder],
        processes_error: t("processes error"),
        field_errors: Default::default(),
        error: t("device error"),
        stalled: false,
        late: false,
        data_age_ms: Some(5),
        peak: Some(crate::model::MemoryPeak {
            used_bytes: 12 * gib,
            at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
            window_ms: 1000,
            reads: 50,
        }),
        mig: vec![mig],
        health: Health {
            xids: vec![XidCount {
                xid: 79,
                count: 1,
                last: now,
                gpu_instance_id: Some(1),
            }],
            xids_watched: true,
            events_error: t("events error"),
            ecc: Some(EccCounts::default()),
            remapped_rows: Some(RemappedRows::default()),
            clock_event_reasons: Some(1),
        },
        accounting: Some(super::accounting::Accounting {
            enabled: Some(true),
            buffer_size: Some(4000),
            error: t("accounting error"),
            exited: vec![super::accounting::ExitedProcess {
                pid: 4121,
                peak_bytes: Some(31 * gib),
                started_at: Some(now - Duration::from_secs(100)),
                ended_at: Some(now - Duration::from_secs(2)),
                user: t("exited user"),
                name: t("exited name"),
            }],
        }),
        shared_memory: Some(crate::model::unified::SharedMemory {
            method: crate::model::unified::MemoryMethod::ProcessSum,
            gpu_held_bytes: Some(12 * gib),
            system_total_bytes: Some(128 * gib),
            system_available_bytes: Some(60 * gib),
            headroom_bytes: Some(gib),
            pressure: Some(crate::model::unified::Pressure {
                some_avg10: 3.5,
                full_avg10: Some(1.0),
            }),
            coherent_mode: Some(crate::model::unified::CoherentMode::Numa),
            hbm_node: Some(crate::model::unified::HbmNode {
                node: 1,
                total_bytes: Some(96 * gib),
                free_bytes: Some(40 * gib),
                host_bytes: Some(6 * gib),
            }),
        }),
        container_limit: Some(crate::model::unified::GpuLimit {
            cgroup: text("cgroup"),
            source: crate::model::unified::LimitSource::Dmem,
            hard_bytes: Some(8 * gib),
            soft_bytes: None,
            used_bytes: Some(7 * gib),
        }),
        soc_gpu: Some(crate::model::unified::SocGpu {
            clock_mhz: Some(1300),
            rail_gating: Some(true),
        }),
    };
    d.field_errors.insert("fan", text("field error"));
    Sample {
        timestamp: now,
        hostname: t("hostname"),
        source: "nvml",
        driver_version: t("driver"),
        cuda_version: t("cuda"),
        devices: vec![d],
        error: t("sample error"),
        host: Some(HostStats {
            cpu_percent: Some(10.0),
            cpu_count: Some(64),
            memory_total_bytes: Some(512 * gib),
            memory_used_bytes: Some(100 * gib),
            memory_available_bytes: Some(412 * gib),
            swap_total_bytes: Some(0),
            swap_used_bytes: Some(0),
            load_average: Some([1.0, 1.0, 1.0]),
            uptime_s: Some(86_400),
            pids_hidden: false,
        }),
    }
}

/// Numbers from elsewhere (a node's API, a recording) checked as the admission boundary
/// checks the rest (this module): a figure past any host's memory or a pressure outside
/// 0–100 is not a reading, and a limit whose use exceeds it by more than any host holds is
/// dropped.
pub fn check_unified(
    shared: &mut Option<super::unified::SharedMemory>,
    limit: &mut Option<super::unified::GpuLimit>,
) {
    let max = limits::MAX_HOST_MEMORY;
    let ok = |v: &mut Option<u64>| {
        if v.is_some_and(|x| x > max) {
            *v = None;
        }
    };
    if let Some(s) = shared.as_mut() {
        for v in [
            &mut s.gpu_held_bytes,
            &mut s.system_total_bytes,
            &mut s.system_available_bytes,
            &mut s.headroom_bytes,
        ] {
            ok(v);
        }
        if let Some(n) = s.hbm_node.as_mut() {
            for v in [&mut n.total_bytes, &mut n.free_bytes, &mut n.host_bytes] {
                ok(v);
            }
        }
        let pct = |x: f64| x.is_finite() && (0.0..=100.0).contains(&x);
        if s.pressure
            .is_some_and(|p| !pct(p.some_avg10) || p.full_avg10.is_some_and(|f| !pct(f)))
        {
            s.pressure = None;
        }
    }
    if let Some(l) = limit.as_mut() {
        for v in [&mut l.hard_bytes, &mut l.soft_bytes, &mut l.used_bytes] {
            ok(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const HOSTILE: &str = "x\u{1b}]2;PWN\u{7}\u{1b}[2J\u{9b}2J\u{202e}\u{2066}\u{85}y";

    /// Every string leaf of `v`, and every null (a `None` that may be a string), by path.
    fn leaves(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        match v {
            Value::String(_) | Value::Null => out.push(path.clone()),
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    path.push(i.to_string());
                    leaves(x, path, out);
                    path.pop();
                }
            }
            Value::Object(o) => {
                for (k, x) in o {
                    path.push(k.clone());
                    leaves(x, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    fn at<'a>(v: &'a mut Value, path: &[String]) -> &'a mut Value {
        path.iter().fold(v, |v, k| match v {
            Value::Array(a) => &mut a[k.parse::<usize>().expect("index")],
            other => &mut other[k.as_str()],
        })
    }

    fn strings(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            Value::Object(o) => o.iter().for_each(|(k, x)| {
                out.push(k.clone());
                strings(x, out)
            }),
            _ => {}
        }
    }

    /// S3: the walk covers every string field of the model. Each string (or `None` that
    /// accepts one) of a fully filled sample is made hostile in turn, by serialising the
    /// model, so that a field added later is found without being named here; whatever the
    /// model accepts there must come out of [`Sample::admit`] escaped.
    #[test]
    fn every_string_field_of_the_model_is_escaped_at_the_boundary() {
        let template = serde_json::to_value(full_sample(&|f| f.to_owned())).expect("json");
        let mut paths = Vec::new();
        leaves(&template, &mut Vec::new(), &mut paths);
        let mut accepted = Vec::new();
        for path in paths {
            let mut v = template.clone();
            *at(&mut v, &path) = Value::String(HOSTILE.into());
            let Ok(sample) = serde_json::from_value::<Sample>(v) else {
                continue; // not a string field (a time, an enum, a number)
            };
            let mut raw = Vec::new();
            strings(&serde_json::to_value(&sample).expect("json"), &mut raw);
            if !raw.iter().any(|s| s.contains('\u{202e}')) {
                continue; // read as something else (a source name, a reason)
            }
            accepted.push(path.join("."));
            for s in [sample.escaped().into_owned(), sample.admit()] {
                let mut out = Vec::new();
                strings(&serde_json::to_value(&s).expect("json"), &mut out);
                let bad: Vec<&String> = out
                    .iter()
                    .filter(|s| s.chars().any(crate::text::is_unsafe))
                    .collect();
                assert!(bad.is_empty(), "{}: {bad:?}", path.join("."));
            }
        }
        for field in [
            "devices.0.mig.0.profile",
            "devices.0.mig.0.uuid",
            "devices.0.processes.0.owner.name",
            "devices.0.processes.0.owner.namespace",
            "devices.0.processes.0.owner.container_id",
            "devices.0.health.events_error",
            "devices.0.holders.0.command",
        ] {
            assert!(accepted.iter().any(|a| a == field), "{field}: {accepted:?}");
        }
    }

    /// W3 / P2: impossible numbers from elsewhere become unknown; impossible devices are
    /// left out and said.
    #[test]
    fn impossible_numbers_from_elsewhere_are_refused() {
        let mut s = full_sample(&|f| f.to_owned());
        let good = s.clone().admit();
        assert_eq!(
            serde_json::to_value(&good).expect("json"),
            serde_json::to_value(&s).expect("json"),
            "a possible sample passes unchanged"
        );
        let mut huge = s.devices[0].clone();
        huge.index = u32::MAX;
        let mut twin = s.devices[0].clone();
        twin.name = Some("twin".into());
        s.devices.push(huge);
        s.devices.push(twin);
        let d = &mut s.devices[0];
        d.utilization.gpu_percent = Some(u32::MAX);
        d.temperature_c = Some(u32::MAX);
        d.memory.used_bytes = Some(u64::MAX);
        let p = &mut d.processes[0];
        p.cpu_percent = Some(1e38);
        p.start_time = Some(0);
        p.sm_percent = Some(u32::MAX);
        d.mig[0].utilization.gpu_percent = Some(4_000);
        d.mig[0].memory.total_bytes = Some(u64::MAX);
        if let Some(g) = d.soc_gpu.as_mut() {
            g.clock_mhz = Some(u32::MAX);
        }
        s.host.as_mut().expect("host").cpu_percent = Some(-5.0);
        let s = s.admit();
        assert_eq!(s.devices.len(), 1, "index 2^32-1 and a repeated 0 left out");
        assert!(
            s.error.as_deref().is_some_and(|e| e.contains("4294967295")),
            "{:?}",
            s.error
        );
        let d = &s.devices[0];
        assert_eq!(d.name.as_deref(), Some("gpu name"));
        assert_eq!(
            (
                d.utilization.gpu_percent,
                d.temperature_c,
                d.memory.used_bytes
            ),
            (None, None, None)
        );
        let p = &d.processes[0];
        assert_eq!(
            (p.cpu_percent, p.start_time, p.sm_percent),
            (None, None, None)
        );
        assert_eq!(d.mig[0].utilization.gpu_percent, None);
        assert_eq!(d.mig[0].memory, Memory::default());
        assert_eq!(d.soc_gpu.and_then(|g| g.clock_mhz), None);
        assert_eq!(s.host.expect("host").cpu_percent, None);
    }

    #[test]
    fn times_from_elsewhere_are_checked() {
        assert_eq!(unix_time(1e300), None);
        assert_eq!(unix_time(-1.0), None);
        assert_eq!(unix_time(f64::NAN), None);
        assert_eq!(
            unix_time(1.5),
            Some(SystemTime::UNIX_EPOCH + Duration::from_millis(1500))
        );
    }
}
