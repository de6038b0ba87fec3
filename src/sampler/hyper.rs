//! The hyperparameter move: `u`, `α`, `σ` given the partition (MATH §1.7).

use super::{Chooser, Move, State, StepInfo};
use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;
use crate::prior::NrmPrior;

/// Resamples every hyperparameter the prior does not hold fixed, given the cluster sizes.
/// Continuous: it draws from the chain's stream and cannot be enumerated.
#[derive(Clone, Copy, Debug, Default)]
pub struct HyperMove;

impl<K: ConjugateKernel, P: NrmPrior> Move<K, P> for HyperMove {
    fn name(&self) -> &'static str {
        "hyper"
    }

    fn step(
        &mut self,
        _kernel: &K,
        state: &mut State<K, P>,
        chooser: &mut dyn Chooser,
    ) -> Result<StepInfo> {
        let sizes = state.partition.sizes();
        let rng = chooser.rng().ok_or_else(|| {
            Error::Usage("hyperparameter moves are continuous and cannot be enumerated".into())
        })?;
        state.prior.resample_hyper(&sizes, rng)?;
        Ok(StepInfo::default())
    }
}
