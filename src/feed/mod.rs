//! Where the views' samples come from, behind one boundary: the live sampler, a recording's
//! player and the fleet's poller (over `gpumon serve` nodes or a Prometheus's targets) each
//! hand over the one [`Event`] type through [`Feed`], and a view works on any of them
//! unchanged. A new source is one more implementation here.
//!
//! The fleet's network readers are here too, behind the same boundary: [`remote`] reads other
//! nodes' `gpumon serve` (and holds the HTTP client), [`prometheus`] reads a Prometheus. The
//! poller reads through them, and so do the commands that read the fleet once (`once
//! --remote`, `once --prometheus`, `pick --remote`); what they hand a view is a model type
//! ([`crate::model::fleet`]), so no view names network code.

pub mod fleet;
pub mod live;
pub mod prometheus;
pub mod remote;
pub mod replay;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::{mpsc, watch};

use crate::collect::sampler::Focus;
use crate::collect::source::OpenError;
use crate::model::Sample;
use crate::store::recording::{Reader, Writer};
use remote::Client;

/// What a feed reads.
pub enum Source {
    /// This host's GPUs, every sample also written to `record` when given.
    Live(live::Start, Option<Writer>),
    /// A recording, from a time; `name` is what the views call it.
    Replay {
        reader: Box<Reader>,
        at: SystemTime,
        name: String,
    },
    /// Other nodes' `gpumon serve`, or a Prometheus's targets, each read within `deadline`.
    Fleet {
        nodes: fleet::Nodes,
        client: Client,
        deadline: Duration,
    },
}

/// What a feed hands the views.
#[derive(Debug)]
pub enum Event {
    /// A live sample, with the host's queue of `gpumon run --gpus` jobs read beside it, and
    /// what the views must say of the feed (a recording that stopped).
    Sample {
        sample: Arc<Sample>,
        queue: Vec<crate::model::queue::Entry>,
        notice: Option<String>,
    },
    /// The recording's samples at the cursor.
    Replay(replay::Playback),
    /// The fleet's answers.
    Fleet(Box<fleet::Round>),
    /// The driver is still initialising, this long.
    Opening(Duration),
    /// The driver has opened: samples follow.
    Opened,
    /// The driver could not be opened.
    Failed(OpenError),
    /// The live sampler has ended: no sample will come.
    Ended,
}

enum Kind {
    Live(Box<live::Live>),
    Replay {
        playback: Option<mpsc::Receiver<replay::Playback>>,
        commands: std::sync::mpsc::Sender<replay::Command>,
    },
    Fleet {
        rounds: Option<mpsc::Receiver<fleet::Round>>,
        open: watch::Sender<Option<usize>>,
    },
}

/// A running feed, and what a view may ask of it (each a no-op where it does not apply).
pub struct Feed {
    kind: Kind,
    interval: watch::Sender<Duration>,
    focus: watch::Sender<Focus>,
}

impl Feed {
    /// Starts reading `source` every `interval`, keeping `history` where the source has a past
    /// (a recording, a Prometheus). Inside a tokio runtime.
    pub fn start(source: Source, interval: Duration, history: Duration) -> Feed {
        let (interval, interval_rx) = watch::channel(interval);
        let (focus, focus_rx) = watch::channel(Arc::new(Some(Vec::new())));
        let kind = match source {
            Source::Live(start, record) => Kind::Live(Box::new(live::Live::start(
                start,
                record,
                interval_rx,
                focus_rx,
            ))),
            Source::Replay { reader, at, .. } => {
                let (commands, rx) = replay::spawn(*reader, at, history);
                Kind::Replay {
                    playback: Some(rx),
                    commands,
                }
            }
            Source::Fleet {
                nodes,
                client,
                deadline,
            } => {
                let (open, open_rx) = watch::channel(None);
                let rx = fleet::spawn(nodes, client, interval_rx, deadline, history, open_rx);
                Kind::Fleet {
                    rounds: Some(rx),
                    open,
                }
            }
        };
        Feed {
            kind,
            interval,
            focus,
        }
    }

    /// The next event. A player or poller that has ended (the recording could not be read
    /// on) gives nothing more; the live sampler's end is said ([`Event::Ended`]).
    /// Cancel-safe: it can be one branch of a `select!`.
    pub async fn next(&mut self) -> Event {
        match &mut self.kind {
            Kind::Live(live) => live.next().await,
            Kind::Replay { playback, .. } => match next(playback).await {
                Some(p) => Event::Replay(p),
                None => std::future::pending().await,
            },
            Kind::Fleet { rounds, .. } => match next(rounds).await {
                Some(r) => Event::Fleet(Box::new(r)),
                None => std::future::pending().await,
            },
        }
    }

    /// How long the driver has been initialising, while it still is.
    pub fn opening_for(&self) -> Option<Duration> {
        match &self.kind {
            Kind::Live(live) => live.opening_for(),
            _ => None,
        }
    }

    /// Reads every `d` from now on.
    pub fn set_interval(&self, d: Duration) {
        let _ = self.interval.send(d);
    }

    /// The pids whose host facts the view shows (`None`: all); the sampler refreshes only
    /// those.
    pub fn focus(&self, pids: Option<Vec<u32>>) {
        if **self.focus.borrow() != pids {
            let _ = self.focus.send(Arc::new(pids));
        }
    }

    /// The fleet node the view has open, read whole.
    pub fn open_node(&self, node: Option<usize>) {
        if let Kind::Fleet { open, .. } = &self.kind {
            if *open.borrow() != node {
                let _ = open.send(node);
            }
        }
    }

    /// Moves a recording's cursor.
    pub fn seek(&self, command: replay::Command) {
        if let Kind::Replay { commands, .. } = &self.kind {
            let _ = commands.send(command);
        }
    }
}

/// The channel's next message; once it has closed, `None` once and then nothing (a closed
/// channel would answer at once, every time).
async fn next<T>(rx: &mut Option<mpsc::Receiver<T>>) -> Option<T> {
    let r = match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    };
    if r.is_none() {
        *rx = None;
    }
    r
}
