//! Simulated GPUs driven by a scenario file: `--demo` and `--scenario FILE`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::{DeviceReader, OpenError, Opened};
use crate::collect::source::scenario::{
    DeviceState, FaultKind, Field, HostState, ProcKind, Scenario,
};
use crate::model::unified::{NodeFacts, Pressure, SystemFacts};
use crate::model::{AllocatorStats, Device, Memory, Process, ProcessKind, Utilization};

/// The built-in scenario behind `--demo`: a training run on two GPUs.
pub const DEMO: &str = include_str!("../../../assets/scenarios/demo.json");
/// The built-in scenario behind `--demo-machine spark`: a DGX Spark-like machine, its GB10's
/// memory the system's, with the host side (`/proc/meminfo`, PSI) in the scenario.
pub const SPARK: &str = include_str!("../../../assets/scenarios/spark.json");
/// The built-in scenario behind `--demo-machine gh200`: a GH200-like machine in NUMA mode,
/// two containers with GPU memory limits on it.
pub const GH200: &str = include_str!("../../../assets/scenarios/gh200-demo.json");

impl DemoMachine {
    /// Each machine by the name `--demo-machine` takes.
    pub const ALL: [(&'static str, DemoMachine); 3] = [
        ("training", DemoMachine::Training),
        ("spark", DemoMachine::Spark),
        ("gh200", DemoMachine::Gh200),
    ];

    pub fn from_name(name: &str) -> Option<DemoMachine> {
        Self::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name.trim()))
            .map(|(_, m)| *m)
    }
}

/// The machines `--demo` can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DemoMachine {
    /// A training run on two H100s and an A100 split into MIG instances (the default).
    #[default]
    Training,
    /// A DGX Spark: one GB10 whose memory is the system's (NVML reports none), two
    /// processes, the system's headroom and memory pressure.
    Spark,
    /// A GH200 in NUMA mode (its HBM a NUMA node beside the Grace CPU's memory), and two
    /// containers on it with GPU memory limits of their own.
    Gh200,
}

/// A scenario and its clock, shared by the devices' readers.
struct Clock {
    scenario: Scenario,
    started: Instant,
    t0: f64,
}

impl Clock {
    fn now(&self) -> f64 {
        self.scenario
            .time(self.t0 + self.started.elapsed().as_secs_f64())
    }
}

/// Opens simulated GPUs.
pub struct Simulated {
    scenario: Scenario,
    t0: f64,
}

/// Reads one simulated GPU.
pub struct SimulatedDevice {
    clock: Arc<Clock>,
    index: u32,
    /// The device has given utilisation samples (see [`super::apply_utilization`]).
    util_seen: bool,
    /// The limits of the processes' cgroups, as last asked.
    limits: super::LimitCache,
}

impl Simulated {
    /// The demo starts mid-training (42 s in), so a first snapshot already shows the
    /// activation sawtooth and the notebook on GPU 0.
    pub fn demo() -> Result<Self, OpenError> {
        Self::demo_machine(DemoMachine::Training)
    }

    /// One of the built-in machines.
    pub fn demo_machine(machine: DemoMachine) -> Result<Self, OpenError> {
        match machine {
            DemoMachine::Training => Ok(Self::from_json("built-in demo", DEMO)?.at(42.0)),
            DemoMachine::Spark => Ok(Self::from_json("built-in demo (spark)", SPARK)?.at(30.0)),
            DemoMachine::Gh200 => Ok(Self::from_json("built-in demo (gh200)", GH200)?.at(30.0)),
        }
    }

    /// The scenario's host side at scenario time `t`, as this machine's files would say it;
    /// `None` where the scenario has none.
    pub fn host_at(&self, t: f64) -> Option<SystemFacts> {
        self.scenario
            .host_at(self.scenario.time(t))
            .as_ref()
            .map(facts)
    }

    pub fn from_file(path: &str) -> Result<Self, OpenError> {
        let text = std::fs::read_to_string(path).map_err(|e| OpenError::Scenario {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        Self::from_json(path, &text)
    }

    pub fn from_json(path: &str, text: &str) -> Result<Self, OpenError> {
        let scenario = Scenario::from_json(text).map_err(|e| OpenError::Scenario {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        Ok(Simulated { scenario, t0: 0.0 })
    }

    /// Starts the scenario clock at `t0` seconds (to show a given moment).
    pub fn at(mut self, t0: f64) -> Self {
        self.t0 = t0;
        self
    }

    /// Starts the clock and gives one reader per device. An `init_hang` fault blocks here,
    /// as `nvmlInit` would.
    pub fn open(self) -> Opened {
        if let Some(s) = self.scenario.init_hang(self.scenario.time(self.t0)) {
            std::thread::sleep(Duration::from_secs_f64(s));
        }
        let driver_version = Some(self.scenario.driver_version.clone());
        let cuda_version = Some(crate::collect::source::nvml::cuda_version_string(
            self.scenario.cuda_driver_version,
        ));
        let n = self.scenario.devices.len() as u32;
        let limits = self
            .scenario
            .devices
            .iter()
            .any(|d| d.memory_limit.is_some() || !d.memory_limits.is_empty());
        let has_host = self.scenario.host.is_some();
        let clock = Arc::new(Clock {
            scenario: self.scenario,
            started: Instant::now(),
            t0: self.t0,
        });
        let host: Option<super::HostFacts> = has_host.then(|| {
            let clock = Arc::clone(&clock);
            Arc::new(move || {
                clock
                    .scenario
                    .host_at(clock.now())
                    .as_ref()
                    .map(facts)
                    .unwrap_or_default()
            }) as super::HostFacts
        });
        Opened {
            limits,
            host,
            kind: "simulated",
            driver_version,
            cuda_version,
            readers: (0..n)
                .map(|index| {
                    Box::new(SimulatedDevice {
                        clock: Arc::clone(&clock),
                        index,
                        util_seen: false,
                        limits: Default::default(),
                    }) as Box<dyn DeviceReader>
                })
                .collect(),
            error: None,
            host_lookup: false,
            events: Some(Box::new(SimulatedEvents { clock, count: n })),
        }
    }
}

/// Delivers a scenario's `xid` faults as the event API would, from the moment it starts.
struct SimulatedEvents {
    clock: Arc<Clock>,
    count: u32,
}

impl SimulatedEvents {
    /// Scenario time now, not wrapped (Xid deliveries recur every `loop_s`).
    fn now(&self) -> f64 {
        self.clock.t0 + self.clock.started.elapsed().as_secs_f64()
    }
}

impl super::EventWatcher for SimulatedEvents {
    fn run(
        self: Box<Self>,
        tx: std::sync::mpsc::Sender<super::HealthEvent>,
        stop: Arc<std::sync::atomic::AtomicBool>,
    ) {
        use super::HealthEvent;
        use std::sync::atomic::Ordering;
        let t = self.clock.now();
        let mut watched = Vec::new();
        for index in 0..self.count {
            let d = self.clock.scenario.device_at(index, t);
            let event = match denied(d.fault(Field::Events)) {
                Some(why) => HealthEvent::Unwatched {
                    index: Some(index),
                    why,
                },
                None => {
                    watched.push(index);
                    HealthEvent::Watched { index }
                }
            };
            if tx.send(event).is_err() {
                return;
            }
        }
        let mut cursor = (self.now(), usize::MAX);
        while !stop.load(Ordering::Relaxed) {
            let next = self
                .clock
                .scenario
                .next_xid(|d| watched.contains(&d), cursor);
            let now = self.now();
            match next {
                Some(x) if x.at <= now => {
                    cursor = (x.at, x.seq);
                    let event = HealthEvent::Xid {
                        index: x.device,
                        xid: x.xid,
                        gpu_instance_id: x.gpu_instance_id,
                        at: SystemTime::now(),
                    };
                    if tx.send(event).is_err() {
                        return;
                    }
                }
                Some(x) => std::thread::sleep(Duration::from_secs_f64((x.at - now).min(1.0))),
                None => std::thread::sleep(Duration::from_secs(1)),
            }
        }
    }
}

fn denied(kind: Option<FaultKind>) -> Option<String> {
    match kind? {
        FaultKind::NotSupported => Some("not supported".into()),
        FaultKind::NoPermission => Some("no permission".into()),
        _ => None,
    }
}

impl SimulatedDevice {
    /// The device now, as NVML would answer; a hung device blocks first, as NVML would.
    fn read_with(&self, util_seen: &mut bool) -> Device {
        let mut t = self.clock.now();
        let mut d = self.clock.scenario.device_at(self.index, t);
        // A hung device: block as NVML would (one call's worth), then answer as of later.
        if let Some(block) = d.hangs.iter().map(|(_, s)| *s).reduce(f64::max) {
            std::thread::sleep(Duration::from_secs_f64(block));
            t = self.clock.now();
            d = self.clock.scenario.device_at(self.index, t);
        }
        let wall = SystemTime::now();
        let mut dev = device(&d, t, wall, util_seen);
        super::accounting::simulate(&self.clock.scenario, &d, t, wall, &mut dev);
        dev
    }
}

impl DeviceReader for SimulatedDevice {
    fn read(&mut self) -> Device {
        let mut seen = self.util_seen;
        let d = self.read_with(&mut seen);
        self.util_seen = seen;
        d
    }

    /// The scenario's limits for these cgroups (`memory_limit`, `memory_limits`), as the
    /// fake library's `nvmlDeviceGetMemoryLimits_v1` answers them, with the same bounds as
    /// NVML's reader; a hang on the device (or on `memory_limits`) blocks first.
    fn read_limits(&mut self, cgroups: &[Arc<str>]) -> super::CgroupLimits {
        if cgroups.is_empty() {
            return Vec::new();
        }
        let clock = Arc::clone(&self.clock);
        let index = self.index;
        self.limits.get(cgroups, Instant::now(), |cgroup| {
            let mut d = clock.scenario.device_at(index, clock.now());
            if let Some(block) = d.hang(Some(Field::MemoryLimits)) {
                std::thread::sleep(Duration::from_secs_f64(block));
                d = clock.scenario.device_at(index, clock.now());
            }
            if d.lost || d.fault(Field::MemoryLimits).is_some() {
                return None;
            }
            d.limit_for(cgroup).map(simulated_limit)
        })
    }

    /// The memory as [`DeviceReader::read`] would give it, faults included (a hang blocks).
    fn read_memory(&mut self) -> Option<super::MemoryNow> {
        let mut seen = self.util_seen;
        let d = self.read_with(&mut seen);
        if d.error.is_some() {
            return None;
        }
        Some(super::MemoryNow {
            used: d.memory.used_bytes?,
            total: d.memory.total_bytes?,
        })
    }
}

impl Simulated {
    /// The devices as they are at scenario time `t`, with `wall` as the wall-clock time of
    /// that moment (for the processes' start times): a given moment of a scenario, the same
    /// on every run (the README's capture is drawn from these). `util_seen` carries whether
    /// utilisation samples were seen from one call to the next, as a reader does.
    pub fn devices_at(&self, t: f64, wall: SystemTime, util_seen: &mut Vec<bool>) -> Vec<Device> {
        let t = self.scenario.time(t);
        util_seen.resize(self.scenario.devices.len(), false);
        util_seen
            .iter_mut()
            .enumerate()
            .map(|(index, seen)| {
                let d = self.scenario.device_at(index as u32, t);
                let mut dev = device(&d, t, wall, seen);
                super::accounting::simulate(&self.scenario, &d, t, wall, &mut dev);
                dev
            })
            .collect()
    }
}

/// ECC, remapped rows and clock event reasons as NVML answers them (unsupported: `None`).
/// Xid errors come from the event watcher ([`Simulated::open`]).
fn health(d: &DeviceState) -> crate::model::health::Health {
    use crate::model::health::{EccCounts, Health, RemappedRows};
    let ok = |field| denied(d.fault(field)).is_none();
    Health {
        ecc: d
            .ecc
            .filter(|_| ok(Field::Ecc))
            .map(|[vc, vu, ac, au]| EccCounts {
                volatile_corrected: Some(vc),
                volatile_uncorrected: Some(vu),
                aggregate_corrected: Some(ac),
                aggregate_uncorrected: Some(au),
            }),
        remapped_rows: d.remapped_rows.filter(|_| ok(Field::RemappedRows)).map(
            |(corrected, uncorrected, pending, failed)| RemappedRows {
                corrected,
                uncorrected,
                pending,
                failed,
            },
        ),
        clock_event_reasons: ok(Field::ClockReasons).then_some(d.clock_reasons),
        ..Health::default()
    }
}

/// A scenario's host side as this machine's files would say it.
fn facts(h: &HostState) -> SystemFacts {
    SystemFacts {
        total_bytes: Some(h.total),
        available_bytes: Some(h.available),
        pressure: h.pressure.map(|(some, full)| Pressure {
            some_avg10: some,
            full_avg10: full,
        }),
        nodes: h
            .nodes
            .iter()
            .map(|&(id, has_cpus, total, free)| NodeFacts {
                id,
                has_cpus,
                total_bytes: Some(total),
                free_bytes: Some(free),
            })
            .collect(),
    }
}

/// A scenario's cgroup limit as NVML R615 would answer it inside that cgroup.
fn simulated_limit(l: &(String, u64, u64, u64)) -> crate::model::unified::GpuLimit {
    let (cgroup, soft, hard, used) = l;
    let raw = super::nvml_limits::GetMemoryLimitsV1 {
        name_space: std::ptr::null(),
        soft_limit: *soft,
        hard_limit: *hard,
        current_used: *used,
    };
    super::nvml_limits::from_struct(&raw, cgroup)
}

/// What NVML would answer for a device in state `d` at scenario time `t`, `wall` being the
/// wall-clock time then.
fn device(d: &DeviceState, t: f64, wall: SystemTime, util_seen: &mut bool) -> Device {
    if d.lost {
        return Device::failed(d.index, "GPU is lost".into());
    }
    let mut dev = Device {
        container_limit: d.memory_limit.as_ref().map(simulated_limit),
        index: d.index,
        uuid: Some(d.uuid.clone()),
        name: Some(d.name.clone()),
        pci_bus_id: Some(d.pci_bus_id.clone()),
        memory: Memory {
            total_bytes: Some(d.total),
            used_bytes: Some(d.used),
            free_bytes: Some(d.free),
            reserved_bytes: Some(d.reserved),
        },
        utilization: Utilization {
            gpu_percent: Some(d.utilization_gpu),
            memory_percent: Some(d.utilization_memory),
        },
        temperature_c: Some(d.temperature_c),
        power_draw_w: Some(d.power_draw_mw as f64 / 1000.0),
        power_limit_w: d.power_limit_mw.map(|mw| mw as f64 / 1000.0),
        fan_percent: d.fan_percent,
        minor_number: Some(d.minor_number),
        ..Device::default()
    };
    // Apply field faults the way the NVML source reports them.
    let fields: [(Field, &'static str); 5] = [
        (Field::Memory, "memory"),
        (Field::Utilization, "utilization"),
        (Field::Temperature, "temperature"),
        (Field::Power, "power"),
        (Field::Fan, "fan"),
    ];
    for (field, name) in fields {
        let Some(why) = denied(d.fault(field)) else {
            continue;
        };
        match field {
            Field::Memory => dev.memory = Memory::default(),
            Field::Utilization => dev.utilization = Utilization::default(),
            Field::Temperature => dev.temperature_c = None,
            Field::Power => dev.power_draw_w = None,
            _ => dev.fan_percent = None,
        }
        dev.field_errors.insert(name, why);
    }
    dev.health = health(d);
    if let Some(mig) = &d.mig {
        // As real drivers answer with MIG on: no utilisation on the parent or its instances.
        dev.utilization = Utilization::default();
        dev.field_errors
            .insert("utilization", "not supported".into());
        dev.mig = mig
            .iter()
            .map(|m| {
                let mut field_errors = std::collections::BTreeMap::new();
                if m.utilization_gpu.is_none() {
                    field_errors.insert("utilization", "not supported".to_owned());
                }
                crate::model::MigDevice {
                    index: m.slot,
                    uuid: Some(m.uuid.clone()),
                    name: Some(m.name.clone()),
                    profile: Some(m.profile.clone()),
                    gpu_instance_id: Some(m.gpu_instance_id),
                    compute_instance_id: Some(m.compute_instance_id),
                    memory: Memory {
                        total_bytes: Some(m.total),
                        used_bytes: Some(m.used),
                        free_bytes: Some(m.free),
                        reserved_bytes: Some(0),
                    },
                    utilization: Utilization {
                        gpu_percent: m.utilization_gpu,
                        memory_percent: None,
                    },
                    field_errors,
                }
            })
            .collect();
    }
    if let Some(why) = denied(d.fault(Field::Processes)) {
        dev.processes_error = Some(format!("cannot list processes: {why}"));
        return dev;
    }
    let wall_start = |start_s: f64| {
        let since = (t - start_s).max(0.0) as u64;
        wall.duration_since(SystemTime::UNIX_EPOCH)
            .ok()
            .map(|now| now.as_secs().saturating_sub(since))
    };
    dev.processes = d
        .processes
        .iter()
        .map(|p| Process {
            pid: p.pid,
            kind: match p.kind {
                ProcKind::Compute => ProcessKind::Compute,
                ProcKind::Graphics => ProcessKind::Graphics,
                ProcKind::Both => ProcessKind::Both,
            },
            gpu_memory_bytes: p.memory,
            name: p.name.clone(),
            user: p.user.clone(),
            command: p.command.clone(),
            cpu_percent: p.cpu_percent.map(|c| c as f32),
            host_memory_bytes: p.host_memory,
            start_time: wall_start(p.start_s),
            container: p.container.clone().or_else(|| {
                p.cgroup
                    .as_deref()
                    .and_then(crate::collect::owner::owner_of)
                    .map(|o| o.container_label())
            }),
            owner: p
                .cgroup
                .as_deref()
                .and_then(crate::collect::owner::owner_of)
                .map(std::sync::Arc::new),
            sm_percent: None,
            mem_bw_percent: None,
            allocator: p.allocator.as_ref().map(|a| {
                Box::new(AllocatorStats::figures(
                    a.framework.clone(),
                    a.version.clone(),
                    [Some(a.allocated), Some(a.allocated_peak)],
                    [Some(a.reserved), Some(a.reserved_peak)],
                ))
            }),
            state: None,
            parent_pid: None,
            gpu_instance_id: p.instance.map(|(gi, _)| gi),
            compute_instance_id: p.instance.map(|(_, ci)| ci),
            peak_bytes: None,
            cgroup: p
                .cgroup
                .as_deref()
                .and_then(crate::model::unified::cgroup_v2_path)
                .map(std::sync::Arc::from),
            gpu_limit: None,
        })
        .collect();
    let unsupported_on_mig = d.mig.is_some().then(|| "not supported".to_owned());
    match denied(d.fault(Field::ProcessUtilization)).or(unsupported_on_mig) {
        Some(why) => {
            dev.field_errors.insert("process_utilization", why);
        }
        None => {
            let samples: Vec<super::UtilSample> = d
                .processes
                .iter()
                .filter_map(|p| {
                    Some(super::UtilSample {
                        pid: p.pid,
                        timestamp: 0,
                        sm: p.sm_percent?,
                        mem: p.mem_bw_percent.unwrap_or(0),
                    })
                })
                .collect();
            super::apply_utilization(&mut dev.processes, &samples, util_seen);
        }
    }
    dev
}
