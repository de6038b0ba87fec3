//! The random tree operations of tgMCMC: SampleSub (MATH §4.1) and StocInsert (MATH §4.2).
//! Every random choice goes through a [`Chooser`], so the same code runs a chain or
//! enumerates all of its outcomes with their probabilities; each forward draw has an exact
//! reverse evaluation.

use super::{make_room, unchanged, Forest, NodeKey, PairStats};
use crate::chooser::Chooser;
use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;
use crate::math::{ln_add_exp, log_sum_exp};
use std::collections::hash_map::Entry;

/// Which nodes of a subtree SampleSub may return (MATH §4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Candidates {
    /// Every node, leaves included (`draw_leaf = true`; the local move's selection).
    AllNodes,
    /// Internal nodes only (`draw_leaf = false`; the split move).
    InternalNodes,
}

/// One decision of StocInsert for a queued tree (MATH §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StocChoice {
    /// Inserted into the tree at this position of the tree list.
    Join(usize),
    /// Appended to the tree list as a new tree.
    New,
}

/// Subtrees with fewer candidates than this are weighed afresh at every SampleSub; larger
/// ones keep their weights between draws while they are unchanged.
const CACHED_SUBTREE: usize = 16;

/// At most this many subtrees keep their SampleSub weights (plus two per registered tree);
/// beyond it the entries of subtrees that changed are dropped, and if that does not free
/// half of the room the cache starts afresh.
const CACHED_SUBTREES: usize = 64;

/// The candidates of a SampleSub, their weights and the running sums of the weights, kept
/// for a subtree while its top node's stamp says it is unchanged.
#[derive(Clone, Debug, Default)]
pub(super) struct SubEntry {
    stamp: u64,
    keys: Vec<NodeKey>,
    weights: Vec<f64>,
    prefix: Vec<f64>,
}

impl<K: ConjugateKernel> Forest<K> {
    /// SampleSub, forward (MATH §4.1): draws a node `v` of the subtree of `top` with
    /// probability `(d_v + d_max) / Σ_{v'} (d_{v'} + d_max)` over the candidates (breadth-first
    /// from `top`, which is itself a candidate), where `d_leaf = 0` and `d_max` is the
    /// largest `d` among the candidates; the weights are formed relative to `d_max`,
    /// `1 + exp(ln d_v - ln d_max)`, and drawn with [`Chooser::choose_weights`]. Returns the
    /// node and its log probability. A leaf `top` is
    /// returned with log probability 0 and no draw.
    ///
    /// The candidates and weights of a subtree of at least 16 candidates are kept between
    /// draws while the subtree is unchanged (its top node's stamp; every change below a node
    /// refreshes the node), with their running sums, so that the local move and the split,
    /// which weigh the same trees again and again, only pay for trees that changed and draw
    /// by bisection ([`Chooser::choose_prefix`]); the draw is the same as from weights
    /// computed afresh.
    ///
    /// Errors if `top` is unknown or the chooser rejects the weights (a NaN `ln d`). Cost:
    /// O(size of the subtree), or O(log of the subtree) for an unchanged cached subtree (a
    /// hash lookup and a bisection); no allocation once the forest's buffers have grown.
    pub fn sample_sub(
        &mut self,
        top: NodeKey,
        candidates: Candidates,
        chooser: &mut dyn Chooser,
    ) -> Result<(NodeKey, f64)> {
        let node = self.get(top, "sample_sub")?;
        if node.is_leaf() {
            return Ok((top, 0.0));
        }
        let (size, stamp) = (node.size, node.stamp);
        if size >= CACHED_SUBTREE {
            if let Some(e) = self.sub_cache.get(&(top, candidates)) {
                if e.stamp == stamp {
                    return chooser
                        .choose_prefix(&e.weights, &e.prefix)
                        .map(|(i, lp)| (e.keys[i], lp));
                }
            }
        }
        let mut keys = std::mem::take(&mut self.scratch_keys);
        let mut weights = std::mem::take(&mut self.scratch_w);
        self.weigh_sub(top, candidates, &mut keys, &mut weights);
        let drawn = chooser.choose_weights(&weights);
        let out = drawn.map(|(i, lp)| (keys[i], lp));
        if size >= CACHED_SUBTREE && out.is_ok() {
            let (nodes, spare) = (&self.nodes, &mut self.sub_spare);
            make_room(
                &mut self.sub_cache,
                CACHED_SUBTREES + 2 * self.roots.len(),
                |&(k, _), e| unchanged(nodes, k, e.stamp),
                |e| {
                    if spare.len() < CACHED_SUBTREES {
                        spare.push(e);
                    }
                },
            );
            // Copied rather than swapped in, into the buffers of an evicted entry when there
            // is one: the scratch buffers keep their capacity, and a new entry allocates only
            // until the cache has filled once.
            let e = match self.sub_cache.entry((top, candidates)) {
                Entry::Occupied(o) => o.into_mut(),
                Entry::Vacant(v) => v.insert(self.sub_spare.pop().unwrap_or_default()),
            };
            e.stamp = stamp;
            e.keys.clone_from(&keys);
            e.weights.clone_from(&weights);
            // Sized first and filled by index: a push per weight kept the running sum in
            // memory, one store-to-load round trip per addition.
            e.prefix.clear();
            e.prefix.resize(e.weights.len(), 0.0);
            let mut acc = 0.0;
            for (p, &w) in e.prefix.iter_mut().zip(&e.weights) {
                acc += w;
                *p = acc;
            }
        }
        self.scratch_keys = keys;
        self.scratch_w = weights;
        out
    }

    /// The SampleSub candidates of the subtree of `top` in breadth-first order, and their
    /// weights relative to the largest `d`.
    fn weigh_sub(
        &self,
        top: NodeKey,
        candidates: Candidates,
        keys: &mut Vec<NodeKey>,
        weights: &mut Vec<f64>,
    ) {
        keys.clear();
        weights.clear();
        keys.push(top);
        // One visit per node: the breadth-first walk records each candidate's ln d as it
        // goes (into `weights`, turned into weights below) and keeps the largest.
        let mut ln_d_max = f64::NEG_INFINITY;
        let mut next = 0;
        while next < keys.len() {
            let node = &self.nodes[keys[next]];
            weights.push(node.ln_d);
            ln_d_max = ln_d_max.max(node.ln_d);
            if let Some(children) = node.children {
                for c in children {
                    if candidates == Candidates::AllNodes || !self.nodes[c].is_leaf() {
                        keys.push(c);
                    }
                }
            }
            next += 1;
        }
        // Linear weights relative to d_max, (d_v + d_max) / d_max in [1, 2]: one exponential
        // per candidate and no logarithms. A non-finite d_max leaves non-finite weights,
        // which the chooser rejects. Below e^-37 < 2^-53 the sum rounds to exactly 1, so
        // leaves (ln d = -∞) and far-off nodes need no exponential.
        for w in weights.iter_mut() {
            let x = *w - ln_d_max;
            *w = if x < -37.0 { 1.0 } else { 1.0 + x.exp() };
        }
    }

    /// SampleSub, reverse evaluation: `ln P_sub(target | subtree of top)` with the weights of
    /// [`Forest::sample_sub`]; `-∞` when `target` is a leaf and only internal nodes are
    /// candidates (the reference evaluates splits this way). For a leaf `top` it is 0.
    ///
    /// Errors if `target` is not in the subtree of `top`, or a candidate's `ln d` is NaN or
    /// infinite. Cost: O(depth + size of the subtree), no allocation.
    pub fn ln_prob_sub(
        &self,
        top: NodeKey,
        target: NodeKey,
        candidates: Candidates,
    ) -> Result<f64> {
        self.get(top, "ln_prob_sub")?;
        let mut cur = target;
        while cur != top {
            cur = self.get(cur, "ln_prob_sub target")?.parent.ok_or_else(|| {
                Error::param(
                    "ln_prob_sub target",
                    format!("{target:?}"),
                    "a node in the subtree of the given top node",
                )
            })?;
        }
        if self.nodes[top].is_leaf() {
            return Ok(0.0);
        }
        if candidates == Candidates::InternalNodes && self.nodes[target].is_leaf() {
            return Ok(f64::NEG_INFINITY);
        }
        let admits = |k: NodeKey| candidates == Candidates::AllNodes || !self.nodes[k].is_leaf();
        let mut ln_d_max = f64::NEG_INFINITY;
        let mut cur = Some(top);
        while let Some(k) = cur {
            if admits(k) {
                ln_d_max = ln_d_max.max(self.nodes[k].ln_d);
            }
            cur = self.preorder_next(k, top);
        }
        // Every weight lies in [ln d_max, ln d_max + ln 2], so shifting by ln d_max is safe.
        let mut sum = 0.0;
        let mut cur = Some(top);
        while let Some(k) = cur {
            if admits(k) {
                sum += (ln_add_exp(self.nodes[k].ln_d, ln_d_max) - ln_d_max).exp();
            }
            cur = self.preorder_next(k, top);
        }
        let ln_w = ln_add_exp(self.nodes[target].ln_d, ln_d_max);
        let ln_p = ln_w - ln_d_max - sum.ln();
        if !(ln_d_max.is_finite() && ln_p.is_finite()) {
            return Err(Error::Numerical(format!(
                "SampleSub probability is {ln_p} with largest ln d {ln_d_max}: the subtree \
                 holds a non-finite or stale ln d"
            )));
        }
        Ok(ln_p)
    }

    /// StocInsert, forward (MATH §4.2): for each loose tree `x` of `queue`, in order, given
    /// the current loose trees `trees = (s_1..s_r)`, join `s_l` with probability
    /// `d(x, s_l)⁻¹ / (1 + Σ_l' d(x, s_l')⁻¹)` or start a new tree with probability
    /// `1 / (1 + Σ_l' d(x, s_l')⁻¹)` (log weights `-ln d` and 0, drawn through `chooser`).
    /// A join is SeqInsert + Update without destroy, and the joined tree's new root replaces
    /// it in `trees`; a new tree is appended. With `trees` empty, `x` starts a tree with
    /// probability 1. The decisions are written to `choices` (cleared first); the total log
    /// probability is returned.
    ///
    /// Errors if a tree, or a queue item when its turn comes, is not loose, or as
    /// [`Forest::pair_stats`]; decisions made before the error stay applied. Cost: per item,
    /// one pair marginal per tree plus one SeqInsert on a join.
    pub fn stoc_insert(
        &mut self,
        kernel: &K,
        trees: &mut Vec<NodeKey>,
        queue: &[NodeKey],
        chooser: &mut dyn Chooser,
        choices: &mut Vec<StocChoice>,
    ) -> Result<f64> {
        choices.clear();
        self.stoc_insert_impl(kernel, trees, queue, |_, ln_w| {
            let r = ln_w.len() - 1;
            let (i, lp) = if r == 0 {
                (0, 0.0)
            } else {
                chooser.choose_log(ln_w)?
            };
            choices.push(if i == r {
                StocChoice::New
            } else {
                StocChoice::Join(i)
            });
            Ok((i, lp))
        })
    }

    /// StocInsert, reverse: the log probability that [`Forest::stoc_insert`] from the same
    /// trees and queue makes exactly the decisions `choices`, computed by replaying them (the
    /// trees are changed exactly as the forward run would change them). It is `-∞` if a
    /// decision has probability zero.
    ///
    /// Errors if `choices` does not have one decision per queued tree, a `Join` refers to a
    /// position beyond the current tree list, or as [`Forest::stoc_insert`]. Cost: as
    /// [`Forest::stoc_insert`].
    pub fn stoc_insert_replay(
        &mut self,
        kernel: &K,
        trees: &mut Vec<NodeKey>,
        queue: &[NodeKey],
        choices: &[StocChoice],
    ) -> Result<f64> {
        if choices.len() != queue.len() {
            return Err(Error::DimensionMismatch(format!(
                "StocInsert replay got {} decisions for {} queued trees",
                choices.len(),
                queue.len()
            )));
        }
        self.stoc_insert_impl(kernel, trees, queue, |j, ln_w| {
            let r = ln_w.len() - 1;
            let i = match choices[j] {
                StocChoice::New => r,
                StocChoice::Join(l) if l < r => l,
                StocChoice::Join(l) => {
                    return Err(Error::param(
                        &format!("StocInsert replay decision #{j}"),
                        format!("Join({l})"),
                        &format!("Join(l) with l below the {r} trees present, or New"),
                    ))
                }
            };
            Ok((i, ln_w[i] - log_sum_exp(ln_w)))
        })
    }

    /// The StocInsert loop; `decide(j, ln_w)` picks the option for queue item `j` from the
    /// log weights (joins first, "new" last; only "new" when there is no tree yet) and returns
    /// it with its log probability.
    fn stoc_insert_impl(
        &mut self,
        kernel: &K,
        trees: &mut Vec<NodeKey>,
        queue: &[NodeKey],
        decide: impl FnMut(usize, &[f64]) -> Result<(usize, f64)>,
    ) -> Result<f64> {
        for &t in trees.iter() {
            self.check_loose(t, "stoc_insert tree")?;
        }
        let mut pairs = std::mem::take(&mut self.scratch_pairs);
        let mut weights = std::mem::take(&mut self.scratch_w);
        let result = self.stoc_insert_loop(kernel, trees, queue, &mut pairs, &mut weights, decide);
        self.scratch_pairs = pairs;
        self.scratch_w = weights;
        result
    }

    fn stoc_insert_loop(
        &mut self,
        kernel: &K,
        trees: &mut Vec<NodeKey>,
        queue: &[NodeKey],
        pairs: &mut Vec<PairStats>,
        weights: &mut Vec<f64>,
        mut decide: impl FnMut(usize, &[f64]) -> Result<(usize, f64)>,
    ) -> Result<f64> {
        let mut ln_q = 0.0;
        for (j, &x) in queue.iter().enumerate() {
            self.check_loose(x, "stoc_insert queue item")?;
            pairs.clear();
            weights.clear();
            let nx = &self.nodes[x];
            for &t in trees.iter() {
                // Two loose trees are disjoint unless they are the same tree, or one is a copy
                // of (part of) the other.
                let st = self.pair_checked(kernel, (x, nx), (t, &self.nodes[t]))?;
                pairs.push(st);
                weights.push(-st.ln_d);
            }
            weights.push(0.0);
            let (i, lp) = decide(j, weights)?;
            ln_q += lp;
            if i < trees.len() {
                let pair = self.seq_insert_with(kernel, trees[i], x, pairs[i])?;
                trees[i] = self.update(pair)?;
            } else {
                trees.push(x);
            }
        }
        Ok(ln_q)
    }
}
