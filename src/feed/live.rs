//! The live feed: the sampler on this host (started at once, or once the driver has opened),
//! each sample recorded when asked and handed over with the host's wait queue read beside it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::Event;
use crate::collect::sampler::{self, Focus, Sampler};
use crate::collect::source::{Opened, Opening};
use crate::model::Sample;
use crate::store::recording::Writer;

/// How often the driver is looked for while it initialises.
const POLL: Duration = Duration::from_millis(100);

/// How the live feed starts: with its sampler, or while the driver is still initialising
/// (NVML's init can block for seconds, or for good on a wedged driver).
pub enum Start {
    Ready(Box<Sampler>),
    /// The source is opening; the function makes the sampler once it is open.
    Opening(Opening, Box<dyn FnOnce(Opened) -> Sampler + Send>),
}

enum State {
    Opening(
        Opening,
        Box<dyn FnOnce(Opened) -> Sampler + Send>,
        tokio::time::Interval,
    ),
    Running(mpsc::Receiver<Arc<Sample>>, tokio::task::JoinHandle<()>),
    Ended,
}

/// The sampler's samples, recorded and with the wait queue.
pub struct Live {
    state: State,
    /// Where every sample is also written (`--record`), until it fails.
    record: Option<Writer>,
    queue_dir: PathBuf,
    interval: watch::Receiver<Duration>,
    focus: watch::Receiver<Focus>,
}

impl Live {
    /// Starts sampling at once when the source is open (inside a tokio runtime).
    pub fn start(
        start: Start,
        record: Option<Writer>,
        interval: watch::Receiver<Duration>,
        focus: watch::Receiver<Focus>,
    ) -> Live {
        let mut live = Live {
            state: State::Ended,
            record,
            queue_dir: crate::store::queue::dir(None),
            interval,
            focus,
        };
        live.state = match start {
            Start::Ready(sampler) => live.run(*sampler),
            Start::Opening(o, make) => {
                let mut poll = tokio::time::interval(POLL);
                poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                State::Opening(o, make, poll)
            }
        };
        live
    }

    fn run(&self, sampler: Sampler) -> State {
        let sampler = sampler.with_focus(self.focus.clone());
        let (rx, task) = sampler::spawn(sampler, self.interval.clone());
        State::Running(rx, task)
    }

    /// How long the driver has been initialising, while it still is.
    pub fn opening_for(&self) -> Option<Duration> {
        match &self.state {
            State::Opening(o, _, _) => Some(o.elapsed()),
            _ => None,
        }
    }

    /// The next event; cancel-safe (every await is a receive or a tick).
    pub async fn next(&mut self) -> Event {
        loop {
            match &mut self.state {
                State::Ended => return std::future::pending().await,
                State::Opening(o, _, poll) => {
                    poll.tick().await;
                    match o.poll() {
                        None => return Event::Opening(o.elapsed()),
                        Some(Err(e)) => {
                            self.state = State::Ended;
                            return Event::Failed(e);
                        }
                        Some(Ok(source)) => {
                            let State::Opening(_, make, _) =
                                std::mem::replace(&mut self.state, State::Ended)
                            else {
                                continue;
                            };
                            self.state = self.run(make(source));
                            return Event::Opened;
                        }
                    }
                }
                State::Running(rx, _) => {
                    let Some(sample) = rx.recv().await else {
                        self.state = State::Ended;
                        return Event::Ended;
                    };
                    return self.take(sample);
                }
            }
        }
    }

    /// A sample as the views get it: recorded first, with the queue of jobs waiting for a GPU.
    fn take(&mut self, sample: Arc<Sample>) -> Event {
        let mut notice = None;
        if let Some(w) = self.record.as_mut() {
            if let Err(e) = w.append(&sample) {
                // Said once; the feed goes on without it.
                notice = Some(format!("recording stopped: {e}"));
                self.record = None;
            }
        }
        Event::Sample {
            queue: crate::store::queue::read(&self.queue_dir),
            sample,
            notice,
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let State::Running(_, task) = &self.state {
            task.abort();
        }
    }
}
