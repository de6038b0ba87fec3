//! Partition priors `p(Π)` with the auxiliary variable `u` and any random hyperparameters
//! integrated out, as the exact posterior by enumeration needs them (MATH §7.1):
//! `p(Π | X) ∝ p(Π) Π_c m(X_c)`.
//!
//! Every model here factorises as `ln p(Π) = T(K) + Σ_c b(n_c)` except those with a random
//! `σ` (NGGP, Pitman-Yor) or the MFM's random `γ`, where the blocks enter inside the
//! hyperparameter's integral. The `K`-dependent factors are quadratures computed once per `K`
//! on first use; the integrals of the others are computed once per distinct multiset of block
//! sizes and memoised. So a table of `n` quadratures plus one quadrature per integer
//! partition of `n` serves all `B_n` set partitions.

use super::dp::Dp;
use super::hyper::{check_positive, BetaPrior, GammaPrior};
use super::mfm::{ln_v_mfm, KPrior, Mfm};
use super::nggp::{ln_v, Nggp};
use super::numeric::{graded_rule, ln_integrate_line, ln_rising};
use super::pitman_yor::PitmanYor;
use super::{block_counts, NrmPrior, Prior};
use crate::error::{Error, Result};
use crate::math::{ln_gamma, log_sum_exp, softplus};
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

/// Gauss–Legendre points per panel of the `σ` rule.
const SIGMA_RULE_POINTS: usize = 16;
/// Widest panel of the `σ` rule (panels near 0 and 1 are narrower still).
const SIGMA_RULE_MAX_WIDTH: f64 = 1.0 / 16.0;
/// Block counts up to this many are sorted on the stack when forming a memo key.
const STACK_KEY: usize = 64;

/// Which partition prior: the model and how its hyperparameters are treated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PartitionPriorSpec {
    /// DP with `α` fixed: `ln p(Π | α) = ln Γ(α) - ln Γ(α+n) + K ln α + Σ_c ln Γ(n_c)`.
    DpFixed {
        /// The mass `α > 0`.
        alpha: f64,
    },
    /// DP with `α ~ Gamma(a, b)` integrated out:
    /// `Σ_c ln Γ(n_c) + ln ∫ p(α) α^K Γ(α)/Γ(α+n) dα`, the integral by the trapezoidal rule on
    /// `ln α` for each `K` (MATH §7.1).
    DpRandomAlpha {
        /// The prior on `α`.
        alpha: GammaPrior,
    },
    /// NGGP with `(α, σ)` fixed and `u` integrated out (the EPPF of MATH §1.4):
    /// `ln V_{n,K} + Σ_c [ln Γ(n_c - σ) - ln Γ(1 - σ)]`.
    NggpFixed {
        /// The mass `α > 0`.
        alpha: f64,
        /// The discount `σ ∈ (0, 1)`.
        sigma: f64,
    },
    /// NGGP with `(α, σ, u)` all fixed: the joint `ln p(Π, u | α, σ)` of MATH §1.2, which as a
    /// function of `Π` is `ln p(Π | u, α, σ)` up to a constant (not normalised over `Π`).
    NggpGivenU {
        /// The mass `α > 0`.
        alpha: f64,
        /// The discount `σ ∈ (0, 1)`.
        sigma: f64,
        /// The auxiliary variable `u > 0`.
        u: f64,
    },
    /// NGGP with `α ~ Gamma(a, b)`, `σ ~` truncated Beta and `u` all integrated out
    /// (MATH §7.1). `α` integrates in closed form; for `b = 1` so does `u`
    /// (`∫ u^{n-1} (1+u)^{-(n + aσ)} du = B(n, aσ)`), leaving a 1-D `σ` integral; otherwise
    /// the `u` integral is done numerically at every `σ` node (a 2-D quadrature).
    NggpRandom {
        /// The prior on `α`.
        alpha: GammaPrior,
        /// The prior on `σ`.
        sigma: BetaPrior,
    },
    /// Pitman-Yor with `(θ, σ)` fixed: `ln Π_{i<K}(θ + iσ) - ln (θ+1)_{n-1}
    /// + Σ_c ln (1-σ)_{n_c-1}`.
    PyFixed {
        /// The concentration `θ > -σ`.
        theta: f64,
        /// The discount `σ ∈ [0, 1)`.
        sigma: f64,
    },
    /// Pitman-Yor with `θ ~ Gamma(a, b)` integrated out and `σ ∈ [0, 1)` fixed:
    /// `ln ∫ p(θ) Π_{i<K}(θ + iσ) / (θ+1)_{n-1} dθ + Σ_c ln (1-σ)_{n_c-1}`, the integral by
    /// the trapezoidal rule on `ln θ` once per `K`.
    PyRandomTheta {
        /// The prior on `θ` (then `θ > 0`).
        theta: GammaPrior,
        /// The discount.
        sigma: f64,
    },
    /// Pitman-Yor with `θ` fixed and `σ ~` truncated Beta integrated out:
    /// `ln ∫ p(σ) V(n, K; θ, σ) Π_c (1-σ)_{n_c-1} dσ`, by the graded Gauss-Legendre rule on
    /// the prior's support (the NGGP's), once per multiset of block sizes.
    PyRandomSigma {
        /// The concentration, above minus the lower end of `σ`'s support.
        theta: f64,
        /// The prior on `σ`.
        sigma: BetaPrior,
    },
    /// Pitman-Yor with `θ ~ Gamma(a, b)` and `σ ~` truncated Beta both integrated out: the
    /// `σ` rule of [`PartitionPriorSpec::PyRandomSigma`] over the `θ` integral of
    /// [`PartitionPriorSpec::PyRandomTheta`] at each of its nodes.
    PyRandom {
        /// The prior on `θ`.
        theta: GammaPrior,
        /// The prior on `σ`.
        sigma: BetaPrior,
    },
    /// MFM with `γ` fixed: `ln V_n(K) + Σ_c ln γ^{(n_c)}` ([`super::mfm::ln_v_mfm`]).
    MfmFixed {
        /// The Dirichlet parameter `γ > 0`.
        gamma: f64,
        /// The prior on the number of components.
        k_prior: KPrior,
    },
    /// MFM with `γ ~ Gamma(a, b)` integrated out:
    /// `ln ∫ p(γ) V_n(K; γ) Π_c γ^{(n_c)} dγ`, by the trapezoidal rule on `ln γ` once per
    /// multiset of block sizes (`γ` enters both `V_n` and every block).
    MfmRandom {
        /// The prior on `γ`.
        gamma: GammaPrior,
        /// The prior on the number of components.
        k_prior: KPrior,
    },
}

impl PartitionPriorSpec {
    /// The partition prior targeted by a sampler running `prior` with its hyperparameter
    /// settings. Supported: DP with `α` fixed or random; NGGP with `u` resampled and `(α, σ)`
    /// both fixed or both random; NGGP with everything fixed; Pitman-Yor with each of `θ` and
    /// `σ` fixed or random; MFM with `γ` fixed or random. Other NGGP combinations are a
    /// [`Error::Usage`] error.
    pub fn from_prior(prior: &Prior) -> Result<Self> {
        match prior {
            Prior::Dp(dp) => Ok(Self::from_dp(dp)),
            Prior::Nggp(nggp) => Self::from_nggp(nggp),
            Prior::PitmanYor(py) => Ok(match (py.hyper().theta, py.hyper().sigma) {
                (None, None) => PartitionPriorSpec::PyFixed {
                    theta: py.theta(),
                    sigma: py.sigma(),
                },
                (Some(theta), None) => PartitionPriorSpec::PyRandomTheta {
                    theta,
                    sigma: py.sigma(),
                },
                (None, Some(sigma)) => PartitionPriorSpec::PyRandomSigma {
                    theta: py.theta(),
                    sigma,
                },
                (Some(theta), Some(sigma)) => PartitionPriorSpec::PyRandom { theta, sigma },
            }),
            Prior::Mfm(m) => Ok(match m.gamma_prior() {
                None => PartitionPriorSpec::MfmFixed {
                    gamma: m.gamma(),
                    k_prior: m.k_prior(),
                },
                Some(&gamma) => PartitionPriorSpec::MfmRandom {
                    gamma,
                    k_prior: m.k_prior(),
                },
            }),
        }
    }

    fn from_dp(dp: &Dp) -> Self {
        match dp.alpha_prior() {
            None => PartitionPriorSpec::DpFixed { alpha: dp.alpha() },
            Some(&alpha) => PartitionPriorSpec::DpRandomAlpha { alpha },
        }
    }

    fn from_nggp(p: &Nggp) -> Result<Self> {
        let h = p.hyper();
        match (h.sample_u, h.alpha, h.sigma) {
            (true, None, None) => Ok(PartitionPriorSpec::NggpFixed {
                alpha: p.alpha(),
                sigma: p.sigma(),
            }),
            (true, Some(alpha), Some(sigma)) => Ok(PartitionPriorSpec::NggpRandom { alpha, sigma }),
            (false, None, None) => Ok(PartitionPriorSpec::NggpGivenU {
                alpha: p.alpha(),
                sigma: p.sigma(),
                u: p.u(),
            }),
            _ => Err(Error::Usage(
                "no exact partition prior for an NGGP with only some of (u, alpha, sigma) \
                 resampled: resample u with alpha and sigma both fixed or both random, or fix all"
                    .into(),
            )),
        }
    }
}

/// The tabulated `σ` rule of [`PartitionPriorSpec::NggpRandom`],
/// [`PartitionPriorSpec::PyRandomSigma`] and [`PartitionPriorSpec::PyRandom`]: every block
/// enters as `ln Γ(n_c - σ) - ln Γ(1 - σ)` at each node, the rest through a per-`K` table.
#[derive(Debug)]
struct SigmaRule {
    nodes: Vec<f64>,
    /// `ln(weight_j) + ln p(σ_j)`.
    ln_w: Vec<f64>,
    /// Per `K`: the node's log weight plus everything of `ln p(Π)` at `σ_j` but the blocks
    /// ([`PartitionPrior::sigma_k_table`]), filled on first use.
    per_k: Vec<OnceLock<Box<[f64]>>>,
}

impl SigmaRule {
    /// The rule on the support of `sigma` for partitions of `n` points, its per-`K` tables
    /// empty. Cost: the Gauss-Legendre nodes, O(points²) per panel.
    fn new(sigma: BetaPrior, n: usize) -> Self {
        let (nodes, ln_weights) = graded_rule(
            sigma.lo(),
            sigma.hi(),
            SIGMA_RULE_POINTS,
            SIGMA_RULE_MAX_WIDTH,
        );
        let ln_w = nodes
            .iter()
            .zip(&ln_weights)
            .map(|(&s, &lw)| lw + sigma.ln_pdf(s))
            .collect();
        SigmaRule {
            nodes,
            ln_w,
            per_k: (0..=n).map(|_| OnceLock::new()).collect(),
        }
    }
}

/// A partition prior for `n` points, with its `K`-dependent factors tabulated on first use:
/// the log weight of a partition is then computed from its block sizes alone.
#[derive(Debug)]
pub struct PartitionPrior {
    spec: PartitionPriorSpec,
    n: usize,
    /// `b(s)` for `s = 0..=n` (index 0 unused), where the prior factorises over blocks.
    block: Vec<f64>,
    /// `T(K)` for `K = 0..=n` (index 0 unused), filled on first use.
    per_k: Vec<OnceLock<f64>>,
    sigma_rule: Option<SigmaRule>,
    /// `ln p(Π)` per multiset of block sizes (sorted descending), for the priors that do not
    /// factorise over blocks (those with a `σ` rule, and the MFM with random `γ`).
    memo: RwLock<HashMap<Vec<u32>, f64>>,
}

impl PartitionPrior {
    /// The prior for partitions of `n ≥ 1` points. Validates the parameters and builds the
    /// per-size tables (O(n) log-gamma calls); the per-`K` quadratures are deferred to first
    /// use.
    pub fn new(spec: PartitionPriorSpec, n: usize) -> Result<Self> {
        if n == 0 {
            return Err(Error::param("n", n, "at least 1 point"));
        }
        let sizes = 1..=n;
        let mut sigma_rule = None;
        let block: Vec<f64> = match spec {
            PartitionPriorSpec::DpFixed { alpha } => {
                check_positive("alpha", alpha)?;
                std::iter::once(0.0)
                    .chain(sizes.map(|s| ln_gamma(s as f64)))
                    .collect()
            }
            PartitionPriorSpec::DpRandomAlpha { .. } => std::iter::once(0.0)
                .chain(sizes.map(|s| ln_gamma(s as f64)))
                .collect(),
            PartitionPriorSpec::NggpFixed { alpha, sigma } => {
                check_positive("alpha", alpha)?;
                check_open_unit("sigma", sigma)?;
                let lg1 = ln_gamma(1.0 - sigma);
                std::iter::once(0.0)
                    .chain(sizes.map(|s| ln_gamma(s as f64 - sigma) - lg1))
                    .collect()
            }
            PartitionPriorSpec::NggpGivenU { alpha, sigma, u } => {
                check_positive("alpha", alpha)?;
                check_open_unit("sigma", sigma)?;
                check_positive("u", u)?;
                let ln_1pu = softplus(u.ln());
                std::iter::once(0.0)
                    .chain(sizes.map(|s| {
                        let m = s as f64 - sigma;
                        ln_gamma(m) - m * ln_1pu
                    }))
                    .collect()
            }
            PartitionPriorSpec::PyFixed { theta, sigma } => {
                PitmanYor::fixed(theta, sigma)?;
                std::iter::once(0.0)
                    .chain(sizes.map(|s| ln_rising(1.0 - sigma, s - 1)))
                    .collect()
            }
            PartitionPriorSpec::MfmFixed { gamma, k_prior } => {
                Mfm::new(gamma, k_prior, None)?;
                std::iter::once(0.0)
                    .chain(sizes.map(|s| ln_rising(gamma, s)))
                    .collect()
            }
            PartitionPriorSpec::PyRandomTheta { sigma, .. } => {
                PitmanYor::fixed(1.0, sigma)?;
                std::iter::once(0.0)
                    .chain(sizes.map(|s| ln_rising(1.0 - sigma, s - 1)))
                    .collect()
            }
            PartitionPriorSpec::MfmRandom { k_prior, .. } => {
                k_prior.check()?;
                Vec::new()
            }
            PartitionPriorSpec::PyRandomSigma { theta, sigma } => {
                // θ must exceed -σ over the whole support of σ.
                PitmanYor::new(
                    theta,
                    sigma.lo(),
                    super::pitman_yor::PyHyperPriors {
                        theta: None,
                        sigma: Some(sigma),
                    },
                )?;
                sigma_rule = Some(SigmaRule::new(sigma, n));
                Vec::new()
            }
            PartitionPriorSpec::NggpRandom { sigma, .. }
            | PartitionPriorSpec::PyRandom { sigma, .. } => {
                sigma_rule = Some(SigmaRule::new(sigma, n));
                Vec::new()
            }
        };
        Ok(PartitionPrior {
            spec,
            n,
            block,
            per_k: (0..=n).map(|_| OnceLock::new()).collect(),
            sigma_rule,
            memo: RwLock::new(HashMap::new()),
        })
    }

    /// The model.
    pub fn spec(&self) -> &PartitionPriorSpec {
        &self.spec
    }

    /// The number of points partitioned.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Whether [`PartitionPrior::ln_weight`] is normalised (sums to 1 over all set partitions
    /// of `n`); true for every spec but [`PartitionPriorSpec::NggpGivenU`].
    pub fn is_normalised(&self) -> bool {
        !matches!(self.spec, PartitionPriorSpec::NggpGivenU { .. })
    }

    /// `ln p(Π)` for the partition with block sizes `sizes` (any order; they must be positive
    /// and sum to `n`). Cost after warm-up: O(K), plus for the priors that do not factorise
    /// over blocks (a random `σ`, the MFM's random `γ`) a sort of the sizes and a hash
    /// lookup; the first call for a given `K` (and, for those priors, a given multiset of
    /// sizes) runs its quadrature.
    pub fn ln_weight(&self, sizes: &[usize]) -> Result<f64> {
        let (n, k) = block_counts(sizes)?;
        if n != self.n {
            return Err(Error::DimensionMismatch(format!(
                "block sizes sum to {n}, but the partition prior is for {} points",
                self.n
            )));
        }
        if let Some(rule) = &self.sigma_rule {
            return self.memoised(sizes, |key| self.sigma_multiset(rule, key));
        }
        if let PartitionPriorSpec::MfmRandom { gamma, k_prior } = self.spec {
            return self.memoised(sizes, |key| ln_mfm_gamma_integral(gamma, &k_prior, key));
        }
        let t = self.k_term(k)?;
        Ok(t + sizes.iter().map(|&s| self.block[s]).sum::<f64>())
    }

    /// `T(K)`, computed on first use.
    fn k_term(&self, k: usize) -> Result<f64> {
        let cell = &self.per_k[k];
        if let Some(&v) = cell.get() {
            return Ok(v);
        }
        let n = self.n;
        let kf = k as f64;
        let v = match self.spec {
            PartitionPriorSpec::DpFixed { alpha } => kf * alpha.ln() - ln_rising(alpha, n),
            PartitionPriorSpec::DpRandomAlpha { alpha } => ln_dp_alpha_integral(alpha, n, k)?,
            PartitionPriorSpec::NggpFixed { alpha, sigma } => ln_v(n, k, alpha, sigma)?,
            PartitionPriorSpec::NggpGivenU { alpha, sigma, u } => {
                let ln_u = u.ln();
                let ln_1pu = softplus(ln_u);
                kf * (alpha.ln() + sigma.ln() - ln_gamma(1.0 - sigma)) + (n as f64 - 1.0) * ln_u
                    - alpha * (sigma * ln_1pu).exp_m1()
                    - ln_gamma(n as f64)
            }
            PartitionPriorSpec::PyFixed { theta, sigma } => {
                let py = PitmanYor::fixed(theta, sigma)?;
                py.ln_joint_const(n) + py.ln_v_k(n, k)
            }
            PartitionPriorSpec::PyRandomTheta { theta, sigma } => {
                ln_py_theta_integral(theta, sigma, n, k)?
            }
            PartitionPriorSpec::MfmFixed { gamma, k_prior } => ln_v_mfm(n, k, gamma, &k_prior),
            PartitionPriorSpec::NggpRandom { .. }
            | PartitionPriorSpec::PyRandomSigma { .. }
            | PartitionPriorSpec::PyRandom { .. }
            | PartitionPriorSpec::MfmRandom { .. } => {
                unreachable!("a prior that does not factorise over blocks has no per-K factor")
            }
        };
        Ok(*cell.get_or_init(|| v))
    }

    /// `ln p(Π)` by `compute` from the block sizes sorted descending, memoised per multiset.
    fn memoised(
        &self,
        sizes: &[usize],
        compute: impl FnOnce(&[u32]) -> Result<f64>,
    ) -> Result<f64> {
        let k = sizes.len();
        let mut stack = [0u32; STACK_KEY];
        let mut heap = Vec::new();
        let key: &mut [u32] = if k <= STACK_KEY {
            &mut stack[..k]
        } else {
            heap.resize(k, 0);
            &mut heap[..]
        };
        for (slot, &s) in key.iter_mut().zip(sizes) {
            *slot = s as u32;
        }
        key.sort_unstable_by(|a, b| b.cmp(a));
        let key: &[u32] = key;
        {
            let memo = self.memo.read().unwrap_or_else(|e| e.into_inner());
            if let Some(&v) = memo.get(key) {
                return Ok(v);
            }
        }
        let v = compute(key)?;
        self.memo
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.to_vec(), v);
        Ok(v)
    }

    /// `ln p(Π)` under a `σ` rule for one multiset of sizes (sorted descending):
    /// `ln Σ_j exp(A_K[j] + Σ_c [ln Γ(n_c - σ_j) - ln Γ(1 - σ_j)])`.
    fn sigma_multiset(&self, rule: &SigmaRule, key: &[u32]) -> Result<f64> {
        let k = key.len();
        let a_k = self.sigma_k_table(rule, k)?;
        let mut terms: Vec<f64> = a_k.to_vec();
        // Singletons contribute Γ(1-σ)/Γ(1-σ) = 1; group the other sizes by multiplicity.
        let mut i = 0;
        while i < k && key[i] > 1 {
            let s = key[i];
            let mut mult = 0usize;
            while i < k && key[i] == s {
                mult += 1;
                i += 1;
            }
            let (sf, mf) = (s as f64, mult as f64);
            for (t, &sigma) in terms.iter_mut().zip(&rule.nodes) {
                *t += mf * (ln_gamma(sf - sigma) - ln_gamma(1.0 - sigma));
            }
        }
        let v = log_sum_exp(&terms);
        if v.is_finite() {
            Ok(v)
        } else {
            Err(Error::Numerical(format!(
                "sigma quadrature of the partition prior gave {v} for sizes {key:?}"
            )))
        }
    }

    /// `A_K[j]`, the `σ_j` node's log weight and prior plus everything of `ln p(Π | σ_j)` but
    /// the blocks, computed on first use: for the NGGP
    /// `ln C_K + K ln σ_j + ln J_K(σ_j)` with `C_K = b^a Γ(a+K) / (Γ(a) Γ(n))` (`α` and `u`
    /// integrated); for Pitman-Yor `ln V(n, K; θ, σ_j)`, or its integral over `θ`.
    fn sigma_k_table<'a>(&self, rule: &'a SigmaRule, k: usize) -> Result<&'a [f64]> {
        let cell = &rule.per_k[k];
        if let Some(v) = cell.get() {
            return Ok(v);
        }
        let (n, kf) = (self.n, k as f64);
        let mut table = Vec::with_capacity(rule.nodes.len());
        for (&sigma, &ln_w) in rule.nodes.iter().zip(&rule.ln_w) {
            let rest = match self.spec {
                PartitionPriorSpec::NggpRandom { alpha, .. } => {
                    let (a, b) = (alpha.shape(), alpha.rate());
                    let ln_c = a * b.ln() + ln_gamma(a + kf) - ln_gamma(a) - ln_gamma(n as f64);
                    ln_c + kf * sigma.ln() + ln_u_integral(n, k, a, b, sigma)?
                }
                PartitionPriorSpec::PyRandomSigma { theta, .. } => {
                    PitmanYor::ln_v_at(theta, sigma, n, k)
                }
                PartitionPriorSpec::PyRandom { theta, .. } => {
                    ln_py_theta_integral(theta, sigma, n, k)?
                }
                _ => unreachable!("a sigma rule exists only for a prior with a random sigma"),
            };
            table.push(ln_w + rest);
        }
        Ok(cell.get_or_init(|| table.into_boxed_slice()))
    }
}

/// `ln ∫ p(θ) V(n, K; θ, σ) dθ` for `θ ~ Gamma(a, b)`, `V(n, K; θ, σ) = Π_{i<K}(θ + iσ) /
/// (θ+1)_{n-1}` the Pitman-Yor prior's `V`, by the trapezoidal rule on `s = ln θ`
/// ([`ln_integrate_line`]). The log-integrand `a s - b e^s + ln V` is written in `s` so that
/// `e^s` may underflow in the left tail, which decays like `e^{a s}` (`e^{(a+K-1) s}` at
/// `σ = 0`). Cost: a few hundred evaluations of O(1) each.
fn ln_py_theta_integral(prior: GammaPrior, sigma: f64, n: usize, k: usize) -> Result<f64> {
    let (a, b) = (prior.shape(), prior.rate());
    let ln_int = ln_integrate_line(
        |s: f64| {
            let theta = s.exp();
            a * s - b * theta + PitmanYor::ln_v_at(theta, sigma, n, k)
        },
        |s: f64| {
            let theta = s.exp();
            (a * s).abs()
                + b * theta
                + PitmanYor::ln_numerator(theta, sigma, k).abs()
                + ln_rising(theta + 1.0, n.saturating_sub(1))
        },
        0.0,
    )?;
    Ok(a * b.ln() - ln_gamma(a) + ln_int)
}

/// `ln ∫ p(γ) V_n(K; γ) Π_c γ^{(n_c)} dγ` for `γ ~ Gamma(a, b)` and the block sizes `key`, by
/// the trapezoidal rule on `s = ln γ` ([`ln_integrate_line`]); `V_n` by
/// [`ln_v_mfm`]. The left tail decays like `e^{(a + K - 1) s}` (`V_n ~ 1/γ` and each block
/// `~ γ` as `γ → 0`), the right tail doubly exponentially. Cost: a few hundred evaluations of
/// one `V_n` series and `K` rising factorials each.
fn ln_mfm_gamma_integral(prior: GammaPrior, k_prior: &KPrior, key: &[u32]) -> Result<f64> {
    let (a, b) = (prior.shape(), prior.rate());
    let n: usize = key.iter().map(|&s| s as usize).sum();
    let k = key.len();
    let blocks = |gamma: f64| -> f64 { key.iter().map(|&s| ln_rising(gamma, s as usize)).sum() };
    let ln_int = ln_integrate_line(
        |s: f64| {
            let gamma = s.exp();
            a * s - b * gamma + ln_v_mfm(n, k, gamma, k_prior) + blocks(gamma)
        },
        |s: f64| {
            let gamma = s.exp();
            (a * s).abs()
                + b * gamma
                + ln_v_mfm(n, k, gamma, k_prior).abs()
                + key
                    .iter()
                    .map(|&m| ln_rising(gamma, m as usize).abs())
                    .sum::<f64>()
        },
        0.0,
    )?;
    Ok(a * b.ln() - ln_gamma(a) + ln_int)
}

/// `ln J_K(σ) = ln ∫_0^∞ u^{n-1} (1+u)^{-(n-Kσ)} (b - 1 + (1+u)^σ)^{-(a+K)} du`.
///
/// For `b = 1` this is `ln B(n, aσ)`. Otherwise, with `z = ln(1+u)` it becomes
/// `∫ (1-e^{-z})^{n-1} e^{-aσ z} (1 + (b-1) e^{-σz})^{-(a+K)} dz`, whose right tail decays only
/// like `e^{-aσ z}`; the further substitution `z = e^v` turns that into a doubly exponential
/// decay (and the left tail into `e^{n v}`), so the trapezoidal rule of MATH §7.1 needs only a
/// few hundred nodes.
fn ln_u_integral(n: usize, k: usize, a: f64, b: f64, sigma: f64) -> Result<f64> {
    if b == 1.0 {
        return Ok(ln_gamma(n as f64) - ln_rising(a * sigma, n));
    }
    ln_u_integral_numeric(n, k, a, b, sigma)
}

/// The quadrature branch of [`ln_u_integral`], valid for every `b > 0`.
fn ln_u_integral_numeric(n: usize, k: usize, a: f64, b: f64, sigma: f64) -> Result<f64> {
    let a_sigma = a * sigma;
    let nm1 = n as f64 - 1.0;
    let shape = a + k as f64;
    let bm1 = b - 1.0;
    // (n-1) ln(1 - e^{-z}), accurate for small and large z; absent for n = 1.
    let ln_one_minus = move |z: f64| {
        if n == 1 {
            0.0
        } else if z < std::f64::consts::LN_2 {
            nm1 * (-(-z).exp_m1()).ln()
        } else {
            nm1 * (-(-z).exp()).ln_1p()
        }
    };
    let tilt = move |z: f64| shape * (bm1 * (-sigma * z).exp()).ln_1p();
    ln_integrate_line(
        |v: f64| {
            let z = v.exp();
            ln_one_minus(z) - a_sigma * z - tilt(z) + v
        },
        |v: f64| {
            let z = v.exp();
            ln_one_minus(z).abs() + a_sigma * z + tilt(z).abs() + v.abs()
        },
        0.0,
    )
}

/// `ln ∫ p(α) α^K Γ(α)/Γ(α+n) dα` for `α ~ Gamma(a, b)`, by the trapezoidal rule on `s = ln α`.
///
/// The log-integrand `(a+K) s - b e^s - ln[Γ(e^s + n)/Γ(e^s)]` is concave. It is evaluated as
/// `(a+K-1) s - b e^s - ln[Γ(1 + e^s + n - 1)/Γ(1 + e^s)]`, so that `e^s` may underflow: for
/// `a + K - 1` small the left tail decays slowly and reaches `s` of order `-10^3`.
fn ln_dp_alpha_integral(prior: GammaPrior, n: usize, k: usize) -> Result<f64> {
    let (a, b) = (prior.shape(), prior.rate());
    let slope = a + k as f64 - 1.0;
    let ln_int = ln_integrate_line(
        |s: f64| {
            let alpha = s.exp();
            slope * s - b * alpha - ln_rising(1.0 + alpha, n - 1)
        },
        |s: f64| {
            let alpha = s.exp();
            (slope * s).abs() + b * alpha + ln_rising(1.0 + alpha, n - 1).abs()
        },
        0.0,
    )?;
    Ok(a * b.ln() - ln_gamma(a) + ln_int)
}

fn check_open_unit(name: &str, x: f64) -> Result<()> {
    if x > 0.0 && x < 1.0 {
        Ok(())
    } else {
        Err(Error::param(name, x, "a number in (0, 1)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_u_integral_matches_the_beta_function_at_b_one() {
        // The 2-D path's inner quadrature, forced at b = 1, against its closed form B(n, aσ).
        for &(n, k, a, sigma) in &[(1, 1, 1.0, 0.5), (6, 3, 2.0, 0.01), (10, 7, 0.5, 0.99)] {
            let closed = ln_u_integral(n, k, a, 1.0, sigma).unwrap();
            let numeric = ln_u_integral_numeric(n, k, a, 1.0, sigma).unwrap();
            assert!(
                (closed - numeric).abs() < 1e-11,
                "n {n}, k {k}, a {a}, sigma {sigma}: {closed} vs {numeric}"
            );
        }
    }
}
