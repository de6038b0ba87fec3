//! # nrmm
//!
//! Bayesian nonparametric mixture models on normalized random measures (NRMs): the Dirichlet
//! process and the normalized generalized gamma process, with conjugate kernels
//! (Normal-Wishart, Multinomial-Dirichlet), exact posteriors by enumeration for small data
//! sets, and samplers that are checked against them.
//!
//! The mathematics follows the project's `MATH.md` section by section; each item's
//! documentation cites the section it implements.

#![warn(missing_docs)]

pub mod data;
pub mod diagnostics;
pub mod error;
pub mod exact;
pub mod kernel;
pub mod math;
pub mod model;
pub mod partition;
pub mod prior;
pub mod rng;
pub mod run;
pub mod sampler;

pub use error::{Error, Result};
