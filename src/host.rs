//! Host-side facts for GPU processes: user, command, CPU %, host RSS and start time.
//!
//! Only the PIDs that are on GPUs are refreshed, never the whole process table, and at most
//! once per [`HOST_REFRESH`] (or when a new pid shows up): these facts move slowly, and /proc
//! reads would otherwise dominate a 100 Hz sampler. A pid that is not visible here (another PID
//! namespace, or already exited) keeps its host fields `None`.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System, Uid, UpdateKind, Users};

use crate::model::{Device, Process};

/// The longest host facts are reused before /proc is read again.
pub const HOST_REFRESH: Duration = Duration::from_secs(1);

/// What the host says about one pid.
#[derive(Debug, Clone, Default)]
struct Facts {
    name: Option<String>,
    user: Option<String>,
    command: Option<String>,
    cpu_percent: Option<f32>,
    host_memory_bytes: Option<u64>,
    start_time: Option<u64>,
}

impl Facts {
    fn apply(&self, p: &mut Process) {
        p.name.clone_from(&self.name);
        p.user.clone_from(&self.user);
        p.command.clone_from(&self.command);
        p.cpu_percent = self.cpu_percent;
        p.host_memory_bytes = self.host_memory_bytes;
        p.start_time = self.start_time;
    }
}

pub struct HostLookup {
    sys: Option<System>,
    users: Option<Users>,
    user_names: HashMap<Uid, Option<String>>,
    /// Pids refreshed last time: their `cpu_usage` covers the interval since then.
    seen: HashSet<u32>,
    /// Facts from the last refresh, reused until it is [`HOST_REFRESH`] old.
    facts: HashMap<u32, Facts>,
    refreshed: Option<Instant>,
    /// In a child PID namespace, NVML's host pids name other processes (or none) here.
    foreign_pids: bool,
}

impl Default for HostLookup {
    fn default() -> Self {
        Self::new()
    }
}

impl HostLookup {
    pub fn new() -> Self {
        HostLookup {
            sys: System::new().ok(),
            users: None,
            user_names: HashMap::new(),
            seen: HashSet::new(),
            facts: HashMap::new(),
            refreshed: None,
            foreign_pids: in_child_pid_namespace(),
        }
    }

    /// Fills the host fields of every process in `devices`.
    pub fn enrich(&mut self, devices: &mut [Device]) {
        if self.foreign_pids || self.sys.is_none() {
            return;
        }
        let fresh = self.refreshed.is_some_and(|t| t.elapsed() < HOST_REFRESH);
        let all_known = devices
            .iter()
            .flat_map(|d| &d.processes)
            .all(|p| self.facts.contains_key(&p.pid));
        if !(fresh && all_known) {
            self.refresh(devices);
        }
        for p in devices.iter_mut().flat_map(|d| d.processes.iter_mut()) {
            if let Some(f) = self.facts.get(&p.pid) {
                f.apply(p);
            }
        }
    }

    fn refresh(&mut self, devices: &[Device]) {
        let Some(sys) = self.sys.as_mut() else {
            return;
        };
        let mut pids: Vec<Pid> = devices
            .iter()
            .flat_map(|d| d.processes.iter().map(|p| Pid::from_u32(p.pid)))
            .collect();
        pids.sort_unstable();
        pids.dedup();
        self.refreshed = Some(Instant::now());
        self.facts.clear();
        if pids.is_empty() {
            self.seen.clear();
            return;
        }
        let kind = ProcessRefreshKind::nothing()
            .with_cpu()
            .with_memory()
            .with_cmd(UpdateKind::OnlyIfNotSet)
            .with_user(UpdateKind::OnlyIfNotSet);
        sys.refresh_processes_specifics(ProcessesToUpdate::Some(&pids), true, kind);

        let mut seen = HashSet::with_capacity(pids.len());
        for pid in pids {
            let Some(p) = sys.process(pid) else {
                continue;
            };
            let pid = pid.as_u32();
            let cmd: Vec<_> = p.cmd().iter().map(|a| a.to_string_lossy()).collect();
            let cpu_percent = if self.seen.contains(&pid) {
                Some(p.cpu_usage())
            } else {
                // First sight: average over the process's life, as `ps` shows it.
                let run_ms = p.run_time().saturating_mul(1000);
                (run_ms > 0)
                    .then(|| (p.accumulated_cpu_time() as f64 * 100.0 / run_ms as f64) as f32)
            };
            let user = p
                .user_id()
                .cloned()
                .and_then(|uid| user_name(&mut self.users, &mut self.user_names, uid));
            self.facts.insert(
                pid,
                Facts {
                    name: Some(p.name().to_string_lossy().into_owned()),
                    user,
                    command: (!cmd.is_empty()).then(|| cmd.join(" ")),
                    cpu_percent,
                    host_memory_bytes: Some(p.memory()),
                    start_time: Some(p.start_time()),
                },
            );
            seen.insert(pid);
        }
        self.seen = seen;
    }
}

fn user_name(
    users: &mut Option<Users>,
    cache: &mut HashMap<Uid, Option<String>>,
    uid: Uid,
) -> Option<String> {
    if let Some(name) = cache.get(&uid) {
        return name.clone();
    }
    // The user list is read lazily, and again only when an unknown uid shows up.
    let list = match users {
        Some(list) => {
            list.refresh();
            list
        }
        None => users.insert(Users::new_with_refreshed_list().ok()?),
    };
    let name = list
        .get_user_by_id(&uid)
        .map(|u| u.name().to_owned())
        .or_else(|| Some(uid.to_string()));
    cache.insert(uid, name.clone());
    name
}

/// True inside a container with its own PID namespace: /proc/self/status lists more than one
/// NSpid. NVML reports host pids, which do not name our processes there.
fn in_child_pid_namespace() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("NSpid:"))
                .map(|l| l.split_whitespace().count() > 2)
        })
        .unwrap_or(false)
}

/// This machine's host name, for headers and records.
pub fn hostname() -> Option<String> {
    static NAME: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    NAME.get_or_init(|| System::host_name().ok()).clone()
}
