//! The soft (weighted) statistics of SVA (MATH §6.5): with integer weights they are the
//! kernels' statistics of the repeated points, so their log marginals and predictives equal
//! the kernels' to 1e-10 (property tests for both kernels); merging two soft statistics equals
//! adding all their points, with the prior counted once; fractional weights interpolate
//! (a weight of 1/2 twice is a weight of 1); the Normal-Wishart predictive cache that a pass
//! weighs with gives the soft predictives.

use std::sync::Arc;

use nrmm::data::{DenseData, SparseCounts};
use nrmm::kernel::beta_bernoulli::BetaBernoulli;
use nrmm::kernel::{ConjugateKernel, EntryTerms, MultinomialDirichlet, NormalWishart, NwHyper};
use nrmm::sva::SvaKernel;
use proptest::prelude::*;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0)
}

fn nw_kernel(rows: &[Vec<f64>], r: f64, nu_extra: f64) -> NormalWishart {
    let d = rows[0].len();
    let data = Arc::new(DenseData::from_rows(rows).unwrap());
    let mut psi = vec![0.0; d * d];
    for i in 0..d {
        psi[i * d + i] = 0.5 + i as f64 * 0.25;
        if i > 0 {
            psi[i * d + i - 1] = 0.1;
            psi[(i - 1) * d + i] = 0.1;
        }
    }
    let xi = (0..d).map(|i| 0.3 * i as f64 - 0.2).collect();
    NormalWishart::new(
        data,
        NwHyper::new(xi, psi, r, d as f64 - 1.0 + nu_extra).unwrap(),
    )
    .unwrap()
}

/// The soft statistic of `points` with the given integer multiplicities, and the kernel's
/// statistic of the same multiset.
fn both<K: SvaKernel>(k: &K, mult: &[usize]) -> (K::Soft, K::Stat) {
    let mut soft = k.soft_empty().unwrap();
    let mut list = Vec::new();
    let mut p = k.new_point();
    for (i, &m) in mult.iter().enumerate() {
        if m > 0 {
            k.load_point(i, &mut p);
            k.soft_add(&mut soft, &p, m as f64);
            list.extend(std::iter::repeat_n(i, m));
        }
    }
    (soft, k.stat_of(&list))
}

fn check_against_kernel<K: SvaKernel>(k: &K, mult: &[usize], probe: usize) {
    let (soft, stat) = both(k, mult);
    let (a, b) = (k.soft_ln_marginal(&soft), k.ln_marginal(&stat));
    assert!(close(a, b, 1e-10), "ln m: soft {a} kernel {b}");
    let mut p = k.new_point();
    k.load_point(probe, &mut p);
    let (a, b) = (
        k.soft_ln_predictive(&p, &soft),
        k.ln_predictive(probe, &stat),
    );
    assert!(close(a, b, 1e-10), "ln p: soft {a} kernel {b}");
    assert_eq!(K::soft_weight(&soft), mult.iter().sum::<usize>() as f64);
    // The kernel's predictive cache (the pass weighs with it) holds soft statistics: entry 0
    // weighs `ln_a + soft_ln_predictive`, the new component's entry the prior's.
    if let Some(mut cache) = k.soft_sweep_cache() {
        let prior = k.soft_empty().unwrap();
        cache.reset();
        cache.set_new(&prior, -0.5);
        let terms = EntryTerms {
            join: 0.25,
            member: f64::NAN,
        };
        cache.set(0, Some((&soft, terms)));
        let mut w = Vec::new();
        cache.weigh(probe, &mut w);
        assert_eq!(w.len(), 2);
        assert!(
            close(w[0], 0.25 + a, 1e-10),
            "cache {} soft {}",
            w[0],
            0.25 + a
        );
        let want = -0.5 + k.soft_ln_predictive(&p, &prior);
        assert!(close(w[1], want, 1e-10), "cache {} prior {want}", w[1]);
    }
}

fn check_merge<K: SvaKernel>(k: &K, wa: &[f64], wb: &[f64]) {
    let mut p = k.new_point();
    let (mut a, mut b, mut all) = (
        k.soft_empty().unwrap(),
        k.soft_empty().unwrap(),
        k.soft_empty().unwrap(),
    );
    for (i, (&x, &y)) in wa.iter().zip(wb).enumerate() {
        k.load_point(i, &mut p);
        if x > 0.0 {
            k.soft_add(&mut a, &p, x);
            k.soft_add(&mut all, &p, x);
        }
        if y > 0.0 {
            k.soft_add(&mut b, &p, y);
            k.soft_add(&mut all, &p, y);
        }
    }
    k.soft_merge(&mut a, &b);
    assert!(close(K::soft_weight(&a), K::soft_weight(&all), 1e-12));
    let (x, y) = (k.soft_ln_marginal(&a), k.soft_ln_marginal(&all));
    assert!(close(x, y, 1e-9), "merged ln m {x}, added {y}");
    k.load_point(0, &mut p);
    let (x, y) = (k.soft_ln_predictive(&p, &a), k.soft_ln_predictive(&p, &all));
    assert!(close(x, y, 1e-9), "merged ln p {x}, added {y}");
}

/// The Beta-Bernoulli kernel over `bits` in rows of `d`; a 2 is a missing entry.
fn bb_kernel(bits: &[u8], d: usize, beta: f64) -> BetaBernoulli {
    let entries: Vec<Option<bool>> = bits.iter().map(|&b| (b < 2).then_some(b == 1)).collect();
    BetaBernoulli::with_missing(bits.len() / d, d, &entries, beta).unwrap()
}

fn dense_rows(d: usize, n: usize) -> impl Strategy<Value = Vec<Vec<f64>>> {
    prop::collection::vec(prop::collection::vec(-3.0f64..3.0, d), n)
}

fn docs(vocab: usize, n: usize) -> impl Strategy<Value = Vec<Vec<(u32, u32)>>> {
    prop::collection::vec(
        prop::collection::btree_map(0..vocab as u32, 1u32..25, 1..vocab.min(6))
            .prop_map(|m| m.into_iter().collect::<Vec<_>>()),
        n,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn nw_integer_weights_equal_the_kernel(
        (rows, mult) in (1usize..5).prop_flat_map(|d| (dense_rows(d, 7), prop::collection::vec(0usize..4, 6))),
        r in 0.05f64..3.0,
        nu_extra in 0.5f64..6.0,
    ) {
        let k = nw_kernel(&rows, r, nu_extra);
        check_against_kernel(&k, &mult, 6);
    }

    #[test]
    fn md_integer_weights_equal_the_kernel(
        rows in docs(12, 7),
        mult in prop::collection::vec(0usize..4, 6),
        beta in 0.05f64..2.0,
    ) {
        let k = MultinomialDirichlet::new(Arc::new(SparseCounts::from_rows(12, &rows).unwrap()), beta).unwrap();
        check_against_kernel(&k, &mult, 6);
    }

    #[test]
    fn bb_integer_weights_equal_the_kernel(
        bits in prop::collection::vec(0u8..3, 7 * 4),
        mult in prop::collection::vec(0usize..4, 6),
        beta in 0.05f64..2.0,
    ) {
        check_against_kernel(&bb_kernel(&bits, 4, beta), &mult, 6);
    }

    #[test]
    fn bb_merge_equals_adding_every_point(
        bits in prop::collection::vec(0u8..3, 6 * 3),
        wa in prop::collection::vec(prop_oneof![Just(0.0), 0.01f64..3.0], 6),
        wb in prop::collection::vec(prop_oneof![Just(0.0), 0.01f64..3.0], 6),
    ) {
        check_merge(&bb_kernel(&bits, 3, 0.4), &wa, &wb);
    }

    #[test]
    fn nw_merge_equals_adding_every_point(
        rows in dense_rows(3, 6),
        wa in prop::collection::vec(prop_oneof![Just(0.0), 0.01f64..3.0], 6),
        wb in prop::collection::vec(prop_oneof![Just(0.0), 0.01f64..3.0], 6),
    ) {
        check_merge(&nw_kernel(&rows, 0.3, 2.0), &wa, &wb);
    }

    #[test]
    fn md_merge_equals_adding_every_point(
        rows in docs(15, 6),
        wa in prop::collection::vec(prop_oneof![Just(0.0), 0.01f64..3.0], 6),
        wb in prop::collection::vec(prop_oneof![Just(0.0), 0.01f64..3.0], 6),
    ) {
        let k = MultinomialDirichlet::new(Arc::new(SparseCounts::from_rows(15, &rows).unwrap()), 0.2).unwrap();
        check_merge(&k, &wa, &wb);
    }
}

/// Two half-weight additions of a point are one whole addition, for both kernels.
#[test]
fn half_weights_twice_make_one_point() {
    let rows = vec![vec![0.4, -1.0], vec![2.0, 0.5], vec![-0.3, 0.9]];
    let nw = nw_kernel(&rows, 0.5, 2.0);
    let md = MultinomialDirichlet::new(
        Arc::new(
            SparseCounts::from_rows(
                5,
                &[vec![(0, 2), (3, 1)], vec![(1, 4)], vec![(0, 1), (4, 2)]],
            )
            .unwrap(),
        ),
        0.3,
    )
    .unwrap();
    fn check<K: SvaKernel>(k: &K) {
        let mut p = k.new_point();
        let (mut halves, mut whole) = (k.soft_empty().unwrap(), k.soft_empty().unwrap());
        for i in 0..2 {
            k.load_point(i, &mut p);
            k.soft_add(&mut halves, &p, 0.5);
            k.soft_add(&mut halves, &p, 0.5);
            k.soft_add(&mut whole, &p, 1.0);
        }
        k.load_point(2, &mut p);
        let (a, b) = (
            k.soft_ln_predictive(&p, &halves),
            k.soft_ln_predictive(&p, &whole),
        );
        assert!(close(a, b, 1e-12), "{a} vs {b}");
        let (a, b) = (k.soft_ln_marginal(&halves), k.soft_ln_marginal(&whole));
        // The Normal-Wishart scatter of two half points at one place is zero, as for one point.
        assert!(close(a, b, 1e-12), "{a} vs {b}");
    }
    check(&nw);
    check(&md);
}

/// The empty soft statistic is the prior: its predictive is the kernel's prior predictive and
/// its marginal is 0; the Normal-Wishart posterior reports the prior's parameters.
#[test]
fn empty_soft_statistic_is_the_prior() {
    let rows = vec![vec![0.4, -1.0], vec![2.0, 0.5]];
    let k = nw_kernel(&rows, 0.5, 2.0);
    let s = k.soft_empty().unwrap();
    let mut p = k.new_point();
    k.load_point(1, &mut p);
    let a = k.soft_ln_predictive(&p, &s);
    let b = k.ln_predictive(1, &k.empty_stat());
    assert!(close(a, b, 1e-12), "{a} vs {b}");
    assert_eq!(k.soft_ln_marginal(&s), 0.0);
    let post = k.posterior(&s);
    assert_eq!(post.weight, 0.0);
    assert_eq!(post.r, k.hyper().r());
    assert_eq!(post.nu, k.hyper().nu());
    for (a, b) in post.mean.iter().zip(k.hyper().xi()) {
        assert!(close(*a, *b, 1e-15));
    }
    for (a, b) in post.psi.iter().zip(k.hyper().psi()) {
        assert!(close(*a, *b, 1e-12), "{a} vs {b}");
    }
}

/// The Normal-Wishart posterior of two weighted points matches MATH §2.1 written out with a
/// real count: `r_w = r + w`, `ξ_w = (r ξ + Σ ρ x)/r_w`, `Ψ_w = Ψ + M₂ + (r w/(r+w))(x̄-ξ)(x̄-ξ)ᵀ`.
#[test]
fn nw_posterior_parameters_follow_the_formulas() {
    let rows = vec![vec![1.0, 2.0], vec![-1.0, 0.5]];
    let k = nw_kernel(&rows, 0.5, 2.0);
    let (w0, w1) = (0.7, 2.2);
    let mut s = k.soft_empty().unwrap();
    let mut p = k.new_point();
    k.load_point(0, &mut p);
    k.soft_add(&mut s, &p, w0);
    k.load_point(1, &mut p);
    k.soft_add(&mut s, &p, w1);
    let post = k.posterior(&s);
    let (r, xi, psi) = (k.hyper().r(), k.hyper().xi(), k.hyper().psi());
    let w = w0 + w1;
    assert!(close(post.r, r + w, 1e-15));
    assert!(close(post.nu, k.hyper().nu() + w, 1e-15));
    let mean: Vec<f64> = (0..2)
        .map(|j| (w0 * rows[0][j] + w1 * rows[1][j]) / w)
        .collect();
    for j in 0..2 {
        let expect = (r * xi[j] + w * mean[j]) / (r + w);
        assert!(
            close(post.mean[j], expect, 1e-12),
            "{} vs {expect}",
            post.mean[j]
        );
    }
    for a in 0..2 {
        for b in 0..2 {
            let m2 = w0 * (rows[0][a] - mean[a]) * (rows[0][b] - mean[b])
                + w1 * (rows[1][a] - mean[a]) * (rows[1][b] - mean[b]);
            let expect =
                psi[a * 2 + b] + m2 + r * w / (r + w) * (mean[a] - xi[a]) * (mean[b] - xi[b]);
            assert!(
                close(post.psi[a * 2 + b], expect, 1e-12),
                "{} vs {expect}",
                post.psi[a * 2 + b]
            );
        }
    }
}
