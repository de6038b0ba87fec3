//! Collapsed Gibbs sampling, Neal (2000) Algorithm 3 generalised to NRMs given `u`
//! (MATH §1.3, §6.1).

use super::{Chooser, Move, State, StepInfo};
use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;
use crate::prior::NrmPrior;

/// Which points one Gibbs step visits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GibbsScan {
    /// Every point, in a fresh uniformly random order each step.
    Full,
    /// A uniformly random subset of this many points, in random order (the paper's
    /// `Gibbs_sub`).
    Subset(usize),
}

/// The collapsed Gibbs move: each visited point is removed and reassigned to an existing
/// cluster `c` with weight `κ(n_c+1)/κ(n_c) · p(x_i | X_c)` or to a new cluster with weight
/// `κ(1) · m(x_i)` (MATH §1.3).
///
/// The visiting order is a uniform random permutation drawn through the chooser, independent
/// of the state, which keeps the composition of single-site updates invariant (MATH §5.2 E4).
/// Cost per visited point: O(K) predictive evaluations, O(K d²) for Normal-Wishart with
/// cached factors.
#[derive(Clone, Debug)]
pub struct Gibbs {
    scan: GibbsScan,
    order: Vec<usize>,
    slots: Vec<usize>,
    ln_w: Vec<f64>,
}

impl Gibbs {
    /// A Gibbs move with the given scan.
    pub fn new(scan: GibbsScan) -> Result<Self> {
        if scan == GibbsScan::Subset(0) {
            return Err(Error::param("Gibbs subset size", 0, "at least 1"));
        }
        Ok(Gibbs {
            scan,
            order: Vec::new(),
            slots: Vec::new(),
            ln_w: Vec::new(),
        })
    }

    /// Reassigns point `i` from its conditional given all other points.
    fn update_point<K: ConjugateKernel, P: NrmPrior>(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        i: usize,
        chooser: &mut dyn Chooser,
    ) -> Result<()> {
        let part = &mut state.partition;
        part.remove(kernel, i);
        self.slots.clear();
        self.ln_w.clear();
        for s in part.slots() {
            let c = part.cluster(s).expect("live slot");
            self.slots.push(s);
            self.ln_w
                .push(state.prior.ln_kappa_join(c.size()) + kernel.ln_predictive(i, c.stat()));
        }
        self.ln_w
            .push(state.prior.ln_kappa_new() + kernel.ln_predictive(i, &kernel.empty_stat()));
        let (pick, _) = chooser.choose_log(&self.ln_w)?;
        match self.slots.get(pick) {
            Some(&s) => part.insert(kernel, i, s),
            None => {
                part.insert_new(kernel, i);
            }
        }
        Ok(())
    }
}

impl<K: ConjugateKernel, P: NrmPrior> Move<K, P> for Gibbs {
    fn name(&self) -> &'static str {
        match self.scan {
            GibbsScan::Full => "gibbs",
            GibbsScan::Subset(_) => "gibbs-sub",
        }
    }

    fn step(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        chooser: &mut dyn Chooser,
    ) -> Result<StepInfo> {
        let n = state.partition.n();
        let mut order = std::mem::take(&mut self.order);
        match self.scan {
            GibbsScan::Full => chooser.permutation(n, &mut order),
            GibbsScan::Subset(m) => {
                // A partial Fisher-Yates shuffle: the first m entries are a uniform random
                // ordered subset.
                let m = m.min(n);
                order.clear();
                order.extend(0..n);
                for t in 0..m {
                    let j = t + chooser.choose_uniform(n - t);
                    order.swap(t, j);
                }
                order.truncate(m);
            }
        }
        let result = order
            .iter()
            .try_for_each(|&i| self.update_point(kernel, state, i, chooser));
        self.order = order;
        result.map(|()| StepInfo::default())
    }
}
