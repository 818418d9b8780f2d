//! Views of a [`crate::model::Sample`] as text: the `once` report and its JSON, and the `log`
//! writer (CSV, JSON lines, a table); the estimate's report and `gpumon run`'s summary as text. Functions of a sample and the bytes they write; the
//! commands choose where the bytes go.

pub mod accounting;
pub mod by;
pub mod estimate;
pub mod fleet;
pub mod limit;
pub mod log;
pub mod metrics;
pub mod once;
pub mod run;
