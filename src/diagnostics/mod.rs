//! Diagnostics computed from traces after (or beside) a run.

pub mod ess;

pub use ess::effective_sample_size;
