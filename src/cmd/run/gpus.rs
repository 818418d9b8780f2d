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
    let first = sampler.tick();
    if !could_fit(&first, count, need) {
        eprintln!(
            "gpumon: no room for {} here even with every GPU empty",
            describe(count, need)
        );
        return Ok(Outcome::Exit(ExitCode::from(1)));
    }
    let entry = Entry {
        version: q::VERSION,
        pid: 0,
        start_ticks: 0,
        uid: 0,
        user: std::env::var("USER").ok().filter(|u| u.len() <= 256),
        command: crate::text::shell_words(&args.command)
            .chars()
            .take(4096)
            .collect(),
        count: count as u32,
        need_bytes: need,
        enqueued_at: 0.0,
        state: State::Waiting,
        launched_at: None,
        grace_s: args.grace.as_secs_f64(),
        gpus: None,
        holds: Vec::new(),
    };
    let started = Instant::now();
    let deadline = match args.wait {
        None => Some(Duration::ZERO),
        Some(Wait::Forever) => None,
        Some(Wait::AtMost(d)) => Some(d),
    };
    let mut locks = Locks::default();
    let mut ticket = {
        let lock = locks.take(&dir, deadline, started)?;
        Ticket::join(&dir, entry, lock.as_ref())
            .map_err(|e| anyhow::anyhow!("cannot join the queue in {}: {e}", dir.display()))?
    };
    let mut request = Request {
        count,
        need_bytes: need,
        idle_only: need.is_none(),
        exclude: Vec::new(),
        held: Vec::new(),
    };
    let mut said = String::new();
    // What was said about others' entries, once each.
    let mut reported = std::collections::HashSet::new();
    let mut sample = first;
    let mut signals = rt.block_on(async {
        anyhow::Ok((
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
            signal(SignalKind::hangup())?,
        ))
    })?;
    loop {
        let why = {
            let _lock = locks.take(&dir, deadline, started)?;
            let scan = queue::scan(&dir);
            for why in scan.ignored {
                if reported.insert(why.clone()) {
                    eprintln!("gpumon: ignoring a queue entry: {why}");
                }
            }
            // A job no GPU here could ever hold would wait at the head forever, and everyone
            // behind it: it is passed over, and said once.
            let (entries, never): (Vec<Entry>, Vec<Entry>) =
                scan.entries.into_iter().partition(|e| {
                    e.pid == ticket.entry.pid || could_fit(&sample, e.count as usize, e.need_bytes)
                });
            for e in never.iter().filter(|e| e.state == State::Waiting) {
                let why = format!(
                    "{}'s job (pid {}) asks for {}, which no GPU here could ever hold: passed over",
                    crate::text::escape(e.user.as_deref().unwrap_or("another user")),
                    e.pid,
                    describe(e.count as usize, e.need_bytes)
                );
                if reported.insert(why.clone()) {
                    eprintln!("gpumon: {why}");
                }
            }
            let ahead = q::ahead(&entries, ticket.entry.key());
            if ahead > 0 {
                format!(
                    "{ahead} job{} ahead in the queue",
                    if ahead == 1 { "" } else { "s" }
                )
            } else {
                request.held = q::held(&entries, queue::now(), Some(ticket.entry.pid));
                match choose(&sample.devices, &request) {
                    Ok(choice) => {
                        let ids = choice.cuda_visible_devices();
                        let asked: Vec<u64> = choice
                            .chosen
                            .iter()
                            .map(|c| {
                                need.unwrap_or_else(|| {
                                    c.free_bytes.unwrap_or(0).saturating_sub(c.held_bytes)
                                })
                            })
                            .collect();
                        ticket.entry.state = State::Launched;
                        ticket.entry.launched_at = Some(queue::now());
                        ticket.entry.gpus = Some(ids.clone());
                        ticket.entry.holds = choice
                            .chosen
                            .iter()
                            .zip(&asked)
                            .map(|(c, a)| Hold {
                                id: c.cuda_id(),
                                index: c.index,
                                bytes: *a,
                            })
                            .collect();
                        ticket.write().map_err(|e| {
                            anyhow::anyhow!("cannot write {}: {e}", ticket.path().display())
                        })?;
                        let waited = started.elapsed();
                        if waited >= Duration::from_secs(1) || !said.is_empty() {
                            eprintln!(
                                "gpumon: {} free after {} in the queue: running on {ids}",
                                describe(count, need),
                                fmt_wait(waited)
                            );
                        }
                        return Ok(Outcome::Launch(Box::new(Launch {
                            ids,
                            chosen: choice.chosen,
                            ticket: Some(ticket),
                            asked,
                            waited,
                            grace: args.grace,
                        })));
                    }
                    Err(no_fit) => no_fit.reasons(),
                }
            }
        };
        let waited = started.elapsed();
        if deadline.is_some_and(|d| waited >= d) {
            let after = if waited >= Duration::from_secs(1) {
                format!(" (waited {})", fmt_wait(waited))
            } else {
                String::new()
            };
            eprintln!(
                "gpumon: no room for {}{after}: {}{}",
                describe(count, need),
                crate::text::escape(&why),
                if args.wait.is_none() {
                    " (--wait waits for room)"
                } else {
                    ""
                }
            );
            return Ok(Outcome::Exit(ExitCode::from(1)));
        }
        if why != said {
            eprintln!(
                "gpumon: waiting for {}: {}",
                describe(count, need),
                crate::text::escape(&why)
            );
            said = why;
        }
        let (int, term, hup) = &mut signals;
        let left = rt.block_on(async {
            tokio::select! {
                () = tokio::time::sleep(interval.max(Duration::from_millis(200))) => None,
                _ = int.recv() => Some(libc::SIGINT),
                _ = term.recv() => Some(libc::SIGTERM),
                _ = hup.recv() => Some(libc::SIGHUP),
            }
        });
        if let Some(sig) = left {
            drop(ticket);
            eprintln!(
                "gpumon: left the queue after {} (nothing was run)",
                fmt_wait(started.elapsed())
            );
            return Ok(Outcome::Exit(ExitCode::from(128 + sig as u8)));
        }
        sample = sampler.tick();
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
