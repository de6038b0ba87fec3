//! Hyperpriors on the kernels' own hyperparameters ([`HyperKernel`], [`KernelHyperMove`],
//! [`Chain::with_kernel_update`]).
//!
//! * **Kernel invariants**, both kernels: `ln_marginal_at` at the kernel's values is its
//!   `ln_marginal`; at other values it is the `ln_marginal` of the kernel rebuilt there; a
//!   refreshed statistic is the rebuilt kernel's statistic; a rebuild depends on the values
//!   only (resume).
//! * **Exact check** (MATH §7.1): chains of Gibbs (alone, and with SAMS, with the exact
//!   sub-cluster sampler and with TG-SAMS, whose tree caches the kernel update drops) with the
//!   kernel update, on 5 points, against the exact posterior with the hyperparameters
//!   integrated out by quadrature ([`hyper_integrated_posterior`]). Bound: the TV of the
//!   pooled visits must be at most twice the TV of independent draws at the chains'
//!   batch-means effective size ([`ExactPosterior::chain_tv`], as in `sampler_tv`). A move
//!   whose prior density forgets the Jacobian of the log scale (its log-normal centre off by
//!   `τ²`) must fail the same bound.
//! * **Checkpoints**: a chain resumed from the JSON of its checkpoints gives the straight
//!   run's records, kernel hyperparameter columns included, also for tgmcmc-paper (whose
//!   trees the kernel update rebuilds; it is not exact, so it has no exact check here).
//!
//! The long exact checks are `#[ignore]`d; run them with
//! `cargo test --release --test integration kernel_hyper:: -- --ignored --nocapture --test-threads 2`.

use crate::support::checkpoint;

use nrmm::data::{DenseData, SparseCounts};
use nrmm::exact::{dp_ln_eppf, hyper_integrated_posterior, ExactPosterior, Rgs};
use nrmm::kernel::{
    ConjugateKernel, HyperKernel, KernelHyperPriors, LogNormalPrior, MultinomialDirichlet,
    NormalWishart, NwHyper,
};
use nrmm::partition::Partition;
use nrmm::prior::{Dp, Prior};
use nrmm::rng::SeedPlan;
use nrmm::run::{Chain, Scheduled};
use nrmm::sampler::{
    Gibbs, GibbsScan, KernelHyperMove, KernelUpdate, Move, Sams, State, SubCluster,
    SubClusterOptions, TgSams, TgmcmcPaper,
};
use std::sync::Arc;

/// Five points in two dimensions: two pairs and a loner.
fn nw_kernel() -> NormalWishart {
    let x = DenseData::from_rows(&[
        vec![0.0, 0.1],
        vec![0.3, -0.2],
        vec![2.0, 1.8],
        vec![2.4, 2.1],
        vec![-1.5, 2.5],
    ])
    .unwrap();
    let hyper = NwHyper::new(vec![0.5, 1.0], vec![1.0, 0.3, 0.3, 0.8], 0.5, 4.0).unwrap();
    NormalWishart::new(Arc::new(x), hyper).unwrap()
}

/// Five documents over six words.
fn md_kernel() -> MultinomialDirichlet {
    let rows = vec![
        vec![(0, 3), (1, 1)],
        vec![(0, 2), (2, 2)],
        vec![(3, 1), (4, 3)],
        vec![(3, 2), (4, 1), (5, 1)],
        vec![(1, 1), (5, 2)],
    ];
    let data = SparseCounts::from_rows(6, &rows).unwrap();
    MultinomialDirichlet::new(Arc::new(data), 0.5).unwrap()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0)
}

fn check_kernel_invariants<K: HyperKernel>(kernel: &K, other: &[f64], what: &str) {
    let groups: [&[usize]; 4] = [&[0], &[0, 1], &[2, 3, 4], &[0, 1, 2, 3, 4]];
    let here = kernel.hyper_values();
    let moved = kernel.with_hyper_values(other).unwrap();
    for g in groups {
        let s = kernel.stat_of(g);
        assert!(
            close(
                kernel.ln_marginal_at(&s, &here),
                kernel.ln_marginal(&s),
                1e-11
            ),
            "{what}: ln_marginal_at at the kernel's values, points {g:?}"
        );
        let fresh = moved.stat_of(g);
        assert!(
            close(
                kernel.ln_marginal_at(&s, other),
                moved.ln_marginal(&fresh),
                1e-11
            ),
            "{what}: ln_marginal_at elsewhere, points {g:?}"
        );
        let mut refreshed = s.clone();
        moved.refresh_stat(&mut refreshed);
        assert!(
            close(
                moved.ln_marginal(&refreshed),
                moved.ln_marginal(&fresh),
                1e-11
            ),
            "{what}: refreshed statistic, points {g:?}"
        );
        for i in 0..kernel.n_points() {
            if !g.contains(&i) {
                assert!(
                    close(
                        moved.ln_predictive(i, &refreshed),
                        moved.ln_predictive(i, &fresh),
                        1e-11
                    ),
                    "{what}: predictive from a refreshed statistic, points {g:?}"
                );
            }
        }
    }
    // A rebuild depends on the values only, not on the path to them.
    let direct = kernel.with_hyper_values(other).unwrap();
    let via = kernel
        .with_hyper_values(&here.iter().map(|v| v * 1.7).collect::<Vec<_>>())
        .unwrap()
        .with_hyper_values(other)
        .unwrap();
    let all: Vec<usize> = (0..kernel.n_points()).collect();
    assert_eq!(
        direct.ln_marginal(&direct.stat_of(&all)).to_bits(),
        via.ln_marginal(&via.stat_of(&all)).to_bits(),
        "{what}: path-independent rebuild"
    );
    assert_eq!(direct.hyper_values(), via.hyper_values());
    assert!(kernel.with_hyper_values(&here[1..]).is_err());
}

#[test]
fn normal_wishart_hyper_invariants() {
    let k = nw_kernel();
    assert_eq!(k.hyper_names(), ["nw_s", "nw_r", "nw_nu"]);
    assert_eq!(k.hyper_values(), vec![1.0, 0.5, 4.0]);
    check_kernel_invariants(&k, &[3.7, 0.05, 2.5], "nw");
    assert!(k.with_hyper_values(&[1.0, 0.5, 0.9]).is_err(), "nu > d - 1");
    assert!(k.with_hyper_values(&[0.0, 0.5, 4.0]).is_err(), "s > 0");
}

#[test]
fn multinomial_dirichlet_hyper_invariants() {
    let k = md_kernel();
    assert_eq!(k.hyper_names(), ["md_beta"]);
    check_kernel_invariants(&k, &[0.03], "md");
    assert!(k.with_hyper_values(&[-1.0]).is_err());
}

/// Quadrature spacing and half-width (prior standard deviations) of the reference.
const SPACING: f64 = 0.2;
const HALF_WIDTH: f64 = 7.0;

/// The DP(α = 1) posterior of `kernel`'s points with `priors` integrated out.
fn reference<K: HyperKernel>(kernel: &K, priors: &KernelHyperPriors) -> ExactPosterior {
    let eppf = dp_ln_eppf(kernel.n_points(), 1.0).unwrap();
    hyper_integrated_posterior(kernel, priors, SPACING, HALF_WIDTH, eppf).unwrap()
}

/// The reference of [`nw_kernel`] under its default hyperpriors, computed once per test
/// binary.
fn nw_reference() -> &'static ExactPosterior {
    static POST: std::sync::OnceLock<ExactPosterior> = std::sync::OnceLock::new();
    POST.get_or_init(|| {
        let k = nw_kernel();
        reference(&k, &KernelHyperPriors::default_for(&k).unwrap())
    })
}

#[test]
fn quadrature_has_converged() {
    let k = nw_kernel();
    let priors = KernelHyperPriors::default_for(&k).unwrap();
    let fine = nw_reference();
    let eppf = dp_ln_eppf(5, 1.0).unwrap();
    let coarse = hyper_integrated_posterior(&k, &priors, 2.0 * SPACING, HALF_WIDTH, eppf).unwrap();
    let tv = fine.tv_distance_to(&coarse).unwrap();
    assert!(tv < 1e-6, "halving the spacing moves the posterior by {tv}");
    // The hyperpriors matter: the posterior is not the one at the fixed default values.
    let fixed = ExactPosterior::dp(&k, 1.0).unwrap();
    assert!(fine.tv_distance_to(&fixed).unwrap() > 0.02);
}

/// Chains of `schedule` with the kernel update `update()` over `kernel`, half started from
/// one cluster and half from singletons; their TV from `post` and its floor.
fn chains_tv<K: ConjugateKernel + 'static>(
    kernel: &K,
    post: &ExactPosterior,
    schedule: &dyn Fn() -> Vec<Scheduled<K, Prior>>,
    update: &dyn Fn() -> Box<dyn KernelUpdate<K>>,
    sweeps: usize,
    seed: u64,
) -> nrmm::exact::ChainTv {
    const CHAINS: usize = 4;
    const BATCHES: usize = 20;
    let plan = SeedPlan::new(seed);
    let prior: Prior = Dp::new(1.0).unwrap().into();
    let chains: Vec<Vec<usize>> = (0..CHAINS)
        .map(|c| {
            let partition = if c % 2 == 0 {
                Partition::single(kernel)
            } else {
                Partition::singletons(kernel)
            };
            let state = State {
                partition,
                prior: prior.clone(),
            };
            let mut chain = Chain::new(kernel, state, plan.chain(c as u64), schedule())
                .with_kernel_update(update());
            for _ in 0..sweeps / 10 {
                chain.sweep().unwrap();
            }
            (0..sweeps)
                .map(|_| {
                    chain.sweep().unwrap();
                    let labels = chain.state().partition.canonical_labels();
                    post.index_of(&Rgs::from_labels(&labels).unwrap()).unwrap()
                })
                .collect()
        })
        .collect();
    post.chain_tv(&chains, BATCHES).unwrap()
}

/// A maker of a fresh schedule.
type ScheduleFn<K> = dyn Fn() -> Vec<Scheduled<K, Prior>>;

fn gibbs<K: ConjugateKernel + 'static>() -> Vec<Scheduled<K, Prior>> {
    vec![Scheduled {
        mv: Box::new(Gibbs::new(GibbsScan::Full).unwrap()),
        repeats: 1,
    }]
}

fn with_gibbs<K: ConjugateKernel + 'static>(
    mv: Box<dyn Move<K, Prior>>,
) -> Vec<Scheduled<K, Prior>> {
    let mut s = vec![Scheduled { mv, repeats: 2 }];
    s.extend(gibbs());
    s
}

/// The move with its default priors.
fn default_update<K: HyperKernel + 'static>(kernel: &K) -> Box<dyn KernelUpdate<K>> {
    Box::new(KernelHyperMove::new(KernelHyperPriors::default_for(kernel).unwrap()).unwrap())
}

fn assert_within_floor(tv: nrmm::exact::ChainTv, what: &str) {
    println!(
        "{what}: TV {:.4}, floor {:.4} (ratio {:.2}), N_eff {:.0}, tau {:.2}",
        tv.tv,
        tv.expected_tv,
        tv.ratio_to_floor(),
        tv.n_eff,
        tv.tau
    );
    assert!(
        tv.tv <= 2.0 * tv.expected_tv,
        "{what}: TV {} above twice its floor {}",
        tv.tv,
        tv.expected_tv
    );
}

fn nw_check(
    schedule: &dyn Fn() -> Vec<Scheduled<NormalWishart, Prior>>,
    what: &str,
    sweeps: usize,
) {
    let k = nw_kernel();
    let tv = chains_tv(
        &k,
        nw_reference(),
        schedule,
        &|| default_update(&k),
        sweeps,
        11,
    );
    assert_within_floor(tv, what);
}

/// Sweeps per chain in CI and in the long runs.
const SHORT: usize = 10_000;
const LONG: usize = 400_000;

#[test]
fn nw_gibbs_with_kernel_hyper_matches_quadrature() {
    nw_check(&gibbs, "nw gibbs", SHORT);
}

#[test]
fn nw_tree_moves_with_kernel_hyper_match_quadrature() {
    nw_check(
        &|| with_gibbs(Box::new(TgSams::new())),
        "nw tg-sams",
        SHORT / 2,
    );
    nw_check(&|| with_gibbs(Box::new(Sams::new())), "nw sams", SHORT / 2);
    nw_check(
        &|| {
            with_gibbs(Box::new(SubCluster::<NormalWishart>::new(
                SubClusterOptions::default(),
            )))
        },
        "nw subcluster",
        SHORT / 2,
    );
}

#[test]
fn nw_with_free_nu_matches_quadrature() {
    let k = nw_kernel();
    let priors = KernelHyperPriors::with_free(&k, |_| true).unwrap();
    let eppf = dp_ln_eppf(5, 1.0).unwrap();
    // Three free coordinates: a coarser grid over a narrower range keeps it to seconds.
    let post = hyper_integrated_posterior(&k, &priors, 0.3, 5.0, eppf).unwrap();
    let update = || -> Box<dyn KernelUpdate<NormalWishart>> {
        Box::new(KernelHyperMove::new(priors.clone()).unwrap())
    };
    let tv = chains_tv(&k, &post, &gibbs, &update, SHORT, 12);
    assert_within_floor(tv, "nw gibbs, s, r and nu free");
}

#[test]
fn md_gibbs_with_kernel_hyper_matches_quadrature() {
    let k = md_kernel();
    let post = reference(&k, &KernelHyperPriors::default_for(&k).unwrap());
    let tv = chains_tv(&k, &post, &gibbs, &|| default_update(&k), SHORT, 13);
    assert_within_floor(tv, "md gibbs");
}

/// The bound has the power to see a wrong target: a prior density that forgets the Jacobian
/// of the log scale (`ln p(h)` used as the density of `ln h`), which moves each log-normal's
/// centre by `-τ²`.
#[test]
fn exact_check_detects_a_jacobian_slip() {
    let k = nw_kernel();
    let right = KernelHyperPriors::default_for(&k).unwrap();
    let post = nw_reference();
    let wrong = KernelHyperPriors {
        priors: right
            .priors
            .iter()
            .map(|p| {
                p.map(|p| LogNormalPrior {
                    ln_centre: p.ln_centre - p.sd * p.sd,
                    sd: p.sd,
                })
            })
            .collect(),
    };
    let update = || -> Box<dyn KernelUpdate<NormalWishart>> {
        Box::new(KernelHyperMove::new(wrong.clone()).unwrap())
    };
    let tv = chains_tv(&k, post, &gibbs, &update, SHORT, 14);
    println!(
        "jacobian slip: TV {:.4}, floor {:.4} (ratio {:.2})",
        tv.tv,
        tv.expected_tv,
        tv.ratio_to_floor()
    );
    assert!(tv.tv > 2.0 * tv.expected_tv, "the slip went unseen");
}

#[test]
#[ignore]
fn long_exact_checks() {
    nw_check(&gibbs, "nw gibbs (long)", LONG);
    nw_check(
        &|| with_gibbs(Box::new(TgSams::new())),
        "nw tg-sams (long)",
        LONG,
    );
    let k = md_kernel();
    let post = reference(&k, &KernelHyperPriors::default_for(&k).unwrap());
    let tv = chains_tv(&k, &post, &gibbs, &|| default_update(&k), LONG, 15);
    assert_within_floor(tv, "md gibbs (long)");
}

/// Chains with the kernel update resume exactly from every checkpoint, for both kernels and
/// for moves that keep state (tgmcmc-paper's trees, TG-SAMS's caches).
#[test]
fn resumes_are_the_straight_run() {
    let prior: Prior = Dp::new(1.0).unwrap().into();
    let nw = checkpoint::nw_kernel();
    let nw_update = || default_update(&nw);
    let schedules: [(&str, &ScheduleFn<NormalWishart>); 3] = [
        ("gibbs", &gibbs),
        ("tg-sams", &|| with_gibbs(Box::new(TgSams::new()))),
        ("tgmcmc-paper", &|| {
            with_gibbs(Box::new(TgmcmcPaper::<NormalWishart>::new(2, 2)))
        }),
    ];
    for (what, schedule) in schedules {
        assert_resumes(&nw, &prior, schedule, &nw_update, what);
    }
    let md = checkpoint::md_kernel();
    assert_resumes(&md, &prior, &gibbs, &|| default_update(&md), "md gibbs");
}

fn assert_resumes<K: ConjugateKernel + 'static>(
    kernel: &K,
    prior: &Prior,
    schedule: &dyn Fn() -> Vec<Scheduled<K, Prior>>,
    update: &dyn Fn() -> Box<dyn KernelUpdate<K>>,
    what: &str,
) {
    let fresh = || State {
        partition: Partition::single(kernel),
        prior: prior.clone(),
    };
    let rng = || SeedPlan::new(21).chain(0);
    let mut straight = Chain::new(kernel, fresh(), rng(), schedule()).with_kernel_update(update());
    let mut hopping = Chain::new(kernel, fresh(), rng(), schedule()).with_kernel_update(update());
    let mut values_moved = false;
    for sweep in 1..=30u64 {
        let a = straight.sweep().unwrap();
        let b = hopping.sweep().unwrap();
        assert_eq!(
            checkpoint::timeless(&a),
            checkpoint::timeless(&b),
            "{what}: sweep {sweep}"
        );
        let columns = a.hyper.columns();
        let names: Vec<&str> = columns.iter().map(|(n, _)| *n).collect();
        assert!(
            names.contains(&kernel_first_name(&straight)),
            "{what}: columns {names:?}"
        );
        values_moved |= columns.iter().any(|&(n, v)| n == "nw_s" && v != 1.0);
        values_moved |= columns.iter().any(|&(n, v)| n == "md_beta" && v != 0.1);
        if sweep % 7 == 0 {
            straight.checkpoint().unwrap();
            let cp = checkpoint::through_json(&hopping.checkpoint().unwrap(), what);
            assert!(
                !cp.kernel_hyper.is_empty(),
                "{what}: the checkpoint holds the values"
            );
            assert!(
                Chain::resume(kernel, cp.clone(), schedule()).is_err(),
                "{what}: resuming without the kernel update is refused"
            );
            hopping = Chain::resume_with(kernel, cp, schedule(), Some(update())).unwrap();
        }
    }
    assert!(values_moved, "{what}: the kernel hyperparameters moved");
}

fn kernel_first_name<K: ConjugateKernel, P: nrmm::prior::NrmPrior>(
    chain: &Chain<'_, K, P>,
) -> &'static str {
    chain.kernel_hyper().expect("a kernel update").names()[0]
}
