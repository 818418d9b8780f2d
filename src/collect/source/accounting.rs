//! Per-process peaks from NVML's accounting mode, for one GPU's reader.
//!
//! The traps handled (see `NVML-NOTES.md` and `nvml.h`):
//! - accounting is off by default: the mode is asked every [`MODE_EVERY`] (root changes it
//!   rarely), and nothing else is asked while it is off, so it costs a dashboard nothing then;
//! - the pid list holds running and ended processes alike, up to the buffer's size; an ended
//!   process's stats never change, so each is asked once while the buffer lists it, and new
//!   pids at most [`NEW_PER_READ`] a read (a full buffer of thousands is read over a few
//!   samples, never in one);
//! - a pid reused: the driver keeps the stats of the process that ended last, so the stats of
//!   a running process are used only when the driver says the process is running;
//! - NOT_FOUND for a pid the buffer does not hold (it started before accounting was on, or
//!   was overwritten): no peak, never 0;
//! - `startTime` is in microseconds of the CPU clock, `time` in milliseconds (0 while it runs);
//! - `maxMemoryUsage` may be NVML_VALUE_NOT_AVAILABLE (`None`);
//! - nvml-wrapper's `accounting_pids` trusts the count it is given (and keeps trailing zeros
//!   when the list shrinks between count and fill): the list is read here with a bound.

use std::collections::{BTreeMap, HashSet};
use std::ffi::c_uint;
use std::time::{Duration, Instant, SystemTime};

use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device as NvDevice, Nvml};
use nvml_wrapper_sys::bindings::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE;

use super::describe;
use crate::model::accounting::{prune, Accounting, ExitedProcess};
use crate::model::Process;

/// How often the accounting mode is asked.
pub const MODE_EVERY: Duration = Duration::from_secs(10);
/// The most pids not seen before whose stats one read asks for.
pub const NEW_PER_READ: usize = 256;
/// More pids than any accounting buffer holds (drivers hold thousands): a count above it is
/// a driver answering garbage.
const MAX_PIDS: usize = 1 << 16;
/// Room allowed over the last count, for processes that start between two reads.
const HEADROOM: usize = 16;

/// One GPU's accounting state, kept between reads.
#[derive(Default)]
pub struct AccountingReader {
    /// The mode and when it was asked: `Ok(on)`, or why it could not be.
    mode: Option<(Instant, Result<bool, String>)>,
    buffer_size: Option<u32>,
    /// The pids whose stats said they ended (or that the buffer did not hold), each with its
    /// start time: not asked again while the buffer lists them and no running process has
    /// their pid.
    done: BTreeMap<u32, Option<u64>>,
    exited: Vec<ExitedProcess>,
    pids: Vec<c_uint>,
}

impl AccountingReader {
    /// Reads accounting on `dev`, setting each of `procs`' `peak_bytes` where the driver has
    /// one.
    pub fn read(&mut self, nvml: &Nvml, dev: &NvDevice, procs: &mut [Process]) -> Accounting {
        let due = self
            .mode
            .as_ref()
            .is_none_or(|(at, _)| at.elapsed() >= MODE_EVERY);
        if due {
            let mode = dev.is_accounting_enabled().map_err(|e| describe(&e));
            let was_on = matches!(self.mode, Some((_, Ok(true))));
            if mode == Ok(true) && (!was_on || self.buffer_size.is_none()) {
                self.buffer_size = dev.accounting_buffer_size().ok();
            }
            self.mode = Some((Instant::now(), mode));
        }
        let mode = self.mode.as_ref().map(|(_, m)| m.clone());
        match mode {
            Some(Ok(true)) => {}
            other => {
                self.done.clear();
                self.exited.clear();
                return Accounting {
                    enabled: other.as_ref().and_then(|m| m.as_ref().ok().copied()),
                    error: other.and_then(Result::err),
                    ..Accounting::default()
                };
            }
        }
        let mut acc = Accounting {
            enabled: Some(true),
            buffer_size: self.buffer_size,
            ..Accounting::default()
        };
        if let Err(e) = self.stats(nvml, dev, procs) {
            acc.error = Some(format!("cannot read accounting: {}", describe(&e)));
        }
        prune(&mut self.exited, SystemTime::now());
        acc.exited.clone_from(&self.exited);
        acc
    }

    fn stats(
        &mut self,
        nvml: &Nvml,
        dev: &NvDevice,
        procs: &mut [Process],
    ) -> Result<(), NvmlError> {
        let listed = read_pids(nvml, dev, &mut self.pids)?;
        let in_buffer: HashSet<u32> = listed.iter().copied().collect();
        let running: HashSet<u32> = procs.iter().map(|p| p.pid).collect();
        // The running processes, each sample; the pids not known to have ended (the newest
        // first, as the driver lists them oldest first), a budget a read.
        let mut ask: Vec<u32> = procs
            .iter()
            .map(|p| p.pid)
            .filter(|p| in_buffer.contains(p))
            .collect();
        ask.extend(
            listed
                .iter()
                .rev()
                .copied()
                .filter(|p| !running.contains(p) && !self.done.contains_key(p))
                .take(NEW_PER_READ),
        );
        for pid in ask {
            let st = match dev.accounting_stats_for(pid) {
                Ok(st) => st,
                Err(NvmlError::NotFound) => {
                    self.done.insert(pid, None);
                    continue;
                }
                Err(e) => return Err(e),
            };
            if st.is_running {
                self.done.remove(&pid);
                if let Some(p) = procs.iter_mut().find(|p| p.pid == pid) {
                    p.peak_bytes = st.max_memory_usage;
                }
                continue;
            }
            // Ended. A running process with this pid is a later one: these are not its stats.
            self.done.insert(pid, Some(st.start_time));
            let started_at =
                SystemTime::UNIX_EPOCH.checked_add(Duration::from_micros(st.start_time));
            if self
                .exited
                .iter()
                .any(|e| e.pid == pid && e.started_at == started_at)
            {
                continue;
            }
            self.exited.push(ExitedProcess {
                pid,
                peak_bytes: st.max_memory_usage,
                ended_at: started_at.and_then(|s| s.checked_add(Duration::from_millis(st.time))),
                started_at,
                user: None,
                name: None,
            });
        }
        // Bounded by the buffer: forget the pids it no longer lists.
        self.done.retain(|pid, _| in_buffer.contains(pid));
        Ok(())
    }
}

/// Accounting as a simulated GPU's driver would report it (`--demo`, `--scenario`): the
/// scenario's `accounting` at time `t`, `wall` being the wall-clock time then. A scenario GPU
/// without it has none (`None`), as a recording made before has none.
pub fn simulate(
    scenario: &super::scenario::Scenario,
    d: &super::scenario::DeviceState,
    t: f64,
    wall: SystemTime,
    dev: &mut crate::model::Device,
) {
    use super::scenario::{FaultKind, Field};
    if dev.error.is_some() {
        return;
    }
    let Some(state) = scenario.accounting_at(d.index, t) else {
        return;
    };
    let refused = match d.fault(Field::Accounting) {
        Some(FaultKind::NoPermission) => Some("no permission"),
        Some(_) => Some("not supported"),
        None => None,
    };
    if let Some(why) = refused {
        dev.accounting = Some(Accounting {
            error: Some(why.into()),
            ..Accounting::default()
        });
        return;
    }
    let at = |s: f64| wall.checked_sub(Duration::try_from_secs_f64(t - s).unwrap_or_default());
    let mut exited = Vec::new();
    for e in &state.entries {
        match e.end_s {
            None => {
                if let Some(p) = dev.processes.iter_mut().find(|p| p.pid == e.pid) {
                    p.peak_bytes = e.max_memory;
                }
            }
            Some(end) => exited.push(ExitedProcess {
                pid: e.pid,
                peak_bytes: e.max_memory,
                started_at: at(e.start_s),
                ended_at: at(end),
                user: None,
                name: None,
            }),
        }
    }
    prune(&mut exited, wall);
    dev.accounting = Some(Accounting {
        enabled: Some(state.enabled),
        buffer_size: state.enabled.then_some(state.buffer),
        error: None,
        exited,
    });
}

/// The accounting pid list into `buf`, in one call while it fits the room the last answer
/// left; pid 0 (never a process) dropped.
fn read_pids(nvml: &Nvml, dev: &NvDevice, buf: &mut Vec<c_uint>) -> Result<Vec<u32>, NvmlError> {
    let Ok(sym) = nvml.lib().nvmlDeviceGetAccountingPids.as_ref() else {
        return Err(NvmlError::FailedToLoadSymbol(
            "nvmlDeviceGetAccountingPids".into(),
        ));
    };
    for _ in 0..4 {
        let mut count = buf.len() as c_uint;
        let ptr = if buf.is_empty() {
            std::ptr::null_mut()
        } else {
            buf.as_mut_ptr()
        };
        // SAFETY: `ptr` is null with a count of 0, or `count` writable entries; the handle is
        // valid for `nvml`'s lifetime.
        let rc = unsafe { sym(dev.handle(), &mut count, ptr) };
        if rc == nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE {
            if count as usize > MAX_PIDS {
                return Err(NvmlError::InsufficientSize(Some(count as usize)));
            }
            buf.resize(count as usize + HEADROOM, 0);
            continue;
        }
        nvml_wrapper::error::nvml_try(rc)?;
        let n = (count as usize).min(buf.len());
        return Ok(buf[..n].iter().copied().filter(|&p| p != 0).collect());
    }
    Err(NvmlError::InsufficientSize(None))
}

#[cfg(test)]
mod tests {
    use super::super::simulated::Simulated;
    use super::*;

    #[test]
    fn a_simulated_gpu_reports_accounting_as_the_fake_driver_does() {
        let sim = Simulated::from_json(
            "test",
            r#"{"version":1,"devices":[
                {"name":"A","memory_total_mib":81920,"accounting":{"enabled":true},
                 "processes":[{"pid":7,"memory_mib":{"points":[[0,100]],
                   "spikes":[{"at_s":1,"len_s":0.03,"value":900}]},"end_s":2},
                   {"pid":8,"memory_mib":50}]},
                {"name":"B","memory_total_mib":81920,"processes":[{"pid":9,"memory_mib":5}]}]}"#,
        )
        .map_err(|e| e.to_string())
        .expect("scenario");
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let devices = sim.devices_at(3.0, wall, &mut Vec::new());
        let a = devices[0].accounting.as_ref().expect("accounting");
        assert_eq!(a.enabled, Some(true));
        assert_eq!(devices[0].processes[0].peak_bytes, Some(50 << 20));
        assert_eq!(a.exited[0].pid, 7);
        assert_eq!(a.exited[0].peak_bytes, Some(1000 << 20));
        assert_eq!(a.exited[0].ended_at, Some(wall - Duration::from_secs(1)));
        assert_eq!(
            devices[1].accounting, None,
            "none in the scenario: none here"
        );
        assert_eq!(devices[1].processes[0].peak_bytes, None);
    }
}
