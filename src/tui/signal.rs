//! Sending a signal to a GPU process from the dashboard, to the process that was shown and no
//! other.
//!
//! gpumon never signals pid 0, pid 1 or itself. The target is pinned by its start time (from
//! `/proc/PID/stat`) when the dialog opens and checked again just before `kill(2)`, so a pid
//! that was reused meanwhile is refused. NVML reports host pids: when gpumon itself runs in a
//! nested PID namespace (a container), a local pid of the same number is another process, so
//! signalling is refused there altogether.

use std::io;

use crate::collect::host::{in_child_pid_namespace, read_stat};

/// The signals the dialog offers, SIGTERM first (preselected).
pub const SIGNALS: [(&str, i32); 4] = [
    ("SIGTERM", libc::SIGTERM),
    ("SIGKILL", libc::SIGKILL),
    ("SIGINT", libc::SIGINT),
    ("SIGHUP", libc::SIGHUP),
];

/// One process, pinned by its start time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub pid: u32,
    start_ticks: u64,
}

impl Target {
    /// The process `pid` is now, or why it cannot be signalled from here.
    pub fn pin(pid: u32) -> Result<Target, String> {
        if pid == 0 || pid == 1 {
            return Err(format!("gpumon never signals pid {pid}"));
        }
        if pid == std::process::id() {
            return Err("that is gpumon itself".into());
        }
        if in_child_pid_namespace() {
            return Err(
                "gpumon runs in a container: NVML's pids are the host's, so it cannot tell \
                 which local process this is; signal it from the host"
                    .into(),
            );
        }
        let mut buf = Vec::new();
        match read_stat(pid, &mut buf) {
            Some(s) => Ok(Target {
                pid,
                start_ticks: s.start_ticks,
            }),
            None => Err(format!(
                "pid {pid} is not visible from here (it has exited?)"
            )),
        }
    }

    /// Sends `signal`, if the pid still names the same process.
    pub fn send(&self, signal: i32) -> Result<(), String> {
        let mut buf = Vec::new();
        match read_stat(self.pid, &mut buf) {
            None => return Err(format!("pid {} has exited", self.pid)),
            Some(s) if s.start_ticks != self.start_ticks => {
                return Err(format!(
                    "pid {} is now another process (the pid was reused): not signalled",
                    self.pid
                ))
            }
            Some(_) => {}
        }
        let Ok(pid) = i32::try_from(self.pid) else {
            return Err(format!("pid {} is out of range", self.pid));
        };
        // SAFETY: kill(2) with a positive pid checked above; it has no memory effects.
        if unsafe { libc::kill(pid, signal) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        Err(match e.raw_os_error() {
            Some(libc::EPERM) => format!(
                "permission denied: pid {} belongs to another user (run gpumon as that user, or \
                 with sudo)",
                self.pid
            ),
            Some(libc::ESRCH) => format!("pid {} has exited", self.pid),
            _ => format!("cannot signal pid {}: {e}", self.pid),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command};
    use std::time::{Duration, Instant};

    fn sleeper() -> Child {
        Command::new("sleep").arg("30").spawn().expect("sleep")
    }

    fn exited(child: &mut Child) -> Option<std::process::ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    #[test]
    fn signals_the_chosen_process_and_no_other() {
        if in_child_pid_namespace() {
            // The refusal itself is the behaviour there.
            assert!(Target::pin(std::process::id() + 1).is_err());
            return;
        }
        let (mut chosen, mut other) = (sleeper(), sleeper());
        let target = Target::pin(chosen.id()).expect("visible");
        assert_eq!(target.send(libc::SIGTERM), Ok(()));
        let status = exited(&mut chosen).expect("the chosen process ended");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGTERM));
        assert!(
            other.try_wait().expect("wait").is_none(),
            "the other is untouched"
        );
        // Signalled again after it exited: said, not a crash.
        assert!(target
            .send(libc::SIGTERM)
            .is_err_and(|e| e.contains("has exited")));
        let _ = other.kill();
        let _ = other.wait();
    }

    #[test]
    fn a_reused_pid_is_refused() {
        if in_child_pid_namespace() {
            return;
        }
        let mut child = sleeper();
        let real = Target::pin(child.id()).expect("visible");
        // The same pid with another start time: what a reused pid looks like.
        let stale = Target {
            start_ticks: real.start_ticks.wrapping_sub(1),
            ..real.clone()
        };
        assert!(stale
            .send(libc::SIGKILL)
            .is_err_and(|e| e.contains("reused")));
        assert!(child.try_wait().expect("wait").is_none(), "not signalled");
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn never_pid_0_1_or_itself() {
        assert!(Target::pin(0).is_err());
        assert!(Target::pin(1).is_err());
        assert!(Target::pin(std::process::id()).is_err_and(|e| e.contains("itself")));
    }
}
