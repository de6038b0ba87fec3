//! The samplers' fast paths against plain implementations of the same algorithms, written
//! here straight from MATH §6.1-§6.3: every point removed before it is weighed, every weight
//! recomputed from the prior and a fresh empty statistic, every group allocation through a
//! removal and an addition.
//!
//! The fast paths (join weights cached per cluster or tabulated per proposal, a point's own
//! cluster weighed in place by the kernel's member predictive, requeued members, cached
//! predictive terms in the statistics, unrolled small-dimension kernels) must not change the
//! chain: driven by the same seed, both implementations make the same draws and visit the same
//! partitions, sweep after sweep, with log joints equal to rounding. The weights of the two
//! agree to about 1e-12, so a draw could only differ if a uniform fell that close to a
//! boundary between two options; with fixed seeds the outcome is deterministic.

use nrmm::data::generate::{
    bag_of_words, gaussian_mixture, partition_crp, toy_like, DocLengths, NormalWishartSampler,
};
use nrmm::data::DenseData;
use nrmm::kernel::{ConjugateKernel, MultinomialDirichlet, NormalWishart, NwHyper};
use nrmm::partition::Partition;
use nrmm::prior::{Dp, Nggp, NrmPrior};
use nrmm::rng::SeedPlan;
use nrmm::sampler::{
    metropolis_hastings, Chooser, Gibbs, GibbsScan, JainNeal, Move, Proposal, RngChooser, Sams,
    State,
};
use nrmm::Result;
use proptest::prelude::*;
use std::sync::Arc;

/// Plain implementations, sharing nothing with the library's moves but the public partition,
/// kernel, prior and chooser interfaces.
mod plain {
    use super::*;

    /// One collapsed Gibbs sweep (MATH §6.1) in the order of a fresh permutation.
    pub fn gibbs<K: ConjugateKernel, P: NrmPrior>(
        k: &K,
        st: &mut State<K, P>,
        ch: &mut dyn Chooser,
    ) -> Result<()> {
        let mut order = Vec::new();
        ch.permutation(st.partition.n(), &mut order);
        for &i in &order {
            st.partition.remove(k, i);
            let slots: Vec<usize> = st.partition.slots().collect();
            let mut ln_w: Vec<f64> = slots
                .iter()
                .map(|&s| {
                    let c = st.partition.cluster(s).unwrap();
                    st.prior.ln_kappa_join(c.size()) + k.ln_predictive(i, c.stat())
                })
                .collect();
            ln_w.push(st.prior.ln_kappa_new() + k.ln_predictive(i, &k.empty_stat()));
            let (pick, _) = ch.choose_log(&ln_w)?;
            match slots.get(pick) {
                Some(&s) => st.partition.insert(k, i, s),
                None => {
                    st.partition.insert_new(k, i);
                }
            }
        }
        Ok(())
    }

    /// Two groups anchored at `i` and `j`.
    struct Groups<S> {
        stats: [S; 2],
        sizes: [usize; 2],
    }

    impl<S> Groups<S> {
        fn anchored<K: ConjugateKernel<Stat = S>>(k: &K, i: usize, j: usize) -> Self {
            Groups {
                stats: [k.stat_of(&[i]), k.stat_of(&[j])],
                sizes: [1, 1],
            }
        }

        fn add<K: ConjugateKernel<Stat = S>>(&mut self, k: &K, x: usize, g: usize) {
            k.add(&mut self.stats[g], x);
            self.sizes[g] += 1;
        }

        fn allocate<K: ConjugateKernel<Stat = S>, P: NrmPrior>(
            &mut self,
            k: &K,
            prior: &P,
            x: usize,
            forced: Option<usize>,
            ch: &mut dyn Chooser,
        ) -> Result<(usize, f64)> {
            let ln_w = [0, 1]
                .map(|g| prior.ln_kappa_join(self.sizes[g]) + k.ln_predictive(x, &self.stats[g]));
            let (g, ln_p) = match forced {
                Some(g) => (g, ln_w[g] - nrmm::math::ln_add_exp(ln_w[0], ln_w[1])),
                None => ch.choose_log(&ln_w)?,
            };
            self.add(k, x, g);
            Ok((g, ln_p))
        }

        fn ln_h<K: ConjugateKernel<Stat = S>, P: NrmPrior>(&self, k: &K, prior: &P) -> f64 {
            (0..2)
                .map(|g| prior.ln_kappa(self.sizes[g]) + k.ln_marginal(&self.stats[g]))
                .sum()
        }
    }

    /// Anchors and the other members of their clusters, in member order.
    fn anchors_and_rest<K: ConjugateKernel, P: NrmPrior>(
        st: &State<K, P>,
        ch: &mut dyn Chooser,
    ) -> (usize, usize, Vec<usize>) {
        let n = st.partition.n();
        let i = ch.choose_uniform(n);
        let mut j = ch.choose_uniform(n - 1);
        if j >= i {
            j += 1;
        }
        let (si, sj) = (st.partition.slot_of(i), st.partition.slot_of(j));
        let mut rest: Vec<usize> = st.partition.cluster(si).unwrap().member_indices().collect();
        rest.retain(|&x| x != i && x != j);
        if si != sj {
            let cj = st.partition.cluster(sj).unwrap();
            rest.extend(cj.member_indices().filter(|&x| x != j));
        }
        (i, j, rest)
    }

    /// Accepts or rejects: a split moves `j` and the rest's group-1 points out of `i`'s
    /// cluster, a merge joins the two clusters.
    fn finish<K: ConjugateKernel, P: NrmPrior>(
        k: &K,
        st: &mut State<K, P>,
        ch: &mut dyn Chooser,
        (i, j): (usize, usize),
        moved: Vec<usize>,
        ln_h_split: f64,
        ln_q: f64,
    ) {
        let (si, sj) = (st.partition.slot_of(i), st.partition.slot_of(j));
        if si == sj {
            let c = st.partition.cluster(si).unwrap();
            let ln_h_c = st.prior.ln_kappa(c.size()) + c.ln_marginal();
            let p = Proposal {
                ln_q_fwd: ln_q,
                ln_q_rev: 0.0,
                ln_target_ratio: ln_h_split - ln_h_c,
            };
            if metropolis_hastings(&p, ch).0 {
                st.partition.split_off(k, si, &moved);
            }
        } else {
            let (ci, cj) = (
                st.partition.cluster(si).unwrap(),
                st.partition.cluster(sj).unwrap(),
            );
            let ln_h_merged =
                st.prior.ln_kappa(ci.size() + cj.size()) + k.ln_marginal_pair(ci.stat(), cj.stat());
            let p = Proposal {
                ln_q_fwd: 0.0,
                ln_q_rev: ln_q,
                ln_target_ratio: ln_h_merged - ln_h_split,
            };
            if metropolis_hastings(&p, ch).0 {
                st.partition.merge_clusters(k, si, sj);
            }
        }
    }

    /// One SAMS proposal (MATH §6.3).
    pub fn sams<K: ConjugateKernel, P: NrmPrior>(
        k: &K,
        st: &mut State<K, P>,
        ch: &mut dyn Chooser,
    ) -> Result<()> {
        let (i, j, rest) = anchors_and_rest(st, ch);
        let sj = st.partition.slot_of(j);
        let split = st.partition.slot_of(i) == sj;
        let mut order = Vec::new();
        ch.permutation(rest.len(), &mut order);
        let mut groups = Groups::anchored(k, i, j);
        let (mut ln_q, mut moved) = (0.0, vec![j]);
        for &t in &order {
            let x = rest[t];
            let forced = (!split).then(|| usize::from(st.partition.slot_of(x) == sj));
            let (g, ln_p) = groups.allocate(k, &st.prior, x, forced, ch)?;
            ln_q += ln_p;
            if g == 1 {
                moved.push(x);
            }
        }
        let ln_h = groups.ln_h(k, &st.prior);
        finish(k, st, ch, (i, j), moved, ln_h, ln_q);
        Ok(())
    }

    /// One Jain-Neal proposal with `scans` launch scans (MATH §6.2).
    pub fn jain_neal<K: ConjugateKernel, P: NrmPrior>(
        k: &K,
        st: &mut State<K, P>,
        scans: usize,
        ch: &mut dyn Chooser,
    ) -> Result<()> {
        let (i, j, rest) = anchors_and_rest(st, ch);
        let sj = st.partition.slot_of(j);
        let split = st.partition.slot_of(i) == sj;
        let mut groups = Groups::anchored(k, i, j);
        let mut group = Vec::new();
        for &x in &rest {
            let g = ch.choose_uniform(2);
            groups.add(k, x, g);
            group.push(g);
        }
        let actual: Vec<usize> = rest
            .iter()
            .map(|&x| usize::from(st.partition.slot_of(x) == sj))
            .collect();
        let mut ln_q = 0.0;
        let mut order = Vec::new();
        for scan in 0..=scans {
            let last = scan == scans;
            ch.permutation(rest.len(), &mut order);
            for &t in &order {
                let x = rest[t];
                k.remove(&mut groups.stats[group[t]], x);
                groups.sizes[group[t]] -= 1;
                let forced = (last && !split).then(|| actual[t]);
                let (g, ln_p) = groups.allocate(k, &st.prior, x, forced, ch)?;
                group[t] = g;
                if last {
                    ln_q += ln_p;
                }
            }
        }
        let moved: Vec<usize> = std::iter::once(j)
            .chain(
                rest.iter()
                    .zip(&group)
                    .filter(|(_, &g)| g == 1)
                    .map(|(&x, _)| x),
            )
            .collect();
        // A merge weighs the two clusters by their cached marginals, a split by the groups.
        let ln_h = if split {
            groups.ln_h(k, &st.prior)
        } else {
            [st.partition.slot_of(i), sj]
                .iter()
                .map(|&s| {
                    let c = st.partition.cluster(s).unwrap();
                    st.prior.ln_kappa(c.size()) + c.ln_marginal()
                })
                .sum()
        };
        finish(k, st, ch, (i, j), moved, ln_h, ln_q);
        Ok(())
    }
}

/// One sweep of a schedule: a Gibbs sweep, then `sams` SAMS proposals, then `jn` Jain-Neal
/// proposals with 3 launch scans.
#[derive(Clone, Copy)]
struct Schedule {
    sams: usize,
    jn: usize,
}

/// Runs `sweeps` sweeps of `schedule` with the library's moves and with the plain ones from
/// the same start and seed; asserts equal partitions after every sweep and equal log joints.
fn assert_same_chain<K: ConjugateKernel, P: NrmPrior>(
    k: &K,
    start: State<K, P>,
    schedule: Schedule,
    sweeps: usize,
    seed: u64,
) {
    let (mut fast, mut slow) = (start.clone(), start);
    let (mut rf, mut rs) = (SeedPlan::new(seed).chain(0), SeedPlan::new(seed).chain(0));
    let mut gibbs = Gibbs::new(GibbsScan::Full).unwrap();
    let mut sams = Sams::new();
    let mut jn = JainNeal::new(3);
    for sweep in 0..sweeps {
        gibbs
            .step(k, &mut fast, &mut RngChooser::new(&mut rf))
            .unwrap();
        plain::gibbs(k, &mut slow, &mut RngChooser::new(&mut rs)).unwrap();
        for _ in 0..schedule.sams {
            sams.step(k, &mut fast, &mut RngChooser::new(&mut rf))
                .unwrap();
            plain::sams(k, &mut slow, &mut RngChooser::new(&mut rs)).unwrap();
        }
        for _ in 0..schedule.jn {
            jn.step(k, &mut fast, &mut RngChooser::new(&mut rf))
                .unwrap();
            plain::jain_neal(k, &mut slow, 3, &mut RngChooser::new(&mut rs)).unwrap();
        }
        assert_eq!(
            fast.partition.canonical_labels(),
            slow.partition.canonical_labels(),
            "sweep {sweep}: the chains parted"
        );
        // Member order is what the split-merge moves read: it must agree too.
        for s in fast.partition.slots() {
            assert_eq!(
                fast.partition.cluster(s).unwrap().members(),
                slow.partition.cluster(s).unwrap().members(),
                "sweep {sweep}: member order of slot {s}"
            );
        }
    }
    let (a, b) = (fast.ln_joint(), slow.ln_joint());
    assert!((a - b).abs() <= 1e-9 * a.abs().max(1.0), "{a} vs {b}");
    fast.partition.validate(k, 1e-8).unwrap();
    assert_eq!(
        rf.get_word_pos(),
        rs.get_word_pos(),
        "random numbers consumed"
    );
}

fn nw_kernel(data: DenseData) -> NormalWishart {
    let hyper = NwHyper::from_data(&data).unwrap();
    NormalWishart::new(Arc::new(data), hyper).unwrap()
}

/// `n` points of a Normal-Wishart mixture in `d` dimensions over a CRP partition.
fn nw_mixture(n: usize, d: usize, alpha: f64, seed: u64) -> NormalWishart {
    let mut rng = SeedPlan::new(seed).chain(0);
    let labels = partition_crp(n, alpha, &mut rng).unwrap();
    let psi: Vec<f64> = (0..d * d)
        .map(|k| if k % (d + 1) == 0 { 1.0 } else { 0.0 })
        .collect();
    let prior = NormalWishartSampler::new(&vec![0.0; d], &psi, 0.05, d as f64 + 4.0).unwrap();
    nw_kernel(gaussian_mixture(&labels, &prior, &mut rng).unwrap().0)
}

#[test]
fn gibbs_on_toy_like_data_makes_the_plain_draws() {
    let k = nw_kernel(toy_like(3).0);
    let start = State {
        partition: Partition::single(&k),
        prior: Dp::new(1.0).unwrap(),
    };
    let only_gibbs = Schedule { sams: 0, jn: 0 };
    assert_same_chain(&k, start, only_gibbs, 40, 11);
}

#[test]
fn mixed_schedule_makes_the_plain_draws_in_six_dimensions() {
    let k = nw_mixture(600, 6, 4.0, 5);
    let start = State {
        partition: Partition::singletons(&k),
        prior: Nggp::fixed(1.5, 0.3, 2.0).unwrap(),
    };
    assert_same_chain(&k, start, Schedule { sams: 30, jn: 5 }, 12, 12);
}

#[test]
fn general_dimension_path_makes_the_plain_draws() {
    // d = 10 is beyond the kernel's unrolled small dimensions.
    let k = nw_mixture(200, 10, 3.0, 6);
    let start = State {
        partition: Partition::single(&k),
        prior: Dp::new(2.0).unwrap(),
    };
    assert_same_chain(&k, start, Schedule { sams: 20, jn: 4 }, 8, 13);
}

#[test]
fn kernels_without_a_member_predictive_make_the_plain_draws() {
    let mut rng = SeedPlan::new(7).chain(0);
    let labels = partition_crp(150, 3.0, &mut rng).unwrap();
    let lengths = DocLengths::Poisson { mean: 30.0 };
    let (counts, _) = bag_of_words(&labels, 40, 0.2, lengths, &mut rng).unwrap();
    let k = MultinomialDirichlet::new(Arc::new(counts), 0.3).unwrap();
    let start = State {
        partition: Partition::single(&k),
        prior: Dp::new(1.0).unwrap(),
    };
    assert_same_chain(&k, start, Schedule { sams: 20, jn: 4 }, 10, 14);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Small random data sets and hyperparameters, any dimension from 1 to 10.
    #[test]
    fn random_models_make_the_plain_draws(
        d in 1usize..=10,
        n in 8usize..30,
        values in prop::collection::vec(-3.0f64..3.0, 300),
        r in 0.05f64..2.0,
        extra_nu in 0.5f64..6.0,
        alpha in 0.3f64..3.0,
        seed in any::<u64>(),
    ) {
        let data = DenseData::new(n, d, values[..n * d].to_vec()).unwrap();
        let psi: Vec<f64> = (0..d * d)
            .map(|k| if k % (d + 1) == 0 { 0.5 } else { 0.0 })
            .collect();
        let hyper = NwHyper::new(vec![0.0; d], psi, r, d as f64 - 1.0 + extra_nu).unwrap();
        let k = NormalWishart::new(Arc::new(data), hyper).unwrap();
        let start = State {
            partition: Partition::singletons(&k),
            prior: Dp::new(alpha).unwrap(),
        };
        assert_same_chain(&k, start, Schedule { sams: 5, jn: 2 }, 4, seed);
    }
}
