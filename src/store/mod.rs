//! What outlives a process, on disk: recordings, the log files `log --output` and `run --log`
//! keep, and the wait queue of `gpumon run --gpus auto --wait`.

pub mod logfile;
pub mod queue;
pub mod recording;
