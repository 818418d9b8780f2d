//! The host's queue of `gpumon run --gpus auto --wait` jobs: who waits for GPU memory, in
//! what order, and what memory a job just launched holds until it has taken it.
//!
//! Each waiter is one small JSON file (an [`Entry`]) in the queue directory; the order is
//! first come, first served by the time a job joined. A job at the head launches once its GPUs
//! have room, net of what earlier jobs hold. A launched job holds, on each GPU it was given,
//! the memory it asked for less what it already uses there, until it uses all of it, its grace
//! period ends, or it exits. Pure: reading and writing the files is `collect::queue`'s.

use serde::{Deserialize, Serialize};

/// The entry format's version.
pub const VERSION: u32 = 1;

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Waiting for room (or for the jobs ahead of it).
    Waiting,
    /// Launched on its GPUs, holding memory it has not taken yet.
    Launched,
}

/// Memory a launched job holds on one GPU or MIG instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    /// As `CUDA_VISIBLE_DEVICES` names it: the index, or a MIG instance's UUID.
    pub id: String,
    /// The GPU's index (a MIG instance's parent's).
    pub index: u32,
    /// Still held: asked for, less what the job already uses there.
    pub bytes: u64,
}

/// One job in the queue, as its file holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub version: u32,
    /// The waiting `gpumon run` process.
    pub pid: u32,
    /// Its start time in clock ticks after boot: with the pid, it names one process.
    pub start_ticks: u64,
    pub uid: u32,
    pub user: Option<String>,
    /// The command it will run (or runs).
    pub command: String,
    /// GPUs asked for.
    pub count: u32,
    /// Free memory asked for on each; `None`: an idle GPU.
    pub need_bytes: Option<u64>,
    /// When it joined, Unix seconds.
    pub enqueued_at: f64,
    pub state: State,
    /// When it launched, Unix seconds.
    #[serde(default)]
    pub launched_at: Option<f64>,
    /// How long after launching it holds memory it has not taken.
    pub grace_s: f64,
    /// Its GPUs once launched (`CUDA_VISIBLE_DEVICES`).
    #[serde(default)]
    pub gpus: Option<String>,
    #[serde(default)]
    pub holds: Vec<Hold>,
}

impl Entry {
    /// The queue's order: first come, first served (the pid breaks a tie).
    pub fn key(&self) -> (u64, u32) {
        ((self.enqueued_at.max(0.0) * 1e9) as u64, self.pid)
    }

    /// Whether this entry says nothing impossible (a file another user wrote is not trusted).
    pub fn valid(&self) -> bool {
        self.version == VERSION
            && self.count >= 1
            && self.count <= 1024
            && self.enqueued_at.is_finite()
            && self.grace_s.is_finite()
            && self.grace_s >= 0.0
            && self.holds.len() <= 1024
            && self.command.len() <= 4096
            && self.user.as_ref().is_none_or(|u| u.len() <= 256)
            && self.launched_at.is_none_or(f64::is_finite)
    }

    /// Whether the holds still count at `now` (Unix seconds).
    pub fn holding(&self, now: f64) -> bool {
        self.state == State::Launched
            && self.launched_at.is_some_and(|at| now - at < self.grace_s)
            && self.holds.iter().any(|h| h.bytes > 0)
    }
}

/// How many waiting jobs are ahead of the one keyed `me`.
pub fn ahead(entries: &[Entry], me: (u64, u32)) -> usize {
    entries
        .iter()
        .filter(|e| e.state == State::Waiting && e.key() < me)
        .count()
}

/// The memory held by launched jobs at `now`, by `CUDA_VISIBLE_DEVICES` id, for
/// [`crate::estimate::pick::Request::held`]; `except` (a pid) is left out.
pub fn held(entries: &[Entry], now: f64, except: Option<u32>) -> Vec<(String, u64)> {
    entries
        .iter()
        .filter(|e| Some(e.pid) != except && e.holding(now))
        .flat_map(|e| e.holds.iter().map(|h| (h.id.clone(), h.bytes)))
        .filter(|(_, b)| *b > 0)
        .collect()
}

/// What a launched job still holds on a GPU: what it asked for less what it uses there.
pub fn outstanding(asked: u64, using: u64) -> u64 {
    asked.saturating_sub(using)
}

/// Sorts entries into the queue's order.
pub fn sort(entries: &mut [Entry]) {
    entries.sort_by_key(Entry::key);
}

/// A waiting job for tests: `user`'s `python train.py` wanting one GPU with `need_gib` free
/// (`None`: an idle one), joined at `at`.
#[cfg(test)]
pub fn example(user: &str, at: f64, need_gib: Option<u64>) -> Entry {
    Entry {
        version: VERSION,
        pid: 1,
        start_ticks: 1,
        uid: 1000,
        user: Some(user.into()),
        command: "python train.py".into(),
        count: 1,
        need_bytes: need_gib.map(|g| g << 30),
        enqueued_at: at,
        state: State::Waiting,
        launched_at: None,
        grace_s: 120.0,
        gpus: None,
        holds: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: u32, at: f64, state: State) -> Entry {
        Entry {
            pid,
            state,
            grace_s: 60.0,
            ..example("ana", at, Some(20))
        }
    }

    #[test]
    fn first_come_first_served_and_launched_jobs_hold_until_grace_ends() {
        let a = entry(300, 10.0, State::Waiting);
        let b = entry(200, 11.0, State::Waiting);
        let mut c = entry(100, 9.0, State::Launched);
        c.launched_at = Some(100.0);
        c.holds = vec![Hold {
            id: "1".into(),
            index: 1,
            bytes: 12 << 30,
        }];
        let mut all = vec![b.clone(), c.clone(), a.clone()];
        sort(&mut all);
        assert_eq!(
            all.iter().map(|e| e.pid).collect::<Vec<_>>(),
            [100, 300, 200]
        );
        // A launched job is not ahead of anyone; a waiting one is.
        assert_eq!(ahead(&all, a.key()), 0);
        assert_eq!(ahead(&all, b.key()), 1);
        assert_eq!(held(&all, 130.0, None), vec![("1".to_owned(), 12 << 30)]);
        assert_eq!(held(&all, 130.0, Some(100)), vec![]);
        assert_eq!(held(&all, 160.0, None), vec![], "the grace period is over");
        c.holds[0].bytes = outstanding(12 << 30, 13 << 30);
        assert!(!c.holding(101.0), "it has taken what it asked for");
    }

    #[test]
    fn an_entry_that_says_the_impossible_is_not_trusted() {
        let ok = entry(1, 1.0, State::Waiting);
        assert!(ok.valid());
        for bad in [
            Entry {
                count: 0,
                ..ok.clone()
            },
            Entry {
                version: 2,
                ..ok.clone()
            },
            Entry {
                grace_s: f64::NAN,
                ..ok.clone()
            },
            Entry {
                command: "x".repeat(5000),
                ..ok.clone()
            },
            Entry {
                enqueued_at: f64::INFINITY,
                ..ok.clone()
            },
        ] {
            assert!(!bad.valid(), "{bad:?}");
        }
    }
}
