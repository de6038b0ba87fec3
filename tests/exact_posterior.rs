//! The exact posterior by enumeration (MATH §7.1) with a Beta-Bernoulli test kernel whose
//! marginals are simple fractions, the DP prior (MATH §1.5) and a flat likelihood.

use nrmm::exact::{dp_ln_eppf, subset_ln_marginals, ExactPosterior, PosteriorSummary, Rgs};
use nrmm::kernel::ConjugateKernel;
use nrmm::math::ln_gamma;

/// Bernoulli observations with a Beta(a, b) prior on the success probability:
/// `m(X_S) = B(a + h, b + t) / B(a, b)` with `h` ones and `t` zeros in `S`.
#[derive(Clone, Debug)]
struct BetaBernoulli {
    x: Vec<bool>,
    a: f64,
    b: f64,
}

#[derive(Clone, Debug, Default)]
struct Counts {
    n: usize,
    ones: usize,
}

fn ln_beta(a: f64, b: f64) -> f64 {
    ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
}

impl BetaBernoulli {
    fn new(bits: &[u8], a: f64, b: f64) -> Self {
        BetaBernoulli {
            x: bits.iter().map(|&v| v == 1).collect(),
            a,
            b,
        }
    }
}

impl ConjugateKernel for BetaBernoulli {
    type Stat = Counts;

    fn n_points(&self) -> usize {
        self.x.len()
    }

    fn empty_stat(&self) -> Counts {
        Counts::default()
    }

    fn count(&self, s: &Counts) -> usize {
        s.n
    }

    fn add(&self, s: &mut Counts, i: usize) {
        s.n += 1;
        s.ones += usize::from(self.x[i]);
    }

    fn remove(&self, s: &mut Counts, i: usize) {
        s.n -= 1;
        s.ones -= usize::from(self.x[i]);
    }

    fn merge(&self, a: &mut Counts, b: &Counts) {
        a.n += b.n;
        a.ones += b.ones;
    }

    fn ln_marginal(&self, s: &Counts) -> f64 {
        let h = s.ones as f64;
        let t = (s.n - s.ones) as f64;
        ln_beta(self.a + h, self.b + t) - ln_beta(self.a, self.b)
    }

    fn ln_marginal_pair(&self, a: &Counts, b: &Counts) -> f64 {
        let mut u = a.clone();
        self.merge(&mut u, b);
        self.ln_marginal(&u)
    }

    fn ln_predictive(&self, i: usize, s: &Counts) -> f64 {
        let mut t = s.clone();
        self.add(&mut t, i);
        self.ln_marginal(&t) - self.ln_marginal(s)
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn three_points_match_the_hand_computation() {
    // x = (1, 1, 0), Beta(1, 1): m(single) = 1/2, m({1,1}) = 1/3, m({1,0}) = 1/6,
    // m({1,1,0}) = 1/12. DP with α = 2: weight α^K Π (n_c - 1)! · Π m, i.e.
    //   000: 2·2·(1/12) = 1/3;  001: 4·(1/3)(1/2) = 2/3;  010: 4·(1/6)(1/2) = 1/3;
    //   011: 1/3;  012: 8·(1/8) = 1.  Sum 8/3, so p = (1/8, 1/4, 1/8, 1/8, 3/8), and
    //   p(X | α) = (8/3) · Γ(2)/Γ(5) = 1/9.
    let kernel = BetaBernoulli::new(&[1, 1, 0], 1.0, 1.0);
    let table = subset_ln_marginals(&kernel).unwrap();
    let expected_m: [f64; 8] = [
        1.0,
        0.5,
        0.5,
        1.0 / 3.0,
        0.5,
        1.0 / 6.0,
        1.0 / 6.0,
        1.0 / 12.0,
    ];
    for (mask, &m) in expected_m.iter().enumerate() {
        assert!(close(table[mask], m.ln(), 1e-14), "mask {mask}");
    }

    let post = ExactPosterior::dp(&kernel, 2.0).unwrap();
    let expected: [f64; 5] = [1.0 / 8.0, 1.0 / 4.0, 1.0 / 8.0, 1.0 / 8.0, 3.0 / 8.0];
    assert_eq!(post.n_partitions(), 5);
    for (k, (&p, &e)) in post.probabilities().iter().zip(&expected).enumerate() {
        assert!(
            close(p, e, 1e-14),
            "partition {}: {p} vs {e}",
            post.rgs_at(k).unwrap()
        );
        assert!(close(post.ln_probabilities()[k], e.ln(), 1e-13));
    }
    assert!(close(post.ln_normaliser(), (1.0f64 / 9.0).ln(), 1e-13));
    assert!(close(
        post.probability(&"010".parse().unwrap()).unwrap(),
        1.0 / 8.0,
        1e-14
    ));

    let pk = post.k_probabilities();
    for (got, want) in pk.iter().zip([0.0, 1.0 / 8.0, 1.0 / 2.0, 3.0 / 8.0]) {
        assert!(close(*got, want, 1e-14));
    }
    assert!(close(post.expected_k(), 1.0 / 8.0 + 1.0 + 9.0 / 8.0, 1e-14));
    let cc = post.co_clustering();
    assert!(close(cc[0][1], 3.0 / 8.0, 1e-14));
    assert!(close(cc[0][2], 1.0 / 4.0, 1e-14));
    assert!(close(cc[1][2], 1.0 / 4.0, 1e-14));

    let top = post.top(2);
    assert_eq!(top[0].0.to_string(), "012");
    assert_eq!(top[1].0.to_string(), "001");
    assert!(close(top[0].1, 3.0 / 8.0, 1e-14) && close(top[1].1, 1.0 / 4.0, 1e-14));
    // Ties keep enumeration order: 000, 010, 011 all have 1/8.
    let all: Vec<String> = post.top(10).iter().map(|(r, _)| r.to_string()).collect();
    assert_eq!(all, ["012", "001", "000", "010", "011"]);

    // The same posterior from a closure that omits the EPPF's constant.
    let ln2 = 2f64.ln();
    let unnormalised = ExactPosterior::new(&kernel, |sizes: &[usize]| {
        sizes.iter().map(|&s| ln2 + ln_gamma(s as f64)).sum()
    })
    .unwrap();
    assert!(close(
        unnormalised.tv_distance_to(&post).unwrap(),
        0.0,
        1e-14
    ));
    assert!(close(
        unnormalised.ln_normaliser(),
        (8.0f64 / 3.0).ln(),
        1e-13
    ));
}

#[test]
fn posterior_and_its_summaries_are_normalised() {
    let kernel = BetaBernoulli::new(&[1, 0, 1, 1, 0, 0, 1, 1], 0.5, 0.5);
    let post = ExactPosterior::dp(&kernel, 0.8).unwrap();
    let n = 8;
    assert_eq!(post.n_partitions(), 4140);
    assert!(close(post.probabilities().iter().sum::<f64>(), 1.0, 1e-12));
    let pk = post.k_probabilities();
    assert_eq!(pk.len(), n + 1);
    assert!(close(pk.iter().sum::<f64>(), 1.0, 1e-12));
    assert_eq!(pk[0], 0.0);
    let ek: f64 = pk.iter().enumerate().map(|(k, p)| k as f64 * p).sum();
    assert!(close(post.expected_k(), ek, 1e-12));
    assert!(close(
        post.block_probabilities().iter().sum::<f64>(),
        ek,
        1e-12
    ));

    let cc = post.co_clustering();
    assert_eq!(cc.len(), n);
    for (i, row) in cc.iter().enumerate() {
        assert!(close(row[i], 1.0, 1e-12), "diagonal {i}");
        for (j, &c) in row.iter().enumerate() {
            assert!(c == cc[j][i], "symmetry ({i}, {j})");
            assert!((0.0..=1.0 + 1e-12).contains(&c));
            let by_expectation = post.expectation(|v| f64::from(u8::from(v.same_block(i, j))));
            assert!(close(c, by_expectation, 1e-12), "({i}, {j})");
        }
    }
    // Points with equal observations are exchangeable: equal co-clustering rows.
    assert!(close(cc[0][2], cc[0][3], 1e-12) && close(cc[1][4], cc[1][5], 1e-12));
    // Like observations cluster together more often than unlike ones.
    assert!(cc[0][2] > cc[0][1]);

    // Lookup by any labelling of the same partition.
    let labels = [9, 4, 9, 9, 4, 4, 9, 9];
    let p = post.probability_of_labels(&labels).unwrap();
    assert_eq!(
        p,
        post.probability_of_labels(&["b", "a", "b", "b", "a", "a", "b", "b"])
            .unwrap()
    );
    assert_eq!(
        p,
        post.probability(&Rgs::new(&[0, 1, 0, 0, 1, 1, 0, 0]).unwrap())
            .unwrap()
    );
    assert!(post.top(1)[0].1 >= p);
    assert!(post.probability_of_labels(&[0, 1]).is_err());
}

/// `p(Π | α) = α^K Γ(α) / Γ(α + n) Π_c (n_c - 1)!` by direct products (Ewens).
fn ewens(rgs: &Rgs, alpha: f64) -> f64 {
    let n = rgs.len();
    let rising: f64 = (0..n).map(|i| alpha + i as f64).product();
    let blocks: f64 = rgs
        .block_sizes()
        .iter()
        .map(|&s| alpha * (1..s).map(|j| j as f64).product::<f64>())
        .product();
    blocks / rising
}

#[test]
fn flat_likelihood_gives_the_ewens_formula() {
    for n in 1..=8 {
        for alpha in [0.3, 1.0, 2.5] {
            let post = ExactPosterior::prior(n, dp_ln_eppf(n, alpha).unwrap()).unwrap();
            assert!(
                close(post.ln_normaliser(), 0.0, 1e-12),
                "n = {n}, α = {alpha}"
            );
            for (k, &p) in post.probabilities().iter().enumerate() {
                let rgs = post.rgs_at(k).unwrap();
                let e = ewens(&rgs, alpha);
                assert!(close(p, e, 1e-13 * e.max(1e-3)), "{rgs}: {p} vs {e}");
            }
            let ek: f64 = (0..n).map(|i| alpha / (alpha + i as f64)).sum();
            assert!(close(post.expected_k(), ek, 1e-12), "n = {n}, α = {alpha}");
        }
    }
    // P(K = k) = |s(n, k)| α^k / α^(n rising): unsigned Stirling numbers of the first kind.
    let alpha = 1.7;
    let post = ExactPosterior::prior(5, dp_ln_eppf(5, alpha).unwrap()).unwrap();
    let rising: f64 = (0..5).map(|i| alpha + i as f64).product();
    for (k, s) in [(1, 24.0), (2, 50.0), (3, 35.0), (4, 10.0), (5, 1.0)] {
        let want = s * alpha.powi(k as i32) / rising;
        assert!(close(post.k_probabilities()[k], want, 1e-13), "k = {k}");
    }
}

#[test]
fn identical_observations_reweight_the_prior_by_block_size_only() {
    // With all observations equal to 1 under Beta(1, 1), m(S) = 1/(|S| + 1) depends on the
    // block size alone: the posterior is the DP prior reweighted by Π_c 1/(n_c + 1).
    let kernel = BetaBernoulli::new(&[1, 1, 1, 1], 1.0, 1.0);
    let post = ExactPosterior::dp(&kernel, 1.0).unwrap();
    let prior = ExactPosterior::prior(4, dp_ln_eppf(4, 1.0).unwrap()).unwrap();
    let weights: Vec<f64> = (0..15)
        .map(|k| {
            let rgs = prior.rgs_at(k).unwrap();
            prior.probabilities()[k]
                * rgs
                    .block_sizes()
                    .iter()
                    .map(|&s| 1.0 / (s as f64 + 1.0))
                    .product::<f64>()
        })
        .collect();
    let total: f64 = weights.iter().sum();
    for (p, w) in post.probabilities().iter().zip(&weights) {
        assert!(close(*p, w / total, 1e-14));
    }
}

#[test]
fn the_prior_closure_sees_every_partition_once_with_sizes_in_block_order() {
    let kernel = BetaBernoulli::new(&[1, 0, 0, 1, 1], 1.0, 1.0);
    let mut seen = Vec::new();
    ExactPosterior::new(&kernel, |sizes: &[usize]| {
        seen.push(sizes.to_vec());
        0.0
    })
    .unwrap();
    let expected: Vec<Vec<usize>> = nrmm::exact::SetPartitions::new(5)
        .unwrap()
        .map(|r| r.block_sizes())
        .collect();
    assert_eq!(seen, expected);
}

#[test]
fn summary_serialises_to_json_and_back() {
    let kernel = BetaBernoulli::new(&[1, 1, 0], 1.0, 1.0);
    let post = ExactPosterior::dp(&kernel, 2.0).unwrap();
    let summary = post.summary(3);
    assert_eq!(summary.n_points, 3);
    assert_eq!(summary.n_partitions, 5);
    assert_eq!(summary.top_partitions.len(), 3);
    assert_eq!(summary.top_partitions[0].rgs, "012");
    assert_eq!(summary.top_partitions[1].blocks, vec![vec![0, 1], vec![2]]);
    assert!(close(
        summary.top_partitions[1].ln_probability,
        0.25f64.ln(),
        1e-13
    ));
    let ks: Vec<usize> = summary.k_probabilities.iter().map(|k| k.k).collect();
    assert_eq!(ks, [1, 2, 3]);
    assert!(close(summary.expected_k, post.expected_k(), 1e-14));
    let json = serde_json::to_string(&summary).unwrap();
    assert!(json.contains("\"rgs\":\"001\""), "{json}");
    // serde_json's default float parsing may differ in the last bit: compare with a tolerance.
    let back: PosteriorSummary = serde_json::from_str(&json).unwrap();
    assert_eq!(back.k_probabilities.len(), summary.k_probabilities.len());
    assert!(close(back.ln_normaliser, summary.ln_normaliser, 1e-14));
    for (b, s) in back.top_partitions.iter().zip(&summary.top_partitions) {
        assert_eq!((&b.rgs, &b.blocks), (&s.rgs, &s.blocks));
        assert!(close(b.probability, s.probability, 1e-15));
        assert!(close(b.ln_probability, s.ln_probability, 1e-14));
    }
}

#[test]
fn bad_inputs_are_errors() {
    let big = BetaBernoulli::new(&[1; 13], 1.0, 1.0);
    let err = ExactPosterior::dp(&big, 1.0).unwrap_err();
    assert!(matches!(err, nrmm::Error::TooLarge(_)), "{err}");
    assert!(err.to_string().contains("at most 12"));
    let small = BetaBernoulli::new(&[1, 0], 1.0, 1.0);
    assert!(ExactPosterior::dp(&small, 0.0).is_err());
    assert!(ExactPosterior::new(&small, |_: &[usize]| f64::NAN).is_err());
    let broken = BetaBernoulli::new(&[1, 0], -1.0, 1.0);
    let err = ExactPosterior::dp(&broken, 1.0).unwrap_err();
    assert!(matches!(err, nrmm::Error::Numerical(_)), "{err}");
}

/// Release-mode timing (MATH §7.1, B_10 = 115,975): run with
/// `cargo test --release --test integration exact_posterior:: -- --ignored --nocapture`.
#[test]
#[ignore]
fn n10_posterior_takes_well_under_a_second() {
    let kernel = BetaBernoulli::new(&[1, 0, 1, 1, 0, 0, 1, 0, 1, 1], 0.5, 0.5);
    let start = std::time::Instant::now();
    let post = ExactPosterior::dp(&kernel, 1.0).unwrap();
    let build = start.elapsed();
    let pk = post.k_probabilities();
    let cc = post.co_clustering();
    let all = start.elapsed();
    println!(
        "n = 10: {} partitions, posterior {:.1} ms, with P(K) and co-clustering {:.1} ms \
         (E[K] = {:.4}, P(0~1) = {:.4})",
        post.n_partitions(),
        build.as_secs_f64() * 1e3,
        all.as_secs_f64() * 1e3,
        pk.iter()
            .enumerate()
            .map(|(k, p)| k as f64 * p)
            .sum::<f64>(),
        cc[0][1]
    );
    assert!(build.as_secs_f64() < 0.25, "{build:?}");

    let kernel12 = BetaBernoulli::new(&[1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1], 0.5, 0.5);
    let start = std::time::Instant::now();
    let post12 = ExactPosterior::dp(&kernel12, 1.0).unwrap();
    println!(
        "n = 12: {} partitions, posterior {:.1} ms",
        post12.n_partitions(),
        start.elapsed().as_secs_f64() * 1e3
    );
}
