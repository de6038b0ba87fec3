//! Exact posteriors over set partitions for small data sets (MATH §7.1).
//!
//! For `n ≤ 12` points every set partition can be listed (`B_10 = 115,975`,
//! `B_12 = 4,213,597`), so `p(Π | X) ∝ p(Π) Π_{c∈Π} m(X_c)` is computed exactly for each one.
//! This is the ground truth every sampler of the crate is tested against.
//!
//! * [`enumerate`]: partitions as restricted growth strings ([`Rgs`]), the allocation-free
//!   walk ([`PartitionCursor`], [`for_each_partition`], [`SetPartitions`]), Bell numbers, and
//!   the `O(n)` map between a partition and its position ([`RgsIndex`]).
//! * [`posterior`]: [`ExactPosterior`] from any [`crate::kernel::ConjugateKernel`] and any
//!   partition prior given as a function of block sizes, with the DP EPPF built in
//!   ([`dp_ln_eppf`]); top partitions, `P(K = k)`, co-clustering, expectations, i.i.d. draws.
//! * [`compare`]: sampled partitions ([`EmpiricalPartitions`]), TV distances, and the expected
//!   TV of a perfect sampler (large-`N` approximation, exact, and Monte Carlo).
//! * [`kernel_hyper`]: the posterior with the kernel's own hyperparameters integrated out by
//!   quadrature ([`hyper_integrated_posterior`]).
//! * [`tv`]: the TV of a chain's visited partitions with its batch-means effective size and
//!   the noise floor at that size ([`ExactPosterior::chain_tv`], [`ChainTv`]).
//! * [`summary`]: serialisable reports.
//!
//! ```
//! use nrmm::exact::{ExactPosterior, dp_ln_eppf};
//!
//! // The DP(α = 1) prior over partitions of 4 points, seen as a posterior under a flat
//! // likelihood: E[K] = Σ_{i<4} 1 / (1 + i).
//! let prior = ExactPosterior::prior(4, dp_ln_eppf(4, 1.0)?)?;
//! assert!((prior.expected_k() - (1.0 + 1.0 / 2.0 + 1.0 / 3.0 + 1.0 / 4.0)).abs() < 1e-12);
//! # Ok::<(), nrmm::Error>(())
//! ```

pub mod compare;
pub mod enumerate;
pub mod kernel_hyper;
pub mod posterior;
pub mod summary;
pub mod transition;
pub mod tv;

pub use compare::{EmpiricalPartitions, McEstimate};
pub use enumerate::{
    bell_number, for_each_partition, PartitionCursor, PartitionView, Rgs, RgsIndex, SetPartitions,
    MAX_EXACT_N,
};
pub use kernel_hyper::hyper_integrated_posterior;
pub use posterior::{dp_ln_eppf, subset_ln_marginals, ExactPosterior, PosteriorSampler};
pub use summary::{KProbability, PartitionProbability, PosteriorSummary, SampleComparison};
pub use transition::{transition_matrix, TransitionMatrix};
pub use tv::ChainTv;
