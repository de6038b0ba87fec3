//! Where a chain starts ([`Start`]): one cluster, singletons, given labels, an IBHC forest, a
//! one-pass SVA-PM fit, or the better of one cluster and that fit.

use super::spec::{SamplerKind, Start};
use crate::data::load;
use crate::error::Result;
use crate::kernel::ConjugateKernel;
use crate::partition::Partition;
use crate::prior::Prior;
use crate::rng::SeedPlan;
use crate::sampler::RngChooser;
use crate::sva::{fit_shuffled, SvaConfig, SvaKernel, SvaPrior};
use crate::tree::{Forest, IbhcMode};
use std::sync::Arc;

/// A [`Start`] made ready for `n` points: a labels file is read once, before any chain starts.
#[derive(Clone, Debug, PartialEq)]
pub enum Resolved {
    /// All points in one cluster.
    Single,
    /// Every point alone.
    Singletons,
    /// The labels, one per point.
    Labels(Vec<i64>),
    /// The pilot's partition carried to every point, shared with the model rather than
    /// copied (a copy as `i64` would hold 8 MB at 10⁶ points while the chains run).
    Pilot(Arc<[u32]>),
    /// The clusters of an IBHC forest.
    Ibhc(IbhcMode),
    /// The components of a one-pass SVA-PM fit.
    Sva,
    /// The better by log joint of one cluster and the SVA-PM fit.
    Auto,
}

impl Start {
    /// The start made ready for `n` points and the run's `sampler`: a labels file is read (and
    /// checked to hold one label per point); the other starts need nothing yet. `auto` is, for
    /// the exact sub-cluster sampler, the best partition of the pilot that set the kernel's
    /// scale carried to every point (`pilot`, [`crate::model::Model::pilot_partition`]), or
    /// one cluster without one. Not an SVA-PM fit: it cuts some large clusters in pieces, and
    /// the sampler's chains stayed in those pieces, whose merges it cannot propose well enough
    /// at 10⁵ points and more (10⁶ × 2 in 6 clusters: three of four chains 0.03-0.1 nats per
    /// point below the true partition after 250 sweeps, where from one cluster all four ended
    /// within 0.01). The pilot's partition is a posterior draw's best on a subsample, not a
    /// greedy pass; from one cluster, its launches find many clusters only one split at a time
    /// (10⁵ × 128 in 80 clusters: 33 after 100 sweeps, where the pilot had found 77).
    pub fn resolve(
        &self,
        n: usize,
        sampler: SamplerKind,
        pilot: Option<&Arc<[u32]>>,
    ) -> Result<Resolved> {
        Ok(match self {
            Start::Single => Resolved::Single,
            Start::Singletons => Resolved::Singletons,
            Start::Labels(path) => Resolved::Labels(load::load_labels(path, n)?),
            Start::Ibhc(mode) => Resolved::Ibhc(*mode),
            Start::Sva => Resolved::Sva,
            Start::Auto if sampler == SamplerKind::Subcluster => match pilot {
                Some(labels) if labels.len() == n => Resolved::Pilot(Arc::clone(labels)),
                _ => Resolved::Single,
            },
            Start::Auto => Resolved::Auto,
        })
    }
}

impl Resolved {
    /// The initial partition of chain `chain` over `kernel`'s data (an IBHC build or an SVA
    /// pass draws its order from the chain's own initialisation stream of `seed`), with the
    /// forest it was read from when it is an IBHC forest's (moves that keep trees start from
    /// it, [`crate::sampler::Move::start_from_forest`]). `prior` is the run's prior with its
    /// initial hyperparameters.
    pub fn partition<K: SvaKernel>(
        &self,
        kernel: &K,
        prior: &Prior,
        seed: u64,
        chain: u64,
    ) -> Result<(Partition<K>, Option<Forest<K>>)> {
        let partition = match self {
            Resolved::Single => Partition::single(kernel),
            Resolved::Singletons => Partition::singletons(kernel),
            Resolved::Labels(labels) => Partition::from_labels(kernel, labels)?,
            Resolved::Pilot(labels) => Partition::from_labels(kernel, labels)?,
            Resolved::Ibhc(mode) => {
                let forest = ibhc_forest(kernel, prior, *mode, seed, chain)?;
                let partition = Partition::from_labels(kernel, &forest.labels()?)?;
                return Ok((partition, Some(forest)));
            }
            Resolved::Sva => sva_partition(kernel, prior, seed, chain)?,
            Resolved::Auto => {
                // A one-pass fit can leave dozens of components on data with no structure
                // (pure noise in 100 dimensions), which single-point moves take long to merge;
                // one cluster is then the better start, and the log joint says so.
                let fit = sva_partition(kernel, prior, seed, chain)?;
                let single = Partition::single(kernel);
                if single.ln_joint(prior) > fit.ln_joint(prior) {
                    single
                } else {
                    fit
                }
            }
        };
        Ok((partition, None))
    }
}

/// The IBHC forest of an IBHC start: the points queued in a random order drawn from chain
/// `chain`'s initialisation stream, built at the prior's initial hyperparameters. Cost:
/// `O(n K)` pair marginals.
pub fn ibhc_forest<K: ConjugateKernel>(
    kernel: &K,
    prior: &Prior,
    mode: IbhcMode,
    seed: u64,
    chain: u64,
) -> Result<Forest<K>> {
    let mut rng = SeedPlan::new(seed).task(chain, 0, 0);
    Forest::ibhc(kernel, prior, mode, &mut RngChooser::new(&mut rng))
}

/// The partition of an SVA start for chain `chain`: one SVA-PM pass (default settings, the
/// prior's initial `α` as the DP concentration for the DP and NGGP, the urn of a Pitman-Yor
/// or MFM prior at its initial hyperparameters, [`SvaPrior::of`]) over the points in an order
/// drawn from the chain's own initialisation stream, each point then assigned to its most
/// probable component. Cost: one pass and `n K` soft predictives.
pub fn sva_partition<K: SvaKernel>(
    kernel: &K,
    prior: &Prior,
    seed: u64,
    chain: u64,
) -> Result<Partition<K>> {
    let mut rng = SeedPlan::new(seed).task(chain, 0, 1);
    let config = SvaConfig {
        prior: SvaPrior::of(prior),
        ..SvaConfig::with_prune_merge(prior.alpha())
    };
    let labels = fit_shuffled(kernel, &config, &mut rng)?.relabel()?;
    Partition::from_labels(kernel, &labels)
}
