//! The one interface through which moves make discrete random choices.
//!
//! A move never touches the RNG for a discrete decision; it asks a [`Chooser`]. Driven by
//! [`RngChooser`], choices are draws from the chain's stream. Driven by [`PathEnumerator`],
//! the same move code is replayed along every branch of its decision tree, each run reporting
//! the probability of the path it took, which yields the move's exact one-step transition
//! distribution (MATH §7.1, "Kernel-level exact check"). This is how reversibility and
//! invariance are proven in tests rather than hoped for.
//!
//! The module sits below both the samplers and the tree engine, which make their choices
//! through it (`nrmm::sampler` re-exports its types for the moves' implementors).

mod wide_draw;

use crate::error::{Error, Result};
use crate::math::log_sum_exp;
use crate::rng::{uniform_index, uniform_open01, NrmmRng};
use wide_draw::draw_log_weights;
pub(crate) use wide_draw::{BlockDraws, POINTS};

/// Source of the discrete random decisions of a move.
pub trait Chooser {
    /// Chooses an index with probability proportional to `exp(ln_w[i])`; returns the index and
    /// its log probability. Errors when no weight is positive or a weight is NaN.
    fn choose_log(&mut self, ln_w: &[f64]) -> Result<(usize, f64)>;

    /// [`Chooser::choose_log`] for a long vector of weights in a sampler's inner loop (one
    /// per cluster, `-∞` for entries that are no option): the same distribution and errors.
    /// [`RngChooser`] draws it in vectors with branch-free exponentials
    /// (`wide_draw`), making the same choice at every [`crate::simd::Level`]; the
    /// default calls `choose_log`, so an enumeration sees the same decision tree.
    fn choose_log_wide(&mut self, ln_w: &[f64]) -> Result<(usize, f64)> {
        self.choose_log(ln_w)
    }

    /// The open uniform of the next [`Chooser::choose_log_wide`], for a sampler that
    /// prepared its weights' draw ahead (a Gibbs sweep working over blocks of points) and
    /// finishes it from the uniform at the point in its order where `choose_log_wide` would
    /// be called: the same choice from the same stream position. `None` (the default) when
    /// the chooser's wide draw is not that draw from one uniform; the sampler then calls
    /// `choose_log_wide`, so an enumeration sees the same decision tree.
    fn wide_uniform(&mut self) -> Option<f64> {
        None
    }

    /// Chooses an index with probability proportional to the linear weight `w[i] ≥ 0`;
    /// returns the index and its log probability. Errors when a weight is negative, NaN or
    /// infinite, or none is positive. Use it when the weights are at hand in linear scale
    /// (a sampler then needs no exponentials). The default goes through
    /// [`Chooser::choose_log`] (one logarithm per weight and an allocation).
    fn choose_weights(&mut self, w: &[f64]) -> Result<(usize, f64)> {
        check_linear(w)?;
        let ln_w: Vec<f64> = w.iter().map(|&x| x.ln()).collect();
        self.choose_log(&ln_w)
    }

    /// [`Chooser::choose_weights`] given also the running sums `prefix[i] = w[0] + … + w[i]`,
    /// added left to right (as `choose_weights` adds them), for a caller that draws
    /// repeatedly from the same weights and keeps their sums: the same draw and probability
    /// as `choose_weights(w)`, found by bisection. `prefix` must be the running sums of `w`,
    /// and `w` must meet `choose_weights`'s conditions, which the caller checked when it
    /// made the sums. The default calls `choose_weights(w)`. Cost: O(log n) for
    /// [`RngChooser`].
    fn choose_prefix(&mut self, w: &[f64], prefix: &[f64]) -> Result<(usize, f64)> {
        debug_assert_eq!(w.len(), prefix.len());
        self.choose_weights(w)
    }

    /// Chooses uniformly among `n > 0` options.
    fn choose_uniform(&mut self, n: usize) -> usize;

    /// The Metropolis-Hastings decision: true with probability `min(1, exp(ln_a))`; a NaN
    /// ratio rejects (MATH P12).
    fn accept(&mut self, ln_a: f64) -> bool;

    /// [`Chooser::accept`] of a log ratio that is known, before it is computed, to be at most
    /// `bound`: returns the decision and the ratio, or `None` for the ratio when the decision
    /// was made without it. `ln_a` computes the ratio; it must make no choice.
    ///
    /// The default computes the ratio and calls `accept`, so an enumeration sees the same
    /// decision tree as with `accept`. [`RngChooser`] draws the uniform first when the bound
    /// is negative (`accept` would draw it for any ratio below the bound), and rejects
    /// without computing the ratio when `ln u ≥ bound`: the same decision from the same draw,
    /// at the cost of only the bound for most proposals of a chain in equilibrium. (The one
    /// difference: a ratio that turns out NaN rejects after a draw that `accept` would not
    /// make.)
    fn accept_within(
        &mut self,
        bound: f64,
        ln_a: &mut dyn FnMut() -> Result<f64>,
    ) -> Result<(bool, Option<f64>)> {
        let _ = bound;
        let a = ln_a()?;
        Ok((self.accept(a), Some(a)))
    }

    /// The chain's stream for continuous draws (hyperparameters); `None` when enumerating,
    /// where continuous moves have no finite decision tree.
    fn rng(&mut self) -> Option<&mut NrmmRng>;

    /// A uniformly random permutation of `0..n` (Fisher-Yates through `choose_uniform`).
    fn permutation(&mut self, n: usize, out: &mut Vec<usize>) {
        out.clear();
        out.extend(0..n);
        for i in (1..n).rev() {
            let j = self.choose_uniform(i + 1);
            out.swap(i, j);
        }
    }
}

/// Normalised log probabilities of log weights; errors when no weight is positive.
fn normalise(ln_w: &[f64]) -> Result<f64> {
    let total = log_sum_exp(ln_w);
    if !total.is_finite() || ln_w.iter().any(|w| w.is_nan()) {
        return Err(crate::math::bad_log_weights(ln_w));
    }
    Ok(total)
}

/// Checks linear weights for [`Chooser::choose_weights`] and returns their total.
fn check_linear(w: &[f64]) -> Result<f64> {
    let total: f64 = w.iter().sum();
    if w.iter().any(|&x| !(x >= 0.0 && x.is_finite())) || !(total > 0.0 && total.is_finite()) {
        return Err(Error::Numerical(format!(
            "cannot choose among linear weights with total {total}: every weight must be \
             finite and non-negative, and one positive"
        )));
    }
    Ok(total)
}

/// Draws every choice from the chain's RNG stream.
#[derive(Debug)]
pub struct RngChooser<'a> {
    rng: &'a mut NrmmRng,
    weights: Vec<f64>,
}

impl<'a> RngChooser<'a> {
    /// Wraps the chain's stream.
    pub fn new(rng: &'a mut NrmmRng) -> Self {
        RngChooser {
            rng,
            weights: Vec::new(),
        }
    }
}

impl Chooser for RngChooser<'_> {
    /// The draw of [`crate::math::sample_log_weights`] (max-shift, one open uniform, cumulative
    /// walk skipping zero weights) with each shifted exponential computed once and kept for
    /// the walk and the normaliser: one `exp` per option, the hot spot of a Gibbs sweep.
    fn choose_log(&mut self, ln_w: &[f64]) -> Result<(usize, f64)> {
        let max = ln_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !max.is_finite() || ln_w.iter().any(|w| w.is_nan()) {
            return Err(crate::math::bad_log_weights(ln_w));
        }
        self.weights.clear();
        let mut total = 0.0;
        for &w in ln_w {
            // exp(0) is exactly 1: the largest weight needs no exponential.
            let p = if w == max { 1.0 } else { (w - max).exp() };
            self.weights.push(p);
            total += p;
        }
        // A total of exactly 1 (the largest weight alone, the others too small to count)
        // has logarithm exactly 0.
        let ln_total = if total == 1.0 { max } else { max + total.ln() };
        let target = uniform_open01(self.rng) * total;
        let mut acc = 0.0;
        let mut last_positive = 0;
        for (i, &p) in self.weights.iter().enumerate() {
            if p > 0.0 {
                acc += p;
                last_positive = i;
                if target < acc {
                    return Ok((i, ln_w[i] - ln_total));
                }
            }
        }
        Ok((last_positive, ln_w[last_positive] - ln_total))
    }

    /// The vectorised draw of `wide_draw`: one open uniform, as `choose_log`.
    fn choose_log_wide(&mut self, ln_w: &[f64]) -> Result<(usize, f64)> {
        let u = uniform_open01(self.rng);
        draw_log_weights(ln_w, &mut self.weights, u)
            .ok_or_else(|| crate::math::bad_log_weights(ln_w))
    }

    /// The uniform that `choose_log_wide` draws first.
    fn wide_uniform(&mut self) -> Option<f64> {
        Some(uniform_open01(self.rng))
    }

    /// One open-interval uniform and a cumulative walk that never stops on a zero weight;
    /// no exponentials.
    fn choose_weights(&mut self, w: &[f64]) -> Result<(usize, f64)> {
        let total = check_linear(w)?;
        let target = uniform_open01(self.rng) * total;
        let mut acc = 0.0;
        let mut pick = None;
        for (i, &x) in w.iter().enumerate() {
            if x > 0.0 {
                acc += x;
                pick = Some(i);
                if target < acc {
                    break;
                }
            }
        }
        // Rounding can leave `target` at or just past the last cumulative sum: the last
        // positive weight is then the draw.
        let i = pick.expect("a positive weight exists");
        Ok((i, (w[i] / total).ln()))
    }

    /// The draw of [`RngChooser::choose_weights`] by bisection of the running sums: the walk
    /// stops at the first index whose running sum exceeds the target, which is the first
    /// sum above it (a zero weight repeats the sum before it, so it is never the first),
    /// else at the last positive weight.
    fn choose_prefix(&mut self, w: &[f64], prefix: &[f64]) -> Result<(usize, f64)> {
        debug_assert_eq!(w.len(), prefix.len());
        debug_assert!(check_linear(w).is_ok_and(|t| prefix.last() == Some(&t)));
        let total = *prefix.last().ok_or_else(|| {
            Error::Numerical("cannot choose among an empty set of weights".into())
        })?;
        let target = uniform_open01(self.rng) * total;
        let i = prefix.partition_point(|&s| s <= target);
        let i = if i < w.len() {
            i
        } else {
            w.iter()
                .rposition(|&x| x > 0.0)
                .expect("a positive weight exists")
        };
        Ok((i, (w[i] / total).ln()))
    }

    fn choose_uniform(&mut self, n: usize) -> usize {
        uniform_index(self.rng, n)
    }

    fn accept(&mut self, ln_a: f64) -> bool {
        if ln_a.is_nan() {
            return false;
        }
        ln_a >= 0.0 || uniform_open01(self.rng).ln() < ln_a
    }

    fn accept_within(
        &mut self,
        bound: f64,
        ln_a: &mut dyn FnMut() -> Result<f64>,
    ) -> Result<(bool, Option<f64>)> {
        // A NaN or non-negative bound decides nothing before the ratio is known.
        if bound.is_nan() || bound >= 0.0 {
            let a = ln_a()?;
            return Ok((self.accept(a), Some(a)));
        }
        let ln_u = uniform_open01(self.rng).ln();
        if ln_u >= bound {
            return Ok((false, None));
        }
        let a = ln_a()?;
        Ok((!a.is_nan() && ln_u < a, Some(a)))
    }

    fn rng(&mut self) -> Option<&mut NrmmRng> {
        Some(self.rng)
    }
}

/// One recorded decision of a path: which option was taken out of how many.
#[derive(Clone, Copy, Debug)]
struct Decision {
    taken: usize,
    options: usize,
}

/// Replays a move along every path of its decision tree, depth first.
///
/// Usage: `while enumerator.next_path() { clone the state; run the move with the enumerator as
/// chooser; record (result state, enumerator.ln_prob()) }`. The move must be deterministic
/// given its choices. Options of probability zero are skipped, so every enumerated path has
/// positive probability, and the path probabilities of one start state sum to one.
#[derive(Debug, Default)]
pub struct PathEnumerator {
    script: Vec<Decision>,
    depth: usize,
    ln_prob: f64,
    started: bool,
}

impl PathEnumerator {
    /// A fresh enumerator, positioned before the first path.
    pub fn new() -> Self {
        Self::default()
    }

    /// Advances to the next path; false when all paths have been visited. Between calls the
    /// move is run once with `self` as its chooser.
    pub fn next_path(&mut self) -> bool {
        if self.started {
            self.script.truncate(self.depth);
            loop {
                let Some(last) = self.script.last_mut() else {
                    return false;
                };
                if last.taken + 1 < last.options {
                    last.taken += 1;
                    break;
                }
                self.script.pop();
            }
        }
        self.started = true;
        self.depth = 0;
        self.ln_prob = 0.0;
        true
    }

    /// Log probability of the path taken in the current run.
    pub fn ln_prob(&self) -> f64 {
        self.ln_prob
    }

    /// The option to take at the current depth out of `options`, following the script or
    /// opening a new decision at its first admissible option.
    fn decide(&mut self, options: usize, admissible: impl Fn(usize) -> bool) -> usize {
        if self.depth == self.script.len() {
            self.script.push(Decision { taken: 0, options });
        }
        let d = &mut self.script[self.depth];
        debug_assert_eq!(
            d.options, options,
            "move is not deterministic given its choices"
        );
        while !admissible(d.taken) {
            d.taken += 1;
        }
        self.depth += 1;
        d.taken
    }
}

impl Chooser for PathEnumerator {
    fn choose_log(&mut self, ln_w: &[f64]) -> Result<(usize, f64)> {
        let total = normalise(ln_w)?;
        let n = ln_w.len();
        let last_admissible = (0..n)
            .rev()
            .find(|&i| ln_w[i] > f64::NEG_INFINITY)
            .unwrap_or(0);
        // Zero-probability options are never opened: `taken` jumps past them, and options
        // after the last admissible one are cut off so the odometer does not stall on them.
        let i = self.decide(last_admissible + 1, |i| ln_w[i] > f64::NEG_INFINITY);
        let lp = ln_w[i] - total;
        self.ln_prob += lp;
        Ok((i, lp))
    }

    fn choose_weights(&mut self, w: &[f64]) -> Result<(usize, f64)> {
        let total = check_linear(w)?;
        let last_admissible = (0..w.len()).rev().find(|&i| w[i] > 0.0).unwrap_or(0);
        let i = self.decide(last_admissible + 1, |i| w[i] > 0.0);
        let lp = (w[i] / total).ln();
        self.ln_prob += lp;
        Ok((i, lp))
    }

    fn choose_uniform(&mut self, n: usize) -> usize {
        let i = self.decide(n, |_| true);
        self.ln_prob -= (n as f64).ln();
        i
    }

    fn accept(&mut self, ln_a: f64) -> bool {
        let p = if ln_a.is_nan() {
            0.0
        } else {
            ln_a.min(0.0).exp()
        };
        let probs = [p, 1.0 - p];
        let options = if probs[1] > 0.0 { 2 } else { 1 };
        let i = self.decide(options, |i| probs[i] > 0.0);
        self.ln_prob += probs[i].ln();
        i == 0
    }

    fn rng(&mut self) -> Option<&mut NrmmRng> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy "move": pick a ∈ {0,1,2} with weights 1:2:0, then if a == 1 flip a fair coin
    /// via accept(ln 0.5). Outcomes: (0) 1/3, (1,acc) 1/3, (1,rej) 1/3.
    fn toy(ch: &mut dyn Chooser) -> (usize, bool) {
        let (a, _) = ch.choose_log(&[0.0, 2f64.ln(), f64::NEG_INFINITY]).unwrap();
        let acc = a == 1 && ch.accept(0.5f64.ln());
        (a, acc)
    }

    #[test]
    fn enumerates_every_positive_path_once() {
        let mut e = PathEnumerator::new();
        let mut paths = Vec::new();
        while e.next_path() {
            let out = toy(&mut e);
            paths.push((out, e.ln_prob().exp()));
        }
        assert_eq!(paths.len(), 3);
        let total: f64 = paths.iter().map(|p| p.1).sum();
        assert!((total - 1.0).abs() < 1e-15);
        for (out, p) in &paths {
            assert!((p - 1.0 / 3.0).abs() < 1e-15, "{out:?} has {p}");
        }
    }

    #[test]
    fn permutations_are_uniform_and_complete() {
        let mut e = PathEnumerator::new();
        let mut perms = std::collections::BTreeSet::new();
        let mut buf = Vec::new();
        let mut total = 0.0;
        while e.next_path() {
            e.permutation(4, &mut buf);
            perms.insert(buf.clone());
            total += e.ln_prob().exp();
            assert!((e.ln_prob().exp() - 1.0 / 24.0).abs() < 1e-15);
        }
        assert_eq!(perms.len(), 24);
        assert!((total - 1.0).abs() < 1e-13);
    }

    /// The chooser's single-exponential draw is the draw of `math::sample_log_weights` with
    /// the same stream, and its log probability the `log_sum_exp` normalisation, bit for bit.
    #[test]
    fn rng_chooser_matches_the_reference_draw() {
        let mut weights_rng = crate::rng::SeedPlan::new(8).chain(1);
        let (mut a, mut b) = (
            crate::rng::SeedPlan::new(8).chain(0),
            crate::rng::SeedPlan::new(8).chain(0),
        );
        let mut ch = RngChooser::new(&mut a);
        for round in 0..2000 {
            let len = 1 + round % 9;
            let ln_w: Vec<f64> = (0..len)
                .map(|k| {
                    if k % 4 == 3 {
                        f64::NEG_INFINITY
                    } else {
                        300.0 * (uniform_open01(&mut weights_rng) - 0.5)
                    }
                })
                .collect();
            if ln_w.iter().all(|w| *w == f64::NEG_INFINITY) {
                continue;
            }
            let (i, lp) = ch.choose_log(&ln_w).unwrap();
            let j = crate::math::sample_log_weights(&mut b, &ln_w).unwrap();
            assert_eq!(i, j);
            assert_eq!(lp, ln_w[i] - log_sum_exp(&ln_w));
        }
    }

    #[test]
    fn linear_weights_match_log_weights() {
        let w = [0.5, 0.0, 1.5, 2.0];
        let mut e = PathEnumerator::new();
        let mut seen = Vec::new();
        while e.next_path() {
            let (i, lp) = e.choose_weights(&w).unwrap();
            assert!((lp - (w[i] / 4.0).ln()).abs() < 1e-15);
            assert!((e.ln_prob() - lp).abs() < 1e-15);
            seen.push(i);
        }
        assert_eq!(seen, vec![0, 2, 3]);
        let mut rng = crate::rng::SeedPlan::new(3).chain(0);
        let mut ch = RngChooser::new(&mut rng);
        let mut counts = [0usize; 4];
        for _ in 0..40_000 {
            counts[ch.choose_weights(&w).unwrap().0] += 1;
        }
        assert_eq!(counts[1], 0);
        // Binomial standard error of a frequency near 1/2 over 40,000 draws is 0.0025.
        for (c, p) in counts.iter().zip([0.125, 0.0, 0.375, 0.5]) {
            assert!(
                (*c as f64 / 40_000.0 - p).abs() < 4.0 * 0.0025,
                "{counts:?}"
            );
        }
        for bad in [
            &[0.0, 0.0][..],
            &[1.0, -1.0],
            &[f64::NAN, 1.0],
            &[f64::INFINITY],
        ] {
            assert!(ch.choose_weights(bad).is_err());
            assert!(PathEnumerator::new().choose_weights(bad).is_err());
        }
    }

    /// Bisection of the running sums makes the draws of the cumulative walk, stream
    /// position for stream position, also with zero weights anywhere and targets at the
    /// edges of the sums.
    /// `accept_within` decides as `accept` does from the same stream position, and leaves the
    /// stream where `accept` leaves it, for ratios at or below the bound (negative, zero,
    /// positive or NaN bounds); below a negative bound most ratios are never computed. The
    /// enumerator computes every ratio and branches as with `accept`.
    #[test]
    fn bounded_decisions_equal_plain_decisions() {
        let mut a = crate::rng::SeedPlan::new(5).chain(0);
        let mut b = crate::rng::SeedPlan::new(5).chain(0);
        let mut gen = crate::rng::SeedPlan::new(6).chain(0);
        let (mut plain, mut bounded) = (RngChooser::new(&mut a), RngChooser::new(&mut b));
        let (mut computed, mut rejected_early) = (0, 0);
        for t in 0..20_000 {
            let bound = match t % 4 {
                0 => -uniform_open01(&mut gen) * 8.0,
                1 => -uniform_open01(&mut gen) * 0.5,
                2 => uniform_open01(&mut gen) * 2.0 - 0.5,
                _ => f64::NAN,
            };
            let ln_a = if bound.is_nan() {
                -uniform_open01(&mut gen) * 3.0
            } else {
                bound - uniform_open01(&mut gen) * 4.0 * f64::from(u8::from(t % 3 != 0))
            };
            let mut called = false;
            let (got, seen) = bounded
                .accept_within(bound, &mut || {
                    called = true;
                    Ok(ln_a)
                })
                .unwrap();
            assert_eq!(got, plain.accept(ln_a), "bound {bound}, ratio {ln_a}");
            assert_eq!(seen.is_some(), called);
            if called {
                computed += 1;
            } else {
                rejected_early += 1;
                assert!(!got);
            }
            assert_eq!(
                plain.choose_uniform(1 << 30),
                bounded.choose_uniform(1 << 30)
            );
        }
        assert!(
            computed > 5_000 && rejected_early > 5_000,
            "{computed} {rejected_early}"
        );
        let mut e = PathEnumerator::new();
        let mut total = 0.0;
        while e.next_path() {
            let (acc, seen) = e.accept_within(-10.0, &mut || Ok(0.25f64.ln())).unwrap();
            assert_eq!(seen, Some(0.25f64.ln()));
            total += if acc { e.ln_prob().exp() } else { 0.0 };
        }
        assert!((total - 0.25).abs() < 1e-12);
    }

    #[test]
    fn prefix_draws_equal_linear_draws() {
        let cases: [&[f64]; 5] = [
            &[0.5, 0.0, 1.5, 2.0],
            &[0.0, 0.0, 3.0],
            &[1.0, 0.0, 0.0],
            &[1e-300, 1.0, 1e-300, 0.0, 7.0, 0.0],
            &[0.1; 37],
        ];
        for (c, w) in cases.iter().enumerate() {
            let prefix: Vec<f64> = w
                .iter()
                .scan(0.0, |acc, &x| {
                    *acc += x;
                    Some(*acc)
                })
                .collect();
            let mut a = crate::rng::SeedPlan::new(11).chain(c as u64);
            let mut b = crate::rng::SeedPlan::new(11).chain(c as u64);
            let (mut linear, mut bisect) = (RngChooser::new(&mut a), RngChooser::new(&mut b));
            for _ in 0..5_000 {
                let x = linear.choose_weights(w).unwrap();
                let y = bisect.choose_prefix(w, &prefix).unwrap();
                assert_eq!(x.0, y.0, "weights {w:?}");
                assert_eq!(x.1.to_bits(), y.1.to_bits());
            }
            let mut e = PathEnumerator::new();
            let mut seen = Vec::new();
            while e.next_path() {
                seen.push(e.choose_prefix(w, &prefix).unwrap().0);
            }
            let positive: Vec<usize> = (0..w.len()).filter(|&i| w[i] > 0.0).collect();
            assert_eq!(seen, positive);
        }
    }

    #[test]
    fn rng_chooser_reports_log_probabilities() {
        let mut rng = crate::rng::SeedPlan::new(5).chain(0);
        let mut ch = RngChooser::new(&mut rng);
        let (i, lp) = ch.choose_log(&[0.0, f64::NEG_INFINITY, 0.0]).unwrap();
        assert!(i == 0 || i == 2);
        assert!((lp - 0.5f64.ln()).abs() < 1e-15);
        assert!(ch.accept(0.0));
        assert!(!ch.accept(f64::NAN));
        assert!(!ch.accept(f64::NEG_INFINITY));
    }
}
