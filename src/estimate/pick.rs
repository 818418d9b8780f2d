//! `gpumon pick`: the GPUs (or MIG instances) a job should run on, chosen from one sample.
//!
//! A candidate is a whole GPU, or with MIG on each of its MIG instances (CUDA runs on an
//! instance, named by its `MIG-` UUID, never on the GPU as a whole). A candidate is usable when
//! it answered this sample, is not excluded, has the free memory the job needs, and (with
//! `idle`) runs nothing. The usable ones are ranked idle first, then by free memory, then by
//! index; the first `count` are chosen. CUDA numbers GPUs by speed unless
//! `CUDA_DEVICE_ORDER=PCI_BUS_ID`, which is NVML's order: the environment set says so, so the
//! indices printed mean what NVML's mean.

use serde::Serialize;

use crate::model::{Device, Process};
use crate::units::fmt_bytes;

/// What the job asks for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// How many GPUs (at least 1).
    pub count: usize,
    /// The memory it needs on each; `None`: any free memory will do.
    pub need_bytes: Option<u64>,
    /// Only candidates that run nothing.
    pub idle_only: bool,
    /// GPUs (index or UUID) and MIG instances (`MIG-` UUID) not to use.
    pub exclude: Vec<String>,
    /// Memory held for jobs just launched from the queue that have not taken it yet, by
    /// `CUDA_VISIBLE_DEVICES` id (an index, or a MIG instance's UUID): not free for this one.
    pub held: Vec<(String, u64)>,
}

/// One GPU or MIG instance, as the sample shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// The GPU's index (a MIG instance's parent's), in NVML's (PCI bus) order.
    pub index: u32,
    /// A MIG instance's is its `MIG-` UUID.
    pub uuid: Option<String>,
    pub name: Option<String>,
    pub mig_profile: Option<String>,
    pub gpu_instance_id: Option<u32>,
    /// Its room: the free memory (on a part that reports none, what the system can still
    /// give), within the container's GPU memory limit.
    pub free_bytes: Option<u64>,
    /// The container's hard limit on this GPU when it is what bounds `free_bytes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<u64>,
    /// Of `free_bytes`, held for a job launched from the queue that has not taken it yet.
    #[serde(skip_serializing_if = "is_zero")]
    pub held_bytes: u64,
    /// Processes running there.
    pub processes: usize,
    /// Runs nothing (or only processes at 0% SM); `None` where %SM is unknown.
    pub idle: Option<bool>,
}

impl Candidate {
    /// How `CUDA_VISIBLE_DEVICES` names it: the index, or a MIG instance's UUID.
    pub fn cuda_id(&self) -> String {
        match (&self.mig_profile, &self.uuid) {
            (Some(_), Some(uuid)) => uuid.clone(),
            _ => self.index.to_string(),
        }
    }

    /// "GPU 2", "GPU 0 MIG 3g.40gb (GI 1)".
    pub fn label(&self) -> String {
        match (&self.mig_profile, self.gpu_instance_id) {
            (Some(p), Some(gi)) => format!("GPU {} MIG {p} (GI {gi})", self.index),
            (Some(p), None) => format!("GPU {} MIG {p}", self.index),
            _ => format!("GPU {}", self.index),
        }
    }

    fn matches(&self, selector: &str) -> bool {
        let s = selector.trim();
        if s.parse::<u32>().is_ok_and(|i| i == self.index) {
            return true;
        }
        let s = s.to_ascii_lowercase();
        self.uuid.as_deref().is_some_and(|u| {
            let u = u.to_ascii_lowercase();
            u == s || (s.len() >= 8 && u.starts_with(&s))
        })
    }
}

/// A candidate not chosen, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejected {
    #[serde(flatten)]
    pub candidate: Candidate,
    pub why: String,
}

/// What `pick` chose.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    pub chosen: Vec<Candidate>,
    /// The usable ones left over, and those that could not be used with why.
    pub rejected: Vec<Rejected>,
    pub need_bytes: Option<u64>,
}

impl Choice {
    /// `2,5`, or a MIG instance's UUID.
    pub fn cuda_visible_devices(&self) -> String {
        self.chosen
            .iter()
            .map(Candidate::cuda_id)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Why no choice could be made: fewer usable candidates than asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoFit {
    pub asked: usize,
    pub usable: Vec<Candidate>,
    pub rejected: Vec<Rejected>,
    pub need_bytes: Option<u64>,
}

impl NoFit {
    /// Each candidate's reason, "GPU 0: busy (1 process); GPU 1: 10.0 GiB free, 10.0 GiB
    /// short", and how many could be used when some could.
    pub fn reasons(&self) -> String {
        let mut parts: Vec<String> = self
            .rejected
            .iter()
            .map(|r| format!("{}: {}", r.candidate.label(), r.why))
            .collect();
        if !self.usable.is_empty() {
            parts.insert(0, format!("{} of {} usable", self.usable.len(), self.asked));
        }
        parts.join("; ")
    }
}

impl std::fmt::Display for NoFit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let gpus = if self.asked == 1 {
            "a GPU".to_owned()
        } else {
            format!("{} GPUs", self.asked)
        };
        let need = self
            .need_bytes
            .map(|n| format!(" with {} free", fmt_bytes(n)))
            .unwrap_or_default();
        write!(f, "no room for {gpus}{need}: {} usable", self.usable.len())?;
        for r in &self.rejected {
            write!(f, "; {}: {}", r.candidate.label(), r.why)?;
        }
        Ok(())
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn idle(processes: &[&Process]) -> Option<bool> {
    if processes.is_empty() {
        return Some(true);
    }
    let mut all_zero = true;
    for p in processes {
        match p.sm_percent {
            Some(0) => {}
            Some(_) => return Some(false),
            None => all_zero = false,
        }
    }
    all_zero.then_some(true)
}

/// Every candidate in the sample: each GPU, or each MIG instance of a GPU with MIG on; with
/// why it cannot be used, if it cannot (not answering, free memory unknown).
fn candidates(devices: &[Device]) -> Vec<(Candidate, Option<String>)> {
    let mut out = Vec::new();
    for d in devices {
        let broken = if d.stalled || d.late {
            Some("not responding".to_owned())
        } else {
            d.error.clone()
        };
        if d.mig.is_empty() {
            let procs: Vec<&Process> = d.processes.iter().collect();
            out.push((
                Candidate {
                    index: d.index,
                    uuid: d.uuid.clone(),
                    name: d.name.clone(),
                    mig_profile: None,
                    gpu_instance_id: None,
                    free_bytes: crate::model::unified::device_room(d),
                    limit_bytes: crate::model::unified::binding_limit(d),
                    held_bytes: 0,
                    processes: procs.len(),
                    idle: idle(&procs),
                },
                broken,
            ));
            continue;
        }
        for m in &d.mig {
            let procs: Vec<&Process> = m.processes(d).collect();
            out.push((
                Candidate {
                    index: d.index,
                    uuid: m.uuid.clone(),
                    name: m.name.clone(),
                    mig_profile: m.profile.clone().or_else(|| Some("?".into())),
                    gpu_instance_id: m.gpu_instance_id,
                    free_bytes: m.memory.free_bytes,
                    limit_bytes: None,
                    held_bytes: 0,
                    processes: procs.len(),
                    idle: idle(&procs),
                },
                broken.clone(),
            ));
        }
    }
    out
}

/// Chooses `req.count` candidates from `devices`, or says why there are not enough.
pub fn choose(devices: &[Device], req: &Request) -> Result<Choice, NoFit> {
    let count = req.count.max(1);
    let (mut usable, mut rejected) = screen(devices, req);
    if usable.len() < count {
        return Err(NoFit {
            asked: count,
            usable,
            rejected,
            need_bytes: req.need_bytes,
        });
    }
    let rest = usable.split_off(count);
    rejected.extend(rest.into_iter().map(|c| Rejected {
        candidate: c,
        why: "not needed".to_owned(),
    }));
    Ok(Choice {
        chosen: usable,
        rejected,
        need_bytes: req.need_bytes,
    })
}

/// The order candidates are chosen in: idle first, then the most free memory (less what is
/// held), then NVML's order.
pub fn rank(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    (b.idle == Some(true))
        .cmp(&(a.idle == Some(true)))
        .then(
            b.free_bytes
                .map(|f| f.saturating_sub(b.held_bytes))
                .cmp(&a.free_bytes.map(|f| f.saturating_sub(a.held_bytes))),
        )
        .then(a.index.cmp(&b.index))
        .then(a.gpu_instance_id.cmp(&b.gpu_instance_id))
}

/// Every candidate of `devices` that `req` could use, best first, and the others with why.
pub fn screen(devices: &[Device], req: &Request) -> (Vec<Candidate>, Vec<Rejected>) {
    let count = req.count.max(1);
    let mut usable = Vec::new();
    let mut rejected = Vec::new();
    for (mut c, broken) in candidates(devices) {
        let id = c.cuda_id();
        c.held_bytes = req
            .held
            .iter()
            .filter(|(h, _)| *h == id)
            .map(|(_, b)| *b)
            .sum();
        let held = c.held_bytes;
        let why = if let Some(e) = broken {
            Some(e)
        } else if req.exclude.iter().any(|x| c.matches(x)) {
            Some("excluded".to_owned())
        } else if c.mig_profile.is_some() && count > 1 {
            Some("a MIG instance: a CUDA process uses one MIG instance at most".to_owned())
        } else if c.uuid.is_none() && c.mig_profile.is_some() {
            Some("its MIG UUID is unknown".to_owned())
        } else {
            match (c.free_bytes, req.need_bytes) {
                (None, _) => Some("free memory unknown".to_owned()),
                (Some(f), Some(n)) if f.saturating_sub(held) < n => Some(if held > 0 {
                    format!(
                        "{} free, {} of it held for a job launched from the queue, {} short",
                        fmt_bytes(f),
                        fmt_bytes(held.min(f)),
                        fmt_bytes(n - f.saturating_sub(held))
                    )
                } else if let Some(limit) = c.limit_bytes {
                    format!(
                        "{} free within this container's GPU memory limit of {}, {} short",
                        fmt_bytes(f),
                        fmt_bytes(limit),
                        fmt_bytes(n - f)
                    )
                } else {
                    format!("{} free, {} short", fmt_bytes(f), fmt_bytes(n - f))
                }),
                _ if req.idle_only && held > 0 => {
                    Some("held for a job launched from the queue".to_owned())
                }
                _ if req.idle_only && c.idle != Some(true) => Some(match c.idle {
                    Some(_) => format!(
                        "busy ({} process{})",
                        c.processes,
                        if c.processes == 1 { "" } else { "es" }
                    ),
                    None if c.processes == 1 => "1 process, its %SM unknown".to_owned(),
                    None => format!("{} processes, their %SM unknown", c.processes),
                }),
                _ => None,
            }
        };
        match why {
            Some(why) => rejected.push(Rejected { candidate: c, why }),
            None => usable.push(c),
        }
    }
    usable.sort_by(rank);
    (usable, rejected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Memory, MigDevice, ProcessKind};

    const GIB: u64 = 1 << 30;

    fn gpu(index: u32, free_gib: u64, sm: &[Option<u32>]) -> Device {
        Device {
            index,
            uuid: Some(format!("GPU-{index:08}")),
            memory: Memory {
                total_bytes: Some(80 * GIB),
                free_bytes: Some(free_gib * GIB),
                used_bytes: Some((80 - free_gib) * GIB),
                reserved_bytes: Some(0),
            },
            processes: sm
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let mut p = Process::from_nvml(100 + i as u32, ProcessKind::Compute, Some(GIB));
                    p.sm_percent = *s;
                    p
                })
                .collect(),
            ..Device::default()
        }
    }

    fn req(count: usize, need_gib: Option<u64>) -> Request {
        Request {
            count,
            need_bytes: need_gib.map(|g| g * GIB),
            ..Request::default()
        }
    }

    #[test]
    fn idle_gpus_first_then_the_most_free() {
        let devices = vec![
            gpu(0, 70, &[Some(90)]),
            gpu(1, 40, &[]),
            gpu(2, 60, &[Some(0)]),
            gpu(3, 79, &[None]),
        ];
        let c = choose(&devices, &req(2, Some(30))).expect("fits");
        assert_eq!(
            c.cuda_visible_devices(),
            "2,1",
            "idle ones, the most free first"
        );
        let c = choose(&devices, &req(3, Some(30))).expect("fits");
        assert_eq!(c.cuda_visible_devices(), "2,1,3");
        let mut idle_only = req(3, None);
        idle_only.idle_only = true;
        let e = choose(&devices, &idle_only).expect_err("two idle GPUs");
        let text = e.to_string();
        assert!(text.contains("GPU 0: busy (1 process)"), "{text}");
        assert!(text.contains("GPU 3: 1 process, its %SM unknown"), "{text}");
    }

    #[test]
    fn what_does_not_fit_answer_or_is_excluded_is_never_chosen() {
        let mut stalled = gpu(1, 80, &[]);
        stalled.stalled = true;
        let lost = Device {
            index: 2,
            error: Some("GPU is lost".into()),
            ..Device::default()
        };
        let devices = vec![gpu(0, 10, &[]), stalled, lost, gpu(3, 50, &[])];
        let mut r = req(1, Some(20));
        r.exclude = vec!["3".into()];
        let e = choose(&devices, &r).expect_err("nothing left");
        let text = e.to_string();
        for want in [
            "GPU 0: 10.0 GiB free, 10.0 GiB short",
            "GPU 1: not responding",
            "GPU 2: GPU is lost",
            "GPU 3: excluded",
        ] {
            assert!(text.contains(want), "{want}: {text}");
        }
        r.exclude = vec!["GPU-00000000".into()];
        assert_eq!(
            choose(&devices, &r).expect("GPU 3").cuda_visible_devices(),
            "3"
        );
    }

    #[test]
    fn with_mig_on_an_instance_is_chosen_by_its_uuid_and_only_alone() {
        let mut d = gpu(0, 0, &[]);
        let inst = |index, gi, free_gib: u64| MigDevice {
            index,
            uuid: Some(format!("MIG-{gi:08}")),
            profile: Some("3g.40gb".into()),
            gpu_instance_id: Some(gi),
            memory: Memory {
                free_bytes: Some(free_gib * GIB),
                ..Memory::default()
            },
            ..MigDevice::default()
        };
        d.mig = vec![inst(0, 1, 10), inst(1, 2, 35)];
        let devices = vec![d, gpu(1, 30, &[Some(50)])];
        let c = choose(&devices, &req(1, Some(20))).expect("fits");
        assert_eq!(c.cuda_visible_devices(), "MIG-00000002");
        assert_eq!(c.chosen[0].label(), "GPU 0 MIG 3g.40gb (GI 2)");
        // Two GPUs: no MIG instance, as CUDA uses one at most.
        let e = choose(&devices, &req(2, Some(20))).expect_err("one whole GPU");
        assert!(
            e.to_string()
                .contains("a CUDA process uses one MIG instance"),
            "{e}"
        );
    }

    #[test]
    fn memory_held_for_a_launched_job_is_not_free_for_the_next() {
        let devices = vec![gpu(0, 50, &[]), gpu(1, 40, &[])];
        let mut r = req(1, Some(30));
        assert_eq!(
            choose(&devices, &r).expect("fits").cuda_visible_devices(),
            "0"
        );
        r.held = vec![("0".into(), 30 * GIB)];
        let c = choose(&devices, &r).expect("GPU 1");
        assert_eq!(c.cuda_visible_devices(), "1");
        r.held.push(("1".into(), 15 * GIB));
        let text = choose(&devices, &r).expect_err("both held").to_string();
        assert!(
            text.contains(
                "GPU 0: 50.0 GiB free, 30.0 GiB of it held for a job launched from the queue, 10.0 GiB short"
            ),
            "{text}"
        );
        // Without a size, a held GPU is not idle.
        let mut any = req(1, None);
        any.idle_only = true;
        any.held = vec![("0".into(), 50 * GIB)];
        assert_eq!(
            choose(&devices, &any)
                .expect("GPU 1")
                .cuda_visible_devices(),
            "1"
        );
    }
}
