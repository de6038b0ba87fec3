//! Markov chain moves over the clustering state, all behind one [`Move`] trait.
//!
//! A move changes a [`State`] (partition and prior hyperparameters) and reports what it did in
//! a [`StepInfo`]. Its discrete decisions go through a [`Chooser`], so the same code either
//! runs a chain or enumerates its exact transition distribution. Metropolis-Hastings moves
//! build a [`Proposal`] and decide with the one shared [`metropolis_hastings`] step.

pub mod dpmm;
pub mod gibbs;
pub mod hyper;
pub mod kernel_hyper;
pub mod sams;
pub mod split_merge;
pub mod tgmcmc;
mod two_groups;

// The moves' discrete choices live below the samplers and the tree engine.
pub use crate::chooser::{Chooser, PathEnumerator, RngChooser};
pub use dpmm::{
    Direct, DpmmOptions, QuasiCollapsed, QuasiDirect, Splittable, SubCluster, SubClusterOptions,
};
pub use gibbs::{Gibbs, GibbsScan};
pub use hyper::HyperMove;
pub use kernel_hyper::{KernelHyperMove, KernelUpdate};
pub use sams::Sams;
pub use split_merge::JainNeal;
pub use tgmcmc::{TgSams, TgmcmcPaper};

use crate::error::Result;
use crate::kernel::ConjugateKernel;
use crate::partition::Partition;
use crate::prior::NrmPrior;

/// The state a chain moves: the partition with its statistics and the prior with its
/// hyperparameters (`u`, `α`, `σ`).
#[derive(Clone, Debug)]
pub struct State<K: ConjugateKernel, P: NrmPrior> {
    /// Labels and per-cluster statistics.
    pub partition: Partition<K>,
    /// The prior and its current hyperparameters.
    pub prior: P,
}

impl<K: ConjugateKernel, P: NrmPrior> State<K, P> {
    /// The log joint of the state (MATH §1.2; what it is: [`NrmPrior::joint_label`]).
    pub fn ln_joint(&self) -> f64 {
        self.partition.ln_joint(&self.prior)
    }
}

/// A move in a schedule, run `repeats` times per sweep (a sweep of a
/// [`Chain`](crate::run::Chain) runs its schedule in order).
pub struct Scheduled<K: ConjugateKernel, P: NrmPrior> {
    /// The move.
    pub mv: Box<dyn Move<K, P>>,
    /// How many times per sweep.
    pub repeats: usize,
}

/// What one call of [`Move::step`] did, for traces and acceptance diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepInfo {
    /// Metropolis-Hastings proposals made (0 for Gibbs moves).
    pub proposed: usize,
    /// Proposals accepted.
    pub accepted: usize,
    /// Sum over proposals of `min(0, ln A)`, the log acceptance ratio capped at 0; for a
    /// proposal rejected before its ratio was complete (TG-SAMS's first stage, a
    /// [`metropolis_hastings_bounded`] rejection), the capped upper bound that decided it.
    pub ln_accept_sum: f64,
}

impl StepInfo {
    /// The record of one Metropolis-Hastings proposal with log ratio `ln_a` (capped at 0; a
    /// NaN ratio counts as `-∞`).
    pub fn proposal(accepted: bool, ln_a: f64) -> StepInfo {
        StepInfo {
            proposed: 1,
            accepted: usize::from(accepted),
            ln_accept_sum: if ln_a.is_nan() {
                f64::NEG_INFINITY
            } else {
                ln_a.min(0.0)
            },
        }
    }

    /// Adds another step's counts to this one.
    pub fn absorb(&mut self, other: StepInfo) {
        self.proposed += other.proposed;
        self.accepted += other.accepted;
        self.ln_accept_sum += other.ln_accept_sum;
    }
}

/// One Markov transition on a [`State`].
pub trait Move<K: ConjugateKernel, P: NrmPrior>: Send {
    /// Short name for traces (`gibbs`, `sams`, ...).
    fn name(&self) -> &'static str;

    /// Performs one transition, drawing every discrete decision from `chooser`.
    fn step(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        chooser: &mut dyn Chooser,
    ) -> Result<StepInfo>;

    /// The state this move carries from one step to the next beyond [`State`] (a tree-guided
    /// move's forest, a sub-cluster sampler's sub-labels), for checkpoints; `None` (the
    /// default) for moves whose buffers are scratch. It must be keyed by point indices or
    /// canonical cluster order, never by slots, which a checkpoint renumbers.
    fn save_aux(&self) -> Result<Option<serde_json::Value>> {
        Ok(None)
    }

    /// Offers the move the forest the chain's start partition was read from (an IBHC
    /// initialisation), before its first step. A move that keeps trees as state starts from
    /// them, as the reference tgMCMC code starts from its IBHC forest
    /// ([`TgmcmcPaper`](crate::sampler::tgmcmc::TgmcmcPaper)); the default ignores them.
    fn start_from_forest(&mut self, _forest: &crate::tree::Forest<K>) {}

    /// Takes back what [`Move::save_aux`] wrote, for a chain resumed in `state`: `None` when
    /// the checkpoint holds nothing for this move. The default accepts only `None`, so a
    /// checkpoint of a different schedule is an error rather than a silent restart.
    fn restore_aux(
        &mut self,
        _kernel: &K,
        _state: &State<K, P>,
        aux: Option<serde_json::Value>,
    ) -> Result<()> {
        match aux {
            None => Ok(()),
            Some(_) => Err(crate::error::Error::Usage(format!(
                "checkpoint: it holds a state for move `{}`, which keeps none",
                self.name()
            ))),
        }
    }

    /// Tells the move that the chain's kernel changed hyperparameters (and every cluster's
    /// statistic was refreshed for it) between two steps: what the move keeps across steps
    /// that depends on the kernel must be rebuilt for `kernel`. The default re-derives that
    /// state from point indices, through [`Move::save_aux`] and [`Move::restore_aux`].
    fn kernel_changed(&mut self, kernel: &K, state: &State<K, P>) -> Result<()> {
        let aux = self.save_aux()?;
        self.restore_aux(kernel, state, aux)
    }

    /// Tells the move that the kernel's latent values were redrawn
    /// ([`ConjugateKernel::redraw_latent`]) and every cluster's statistic rebuilt for them,
    /// its hyperparameters unchanged. The default is [`Move::kernel_changed`]; a move that
    /// keeps something that depends on the hyperparameters and the observed data alone may keep
    /// it.
    fn latent_changed(&mut self, kernel: &K, state: &State<K, P>) -> Result<()> {
        self.kernel_changed(kernel, state)
    }
}

/// A Metropolis-Hastings proposal: forward and reverse log proposal probabilities and the log
/// ratio of targets, `ln π(s') - ln π(s)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Proposal {
    /// `ln q(s → s')`.
    pub ln_q_fwd: f64,
    /// `ln q(s' → s)`.
    pub ln_q_rev: f64,
    /// `ln π(s') - ln π(s)`.
    pub ln_target_ratio: f64,
}

impl Proposal {
    /// `ln A = ln π(s') - ln π(s) + ln q(s' → s) - ln q(s → s')`; NaN when a zero-probability
    /// reverse meets a zero-probability forward, which the accept step rejects (MATH P12).
    pub fn ln_accept_ratio(&self) -> f64 {
        self.ln_target_ratio + self.ln_q_rev - self.ln_q_fwd
    }
}

/// The accept step of a proposal whose reverse probability is expensive and at most 1
/// (`ln q(s' → s) ≤ 0`): with `ln A ≤ ln π(s') - ln π(s) - ln q(s → s')` known first, the
/// decision is drawn through [`Chooser::accept_within`], and `ln_q_rev` is computed only
/// when the uniform does not already reject. Decisions and draws are those of
/// [`metropolis_hastings`]; the capped log ratio reported for a proposal rejected without
/// its reverse is the bound's.
///
/// The bound adds 1e-9 to the target ratio before subtracting the forward probability: a
/// reverse probability computed as `ln q ≤ 1e-9` (rounding can lift a log probability of 0
/// above it by a few units in the last place) then keeps the bound an upper bound of the
/// ratio as computed, rounding being monotone. Cost: the bound; the reverse only when needed.
pub fn metropolis_hastings_bounded(
    ln_target_ratio: f64,
    ln_q_fwd: f64,
    ln_q_rev: &mut dyn FnMut() -> Result<f64>,
    chooser: &mut dyn Chooser,
) -> Result<(bool, StepInfo)> {
    let bound = (ln_target_ratio + 1e-9) - ln_q_fwd;
    let (accepted, ln_a) = chooser.accept_within(bound, &mut || {
        let proposal = Proposal {
            ln_q_fwd,
            ln_q_rev: ln_q_rev()?,
            ln_target_ratio,
        };
        Ok(proposal.ln_accept_ratio())
    })?;
    Ok((
        accepted,
        StepInfo::proposal(accepted, ln_a.unwrap_or(bound)),
    ))
}

/// The shared accept step: accepts with probability `min(1, A)` and reports the decision
/// with its capped log ratio.
pub fn metropolis_hastings(proposal: &Proposal, chooser: &mut dyn Chooser) -> (bool, StepInfo) {
    let ln_a = proposal.ln_accept_ratio();
    let accepted = chooser.accept(ln_a);
    (accepted, StepInfo::proposal(accepted, ln_a))
}

/// `ln V(n, k+1) - ln V(n, k)`, what a Gibbs-type prior's target gains with a block added to
/// a partition of `n` points into `k` ([`NrmPrior::ln_new_shift`]); `0` for the NRMs given
/// `u`, whose split-merge ratios are then bit for bit those of the product form.
pub(crate) fn ln_v_gain<P: NrmPrior>(prior: &P, n: usize, k: usize) -> f64 {
    if prior.k_dependent() {
        prior.ln_new_shift(n, k)
    } else {
        0.0
    }
}
