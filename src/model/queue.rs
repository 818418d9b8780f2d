//! The host's queue of `gpumon run --gpus auto --wait` jobs: who waits for GPU memory, in
//! what order, and what memory a job just launched holds until it has taken it.
//!
//! Each waiter is one small JSON file (an [`Entry`]) in the queue directory; the order is
//! first come, first served by the time a job joined. A job at the head launches once its GPUs
//! have room, net of what earlier jobs hold. A launched job holds, on each GPU it was given,
//! the memory it asked for less what it already uses there, until it uses all of it, its grace
//! period ends, or it exits. Pure: reading and writing the files is `store::queue`'s.

use serde::{Deserialize, Serialize};

/// The entry format's version.
pub const VERSION: u32 = 1;
/// The longest grace period (`run --grace` takes at most a day): a longer one in a file is
/// cut to it.
pub const MAX_GRACE_S: f64 = 86_400.0;
/// GPUs one job may ask for (NVML numbers at most 64 devices).
pub const MAX_COUNT: u32 = 64;
/// How far a process's start, as the reader works it out, may lie after the true one: the
/// kernel gives the start in clock ticks after boot, and the boot's wall-clock time is known
/// to the second (`store::queue` rounds it), so the start read can be up to half a second
/// late. An honest entry, written just after its process began, must not be moved by it.
pub const START_SLACK_S: f64 = 1.0;

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
        self.why_invalid().is_none()
    }

    /// What is impossible in this entry, if anything.
    pub fn why_invalid(&self) -> Option<&'static str> {
        let max = crate::model::bounds::MAX_MEMORY;
        let checks: [(bool, &'static str); 5] = [
            (self.version == VERSION, "an unknown version"),
            (
                (1..=MAX_COUNT).contains(&self.count),
                "a GPU count no host has",
            ),
            (
                self.need_bytes.is_none_or(|n| n <= max),
                "more memory than any GPU has",
            ),
            (
                self.holds
                    .iter()
                    .all(|h| h.bytes <= max && h.index < MAX_COUNT),
                "a hold larger than any GPU",
            ),
            (self.sane(), "impossible numbers or texts"),
        ];
        checks.iter().find(|(ok, _)| !ok).map(|(_, why)| *why)
    }

    fn sane(&self) -> bool {
        self.enqueued_at.is_finite()
            && self.grace_s.is_finite()
            && self.grace_s >= 0.0
            && self.holds.len() <= 1024
            && self.command.len() <= 4096
            && self.user.as_ref().is_none_or(|u| u.len() <= 256)
            && self.launched_at.is_none_or(f64::is_finite)
    }

    /// What the entry may claim, given what its writer cannot choose: its process started at
    /// `started` (Unix seconds, from the kernel), and its file's owner is `user`. The time it
    /// joined is moved into `[started, now]` (no one can have joined before their process
    /// began, so the queue's order cannot be back-dated), its launch likewise, its grace cut
    /// to [`MAX_GRACE_S`], and its user named by the file's owner, not by what it wrote.
    /// `started` is known only to within [`START_SLACK_S`], which an honest entry is given:
    /// moving a job that joined 0.2 s after its process began behind one that joined 0.1 s
    /// later would break the order this exists to keep.
    pub fn trusted(mut self, started: f64, now: f64, user: Option<String>) -> Entry {
        let started = (started - START_SLACK_S).min(now);
        self.enqueued_at = self.enqueued_at.clamp(started, now);
        self.launched_at = self.launched_at.map(|t| t.clamp(self.enqueued_at, now));
        self.grace_s = self.grace_s.clamp(0.0, MAX_GRACE_S);
        self.user = user;
        self
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

    /// Two jobs that joined 0.1 s apart, each just after its process began, keep their order
    /// when the reader's idea of their starts is half a second late (the boot time rounded):
    /// the first is not moved behind the second, by its own reckoning or anyone else's.
    #[test]
    fn a_start_read_late_does_not_reorder_honest_entries() {
        let a = entry(10, 1_000.05, State::Waiting);
        let b = entry(11, 1_000.15, State::Waiting);
        let late = 0.5;
        let read_a = a.clone().trusted(1_000.0 + late, 2_000.0, None);
        let read_b = b.clone().trusted(1_000.1 + late, 2_000.0, None);
        assert_eq!(
            read_a.enqueued_at, a.enqueued_at,
            "an honest entry is not moved"
        );
        assert_eq!(read_b.enqueued_at, b.enqueued_at);
        let all = vec![read_a, read_b];
        assert_eq!(ahead(&all, b.key()), 1, "A is ahead of B as B keys itself");
        assert_eq!(ahead(&all, a.key()), 0);
    }

    /// S6 / C6: what another user's file claims and its writer could choose is bounded by
    /// what it cannot: its process's start (no joining before it: no back-dating the queue's
    /// order), now, the longest grace, the file owner's name; and an entry asking for what no
    /// GPU has is not valid.
    #[test]
    fn a_forged_entry_cannot_jump_the_queue_or_hold_forever() {
        let honest = entry(10, 1_000.0, State::Waiting).trusted(990.0, 2_000.0, Some("ana".into()));
        let mut forged = entry(20, -1e300, State::Launched);
        forged.grace_s = 1e300;
        forged.launched_at = Some(-1e300);
        forged.user = Some("mallory".into());
        let forged = forged.trusted(1_500.0, 2_000.0, Some("nobody".into()));
        assert_eq!(
            forged.enqueued_at,
            1_500.0 - START_SLACK_S,
            "not before its process started"
        );
        assert_eq!(forged.grace_s, MAX_GRACE_S);
        assert_eq!(forged.launched_at, Some(1_500.0 - START_SLACK_S));
        assert_eq!(forged.user.as_deref(), Some("nobody"));
        let mut waiting = Entry {
            state: State::Waiting,
            ..forged.clone()
        };
        waiting.pid = 20;
        let all = vec![honest.clone(), waiting];
        assert_eq!(ahead(&all, honest.key()), 0, "the forged entry is behind");
        // From the future: now, at the back.
        let late = entry(30, 1e300, State::Waiting).trusted(1_000.0, 2_000.0, None);
        assert_eq!(late.enqueued_at, 2_000.0);
        for bad in [
            Entry {
                count: 1024,
                ..honest.clone()
            },
            Entry {
                need_bytes: Some(u64::MAX),
                ..honest.clone()
            },
            Entry {
                holds: vec![Hold {
                    id: "0".into(),
                    index: 0,
                    bytes: u64::MAX,
                }],
                ..honest.clone()
            },
        ] {
            assert!(bad.why_invalid().is_some(), "{bad:?}");
        }
    }
}
