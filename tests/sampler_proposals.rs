//! The Metropolis-Hastings ratio a move reports agrees with its own enumerated branches.
//!
//! For every SAMS split proposal from every partition of a tiny data set, the probability of
//! the path up to the accept decision (enumerated by `PathEnumerator`) factors as
//! P(anchors) · P(scan order) · q_fwd, and the log acceptance ratio the move hands to the
//! accept step must equal ln π(s') - ln π(s) - ln q_fwd with π the exact posterior.

use nrmm::data::generate::data_set_b;
use nrmm::exact::{ExactPosterior, Rgs};
use nrmm::kernel::{ConjugateKernel, NormalWishart, NwHyper};
use nrmm::partition::Partition;
use nrmm::prior::{Dp, Nggp, NrmPrior};
use nrmm::rng::NrmmRng;
use nrmm::sampler::{Chooser, Move, PathEnumerator, Sams, State};
use std::sync::Arc;

/// Forwards every choice to a `PathEnumerator` and records what the accept step saw.
struct Recording {
    inner: PathEnumerator,
    at_accept: Option<(f64, f64)>,
}

impl Chooser for Recording {
    fn choose_log(&mut self, ln_w: &[f64]) -> nrmm::Result<(usize, f64)> {
        self.inner.choose_log(ln_w)
    }
    fn choose_uniform(&mut self, n: usize) -> usize {
        self.inner.choose_uniform(n)
    }
    fn accept(&mut self, ln_a: f64) -> bool {
        self.at_accept = Some((self.inner.ln_prob(), ln_a));
        self.inner.accept(ln_a)
    }
    fn rng(&mut self) -> Option<&mut NrmmRng> {
        None
    }
}

fn ln_factorial(m: usize) -> f64 {
    (1..=m).map(|k| (k as f64).ln()).sum()
}

fn check_sams_split_ratios<P: NrmPrior>(kernel: &NormalWishart, prior: &P) {
    let n = kernel.n_points();
    let p = prior.clone();
    let post = ExactPosterior::new(kernel, move |sizes: &[usize]| {
        sizes.iter().map(|&s| p.ln_kappa(s)).sum::<f64>()
    })
    .unwrap();
    let ln_post = |rgs: &Rgs| post.probability(rgs).unwrap().ln();
    let mut checked = 0;
    for rgs in nrmm::exact::SetPartitions::new(n).unwrap() {
        let start = State {
            partition: Partition::from_labels(kernel, rgs.labels()).unwrap(),
            prior: prior.clone(),
        };
        let before = start.partition.n_clusters();
        let mut rec = Recording {
            inner: PathEnumerator::new(),
            at_accept: None,
        };
        while rec.inner.next_path() {
            rec.at_accept = None;
            let mut state = start.clone();
            let mut sams = Sams::new();
            sams.step(kernel, &mut state, &mut rec).unwrap();
            let after = state.partition.n_clusters();
            // Accepted splits only: the end state is the proposal.
            if after != before + 1 {
                continue;
            }
            let (ln_path, ln_a) = rec
                .at_accept
                .expect("a split proposal reaches the accept step");
            // Size of the split cluster: the two new clusters' sizes sum to it.
            let labels = state.partition.canonical_labels();
            let split_size = {
                let old = rgs.labels();
                // The cluster that changed is the one whose members now carry two labels.
                let mut size = 0;
                for block in 0..before {
                    let members: Vec<usize> =
                        (0..n).filter(|&i| old[i] as usize == block).collect();
                    let first = labels[members[0]];
                    if members.iter().any(|&i| labels[i] != first) {
                        size = members.len();
                    }
                }
                size
            };
            let ln_anchors = -((n * (n - 1)) as f64).ln();
            let ln_order = -ln_factorial(split_size - 2);
            let ln_q_fwd = ln_path - ln_anchors - ln_order;
            let expected = ln_post(&Rgs::from_labels(&labels).unwrap()) - ln_post(&rgs) - ln_q_fwd;
            assert!(
                (ln_a - expected).abs() < 1e-9,
                "from {rgs}: reported ln A {ln_a}, enumeration gives {expected}"
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} split paths checked");
}

#[test]
fn sams_split_ratio_matches_enumeration() {
    let rows: Vec<Vec<f64>> = (0..5).map(|i| data_set_b().row(i).to_vec()).collect();
    let data = nrmm::data::DenseData::from_rows(&rows).unwrap();
    let hyper = NwHyper::from_data(&data).unwrap();
    let kernel = NormalWishart::new(Arc::new(data), hyper).unwrap();
    check_sams_split_ratios(&kernel, &Dp::new(0.7).unwrap());
    check_sams_split_ratios(&kernel, &Nggp::fixed(2.0, 0.3, 1.5).unwrap());
}
