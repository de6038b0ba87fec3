//! The mixture of finite mixtures (MFM; Miller & Harrison 2018, JASA): `K ~ p_K` components,
//! weights `Dirichlet_K(γ, …, γ)`, a Gibbs-type prior on partitions with
//! `p(Π) = V_n(t) Π_c γ^{(n_c)}` for `t` blocks, where `x^{(m)}` is the rising factorial and
//! `V_n(t) = Σ_{K ≥ t} K_{(t)} / (γK)^{(n)} p_K(K)` (`K_{(t)}` the falling factorial).
//!
//! As an [`NrmPrior`]: `κ(n) = γ^{(n)}` (joining a cluster of size `n` weighs `n + γ`, a new
//! cluster `γ`), `V_n(t)` through [`NrmPrior::ln_v_k`] and [`NrmPrior::ln_new_shift`]. The
//! series is summed in log space relative to its first term, with every ratio of successive
//! terms computed from differences of `ln Γ` that keep their digits (so `V_n(t+1)/V_n(t)` is
//! accurate to rounding at `n = 10^7`), and cached per `(n, t)`. `γ` is fixed or has a
//! Gamma prior, resampled by slice sampling its exact conditional given the partition.

use super::hyper::{check_positive, GammaPrior};
use super::numeric::{ln_gamma_ratio, ln_rising};
use super::slice::SliceSampler;
use super::{block_counts, NrmPrior, PriorHyper};
use crate::error::{Error, Result};
use crate::math::{ln_add_exp, ln_gamma};
use crate::rng::NrmmRng;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Slice width on `ln γ`.
pub const GAMMA_SLICE_WIDTH: f64 = 1.0;
/// Stepping-out budget of the slice sampler on `ln γ`.
pub const SLICE_MAX_STEPS: usize = super::nggp::SLICE_MAX_STEPS;
/// How far (in log units) below the running sum the series' remaining terms must provably be
/// before it stops (`e^{-40} ≈ 4e-18`).
const SERIES_DROP: f64 = 40.0;

/// The prior on the number of components `K ≥ 1`, written (in settings and run files) as the
/// text [`KPrior::parse`] reads.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum KPrior {
    /// `K - 1 ~ Poisson(λ)`, `λ > 0` (Miller & Harrison's choice, with `λ = 1`).
    Poisson {
        /// The rate.
        lambda: f64,
    },
    /// `K ~ Geometric(p)` on `{1, 2, …}`: `p (1-p)^{K-1}`, `0 < p < 1`.
    Geometric {
        /// The success probability.
        p: f64,
    },
}

impl KPrior {
    /// Reads `poisson:LAMBDA` or `geometric:P` (the command line's `--k-prior`), checking the
    /// parameter's range; the error says what is expected.
    pub fn parse(text: &str) -> Result<Self> {
        let bad = || {
            Error::param(
                "k_prior",
                text,
                "poisson:LAMBDA (K - 1 ~ Poisson(LAMBDA), LAMBDA > 0) or geometric:P \
                 (P(K) = P (1-P)^(K-1), 0 < P < 1)",
            )
        };
        let (name, value) = text.split_once(':').ok_or_else(bad)?;
        let x: f64 = value.trim().parse().map_err(|_| bad())?;
        let k = match name.trim() {
            "poisson" => KPrior::Poisson { lambda: x },
            "geometric" => KPrior::Geometric { p: x },
            _ => return Err(bad()),
        };
        k.check()?;
        Ok(k)
    }

    /// Errors unless the parameter is in range.
    pub fn check(&self) -> Result<()> {
        match *self {
            KPrior::Poisson { lambda } => check_positive("k_prior poisson rate", lambda),
            KPrior::Geometric { p } => {
                if p > 0.0 && p < 1.0 {
                    Ok(())
                } else {
                    Err(Error::param(
                        "k_prior geometric probability",
                        p,
                        "a number in (0, 1)",
                    ))
                }
            }
        }
    }

    /// `ln p_K(k)` for `k ≥ 1`.
    pub fn ln_pmf(&self, k: usize) -> f64 {
        if k == 0 {
            return f64::NEG_INFINITY;
        }
        let m = (k - 1) as f64;
        match *self {
            KPrior::Poisson { lambda } => m * lambda.ln() - lambda - ln_gamma(k as f64),
            KPrior::Geometric { p } => p.ln() + m * (-p).ln_1p(),
        }
    }

    /// `ln p_K(k+1) - ln p_K(k)` for `k ≥ 1`, non-increasing in `k`.
    fn ln_step(&self, k: usize) -> f64 {
        match *self {
            KPrior::Poisson { lambda } => lambda.ln() - (k as f64).ln(),
            KPrior::Geometric { p } => (-p).ln_1p(),
        }
    }

    /// The text [`KPrior::parse`] reads.
    pub fn text(&self) -> String {
        match *self {
            KPrior::Poisson { lambda } => format!("poisson:{lambda}"),
            KPrior::Geometric { p } => format!("geometric:{p}"),
        }
    }
}

impl TryFrom<String> for KPrior {
    type Error = Error;
    fn try_from(text: String) -> Result<Self> {
        KPrior::parse(&text)
    }
}

impl From<KPrior> for String {
    fn from(k: KPrior) -> String {
        k.text()
    }
}

/// The series [`ln_v_series`] already summed, by `(n, t)`, for one `(γ, p_K)`.
#[derive(Clone, Debug, Default)]
struct VCache(Arc<RwLock<HashMap<(usize, usize), f64>>>);

/// The MFM prior with Dirichlet parameter `γ` and the prior `p_K` on the number of
/// components.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Mfm {
    gamma: f64,
    k_prior: KPrior,
    gamma_prior: Option<GammaPrior>,
    #[serde(skip)]
    cache: VCache,
}

impl PartialEq for Mfm {
    /// Equal laws and values (the cache is not compared).
    fn eq(&self, other: &Self) -> bool {
        self.gamma == other.gamma
            && self.k_prior == other.k_prior
            && self.gamma_prior == other.gamma_prior
    }
}

impl Mfm {
    /// An MFM with `γ > 0` (finite), `p_K` checked, and `γ ~ gamma_prior` when given.
    pub fn new(gamma: f64, k_prior: KPrior, gamma_prior: Option<GammaPrior>) -> Result<Self> {
        k_prior.check()?;
        let mut m = Mfm {
            gamma: 1.0,
            k_prior,
            gamma_prior,
            cache: VCache::default(),
        };
        m.set_gamma(gamma)?;
        Ok(m)
    }

    /// The Dirichlet parameter `γ`.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// The prior on the number of components.
    pub fn k_prior(&self) -> KPrior {
        self.k_prior
    }

    /// The prior on `γ` (`None`: held fixed).
    pub fn gamma_prior(&self) -> Option<&GammaPrior> {
        self.gamma_prior.as_ref()
    }

    /// Sets `γ` (finite, `> 0`), starting a fresh cache of `V_n(t)`.
    pub fn set_gamma(&mut self, gamma: f64) -> Result<()> {
        check_positive("gamma", gamma)?;
        if gamma != self.gamma {
            self.cache = VCache::default();
        }
        self.gamma = gamma;
        Ok(())
    }

    /// [`ln_v_series`] at this `γ`, through the cache. Cost: O(1) when cached, else one
    /// series.
    fn series_cached(&self, n: usize, t: usize) -> f64 {
        if let Some(&v) = self
            .cache
            .0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(n, t))
        {
            return v;
        }
        let v = ln_v_series(n, t, self.gamma, &self.k_prior);
        self.cache
            .0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert((n, t), v);
        v
    }

    /// `ln V_n(t)` at this `γ` ([`ln_v_mfm`], its series cached).
    fn ln_v_cached(&self, n: usize, t: usize) -> f64 {
        ln_v_head(n, t, self.gamma, &self.k_prior) + self.series_cached(n, t)
    }

    /// `ln p(Π | γ) = ln V_n(t) + Σ_c ln γ^{(n_c)}`. Cost: O(K) plus one series.
    pub fn ln_eppf(&self, sizes: &[usize]) -> Result<f64> {
        let (n, k) = block_counts(sizes)?;
        Ok(self.ln_v_cached(n, k) + ln_blocks(self.gamma, sizes))
    }

    /// `P(T_n = t)` for `t = 0..=n` (entry 0 is 0), the prior law of the number of clusters
    /// (Miller & Harrison 2018, §3): `V_n(t) S_γ(n, t)`, where
    /// `S_γ(n, t) = Σ Π_c γ^{(n_c)}` over the partitions of `n` points into `t` blocks, by
    /// its recursion `S(m+1, t) = (m + tγ) S(m, t) + γ S(m, t-1)` in log space. Cost: O(n²)
    /// plus `n` series.
    pub fn k_distribution(&self, n: usize) -> Vec<f64> {
        let mut ln_s = vec![f64::NEG_INFINITY; n + 1];
        if n == 0 {
            return ln_s;
        }
        let g = self.gamma;
        ln_s[1] = g.ln();
        for m in 1..n {
            for t in (1..=(m + 1).min(n)).rev() {
                let join = if t <= m {
                    (m as f64 + t as f64 * g).ln() + ln_s[t]
                } else {
                    f64::NEG_INFINITY
                };
                ln_s[t] = ln_add_exp(join, g.ln() + ln_s[t - 1]);
            }
        }
        (0..=n)
            .map(|t| {
                if t == 0 {
                    0.0
                } else {
                    (self.ln_v_cached(n, t) + ln_s[t]).exp()
                }
            })
            .collect()
    }

    /// `ln p(γ | Π)` in `x = ln γ` up to a constant, Jacobian included.
    fn ln_gamma_conditional(&self, prior: &GammaPrior, x: f64, sizes: &[usize]) -> f64 {
        let g = x.exp();
        if !(g > 0.0 && g.is_finite()) {
            return f64::NEG_INFINITY;
        }
        let n = sizes.iter().sum();
        prior.ln_pdf(g) + x + ln_v_mfm(n, sizes.len(), g, &self.k_prior) + ln_blocks(g, sizes)
    }
}

/// `Σ_c ln γ^{(n_c)}`.
fn ln_blocks(gamma: f64, sizes: &[usize]) -> f64 {
    sizes.iter().map(|&s| ln_rising(gamma, s)).sum()
}

/// `ln (γ(j+1))^{(n)} - ln (γj)^{(n)}`, as two `ln Γ` ratios of step `γ` that keep their
/// digits at any `n`.
fn ln_rising_step(gamma: f64, j: usize, n: usize) -> f64 {
    let x = gamma * j as f64;
    ln_gamma_ratio(x + n as f64, gamma) - ln_gamma_ratio(x, gamma)
}

/// `ln V_n(t) = ln Σ_{K ≥ t} K_{(t)} / (γK)^{(n)} p_K(K)` (Miller & Harrison 2018, eq. 3.2),
/// for `1 ≤ t ≤ n`: [`ln_v_head`] plus [`ln_v_series`], the sum relative to its first term.
/// Cost: one series.
pub fn ln_v_mfm(n: usize, t: usize, gamma: f64, k_prior: &KPrior) -> f64 {
    ln_v_head(n, t, gamma, k_prior) + ln_v_series(n, t, gamma, k_prior)
}

/// The first term of the series of `V_n(t)`, `ln p_K(t) + ln t! - ln (γt)^{(n)}`.
fn ln_v_head(n: usize, t: usize, gamma: f64, k_prior: &KPrior) -> f64 {
    k_prior.ln_pmf(t) + ln_gamma(t as f64 + 1.0) - ln_rising(gamma * t as f64, n)
}

/// `ln Σ_{K ≥ t} e^{b_K}`, the series of `V_n(t)` relative to its first term: `b_t = 0`,
/// `b_{K+1} - b_K = ln[p_K(K+1)/p_K(K)] + ln[(K+1)/(K+1-t)] - ln[(γ(K+1))^{(n)}/(γK)^{(n)}]`,
/// each step from `ln Γ` ratios that keep their digits ([`ln_gamma_ratio`]), so the value is
/// of order one and accurate to rounding at any `n`.
///
/// The ratio of successive terms is at most `ρ(K) = [p_K(K+1)/p_K(K)] (K+1)/(K+1-t)`, which
/// does not increase with `K`; the sum stops once `ρ < 1` and the geometric bound on the
/// rest, `e^{b_K} ρ/(1-ρ)`, is `e^{-40}` below it. Cost: one term per `K` up to there (for
/// `K - 1 ~ Poisson(λ)` about `t + λ + 40` at most; for a geometric `p_K`, at most about
/// `t/p`, fewer when the rising factorials fall faster).
fn ln_v_series(n: usize, t: usize, gamma: f64, k_prior: &KPrior) -> f64 {
    let mut acc = 0.0;
    let mut b = 0.0;
    let mut k = t;
    loop {
        let ln_rho = k_prior.ln_step(k) + ((k + 1) as f64).ln() - ((k + 1 - t) as f64).ln();
        if ln_rho < 0.0 && b + ln_rho - (-ln_rho.exp()).ln_1p() < acc - SERIES_DROP {
            return acc;
        }
        b += ln_rho - ln_rising_step(gamma, k, n);
        acc = ln_add_exp(acc, b);
        k += 1;
    }
}

impl NrmPrior for Mfm {
    /// `ln γ^{(n)}`; `-inf` for `n = 0`.
    fn ln_kappa(&self, n: usize) -> f64 {
        if n == 0 {
            return f64::NEG_INFINITY;
        }
        ln_rising(self.gamma, n)
    }

    /// `ln(n + γ)`.
    fn ln_kappa_join(&self, n: usize) -> f64 {
        (n as f64 + self.gamma).ln()
    }

    /// `ln γ`; the factor `V_n(k+1)/V_n(k)` is [`NrmPrior::ln_new_shift`].
    fn ln_kappa_new(&self) -> f64 {
        self.gamma.ln()
    }

    fn k_dependent(&self) -> bool {
        true
    }

    /// `ln V_n(k)` ([`ln_v_mfm`], cached).
    fn ln_v_k(&self, n: usize, k: usize) -> f64 {
        self.ln_v_cached(n, k)
    }

    /// `ln V_n(k+1) - ln V_n(k)` for `k ≥ 1` (`0` for `k = 0`), as
    /// `ln[p_K(k+1)/p_K(k)] + ln(k+1) - ln[(γ(k+1))^{(n)}/(γk)^{(n)}]` plus the difference of
    /// the two series, every part of order one: accurate to rounding at any `n`.
    fn ln_new_shift(&self, n: usize, k: usize) -> f64 {
        if k == 0 {
            return 0.0;
        }
        self.k_prior.ln_step(k) + ((k + 1) as f64).ln() - ln_rising_step(self.gamma, k, n)
            + self.series_cached(n, k + 1)
            - self.series_cached(n, k)
    }

    /// `0`: all of `V` is in [`NrmPrior::ln_v_k`].
    fn ln_joint_const(&self, _n: usize) -> f64 {
        0.0
    }

    fn joint_label(&self) -> &'static str {
        "ln p(X, partition | gamma)"
    }

    /// Resamples `γ` if it has a prior, by slice sampling `ln γ` from its exact conditional
    /// `p(γ) V_n^γ(t) Π_c γ^{(n_c)}`. Cost: one series and O(K) per density evaluation.
    fn resample_hyper(&mut self, sizes: &[usize], rng: &mut NrmmRng) -> Result<()> {
        block_counts(sizes)?;
        if let Some(prior) = self.gamma_prior {
            let sampler = SliceSampler::new(GAMMA_SLICE_WIDTH, SLICE_MAX_STEPS)?;
            let this = &*self;
            let x = sampler.sample(
                self.gamma.ln(),
                |x| this.ln_gamma_conditional(&prior, x, sizes),
                rng,
            )?;
            self.set_gamma(x.exp())?;
        }
        Ok(())
    }

    fn hyperparameters(&self) -> PriorHyper {
        PriorHyper::Mfm { gamma: self.gamma }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ln V_n(t)` by the plain series, each term from `ln Γ`, for small `n`.
    fn ln_v_plain(n: usize, t: usize, gamma: f64, kp: &KPrior) -> f64 {
        let terms: Vec<f64> = (t..t + 400)
            .map(|k| {
                kp.ln_pmf(k) + ln_gamma(k as f64 + 1.0)
                    - ln_gamma((k - t) as f64 + 1.0)
                    - (ln_gamma(gamma * k as f64 + n as f64) - ln_gamma(gamma * k as f64))
            })
            .collect();
        crate::math::log_sum_exp(&terms)
    }

    #[test]
    fn series_matches_the_plain_sum() {
        for kp in [
            KPrior::Poisson { lambda: 1.0 },
            KPrior::Geometric { p: 0.1 },
        ] {
            for &gamma in &[0.5, 1.0, 3.0] {
                for &(n, t) in &[(1, 1), (5, 1), (5, 3), (12, 12), (40, 7)] {
                    let a = ln_v_mfm(n, t, gamma, &kp);
                    let b = ln_v_plain(n, t, gamma, &kp);
                    assert!(
                        (a - b).abs() < 1e-11,
                        "{kp:?} γ {gamma} n {n} t {t}: {a} vs {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn v_one_one_is_one_over_gamma_and_the_recursion_holds() {
        // V_1(1) = 1/γ (p({1}) = V_1(1) γ = 1), and V_n(t) = (n + γt) V_{n+1}(t) + γ V_{n+1}(t+1) (Miller & Harrison
        // 2018, from p(Π) summing to one over the ways a point is added).
        let kp = KPrior::Poisson { lambda: 2.0 };
        assert!((ln_v_mfm(1, 1, 0.7, &kp) + f64::ln(0.7)).abs() < 1e-13);
        for &(n, t) in &[(3, 2), (10, 4), (1000, 30)] {
            let g = 0.7;
            let lhs = ln_v_mfm(n, t, g, &kp);
            let rhs = ln_add_exp(
                (n as f64 + g * t as f64).ln() + ln_v_mfm(n + 1, t, g, &kp),
                g.ln() + ln_v_mfm(n + 1, t + 1, g, &kp),
            );
            assert!(
                (lhs - rhs).abs() < 1e-11 * lhs.abs().max(1.0),
                "n {n} t {t}"
            );
        }
    }

    #[test]
    fn ratios_keep_their_digits_at_ten_million() {
        // At n = 10^7 each V is about e^{-1.6e8}, yet V_n(t+1)/V_n(t) and V_{n+1}(t)/V_n(t)
        // are of order one: the recursion V_n(t) = (n + γt) V_{n+1}(t) + γ V_{n+1}(t+1) in
        // ratio form holds to rounding.
        for kp in [
            KPrior::Poisson { lambda: 1.0 },
            KPrior::Geometric { p: 0.1 },
        ] {
            let (n, g) = (10_000_000usize, 0.5);
            let m = Mfm::new(g, kp, None).unwrap();
            for t in [1usize, 5, 30] {
                // ln V_{n+1}(t) - ln V_n(t): the heads differ by -ln(γt + n).
                let step = -(g * t as f64 + n as f64).ln() + m.series_cached(n + 1, t)
                    - m.series_cached(n, t);
                let s = ((n as f64 + g * t as f64).ln() + step).exp()
                    + (g.ln() + m.ln_new_shift(n + 1, t) + step).exp();
                assert!((s - 1.0).abs() < 1e-12, "{kp:?} t {t}: {s}");
            }
        }
    }

    #[test]
    fn k_prior_parses_and_refuses() {
        assert_eq!(
            KPrior::parse("poisson:1").unwrap(),
            KPrior::Poisson { lambda: 1.0 }
        );
        assert_eq!(
            KPrior::parse("geometric:0.25").unwrap(),
            KPrior::Geometric { p: 0.25 }
        );
        for bad in [
            "poisson",
            "poisson:-1",
            "geometric:1",
            "binomial:3",
            "poisson:x",
        ] {
            assert!(KPrior::parse(bad).is_err(), "{bad}");
        }
        let kp = KPrior::Geometric { p: 0.3 };
        assert_eq!(KPrior::parse(&kp.text()).unwrap(), kp);
        let json = serde_json::to_string(&kp).unwrap();
        assert_eq!(json, "\"geometric:0.3\"");
        assert_eq!(serde_json::from_str::<KPrior>(&json).unwrap(), kp);
        assert!(serde_json::from_str::<KPrior>("\"geometric:2\"").is_err());
    }
}
