//! Names for the processes that accounting says have exited: /proc no longer knows them, so
//! their user and name are carried from the samples in which they ran.

use std::collections::HashMap;

use crate::model::Device;

/// The user and name of each process seen on a GPU, kept while it runs or is listed as
/// exited (bounded by those lists).
#[derive(Default)]
pub struct ExitedNames {
    seen: HashMap<(u32, u32), (Option<String>, Option<String>)>,
}

impl ExitedNames {
    /// Names the exited processes of `devices` from earlier samples, and remembers this
    /// sample's processes.
    pub fn name(&mut self, devices: &mut [Device]) {
        let mut keep = std::collections::HashSet::new();
        for d in devices.iter_mut() {
            for p in &d.processes {
                keep.insert((d.index, p.pid));
                if p.user.is_some() || p.name.is_some() {
                    self.seen
                        .insert((d.index, p.pid), (p.user.clone(), p.name.clone()));
                }
            }
            let Some(a) = d.accounting.as_mut() else {
                continue;
            };
            for e in &mut a.exited {
                keep.insert((d.index, e.pid));
                if e.user.is_some() || e.name.is_some() {
                    continue;
                }
                if let Some((user, name)) = self.seen.get(&(d.index, e.pid)) {
                    (e.user, e.name) = (user.clone(), name.clone());
                }
            }
        }
        self.seen.retain(|k, _| keep.contains(k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::accounting::{Accounting, ExitedProcess};
    use crate::model::{Process, ProcessKind};

    #[test]
    fn an_exited_process_keeps_the_name_it_ran_under_and_the_rest_is_forgotten() {
        let mut names = ExitedNames::default();
        let mut running = Process::from_nvml(4121, ProcessKind::Compute, Some(1));
        (running.user, running.name) = (Some("alice".into()), Some("python".into()));
        let mut before = vec![Device {
            processes: vec![running],
            ..Device::default()
        }];
        names.name(&mut before);
        let exited = |pid| ExitedProcess {
            pid,
            peak_bytes: Some(31 << 30),
            started_at: None,
            ended_at: None,
            user: None,
            name: None,
        };
        let mut after = vec![Device {
            accounting: Some(Accounting {
                enabled: Some(true),
                exited: vec![exited(4121), exited(9)],
                ..Accounting::default()
            }),
            ..Device::default()
        }];
        names.name(&mut after);
        let list = &after[0]
            .accounting
            .as_ref()
            .map(|a| a.exited.clone())
            .unwrap_or_default();
        assert_eq!(list[0].user.as_deref(), Some("alice"));
        assert_eq!(list[1].user, None, "never seen running: unknown");
        names.name(&mut [Device::default()]);
        assert!(names.seen.is_empty(), "nothing is kept past its lists");
    }
}
