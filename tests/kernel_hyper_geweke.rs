//! Geweke (2004) joint-distribution tests of the kernel-hyperparameter update
//! ([`KernelHyperMove`]) with a Gibbs sweep (MATH §7.2, as in `sampler_geweke`): the whole
//! transition must leave the joint law `p(h, Π, X)` invariant, the kernel's hyperparameters
//! `h` drawn from their hyperpriors.
//!
//! **Models.** `n = 6` points, DP with `α = 1`.
//! * Normal-Wishart, `d = 2`: `ξ = 0`, `Ψ = s Ψ₀` with `Ψ₀ = 3I`, `ν = d + 4` (finite fourth
//!   moments, see `sampler_geweke`), `ln s ~ N(0, 0.5²)`, `ln r ~ N(0, 0.5²)`.
//! * Multinomial-Dirichlet, 8 words, documents of `1 + Poisson(9)` words (lengths are not
//!   modelled, so any law independent of the rest will do), `ln β ~ N(ln 0.5, 0.5²)`.
//!
//! The log-scale standard deviation is 0.5 rather than the default 2, so that the data's
//! scale varies over a factor of a few and the quadratic test functions have finite, stable
//! variances; the move's code is the same for any prior.
//!
//! **Marginal-conditional simulator (MC):** `h` from its prior, `Π ~ CRP(1)`, then
//! `X | Π, h` (one Normal-Wishart draw per block and its points; one Dirichlet word
//! distribution per block and its documents). **Successive-conditional simulator (SC):** from
//! one MC draw, repeat: one Gibbs sweep on the kernel at `h`, one kernel update of `h`, then a
//! fresh `X | Π, h`.
//!
//! **Test functions:** `K`, `1{1~2}`, `ln h_j` for each free `h_j`, `Σ_c ln m(X_c | h)`, and for
//! Normal-Wishart `Σ_c ‖x̄_c‖²` and `1{1~2} ‖x_1 - x_2‖²`. **Statistic and bound** as in
//! `sampler_geweke`: `|z| < 3.5` with the SC variance by batch means. A move whose prior
//! density forgets the Jacobian of the log scale (centres off by `-τ²`) must be flagged.
//!
//! The long version is `#[ignore]`d; run it with
//! `cargo test --release --test integration kernel_hyper_geweke:: -- --ignored --nocapture --test-threads 2`.

use crate::support;

use nrmm::data::generate::NormalWishartSampler;
use nrmm::data::generate::{bag_of_words, gaussian_mixture, partition_crp, DocLengths};
use nrmm::data::{DenseData, SparseCounts};
use nrmm::kernel::{
    ConjugateKernel, HyperKernel, KernelHyperPriors, LogNormalPrior, MultinomialDirichlet,
    NormalWishart, NwHyper,
};
use nrmm::partition::Partition;
use nrmm::prior::{Dp, Prior};
use nrmm::rng::{uniform_open01, NrmmRng, SeedPlan};
use nrmm::sampler::{Gibbs, GibbsScan, KernelHyperMove, Move, RngChooser, State};
use std::sync::Arc;
use support::batch_means_variance;

const N: usize = 6;
const D: usize = 2;
const VOCAB: usize = 8;
const BATCHES: usize = 40;
const Z_MAX: f64 = 3.5;
/// Log-scale standard deviation of every hyperprior here.
const TAU: f64 = 0.5;

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut NrmmRng) -> f64 {
    let (u, v) = (uniform_open01(rng), uniform_open01(rng));
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// The kernels' worlds: how to draw `h` and `X | Π, h`, and what to observe.
trait World {
    type K: HyperKernel + 'static;
    /// The priors of the kernel's hyperparameters.
    fn priors(&self) -> KernelHyperPriors;
    /// `X | Π, h` and the kernel at `h` over it.
    fn draw_kernel(&self, labels: &[usize], h: &[f64], rng: &mut NrmmRng) -> Self::K;
    /// Test functions of the data beyond the common ones.
    fn extra(&self, kernel: &Self::K, partition: &Partition<Self::K>) -> Vec<f64>;
}

struct NwWorld {
    base: NwHyper,
}

impl NwWorld {
    fn new() -> Self {
        NwWorld {
            base: NwHyper::new(vec![0.0; D], vec![3.0, 0.0, 0.0, 3.0], 1.0, D as f64 + 4.0)
                .unwrap(),
        }
    }
}

impl World for NwWorld {
    type K = NormalWishart;

    fn priors(&self) -> KernelHyperPriors {
        KernelHyperPriors {
            priors: vec![
                Some(LogNormalPrior::new(1.0, TAU).unwrap()),
                Some(LogNormalPrior::new(1.0, TAU).unwrap()),
                None,
            ],
        }
    }

    fn draw_kernel(&self, labels: &[usize], h: &[f64], rng: &mut NrmmRng) -> NormalWishart {
        let psi: Vec<f64> = self.base.psi().iter().map(|v| h[0] * v).collect();
        let nw = NormalWishartSampler::new(self.base.xi(), &psi, h[1], h[2]).unwrap();
        let (x, _) = gaussian_mixture(labels, &nw, rng).unwrap();
        NormalWishart::new(Arc::new(x), self.base.clone())
            .unwrap()
            .with_hyper_values(h)
            .unwrap()
    }

    fn extra(&self, kernel: &NormalWishart, partition: &Partition<NormalWishart>) -> Vec<f64> {
        let x: &DenseData = kernel.data();
        let mut mean_sq = 0.0;
        for (_, c) in partition.clusters() {
            let mut mean = [0.0; D];
            for &i in c.members() {
                for (m, v) in mean.iter_mut().zip(x.row(i)) {
                    *m += v / c.size() as f64;
                }
            }
            mean_sq += mean.iter().map(|m| m * m).sum::<f64>();
        }
        let pair = if partition.slot_of(0) == partition.slot_of(1) {
            x.row(0)
                .iter()
                .zip(x.row(1))
                .map(|(a, b)| (a - b).powi(2))
                .sum()
        } else {
            0.0
        };
        vec![mean_sq, pair]
    }
}

struct MdWorld;

impl World for MdWorld {
    type K = MultinomialDirichlet;

    fn priors(&self) -> KernelHyperPriors {
        KernelHyperPriors {
            priors: vec![Some(LogNormalPrior::new(0.5, TAU).unwrap())],
        }
    }

    fn draw_kernel(&self, labels: &[usize], h: &[f64], rng: &mut NrmmRng) -> MultinomialDirichlet {
        let (c, _): (SparseCounts, _) =
            bag_of_words(labels, VOCAB, h[0], DocLengths::Poisson { mean: 10.0 }, rng).unwrap();
        let hyper = nrmm::kernel::DirichletHyper::new(h[0], VOCAB).unwrap();
        MultinomialDirichlet::with_hyper(Arc::new(c), hyper).unwrap()
    }

    fn extra(&self, _: &MultinomialDirichlet, _: &Partition<MultinomialDirichlet>) -> Vec<f64> {
        Vec::new()
    }
}

/// `h` from `priors`, the fixed coordinates at `fixed`.
fn draw_h(priors: &KernelHyperPriors, fixed: &[f64], rng: &mut NrmmRng) -> Vec<f64> {
    priors
        .priors
        .iter()
        .zip(fixed)
        .map(|(p, &f)| match p {
            Some(p) => (p.ln_centre + p.sd * normal(rng)).exp(),
            None => f,
        })
        .collect()
}

/// The test functions of a state.
fn observe<W: World>(world: &W, kernel: &W::K, partition: &Partition<W::K>) -> Vec<f64> {
    let mut out = vec![
        partition.n_clusters() as f64,
        f64::from(u8::from(partition.slot_of(0) == partition.slot_of(1))),
    ];
    let h = kernel.hyper_values();
    for (j, p) in world.priors().priors.iter().enumerate() {
        if p.is_some() {
            out.push(h[j].ln());
        }
    }
    out.push(partition.clusters().map(|(_, c)| c.ln_marginal()).sum());
    out.extend(world.extra(kernel, partition));
    out
}

/// The values of the fixed coordinates (those of a kernel made from the world's base).
fn fixed_values<W: World>(world: &W, rng: &mut NrmmRng) -> Vec<f64> {
    let labels = vec![0; N];
    let placeholder = world
        .priors()
        .priors
        .iter()
        .map(|_| 1.0)
        .collect::<Vec<_>>();
    let mut h = placeholder;
    if h.len() == 3 {
        h[2] = D as f64 + 4.0;
    }
    world.draw_kernel(&labels, &h, rng).hyper_values()
}

fn marginal_conditional<W: World>(world: &W, m: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = SeedPlan::new(seed).chain(0);
    let priors = world.priors();
    let fixed = fixed_values(world, &mut rng);
    (0..m)
        .map(|_| {
            let h = draw_h(&priors, &fixed, &mut rng);
            let labels = partition_crp(N, 1.0, &mut rng).unwrap();
            let kernel = world.draw_kernel(&labels, &h, &mut rng);
            let partition = Partition::from_labels(&kernel, &labels).unwrap();
            observe(world, &kernel, &partition)
        })
        .collect()
}

fn successive_conditional<W: World>(
    world: &W,
    update: &KernelHyperMove,
    m: usize,
    seed: u64,
) -> Vec<Vec<f64>> {
    let mut rng = SeedPlan::new(seed).chain(1);
    let priors = world.priors();
    let fixed = fixed_values(world, &mut rng);
    let h = draw_h(&priors, &fixed, &mut rng);
    let labels = partition_crp(N, 1.0, &mut rng).unwrap();
    let mut kernel = world.draw_kernel(&labels, &h, &mut rng);
    let prior: Prior = Dp::new(1.0).unwrap().into();
    let mut state = State {
        partition: Partition::from_labels(&kernel, &labels).unwrap(),
        prior,
    };
    let mut gibbs = Gibbs::new(GibbsScan::Full).unwrap();
    let mut out = Vec::with_capacity(m);
    for _ in 0..m {
        let mut chooser = RngChooser::new(&mut rng);
        Move::<W::K, Prior>::step(&mut gibbs, &kernel, &mut state, &mut chooser).unwrap();
        let h = update
            .resample(&kernel, &state.partition, &mut rng)
            .unwrap();
        let labels = state.partition.canonical_labels();
        kernel = world.draw_kernel(&labels, &h, &mut rng);
        state.partition = Partition::from_labels(&kernel, &labels).unwrap();
        out.push(observe(world, &kernel, &state.partition));
    }
    out
}

/// z-scores of every test function.
fn z_scores(mc: &[Vec<f64>], sc: &[Vec<f64>]) -> Vec<(f64, f64, f64)> {
    (0..mc[0].len())
        .map(|f| {
            let a: Vec<f64> = mc.iter().map(|g| g[f]).collect();
            let b: Vec<f64> = sc.iter().map(|g| g[f]).collect();
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let (ma, mb) = (mean(&a), mean(&b));
            let var_a = a.iter().map(|v| (v - ma).powi(2)).sum::<f64>() / (a.len() - 1) as f64;
            let var_mean_b = batch_means_variance(&b, BATCHES);
            (
                ma,
                mb,
                (ma - mb) / (var_a / a.len() as f64 + var_mean_b).sqrt(),
            )
        })
        .collect()
}

/// The z-scores of the move with `priors` against the world's own priors, printed.
fn geweke<W: World>(
    world: &W,
    priors: KernelHyperPriors,
    m: usize,
    seed: u64,
    label: &str,
) -> Vec<f64> {
    let update = KernelHyperMove::new(priors).unwrap();
    let mc = marginal_conditional(world, m, seed);
    let sc = successive_conditional(world, &update, m, seed + 1);
    let zs = z_scores(&mc, &sc);
    let mut report = format!("{label}: M = {m}\n");
    for (f, (a, b, z)) in zs.iter().enumerate() {
        report += &format!("  f{f}: MC {a:>10.5}  SC {b:>10.5}  z {z:>7.2}\n");
    }
    print!("{report}");
    zs.into_iter().map(|(_, _, z)| z).collect()
}

fn assert_passes<W: World>(world: &W, m: usize, seed: u64, label: &str) {
    let zs = geweke(world, world.priors(), m, seed, label);
    assert!(
        zs.iter().all(|z| z.abs() < Z_MAX),
        "{label}: |z| >= {Z_MAX} in {zs:?}"
    );
}

/// The move's priors with the Jacobian of the log scale forgotten: centres off by `-τ²`.
fn slipped(priors: KernelHyperPriors) -> KernelHyperPriors {
    KernelHyperPriors {
        priors: priors
            .priors
            .iter()
            .map(|p| {
                p.map(|p| LogNormalPrior {
                    ln_centre: p.ln_centre - p.sd * p.sd,
                    sd: p.sd,
                })
            })
            .collect(),
    }
}

const SHORT: usize = 40_000;
const LONG: usize = 1_000_000;

#[test]
fn nw_kernel_hyper_geweke() {
    assert_passes(&NwWorld::new(), SHORT, 101, "nw");
}

#[test]
fn md_kernel_hyper_geweke() {
    assert_passes(&MdWorld, SHORT, 201, "md");
}

#[test]
fn geweke_detects_a_jacobian_slip() {
    let world = NwWorld::new();
    let zs = geweke(&world, slipped(world.priors()), SHORT, 301, "nw, slipped");
    assert!(
        zs.iter().any(|z| z.abs() >= Z_MAX),
        "the slip went unseen: {zs:?}"
    );
    let zs = geweke(
        &MdWorld,
        slipped(MdWorld.priors()),
        SHORT,
        302,
        "md, slipped",
    );
    assert!(
        zs.iter().any(|z| z.abs() >= Z_MAX),
        "the slip went unseen: {zs:?}"
    );
}

#[test]
#[ignore]
fn long_kernel_hyper_geweke() {
    assert_passes(&NwWorld::new(), LONG, 401, "nw (long)");
    assert_passes(&MdWorld, LONG, 402, "md (long)");
}

/// The kernel update's conditional target at a state is the sum of the clusters' log marginals
/// at the proposed values plus the prior: checked against the kernel rebuilt at those values.
#[test]
fn target_is_the_rebuilt_kernels_joint() {
    let world = NwWorld::new();
    let mut rng = SeedPlan::new(5).chain(0);
    let labels = vec![0, 0, 1, 1, 2, 0];
    let kernel = world.draw_kernel(&labels, &[1.0, 1.0, 6.0], &mut rng);
    let partition = Partition::from_labels(&kernel, &labels).unwrap();
    let update = KernelHyperMove::new(world.priors()).unwrap();
    let h = [2.5, 0.3, 6.0];
    let moved = kernel.with_hyper_values(&h).unwrap();
    let rebuilt = Partition::from_labels(&moved, &labels).unwrap();
    let want: f64 = rebuilt
        .clusters()
        .map(|(_, c)| moved.ln_marginal(c.stat()))
        .sum::<f64>()
        + world.priors().ln_prior(&kernel, &h);
    let got = update.ln_target(&kernel, &partition, &h);
    assert!((got - want).abs() < 1e-10 * want.abs(), "{got} vs {want}");
}
