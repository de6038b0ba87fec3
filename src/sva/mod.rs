//! Lin's (2013) one-pass sequential variational approximation (SVA) of a Dirichlet process
//! mixture with a conjugate kernel, and its prune-and-merge variant SVA-PM (MATH §6.5).
//!
//! Lin, D. (2013), "Online learning of nonparametric mixture models via sequential
//! variational approximation", NIPS 26. Each point is seen once: its responsibilities `ρ_i(k)`
//! over the current components and one new component are computed from the components'
//! posterior predictives (the `h_i(k)` of MATH §6.5, step 1), a new component is created when
//! the new one's responsibility exceeds `ε`, and every component absorbs the point with
//! weight `ρ_i(k)` (step 5). The components hold *soft* sufficient statistics: the kernels'
//! own statistics count whole points, so this module keeps its own with real-valued weights
//! ([`SvaKernel`], implemented for [`crate::kernel::NormalWishart`],
//! [`crate::kernel::Diagonal`] and [`crate::kernel::MultinomialDirichlet`]).
//!
//! The result ([`SvaFit`]) is a deterministic approximation of the posterior, not a sample:
//! use it as a fast baseline or as the initial clustering of an exact sampler
//! ([`SvaFit::to_partition`]).
//!
//! Cost of a pass over `n` points with `K` components: `n (K + 1)` predictive evaluations
//! (each O(d²) for Normal-Wishart, O(d) for the diagonal kernel, O(m log M) for a document of
//! m distinct words against a component of M), statistic updates only for the responsibilities
//! that are not negligible (usually one or two per point), and for SVA-PM O(K²) per check, at
//! most every `K` points.

mod config;
mod fit;
mod pairs;
mod prior;
mod report;

pub use crate::kernel::diagonal::{DiagPosterior, SoftDiag};
pub use crate::kernel::multinomial_dirichlet::{MdPoint, MdPosterior, SoftMd};
pub use crate::kernel::normal_wishart::{NwPosterior, SoftNw};
pub use crate::kernel::SvaKernel;
pub use config::{PruneMerge, SvaConfig};
pub use fit::{fit, fit_order, fit_shuffled, shuffled_order, SvaEvents, SvaFit};
pub use prior::SvaPrior;
pub use report::{run, SvaReport};

/// Responsibilities below this are set to zero after normalisation (without renormalising):
/// they neither update a component nor enter the merge distances. The probability mass lost
/// is below `K · 1e-10` per point, while every statistic update that is skipped saves O(d²)
/// work (Normal-Wishart) or keeps a component's word list sparse (Multinomial-Dirichlet).
pub const NEGLIGIBLE_RESPONSIBILITY: f64 = 1e-10;
