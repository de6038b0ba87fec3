//! The one pass of SVA and SVA-PM (MATH §6.5) and its result.

use super::config::{PruneMerge, SvaConfig};
use super::pairs::PairSums;
use super::{SvaKernel, SvaPrior, NEGLIGIBLE_RESPONSIBILITY};
use crate::error::{Error, Result};
use crate::kernel::EntryTerms;
use crate::math::log_sum_exp;
use crate::partition::Partition;
use crate::rng::uniform_index;
use crate::simd::multiversion;
use crate::vecmath;
use rand::Rng;

/// What happened to the components during a pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SvaEvents {
    /// Components created (MATH §6.5 step 3).
    pub created: usize,
    /// Components removed for a weight share below ε_r.
    pub pruned: usize,
    /// Merges of two components closer than ε_d.
    pub merged: usize,
    /// Prune-and-merge checks run.
    pub checks: usize,
}

/// The result of one SVA pass: the components (weights and posterior parameters), a hard
/// label for every point, and the approximate posterior predictive.
///
/// The mixture it represents is Lin's approximate posterior of the DP mixture: component k
/// has weight `w_k` and the conjugate posterior of its soft statistic, and a new point falls
/// in a new component with weight α (MATH §6.5).
#[derive(Clone, Debug)]
pub struct SvaFit<K: SvaKernel> {
    kernel: K,
    config: SvaConfig,
    prior: K::Soft,
    components: Vec<K::Soft>,
    labels: Vec<usize>,
    events: SvaEvents,
}

/// Where a component id ended up.
#[derive(Clone, Copy, Debug)]
enum Fate {
    Alive,
    MergedInto(usize),
    Pruned,
}

/// A live component: its statistic, its stable id and the number of points seen before it
/// was created.
#[derive(Clone, Debug)]
struct Component<S> {
    soft: S,
    id: usize,
    born: usize,
}

/// SVA over the points in data order. See [`fit_order`].
pub fn fit<K: SvaKernel>(kernel: &K, config: &SvaConfig) -> Result<SvaFit<K>> {
    let order: Vec<usize> = (0..kernel.n_points()).collect();
    fit_order(kernel, config, &order)
}

/// SVA over the points in an order drawn uniformly by `rng` ([`shuffled_order`]). See
/// [`fit_order`].
pub fn fit_shuffled<K: SvaKernel, R: Rng + ?Sized>(
    kernel: &K,
    config: &SvaConfig,
    rng: &mut R,
) -> Result<SvaFit<K>> {
    let order = shuffled_order(kernel.n_points(), rng);
    fit_order(kernel, config, &order)
}

/// A uniformly random permutation of `0..n` (Fisher-Yates with unbiased indices). Cost: O(n).
pub fn shuffled_order<R: Rng + ?Sized>(n: usize, rng: &mut R) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, uniform_index(rng, i + 1));
    }
    order
}

/// One pass of SVA (SVA-PM when `config.prune_merge` is set) over the points in `order`, a
/// permutation of `0..n` (MATH §6.5; Lin 2013, Algorithm 1 and §4).
///
/// For point `x_i`, with K live components of weights `w_k`:
/// 1. `h_i(k) = ln p(x_i | S_k)` for each component and `h_i(K+1) = ln p(x_i)` under the prior;
/// 2. `ρ_i(k) ∝ w_k e^{h_i(k)}`, `ρ_i(K+1) ∝ α e^{h_i(K+1)}`, normalised in log space (for a
///    Gibbs-type prior, the weights of its urn, [`SvaPrior`]);
/// 3. if `ρ_i(K+1) > ε` a component is created from the prior and the point, with weight
///    `ρ_i(K+1)`; otherwise ρ is renormalised over the K existing components;
/// 4. responsibilities below [`NEGLIGIBLE_RESPONSIBILITY`] are set to zero, and every other
///    component absorbs the point with weight `ρ_i(k)`;
/// 5. the point's hard label is the component of largest `ρ_i(k)` at this time.
///
/// SVA-PM checks, every `max(check_interval, K)` points and once after the pass: components
/// whose share of the total weight is below ε_r are pruned (except, during the pass, those
/// created since the previous check, which have not yet had a full interval to gather
/// weight, and never the last component); then, while some pair is closer than ε_d in
/// `d_ρ`, the closest pair is merged: weights and statistics are added, the prior counted
/// once. No responsibility history is kept: since `|a - b| = a + b - 2 min(a, b)`,
/// `d_ρ(k, l) = (w_k + w_l - 2 S(k, l)) / i` with running sums `S(k, l) = Σ_j min(ρ_j(k),
/// ρ_j(l))`, which a point changes only for pairs of its non-zero responsibilities. After a
/// merge, `S` of the merged component with a third is taken as the sum of the two sums
/// (capped by the weights): exact when the two never shared a point with the third, an
/// upper bound (so a lower bound on the distance) otherwise.
///
/// Points whose component was pruned are relabelled by their most probable final component
/// ([`SvaFit::assign`]); labels of merged components follow the merge.
///
/// Errors if the configuration is invalid, there are no points, `order` is not a
/// permutation of `0..n`, or a predictive is not finite (a numerical breakdown of the
/// kernel). Cost: `n (K + 1)` soft predictives, one soft update per non-negligible
/// responsibility, O(K²) per check (amortised O(K) per point); memory O(n + K² + K·stat).
pub fn fit_order<K: SvaKernel>(
    kernel: &K,
    config: &SvaConfig,
    order: &[usize],
) -> Result<SvaFit<K>> {
    config.validate()?;
    let n = kernel.n_points();
    if n == 0 {
        return Err(Error::Empty("SVA needs at least one data point".into()));
    }
    check_permutation(order, n)?;
    let prior = kernel.soft_empty()?;
    let mut pass = Pass {
        kernel,
        config,
        components: Vec::new(),
        fates: Vec::new(),
        pairs: PairSums::default(),
        events: SvaEvents::default(),
        last_check: 0,
    };
    // The new component's log weight, as the kernel's cache holds it: the DP's `ln α`
    // throughout; a Gibbs-type prior's changes with the points seen and the components.
    let rule = &config.prior;
    let mut ln_new = rule.ln_new(config.alpha, 0, 0);
    let mut seen = vec![usize::MAX; n];
    let mut point = kernel.new_point();
    let mut ln_w: Vec<f64> = Vec::new();
    let mut rho: Vec<f64> = Vec::new();
    let mut active: Vec<usize> = Vec::new();
    // The kernel's predictive cache, when it has one: entry c is component c with additive
    // term ln w_c, refreshed for the components a point updates, and rebuilt after a check
    // (which renumbers components).
    let mut cache = kernel.soft_sweep_cache();
    if let Some(cache) = cache.as_mut() {
        cache.reset();
        cache.set_new(&prior, ln_new);
    }
    for (step, &i) in order.iter().enumerate() {
        kernel.load_point(i, &mut point);
        let now = rule.ln_new(config.alpha, step, pass.components.len());
        if now.to_bits() != ln_new.to_bits() {
            ln_new = now;
            if let Some(cache) = cache.as_mut() {
                cache.set_new(&prior, ln_new);
            }
        }
        if let Some(cache) = cache.as_mut() {
            cache.weigh(i, &mut ln_w);
        } else {
            ln_w.clear();
            for c in &pass.components {
                ln_w.push(
                    rule.ln_join(K::soft_weight(&c.soft))
                        + kernel.soft_ln_predictive(&point, &c.soft),
                );
            }
            ln_w.push(ln_new + kernel.soft_ln_predictive(&point, &prior));
        }
        let k = ln_w.len() - 1;
        let Some(create) = responsibilities(&ln_w, config.epsilon, &mut rho) else {
            return Err(Error::Numerical(format!(
                "the predictive of point {} under the SVA components is not finite",
                i + 1
            )));
        };
        let considered = if create { k + 1 } else { k };
        let best = (0..considered)
            .max_by(|&a, &b| ln_w[a].total_cmp(&ln_w[b]))
            .expect("at least one option");
        if create {
            let mut soft = prior.clone();
            kernel.soft_add(&mut soft, &point, rho[k]);
            if let Some(cache) = cache.as_mut() {
                cache.set(k, Some(entry::<K>(&soft, rule)));
            }
            pass.components.push(Component {
                soft,
                id: pass.fates.len(),
                born: step,
            });
            pass.fates.push(Fate::Alive);
            pass.pairs.push();
            pass.events.created += 1;
        }
        active.clear();
        active.extend((0..considered).filter(|&c| rho[c] > 0.0));
        for &c in &active {
            if c < k {
                kernel.soft_add(&mut pass.components[c].soft, &point, rho[c]);
                if let Some(cache) = cache.as_mut() {
                    cache.set(c, Some(entry::<K>(&pass.components[c].soft, rule)));
                }
            }
        }
        for (x, &a) in active.iter().enumerate() {
            for &b in &active[x + 1..] {
                pass.pairs.add(a, b, rho[a].min(rho[b]));
            }
        }
        seen[i] = pass.components[best].id;
        if let Some(pm) = config.prune_merge {
            let seen_so_far = step + 1;
            if seen_so_far - pass.last_check >= pm.check_interval.max(pass.components.len()) {
                pass.check(&pm, seen_so_far, false);
                if let Some(cache) = cache.as_mut() {
                    cache.reset();
                    cache.set_new(&prior, ln_new);
                    for (c, comp) in pass.components.iter().enumerate() {
                        cache.set(c, Some(entry::<K>(&comp.soft, rule)));
                    }
                }
            }
        }
    }
    if let Some(pm) = config.prune_merge {
        pass.check(&pm, n, true);
    }
    pass.finish(prior, seen)
}

/// A point's responsibilities from its log weights `ln_w` (the components', then the new
/// component's last): whether it creates a component (its share of the total exceeds
/// `epsilon`), and into `rho` each considered option's share (normalised over the components
/// alone when none is created), zero below [`NEGLIGIBLE_RESPONSIBILITY`]. `None` when the
/// weights have no finite total. The exponentials are taken once, relative to the largest
/// component weight, in vectors ([`shares`]). Cost: `K + 1` exponentials, one division.
fn responsibilities(ln_w: &[f64], epsilon: f64, rho: &mut Vec<f64>) -> Option<bool> {
    let k = ln_w.len() - 1;
    let top = ln_w[..k].iter().copied().fold(f64::NEG_INFINITY, f64::max);
    rho.clear();
    rho.resize(k + 1, 0.0);
    // No component (or none with a weight: `f64::max` skips NaN, so `top` is never NaN), or
    // the new one outweighs them all beyond the exponent range: it is the only option that
    // counts.
    if top == f64::NEG_INFINITY || ln_w[k] - top > 700.0 {
        if !ln_w[k].is_finite() {
            return None;
        }
        let total = shares(ln_w, ln_w[k], rho);
        if !total.is_finite() {
            return None;
        }
        let inv = 1.0 / total;
        for r in rho.iter_mut() {
            *r = negligible_to_zero(*r * inv);
        }
        return Some(true);
    }
    let sum_k = shares(ln_w, top, rho) - rho[k];
    let total = sum_k + rho[k];
    if !(top.is_finite() && total.is_finite()) {
        return None;
    }
    let create = rho[k] / total > epsilon;
    let inv = 1.0 / if create { total } else { sum_k };
    if !create {
        rho.truncate(k);
    }
    for r in rho.iter_mut() {
        *r = negligible_to_zero(*r * inv);
    }
    Some(create)
}

/// A responsibility below [`NEGLIGIBLE_RESPONSIBILITY`] as zero.
#[inline]
fn negligible_to_zero(r: f64) -> f64 {
    if r < NEGLIGIBLE_RESPONSIBILITY {
        0.0
    } else {
        r
    }
}

multiversion! {
    /// `e[c] = exp(ln_w[c] - shift)` for every option, and their sum (in order), at the
    /// CPU's best level with the vector exponential ([`vecmath::exp`], within 1 ulp).
    fn shares(ln_w: &[f64], shift: f64, e: &mut [f64]) -> f64 {
        for (e, &w) in e.iter_mut().zip(ln_w) {
            *e = vecmath::exp(w - shift);
        }
        e.iter().sum()
    }
}

/// A component's cache entry: its soft statistic with the additive term, the rule's weight
/// of its soft weight `w` (`ln w` for the DP; no member term: a pass never weighs a point
/// without itself).
fn entry<'a, K: SvaKernel>(soft: &'a K::Soft, rule: &SvaPrior) -> (&'a K::Soft, EntryTerms) {
    let terms = EntryTerms {
        join: rule.ln_join(K::soft_weight(soft)),
        member: f64::NAN,
    };
    (soft, terms)
}

/// Errors unless `order` holds each of `0..n` exactly once.
fn check_permutation(order: &[usize], n: usize) -> Result<()> {
    if order.len() != n {
        return Err(Error::DimensionMismatch(format!(
            "an SVA order of {} points for {n} data points",
            order.len()
        )));
    }
    let mut hit = vec![false; n];
    for (pos, &i) in order.iter().enumerate() {
        if i >= n || hit[i] {
            return Err(Error::param(
                &format!("entry {} of the SVA order", pos + 1),
                i,
                &format!("each point index 0..{n} exactly once"),
            ));
        }
        hit[i] = true;
    }
    Ok(())
}

/// The state of a pass between points.
struct Pass<'a, K: SvaKernel> {
    kernel: &'a K,
    config: &'a SvaConfig,
    components: Vec<Component<K::Soft>>,
    fates: Vec<Fate>,
    pairs: PairSums,
    events: SvaEvents,
    last_check: usize,
}

impl<K: SvaKernel> Pass<'_, K> {
    fn weights(&self) -> Vec<f64> {
        self.components
            .iter()
            .map(|c| K::soft_weight(&c.soft))
            .collect()
    }

    fn remove(&mut self, k: usize, fate: Fate) {
        let c = self.components.swap_remove(k);
        self.fates[c.id] = fate;
        self.pairs.swap_remove(k);
    }

    /// Prune, then merge, after `seen` points (see [`fit_order`]). `last` disables the
    /// protection of young components. Cost: O(K²) per merge, O(K) for pruning.
    fn check(&mut self, pm: &PruneMerge, seen: usize, last: bool) {
        self.events.checks += 1;
        let total: f64 = self.weights().iter().sum();
        for k in (0..self.components.len()).rev() {
            let c = &self.components[k];
            let young = !last && c.born >= self.last_check;
            if self.components.len() > 1
                && !young
                && K::soft_weight(&c.soft) < pm.prune_threshold * total
            {
                self.remove(k, Fate::Pruned);
                self.events.pruned += 1;
            }
        }
        loop {
            let weights = self.weights();
            let mut closest: Option<(f64, usize, usize)> = None;
            for a in 0..weights.len() {
                for b in a + 1..weights.len() {
                    let dist = (weights[a] + weights[b] - 2.0 * self.pairs.get(a, b)).max(0.0)
                        / seen as f64;
                    if dist < pm.merge_threshold && closest.is_none_or(|(d, _, _)| dist < d) {
                        closest = Some((dist, a, b));
                    }
                }
            }
            let Some((_, a, b)) = closest else { break };
            let from = self.components[b].soft.clone();
            self.kernel.soft_merge(&mut self.components[a].soft, &from);
            self.components[a].born = self.components[a].born.min(self.components[b].born);
            let merged = self.weights();
            self.pairs.absorb(a, b, &merged);
            let into = self.components[a].id;
            self.remove(b, Fate::MergedInto(into));
            self.events.merged += 1;
        }
        self.last_check = seen;
    }

    /// Resolves every point's label to a final component index.
    fn finish(self, prior: K::Soft, seen: Vec<usize>) -> Result<SvaFit<K>> {
        let mut index_of = vec![usize::MAX; self.fates.len()];
        for (k, c) in self.components.iter().enumerate() {
            index_of[c.id] = k;
        }
        let mut fit = SvaFit {
            kernel: self.kernel.clone(),
            config: self.config.clone(),
            prior,
            components: self.components.into_iter().map(|c| c.soft).collect(),
            labels: Vec::new(),
            events: self.events,
        };
        let mut point = fit.kernel.new_point();
        let mut labels = Vec::with_capacity(seen.len());
        for (i, &id) in seen.iter().enumerate() {
            let mut id = id;
            let label = loop {
                match self.fates[id] {
                    Fate::Alive => break index_of[id],
                    Fate::MergedInto(next) => id = next,
                    Fate::Pruned => {
                        fit.kernel.load_point(i, &mut point);
                        break fit.best_component(&point)?;
                    }
                }
            };
            labels.push(label);
        }
        fit.labels = labels;
        Ok(fit)
    }
}

impl<K: SvaKernel> SvaFit<K> {
    /// The kernel the fit was made with.
    pub fn kernel(&self) -> &K {
        &self.kernel
    }

    /// The settings of the pass.
    pub fn config(&self) -> &SvaConfig {
        &self.config
    }

    /// Number of components K.
    pub fn n_components(&self) -> usize {
        self.components.len()
    }

    /// The components' weights `w_k = Σ_j ρ_j(k)` (they sum to about n; the mixing
    /// proportions are `w_k / (Σ_l w_l + α)`, the rest going to a new component).
    pub fn weights(&self) -> Vec<f64> {
        self.components.iter().map(K::soft_weight).collect()
    }

    /// The components' soft statistics.
    pub fn components(&self) -> &[K::Soft] {
        &self.components
    }

    /// The components' posterior parameters. Cost: one [`SvaKernel::posterior`] each.
    pub fn posteriors(&self) -> Vec<K::Posterior> {
        self.components
            .iter()
            .map(|s| self.kernel.posterior(s))
            .collect()
    }

    /// What happened during the pass.
    pub fn events(&self) -> SvaEvents {
        self.events
    }

    /// The hard label (component index `0..K`) of every data point: the component of largest
    /// responsibility when the point was seen, followed through merges; points of pruned
    /// components are relabelled as by [`SvaFit::assign`].
    pub fn labels(&self) -> &[usize] {
        &self.labels
    }

    /// `ln w_k + ln p(x | S_k)` of the loaded point for each component, into `out`.
    fn ln_joint_weights(&self, point: &K::Point, out: &mut Vec<f64>) {
        out.clear();
        out.extend(self.components.iter().map(|s| {
            self.config.prior.ln_join(K::soft_weight(s)) + self.kernel.soft_ln_predictive(point, s)
        }));
    }

    /// The component of largest posterior responsibility `w_k p(x | S_k)` for the loaded
    /// point.
    fn best_component(&self, point: &K::Point) -> Result<usize> {
        let mut best: Option<(f64, usize)> = None;
        for (k, s) in self.components.iter().enumerate() {
            let v = self.config.prior.ln_join(K::soft_weight(s))
                + self.kernel.soft_ln_predictive(point, s);
            if v.is_nan() {
                return Err(Error::Numerical(format!(
                    "the predictive under SVA component {k} is NaN"
                )));
            }
            if best.is_none_or(|(b, _)| v > b) {
                best = Some((v, k));
            }
        }
        best.map(|(_, k)| k)
            .ok_or_else(|| Error::Empty("the SVA fit has no component".into()))
    }

    /// The most probable final component of each given data point, by maximum posterior
    /// responsibility `w_k p(x_i | S_k)` (the new-component option left out, so every point
    /// gets a label in `0..K`). Errors on an index `≥ n`. Cost: K soft predictives per point.
    pub fn assign(&self, points: &[usize]) -> Result<Vec<usize>> {
        let n = self.kernel.n_points();
        let mut point = self.kernel.new_point();
        points
            .iter()
            .map(|&i| {
                if i >= n {
                    return Err(Error::param(
                        "point index",
                        i,
                        &format!("an index of the fitted data, below {n}"),
                    ));
                }
                self.kernel.load_point(i, &mut point);
                self.best_component(&point)
            })
            .collect()
    }

    /// [`SvaFit::assign`] of every data point: labels consistent with the final components
    /// (the initial clustering of a sampler). Cost: n K soft predictives.
    pub fn relabel(&self) -> Result<Vec<usize>> {
        let all: Vec<usize> = (0..self.kernel.n_points()).collect();
        self.assign(&all)
    }

    /// The most probable component of each new point (as [`SvaFit::assign`]). Errors if a
    /// point does not fit the kernel. Cost: K soft predictives per point.
    pub fn assign_new(&self, data: &K::NewData) -> Result<Vec<usize>> {
        let mut point = self.kernel.new_point();
        (0..K::n_new(data))
            .map(|j| {
                self.kernel.load_new(data, j, &mut point)?;
                self.best_component(&point)
            })
            .collect()
    }

    /// The log predictive density of the loaded point under the fitted mixture:
    /// `ln [Σ_k w_k p(x | S_k) + α p(x)] - ln(Σ_k w_k + α)`, with the rule's weights of the
    /// components and of a new one after the `n` fitted points for a Gibbs-type prior
    /// ([`SvaPrior`]).
    fn ln_density(&self, point: &K::Point, buf: &mut Vec<f64>) -> Result<f64> {
        self.ln_joint_weights(point, buf);
        let ln_new = self.config.prior.ln_new(
            self.config.alpha,
            self.kernel.n_points(),
            self.components.len(),
        );
        buf.push(ln_new + self.kernel.soft_ln_predictive(point, &self.prior));
        let total = log_sum_exp(buf);
        if !total.is_finite() {
            return Err(Error::Numerical(format!(
                "the SVA predictive density of a point is {total}"
            )));
        }
        let ln_mass = if self.config.prior.is_dp() {
            (self.components.iter().map(K::soft_weight).sum::<f64>() + self.config.alpha).ln()
        } else {
            let mut w: Vec<f64> = (self.components.iter())
                .map(|s| self.config.prior.ln_join(K::soft_weight(s)))
                .collect();
            w.push(ln_new);
            log_sum_exp(&w)
        };
        Ok(total - ln_mass)
    }

    /// The log posterior predictive density of each new point (held-out data) under the
    /// fitted mixture (see the type's documentation). Errors if a point does not fit the
    /// kernel or a density is not finite. Cost: K + 1 soft predictives per point.
    pub fn ln_predictive_new(&self, data: &K::NewData) -> Result<Vec<f64>> {
        let mut point = self.kernel.new_point();
        let mut buf = Vec::with_capacity(self.components.len() + 1);
        (0..K::n_new(data))
            .map(|j| {
                self.kernel.load_new(data, j, &mut point)?;
                self.ln_density(&point, &mut buf)
            })
            .collect()
    }

    /// The same density at data points the fit has seen (a training fit, optimistic by
    /// construction). Errors on an index `≥ n`. Cost: K + 1 soft predictives per point.
    pub fn ln_predictive_points(&self, points: &[usize]) -> Result<Vec<f64>> {
        let n = self.kernel.n_points();
        let mut point = self.kernel.new_point();
        let mut buf = Vec::with_capacity(self.components.len() + 1);
        points
            .iter()
            .map(|&i| {
                if i >= n {
                    return Err(Error::param(
                        "point index",
                        i,
                        &format!("an index of the fitted data, below {n}"),
                    ));
                }
                self.kernel.load_point(i, &mut point);
                self.ln_density(&point, &mut buf)
            })
            .collect()
    }

    /// The partition of the data given by [`SvaFit::relabel`], for starting a sampler from
    /// the fit (components no point prefers are dropped). Cost: n K soft predictives and the
    /// kernel's batch statistics.
    pub fn to_partition(&self) -> Result<Partition<K>> {
        Partition::from_labels(&self.kernel, &self.relabel()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::log_sum_exp;

    /// The responsibilities are those of the log-sum-exp formulas (normalised over every
    /// option when one is created, over the components otherwise), to rounding, including
    /// a first point, a new component beyond the exponent range of the others, and weights
    /// with no finite total.
    #[test]
    fn responsibilities_follow_the_log_space_formulas() {
        let cases: [&[f64]; 6] = [
            &[-3.0, -1.0, -2.5, -4.0],
            &[-3.0, -1.0, -2.5, -30.0],
            &[-800.0, -1.0, -1.2, -2.0],
            &[5.0],
            &[-2000.0, -1.0],
            &[f64::NEG_INFINITY, -3.0, f64::NEG_INFINITY],
        ];
        let mut rho = Vec::new();
        for ln_w in cases {
            let k = ln_w.len() - 1;
            let total = log_sum_exp(ln_w);
            let want_create = (ln_w[k] - total).exp() > 0.1;
            let create = responsibilities(ln_w, 0.1, &mut rho).unwrap();
            assert_eq!(create, want_create, "{ln_w:?}");
            let norm = if create {
                total
            } else {
                log_sum_exp(&ln_w[..k])
            };
            assert_eq!(rho.len(), if create { k + 1 } else { k });
            for (c, &r) in rho.iter().enumerate() {
                let want = (ln_w[c] - norm).exp();
                let want = if want < NEGLIGIBLE_RESPONSIBILITY {
                    0.0
                } else {
                    want
                };
                assert!(
                    (r - want).abs() <= 1e-14,
                    "{ln_w:?}: option {c} {r} vs {want}"
                );
            }
        }
        assert!(responsibilities(&[f64::NAN, 0.0], 0.1, &mut rho).is_none());
        assert!(responsibilities(&[0.0, f64::NAN], 0.1, &mut rho).is_none());
        assert!(responsibilities(&[f64::NAN], 0.1, &mut rho).is_none());
        assert!(responsibilities(&[f64::NEG_INFINITY, f64::NEG_INFINITY], 0.1, &mut rho).is_none());
    }
}
