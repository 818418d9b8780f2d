//! The fleet's poller: one row per node read from its `gpumon serve`, or from a Prometheus's
//! targets, and the node opened in the dashboard read whole.
//!
//! A thread with a runtime of its own asks every node for its summary (a few hundred
//! bytes) each interval, each within its deadline, and hands the answers over as they come,
//! so that a slow or dead node never holds back the rows of the others; the node that is open
//! is read whole. Parsing happens there, off the thread that draws.
//!
//! From a Prometheus, the rows are one query a refresh, and the open node is read from the
//! same Prometheus: its series each refresh, and its history once, when it is opened, from a
//! range query (so its charts start with the past, not empty).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

use super::prometheus::Source as Prometheus;
use super::remote::{fetch_sample, fetch_summaries, Client, Endpoint};
use crate::model::fleet::NodeSummary;
use crate::model::Sample;

/// What the poller hands over.
#[derive(Debug, Default)]
pub struct Round {
    /// Nodes read (or failed) since the last frame: their place in the list, the answer and
    /// how long it took.
    pub updates: Vec<(usize, Result<NodeSummary, String>, Duration)>,
    /// The open node's whole sample, when it came: the node's place and the answer.
    pub opened: Option<(usize, Result<Sample, String>)>,
    /// The open node's history before it was opened (from a Prometheus's range query),
    /// oldest first: the node's place and the answer. Comes once, with its first sample.
    pub history: Option<(usize, Result<Vec<Sample>, String>)>,
    /// Nodes seen for the first time (from a Prometheus), to be added after the rows there
    /// are, before `updates` is read: their names and addresses.
    pub new_rows: Vec<(String, String)>,
    /// The Prometheus could not be read this time (`None` when it was, or for listed nodes).
    pub source_error: Option<String>,
}

/// Where the fleet's rows come from.
pub enum Nodes {
    /// These nodes' `gpumon serve`.
    Listed(Vec<Endpoint>),
    /// A Prometheus: its scrape targets.
    Prometheus(Prometheus),
}

/// How often the answers that have come are handed over while a round waits on the rest.
const FLUSH: Duration = Duration::from_millis(100);

/// Starts the poller: every `interval` (as it changes), every node's summary within
/// `deadline`, and the open node's (`open`) whole sample; from a Prometheus, the open node's
/// `history` window too, once.
pub fn spawn(
    nodes: Nodes,
    client: Client,
    interval: watch::Receiver<Duration>,
    deadline: Duration,
    history: Duration,
    mut open: watch::Receiver<Option<usize>>,
) -> mpsc::Receiver<Round> {
    let (tx, rx) = mpsc::channel(16);
    std::thread::Builder::new()
        .name("gpumon-fleet".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .enable_time()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                let mut known: Vec<String> = Vec::new();
                // The node whose history has been read (from a Prometheus).
                let mut history_of = None;
                let listed = match &nodes {
                    Nodes::Listed(eps) => Arc::new(eps.clone()),
                    Nodes::Prometheus(_) => Arc::new(Vec::new()),
                };
                loop {
                    let started = tokio::time::Instant::now();
                    let opened = *open.borrow_and_update();
                    let more = match &nodes {
                        Nodes::Listed(_) => round(&listed, &client, deadline, opened, &tx).await,
                        Nodes::Prometheus(source) => {
                            let open = Open {
                                node: opened,
                                history_of: &mut history_of,
                                window: history,
                                step: *interval.borrow(),
                            };
                            prometheus_round(source, &mut known, &client, deadline, open, &tx).await
                        }
                    };
                    if !more {
                        return;
                    }
                    let next = started + *interval.borrow();
                    // A node opened meanwhile is read at once.
                    tokio::select! {
                        _ = tokio::time::sleep_until(next) => {}
                        changed = open.changed() => if changed.is_err() { return },
                    }
                }
            });
            rt.shutdown_background();
        })
        .ok();
    rx
}

/// One round: every summary, and the open node's sample, handed over as they come. `false`
/// once the dashboard has gone.
async fn round(
    endpoints: &Arc<Vec<Endpoint>>,
    client: &Client,
    deadline: Duration,
    opened: Option<usize>,
    tx: &mpsc::Sender<Round>,
) -> bool {
    let (early_tx, mut early) = mpsc::unbounded_channel();
    let all = {
        let endpoints = Arc::clone(endpoints);
        let client = client.clone();
        tokio::spawn(async move {
            let eps: &[Endpoint] = &endpoints;
            fetch_summaries(eps, &client, deadline, Some(early_tx)).await
        })
    };
    let sample = async {
        match opened.and_then(|i| endpoints.get(i).map(|ep| (i, ep))) {
            Some((i, ep)) => Some((i, fetch_sample(ep, client, deadline).await)),
            None => None,
        }
    };
    tokio::pin!(all, sample);
    let mut batch = Vec::new();
    let mut opened_result = None;
    let mut sample_done = opened.is_none();
    let mut flush = tokio::time::interval(FLUSH);
    loop {
        tokio::select! {
            Some(update) = early.recv() => batch.push(update),
            r = &mut sample, if !sample_done => {
                sample_done = true;
                opened_result = r;
            }
            _ = flush.tick() => {
                if !batch.is_empty() || opened_result.is_some() {
                    let frame = Round {
                        updates: std::mem::take(&mut batch),
                        opened: opened_result.take(),
                        ..Round::default()
                    };
                    if tx.send(frame).await.is_err() {
                        return false;
                    }
                }
            }
            _ = &mut all, if sample_done => {
                // Every answer is in the channel by now, the late ones' "no answer" too.
                while let Ok(update) = early.try_recv() {
                    batch.push(update);
                }
                let frame = Round {
                    updates: batch,
                    opened: opened_result,
                    ..Round::default()
                };
                return tx.send(frame).await.is_ok();
            }
        }
    }
}

/// The node open in a round on a Prometheus, and what its history needs.
struct Open<'a> {
    node: Option<usize>,
    /// The node whose history has been read; the history is read again for another.
    history_of: &'a mut Option<usize>,
    window: Duration,
    step: Duration,
}

/// One round on a Prometheus: one query for every node (`known` holds the instances seen so
/// far, in the rows' order), and the open node's series (its history too, the first time).
/// `false` once the dashboard has gone.
async fn prometheus_round(
    source: &Prometheus,
    known: &mut Vec<String>,
    client: &Client,
    deadline: Duration,
    open: Open<'_>,
    tx: &mpsc::Sender<Round>,
) -> bool {
    let open_node = open.node.and_then(|i| Some((i, known.get(i)?.clone())));
    let wants_history = open_node
        .as_ref()
        .filter(|(i, _)| *open.history_of != Some(*i))
        .cloned();
    *open.history_of = open.node;
    let sample = async {
        let (i, instance) = open_node?;
        Some((i, source.read_node(client, deadline, &instance).await))
    };
    let history = async {
        let (i, instance) = wants_history?;
        let r = source
            .read_history(
                client,
                deadline,
                &instance,
                open.window,
                open.step,
                std::time::SystemTime::now(),
            )
            .await;
        Some((i, r))
    };
    let (answer, opened, history) = tokio::join!(source.read(client, deadline), sample, history);
    let started = Instant::now();
    let mut frame = Round {
        opened,
        history,
        ..Round::default()
    };
    match answer {
        Ok(nodes) => {
            let mut seen = vec![false; known.len()];
            for (name, instance, down, summary) in nodes {
                let i = match known.iter().position(|k| *k == instance) {
                    Some(i) => i,
                    None => {
                        known.push(instance.clone());
                        seen.push(false);
                        frame.new_rows.push((name, instance));
                        known.len() - 1
                    }
                };
                seen[i] = true;
                let r = match down {
                    Some(e) => Err(e),
                    None => Ok(summary),
                };
                frame.updates.push((i, r, started.elapsed()));
            }
            for (i, s) in seen.iter().enumerate() {
                if !s {
                    frame.updates.push((
                        i,
                        Err("no recent series in Prometheus".into()),
                        Duration::ZERO,
                    ));
                }
            }
        }
        // Every row keeps its last figures, marked; the header says why.
        Err(e) => {
            for i in 0..known.len() {
                frame
                    .updates
                    .push((i, Err("Prometheus not read".into()), Duration::ZERO));
            }
            frame.source_error = Some(e);
        }
    }
    tx.send(frame).await.is_ok()
}
