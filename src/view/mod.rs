//! Views of a [`crate::model::Sample`] as text: the `once` report and its JSON, and the `log`
//! writer (CSV, JSON lines, a table). Functions of a sample and the bytes they write; the
//! commands choose where the bytes go.

pub mod by;
pub mod fleet;
pub mod limit;
pub mod log;
pub mod logfile;
pub mod once;
