//! `gpumon run --gpus auto[:N] [--need SIZE | --estimate FLAGS] [--wait [TIMEOUT]]`: choose
//! GPUs as `pick` does, wait in the host's queue until they have room, and hold the memory
//! asked for until the launched job has taken it.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use tokio::signal::unix::{signal, SignalKind};

use crate::cli::{RunArgs, Wait};
use crate::collect::sampler::Sampler;
use crate::estimate::pick::{choose, Candidate, Request};
use crate::model::queue::{self as q, Entry, Hold, State};
use crate::model::{Process, Sample};
use crate::store::queue::{self, Ticket};
use crate::units::{fmt_bytes, fmt_wait};

/// What the job was given.
pub struct Launch {
    /// `CUDA_VISIBLE_DEVICES`.
    pub ids: String,
    pub chosen: Vec<Candidate>,
    /// Its queue entry while it holds memory; dropping it leaves the queue.
    pub ticket: Option<Ticket>,
    /// What it asked for on each GPU (`None`: the whole GPU, idle).
    pub asked: Vec<u64>,
    pub waited: Duration,
    pub grace: Duration,
}

pub enum Outcome {
    Launch(Box<Launch>),
    Exit(ExitCode),
}

/// The memory `--need` or `--estimate` asks for; `Err` is a usage message.
fn need(args: &RunArgs) -> Result<Option<u64>, String> {
    match (&args.estimate, args.need) {
        (Some(flags), _) => crate::cli::estimate_line(flags)
            .and_then(|(shape, _, run)| crate::estimate::memory::need(&shape, &run))
            .map(Some)
            .map_err(|e| format!("--estimate: {e}")),
        (None, n) => Ok(n),
    }
}

/// Whether `count` candidates of the sample could ever hold `need` (their whole memory, less
/// the driver's reservation), however much is freed.
fn could_fit(sample: &Sample, count: usize, need: Option<u64>) -> bool {
    let Some(need) = need else { return true };
    let mut gpus = 0;
    let mut mig = 0;
    for d in &sample.devices {
        let whole = d
            .memory
            .total_bytes
            .map(|t| t.saturating_sub(d.memory.reserved_bytes.unwrap_or(0)));
        if d.mig.is_empty() {
            gpus += usize::from(whole.is_none_or(|t| t >= need));
        } else {
            mig += d
                .mig
                .iter()
                .filter(|m| m.memory.total_bytes.is_none_or(|t| t >= need))
                .count();
        }
    }
    gpus >= count || (count == 1 && mig >= 1)
}

/// The queue's lock as `run` takes it: within `--wait`'s time left (at least a second, at
/// most [`queue::LOCK_WAIT`]); once another process has held it past that, not waited for
/// again (it is said once), so that a lock held forever costs one wait, not one a round.
#[derive(Default)]
struct Locks {
    given_up: bool,
}

impl Locks {
    fn take(
        &mut self,
        dir: &std::path::Path,
        deadline: Option<Duration>,
        started: Instant,
    ) -> anyhow::Result<Option<queue::Lock>> {
        let within = if self.given_up {
            Duration::ZERO
        } else {
            deadline
                .map_or(queue::LOCK_WAIT, |d| d.saturating_sub(started.elapsed()))
                .clamp(Duration::from_secs(1), queue::LOCK_WAIT)
        };
        let lock = queue::lock(dir, within).map_err(|e| anyhow::anyhow!("the queue: {e}"))?;
        if lock.is_none() && !self.given_up {
            self.given_up = true;
            eprintln!(
                "gpumon: {} has been locked by another process for {}: going on without it",
                dir.join(".lock").display(),
                fmt_wait(within)
            );
        }
        Ok(lock)
    }
}

fn describe(count: usize, need: Option<u64>) -> String {
    let gpus = if count == 1 {
        "a GPU".to_owned()
    } else {
        format!("{count} GPUs")
    };
    match need {
        Some(n) => format!("{gpus} with {} free", fmt_bytes(n)),
        None if count == 1 => format!("{gpus} that runs nothing"),
        None => format!("{gpus} that run nothing"),
    }
}

/// Chooses the GPUs, waiting in the queue as `--wait` allows.
pub fn choose_and_wait(
    args: &RunArgs,
    count: u16,
    sampler: &mut Sampler,
    rt: &tokio::runtime::Runtime,
    interval: Duration,
) -> anyhow::Result<Outcome> {
    let need = match need(args) {
        Ok(n) => n,
        Err(e) => {
            return Ok(Outcome::Exit(crate::console::usage_error(e)));
        }
    };
    let count = usize::from(count);
    let dir = queue::dir(args.queue_dir.as_deref());
    if let Err(e) = queue::ensure_dir(&dir) {
        return Ok(Outcome::Exit(crate::console::usage_error(format!(
            "the queue's directory {}: {e}",
            dir.display()
        ))));
    }
    let mut sample = sampler.tick();
    if !could_fit(&sample, count, need) {
        eprintln!(
            "gpumon: no room for {} here even with every GPU empty",
            describe(count, need)
        );
        return Ok(Outcome::Exit(ExitCode::from(1)));
    }
    let mut wait = Waiter::join(args, dir, count, need)?;
    let mut signals = rt.block_on(async { Signals::new() })?;
    loop {
        let why = match wait.round(&sample)? {
            Round::Launch(l) => {
                return Ok(Outcome::Launch(Box::new(Launch {
                    ticket: Some(wait.ticket),
                    ..*l
                })))
            }
            Round::Wait(why) => why,
        };
        if let Some(exit) = wait.out_of_time(&why) {
            return Ok(Outcome::Exit(exit));
        }
        wait.say(why);
        let pause = interval.max(Duration::from_millis(200));
        if let Some(sig) = rt.block_on(signals.within(pause)) {
            return Ok(Outcome::Exit(wait.leave(sig)));
        }
        sample = sampler.tick();
    }
}

/// The signals that make a waiting job leave the queue.
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    /// Registers them (inside the runtime).
    fn new() -> anyhow::Result<Self> {
        Ok(Self {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The signal that came within `pause`, if any.
    async fn within(&mut self, pause: Duration) -> Option<i32> {
        tokio::select! {
            () = tokio::time::sleep(pause) => None,
            _ = self.int.recv() => Some(libc::SIGINT),
            _ = self.term.recv() => Some(libc::SIGTERM),
            _ = self.hup.recv() => Some(libc::SIGHUP),
        }
    }
}

/// What one look at the queue and the GPUs decided.
enum Round {
    /// Chosen, and the entry marked launched (its ticket is the caller's to move in).
    Launch(Box<Launch>),
    /// Why it waits.
    Wait(String),
}

/// A job's place in the queue while it waits for room, and what it has said so far.
struct Waiter<'a> {
    args: &'a RunArgs,
    dir: std::path::PathBuf,
    count: usize,
    need: Option<u64>,
    started: Instant,
    /// `None`: wait forever.
    deadline: Option<Duration>,
    locks: Locks,
    ticket: Ticket,
    request: Request,
    /// Why it waited, as last said.
    said: String,
    /// What was said about others' entries, once each.
    reported: std::collections::HashSet<String>,
}

/// The queue entry of a job that waits for `count` GPUs with `need` bytes free.
fn entry(
    command: &[std::ffi::OsString],
    grace: Duration,
    (count, need): (usize, Option<u64>),
    user: Option<String>,
) -> Entry {
    Entry {
        version: q::VERSION,
        pid: 0,
        start_ticks: 0,
        uid: 0,
        user: user.filter(|u| u.len() <= 256),
        command: crate::text::shell_words(command)
            .chars()
            .take(4096)
            .collect(),
        count: count as u32,
        need_bytes: need,
        enqueued_at: 0.0,
        state: State::Waiting,
        launched_at: None,
        grace_s: grace.as_secs_f64(),
        gpus: None,
        holds: Vec::new(),
    }
}

/// How long `--wait` waits: without it not at all, `None` for ever.
fn deadline(wait: Option<Wait>) -> Option<Duration> {
    match wait {
        None => Some(Duration::ZERO),
        Some(Wait::Forever) => None,
        Some(Wait::AtMost(d)) => Some(d),
    }
}

/// `2 jobs ahead in the queue`.
fn ahead_text(ahead: usize) -> String {
    format!(
        "{ahead} job{} ahead in the queue",
        if ahead == 1 { "" } else { "s" }
    )
}

/// What the job asks for on each chosen GPU: `need`, else all that is free there and not held
/// for another job.
fn asked(chosen: &[Candidate], need: Option<u64>) -> Vec<u64> {
    chosen
        .iter()
        .map(|c| need.unwrap_or_else(|| c.free_bytes.unwrap_or(0).saturating_sub(c.held_bytes)))
        .collect()
}

/// `no room for a GPU with 8.0 GiB free (waited 2m): <why>`, and the hint when `--wait` was not
/// given.
fn no_room_text(wanted: &str, waited: Duration, why: &str, wait_given: bool) -> String {
    let after = if waited >= Duration::from_secs(1) {
        format!(" (waited {})", fmt_wait(waited))
    } else {
        String::new()
    };
    format!(
        "no room for {wanted}{after}: {}{}",
        crate::text::escape(why),
        if wait_given {
            ""
        } else {
            " (--wait waits for room)"
        }
    )
}

impl<'a> Waiter<'a> {
    /// Joins the queue in `dir` (under its lock, when it can be had).
    fn join(
        args: &'a RunArgs,
        dir: std::path::PathBuf,
        count: usize,
        need: Option<u64>,
    ) -> anyhow::Result<Self> {
        let entry = entry(
            &args.command,
            args.grace,
            (count, need),
            std::env::var("USER").ok(),
        );
        let started = Instant::now();
        let deadline = deadline(args.wait);
        let mut locks = Locks::default();
        let ticket = {
            let lock = locks.take(&dir, deadline, started)?;
            Ticket::join(&dir, entry, lock.as_ref())
                .map_err(|e| anyhow::anyhow!("cannot join the queue in {}: {e}", dir.display()))?
        };
        Ok(Self {
            args,
            dir,
            count,
            need,
            started,
            deadline,
            locks,
            ticket,
            request: Request {
                count,
                need_bytes: need,
                idle_only: need.is_none(),
                exclude: Vec::new(),
                held: Vec::new(),
            },
            said: String::new(),
            reported: std::collections::HashSet::new(),
        })
    }

    /// Under the queue's lock: the others' entries, and the choice when none is ahead.
    fn round(&mut self, sample: &Sample) -> anyhow::Result<Round> {
        let _lock = self.locks.take(&self.dir, self.deadline, self.started)?;
        let entries = self.others(sample);
        // Our place as everyone reads it: our entry from the scan, trusted as theirs are.
        let mine = self.ticket.entry.pid;
        let me = entries
            .iter()
            .find(|e| e.pid == mine)
            .map_or_else(|| self.ticket.entry.key(), Entry::key);
        let ahead = q::ahead(&entries, me);
        if ahead > 0 {
            return Ok(Round::Wait(ahead_text(ahead)));
        }
        self.request.held = q::held(&entries, queue::now(), Some(self.ticket.entry.pid));
        match choose(&sample.devices, &self.request) {
            Ok(choice) => self.launch(choice).map(Round::Launch),
            Err(no_fit) => Ok(Round::Wait(no_fit.reasons())),
        }
    }

    /// The queue's entries that count, saying once each one that was ignored or passed over:
    /// a job no GPU here could ever hold would wait at the head forever, and everyone behind
    /// it.
    fn others(&mut self, sample: &Sample) -> Vec<Entry> {
        let scan = queue::scan(&self.dir);
        for why in scan.ignored {
            if self.reported.insert(why.clone()) {
                eprintln!("gpumon: ignoring a queue entry: {why}");
            }
        }
        let mine = self.ticket.entry.pid;
        let (entries, never): (Vec<Entry>, Vec<Entry>) = scan
            .entries
            .into_iter()
            .partition(|e| e.pid == mine || could_fit(sample, e.count as usize, e.need_bytes));
        for e in never.iter().filter(|e| e.state == State::Waiting) {
            let why = format!(
                "{}'s job (pid {}) asks for {}, which no GPU here could ever hold: passed over",
                crate::text::escape(e.user.as_deref().unwrap_or("another user")),
                e.pid,
                describe(e.count as usize, e.need_bytes)
            );
            if self.reported.insert(why.clone()) {
                eprintln!("gpumon: {why}");
            }
        }
        entries
    }

    /// Marks the entry launched on the choice, holding what the job asks for there.
    fn launch(&mut self, choice: crate::estimate::pick::Choice) -> anyhow::Result<Box<Launch>> {
        let ids = choice.cuda_visible_devices();
        let asked = asked(&choice.chosen, self.need);
        let entry = &mut self.ticket.entry;
        entry.state = State::Launched;
        entry.launched_at = Some(queue::now());
        entry.gpus = Some(ids.clone());
        entry.holds = choice
            .chosen
            .iter()
            .zip(&asked)
            .map(|(c, a)| Hold {
                id: c.cuda_id(),
                index: c.index,
                bytes: *a,
            })
            .collect();
        self.ticket
            .write()
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", self.ticket.path().display()))?;
        let waited = self.started.elapsed();
        if waited >= Duration::from_secs(1) || !self.said.is_empty() {
            eprintln!(
                "gpumon: {} free after {} in the queue: running on {ids}",
                describe(self.count, self.need),
                fmt_wait(waited)
            );
        }
        Ok(Box::new(Launch {
            ids,
            chosen: choice.chosen,
            // The ticket leaves the waiter with the launch: the caller moves it in.
            ticket: None,
            asked,
            waited,
            grace: self.args.grace,
        }))
    }

    /// Past `--wait`'s time: says why there was no room, and the exit.
    fn out_of_time(&self, why: &str) -> Option<ExitCode> {
        let waited = self.started.elapsed();
        if self.deadline.is_none_or(|d| waited < d) {
            return None;
        }
        eprintln!(
            "gpumon: {}",
            no_room_text(
                &describe(self.count, self.need),
                waited,
                why,
                self.args.wait.is_some()
            )
        );
        Some(ExitCode::from(1))
    }

    /// Says why it waits, when that changed.
    fn say(&mut self, why: String) {
        if why != self.said {
            eprintln!(
                "gpumon: waiting for {}: {}",
                describe(self.count, self.need),
                crate::text::escape(&why)
            );
            self.said = why;
        }
    }

    /// Leaves the queue on a signal: its exit.
    fn leave(self, sig: i32) -> ExitCode {
        drop(self.ticket);
        eprintln!(
            "gpumon: left the queue after {} (nothing was run)",
            fmt_wait(self.started.elapsed())
        );
        ExitCode::from(128 + sig as u8)
    }
}

impl Launch {
    /// After a sample: what the job still holds on each GPU (asked less what its processes
    /// use there); the entry is rewritten when that changed and removed once nothing is held
    /// or the grace period is over.
    pub fn update(&mut self, sample: &Sample, mine: impl Fn(&Process) -> bool) {
        let Some(ticket) = self.ticket.as_mut() else {
            return;
        };
        let launched = ticket.entry.launched_at.unwrap_or(0.0);
        if queue::now() - launched >= self.grace.as_secs_f64() {
            self.ticket = None;
            return;
        }
        let mut changed = false;
        for ((hold, c), asked) in ticket
            .entry
            .holds
            .iter_mut()
            .zip(&self.chosen)
            .zip(&self.asked)
        {
            let Some(d) = sample.devices.iter().find(|d| d.index == c.index) else {
                continue;
            };
            let using: u64 = match &c.mig_profile {
                None => d
                    .processes
                    .iter()
                    .filter(|p| mine(p))
                    .filter_map(|p| p.gpu_memory_bytes)
                    .sum(),
                Some(_) => d
                    .mig
                    .iter()
                    .find(|m| m.uuid == c.uuid)
                    .map(|m| {
                        m.processes(d)
                            .filter(|p| mine(p))
                            .filter_map(|p| p.gpu_memory_bytes)
                            .sum()
                    })
                    .unwrap_or(0),
            };
            let left = q::outstanding(*asked, using);
            if left != hold.bytes {
                hold.bytes = left;
                changed = true;
            }
        }
        // Nothing held any more, or the entry cannot be rewritten: leave the queue.
        if ticket.entry.holds.iter().all(|h| h.bytes == 0) || (changed && ticket.write().is_err()) {
            self.ticket = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn the_entry_bounds_what_it_takes_from_outside() {
        let long = "x".repeat(5000);
        let e = entry(
            &["python".into(), long.clone().into()],
            Duration::from_secs(30),
            (2, Some(8 * GIB)),
            Some("u".repeat(257)),
        );
        assert_eq!(e.user, None, "a user name over 256 bytes is dropped");
        assert_eq!(e.command.chars().count(), 4096);
        assert!(e.command.starts_with("python xxx"), "{}", e.command);
        assert_eq!((e.count, e.need_bytes), (2, Some(8 * GIB)));
        assert_eq!(e.grace_s, 30.0);
        assert_eq!(e.state, State::Waiting);
        let e = entry(
            &["true".into()],
            Duration::ZERO,
            (1, None),
            Some("ann".into()),
        );
        assert_eq!(
            (e.user.as_deref(), e.command.as_str()),
            (Some("ann"), "true")
        );
    }

    #[test]
    fn without_wait_the_deadline_is_now_and_forever_has_none() {
        assert_eq!(deadline(None), Some(Duration::ZERO));
        assert_eq!(deadline(Some(Wait::Forever)), None);
        let d = Duration::from_secs(90);
        assert_eq!(deadline(Some(Wait::AtMost(d))), Some(d));
    }

    #[test]
    fn jobs_ahead_are_counted_in_words() {
        assert_eq!(ahead_text(1), "1 job ahead in the queue");
        assert_eq!(ahead_text(3), "3 jobs ahead in the queue");
    }

    #[test]
    fn without_need_a_job_asks_for_what_is_free_and_not_held() {
        let gpu = |free_bytes, held_bytes| Candidate {
            index: 0,
            uuid: None,
            name: None,
            mig_profile: None,
            gpu_instance_id: None,
            free_bytes,
            limit_bytes: None,
            held_bytes,
            processes: 0,
            idle: Some(true),
        };
        let chosen = [
            gpu(Some(10 * GIB), 2 * GIB),
            gpu(None, 0),
            gpu(Some(GIB), 2 * GIB),
        ];
        assert_eq!(asked(&chosen, None), vec![8 * GIB, 0, 0]);
        assert_eq!(asked(&chosen, Some(GIB)), vec![GIB; 3]);
    }

    #[test]
    fn no_room_says_the_wait_and_escapes_the_reason() {
        assert_eq!(
            no_room_text("a GPU", Duration::from_millis(300), "GPU 0 busy", false),
            "no room for a GPU: GPU 0 busy (--wait waits for room)"
        );
        let text = no_room_text("a GPU", Duration::from_secs(3), "\x1b[31mred", true);
        assert!(text.starts_with("no room for a GPU (waited "), "{text}");
        assert!(!text.contains('\x1b') && !text.contains("--wait"), "{text}");
    }
}
