//! Simulated GPUs driven by a scenario file: `--demo` and `--scenario FILE`.

use std::time::{Instant, SystemTime};

use super::{OpenError, Source};
use crate::model::{Device, Memory, Process, ProcessKind, Sample, Utilization};
use crate::scenario::{FaultKind, Field, ProcKind, Scenario};

/// The built-in scenario behind `--demo`: a training run on two GPUs.
pub const DEMO: &str = include_str!("../../assets/scenarios/demo.json");

pub struct Simulated {
    scenario: Scenario,
    started: Instant,
    t0: f64,
}

impl Simulated {
    /// The demo starts mid-training (42 s in), so a first snapshot already shows the
    /// activation sawtooth and the notebook on GPU 0.
    pub fn demo() -> Result<Self, OpenError> {
        Ok(Self::from_json("built-in demo", DEMO)?.at(42.0))
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
        Ok(Simulated {
            scenario,
            started: Instant::now(),
            t0: 0.0,
        })
    }

    /// Starts the scenario clock at `t0` seconds (to show a given moment).
    pub fn at(mut self, t0: f64) -> Self {
        self.t0 = t0;
        self
    }
}

fn denied(kind: Option<FaultKind>) -> Option<String> {
    match kind? {
        FaultKind::NotSupported => Some("not supported".into()),
        FaultKind::NoPermission => Some("no permission".into()),
        _ => None,
    }
}

impl Source for Simulated {
    fn read(&mut self) -> Sample {
        let elapsed = self.started.elapsed().as_secs_f64();
        let t = self.scenario.time(self.t0 + elapsed);
        let devices = self
            .scenario
            .state_at(t)
            .into_iter()
            .map(|d| {
                if d.lost {
                    return Device::failed(d.index, "GPU is lost".into());
                }
                let mut dev = Device {
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
                if let Some(why) = denied(d.fault(Field::Processes)) {
                    dev.processes_error = Some(format!("cannot list processes: {why}"));
                    return dev;
                }
                let wall_start = |start_s: f64| {
                    let since = (t - start_s).max(0.0) as u64;
                    SystemTime::now()
                        .duration_since(SystemTime::UNIX_EPOCH)
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
                        allocator: None,
                    })
                    .collect();
                dev
            })
            .collect();
        Sample {
            timestamp: SystemTime::now(),
            hostname: crate::host::hostname(),
            source: "simulated",
            driver_version: Some(self.scenario.driver_version.clone()),
            cuda_version: Some(crate::source::nvml::cuda_version_string(
                self.scenario.cuda_driver_version,
            )),
            devices,
            error: None,
        }
    }

    fn host_lookup(&self) -> bool {
        false
    }
}
