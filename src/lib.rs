#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod choice;
pub mod chooser;
pub mod data;
pub mod diagnostics;
pub mod distributed;
pub mod error;
pub mod exact;
pub mod impute;
pub mod kernel;
pub mod math;
pub mod model;
pub mod partition;
pub mod predict;
pub mod prior;
pub mod rng;
pub mod run;
pub mod sampler;
pub mod simd;
pub mod sva;
pub mod tree;
pub mod vecmath;

pub use choice::Choice;
pub use error::{Error, Result};
