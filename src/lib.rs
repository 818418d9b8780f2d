//! gpumon: shows where GPU memory goes and explains why a job ran out of it.
//!
//! The data path, one folder a stage:
//! - `collect`: source (NVML | simulated | a recording) → readers (a blocking worker per
//!   device) → sampler (assembles on time, marks stalled devices) → host facts, owners,
//!   holders of unattributed memory and probe reports per process;
//! - `model`: the immutable `Sample`, its memory `breakdown`, `history`, the per-user
//!   `rollup` and the `timeline` before an OOM;
//! - `feed`: what the views are fed, behind one event type: the live sampler, a recording's
//!   player, the fleet's poller and its network readers (`remote`, `prometheus`);
//! - the analyses, pure: `oom` (pasted errors) and `estimate` (will a run fit);
//! - the views: `view` (the `once` report and JSON, the `log` writer, the Prometheus
//!   exposition) and `tui` (the dashboard);
//! - `store`: what outlives a process (recordings, log files, the wait queue);
//! - `cmd`: the commands, each a leaf, and `cli`, their flags; `dispatch` calls the command
//!   the flags name, and only `main` calls it.
//!
//! `units`, `text` and `metric_names` are pure helpers every layer uses; `console` holds what
//! the commands share (exit codes and usage errors, signals, broken pipes).

pub mod cli;
pub mod cmd;
pub mod collect;
pub mod console;
pub mod dispatch;
pub mod estimate;
pub mod feed;
pub mod files;
#[cfg(test)]
mod hostile_views;
pub mod metric_names;
pub mod model;
pub mod oom;
pub mod store;
pub mod text;
pub mod tracer;
pub mod tui;
pub mod units;
pub mod view;
