//! The commands, each a leaf: it opens what it reads, drives a view, and returns an exit code.
//! No command imports another or the dispatcher (`crate::dispatch`); what several need lives below
//! them (`collect`, `view`, `tui`, `console`). `tests/architecture.rs` keeps it so.

pub mod dashboard;
pub mod docs;
pub mod estimate;
pub mod explain;
pub mod log;
pub mod once;
pub mod pick;
pub mod record;
pub mod replay;
pub mod run;
pub mod serve;
