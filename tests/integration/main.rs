//! Integration tests: the built `gpumon` binary, run against the fake NVML library.

mod accounting;
mod cli;
mod common;
mod dashboard;
mod docs;
mod explain;
mod fleet;
mod gpu_check;
mod health;
mod holders;
mod hostile;
mod owners;
mod peaks;
mod pick;
mod queue;
mod recording;
mod run;
mod sampling;
mod serve;
mod stall;
mod torch_trace;
mod unified;
