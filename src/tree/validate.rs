//! Invariant checks (MATH P18, the reference's `FindError`): structure, links, sizes, keys,
//! live leaves, and every cached statistic against a fresh computation.

use slotmap::SecondaryMap;

use super::{Forest, NodeKey};
use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;
use crate::math::softplus;
use crate::prior::NrmPrior;

/// Relative tolerance of cached against fresh values (MATH P18), with an absolute floor of
/// the same size for values near zero.
const TOLERANCE: f64 = 1e-7;

fn close(cached: f64, fresh: f64) -> bool {
    if cached == fresh {
        return true;
    }
    (cached - fresh).abs() <= TOLERANCE * fresh.abs().max(1.0)
}

fn violation(msg: String) -> Error {
    Error::Numerical(format!("tree invariant violated: {msg}"))
}

impl<K: ConjugateKernel> Forest<K> {
    /// Checks the whole forest: [`Forest::validate_tree`] for every registered tree, plus
    /// the forest-wide invariants: each registry key is its tree's smallest point, every node
    /// of the arena belongs to a registered tree (no loose trees or leaked nodes), no point
    /// appears twice, every leaf is the live leaf of its point, and every live leaf is in a
    /// registered tree.
    ///
    /// Errors describe the first violation found. Cost: `O(Σ_nodes size)` statistic updates
    /// and one marginal per node (`O(n · depth)`), plus `n + 1` evaluations of `ln κ`.
    pub fn validate<P: NrmPrior>(&self, kernel: &K, prior: &P) -> Result<()> {
        let mut seen = vec![false; self.n_points()];
        let mut n_nodes = 0;
        for (&key, &root) in &self.roots {
            let node = self.get(root, "validate")?;
            if node.min_point != key || node.parent.is_some() || !node.registered {
                return Err(violation(format!(
                    "registry key {key} maps to a node with smallest point {}, parent {:?} and \
                     registered flag {}",
                    node.min_point, node.parent, node.registered
                )));
            }
            self.validate_tree(kernel, prior, root)?;
            let mut cur = Some(root);
            while let Some(k) = cur {
                n_nodes += 1;
                if let Some(p) = self.nodes[k].point {
                    if std::mem::replace(&mut seen[p], true) {
                        return Err(violation(format!("point {p} is in two registered trees")));
                    }
                    if self.live_leaf[p] != Some(k) {
                        return Err(violation(format!(
                            "the leaf of point {p} in a registered tree is not its live leaf"
                        )));
                    }
                }
                cur = self.preorder_next(k, root);
            }
        }
        let flagged = self.nodes.values().filter(|n| n.registered).count();
        if flagged != self.roots.len() {
            return Err(violation(format!(
                "{flagged} nodes are flagged as registered roots, but {} trees are registered",
                self.roots.len()
            )));
        }
        if n_nodes != self.nodes.len() {
            return Err(violation(format!(
                "{} of the arena's {} nodes are not in a registered tree",
                self.nodes.len() - n_nodes,
                self.nodes.len()
            )));
        }
        if let Some(p) = (0..self.n_points()).find(|&p| self.live_leaf[p].is_some() && !seen[p]) {
            return Err(violation(format!(
                "point {p} has a live leaf outside the registered trees"
            )));
        }
        Ok(())
    }

    /// Checks the tree under `top` (registered or loose): parent and child links agree,
    /// leaves have a point (no point twice) and `ln d = -∞`, internal nodes have none, sizes and smallest
    /// points add up, each statistic counts the node's points and gives the same marginal as
    /// the batch statistic of those points, and `ln κ`, `ℓm`, `ℓh`, `ln d`, `ln φ` equal a
    /// fresh bottom-up computation from the data and the current `prior` within 1e-7
    /// relative (MATH P18). This also catches a forgotten [`Forest::recompute`] after a
    /// hyperparameter change.
    ///
    /// Cost: as [`Forest::validate`], for the one tree.
    pub fn validate_tree<P: NrmPrior>(&self, kernel: &K, prior: &P, top: NodeKey) -> Result<()> {
        self.get(top, "validate_tree")?;
        for s in 0..self.ln_kappa.len() {
            let fresh = prior.ln_kappa(s);
            if !close(self.ln_kappa[s], fresh) {
                return Err(violation(format!(
                    "cached ln kappa({s}) = {} but the prior gives {fresh}: call \
                     Forest::recompute after every hyperparameter update",
                    self.ln_kappa[s]
                )));
            }
        }
        let mut order = Vec::new();
        self.collect_preorder(top, &mut order);
        let mut seen = vec![false; self.n_points()];
        for &k in &order {
            if let Some(p) = self.nodes[k].point {
                if p < seen.len() && std::mem::replace(&mut seen[p], true) {
                    return Err(violation(format!(
                        "point {p} has two leaves in the tree under {top:?}"
                    )));
                }
            }
        }
        let mut fresh_phi: SecondaryMap<NodeKey, f64> = SecondaryMap::with_capacity(order.len());
        let mut points = Vec::new();
        for &k in order.iter().rev() {
            let node = &self.nodes[k];
            let at = || format!("node {k:?} (smallest point {})", node.min_point);
            if let Some(p) = node.parent {
                let links = self.nodes.get(p).and_then(|pn| pn.children);
                if !links.is_some_and(|c| c.contains(&k)) {
                    return Err(violation(format!("{} is not a child of its parent", at())));
                }
            } else if k != top {
                return Err(violation(format!("{} has no parent inside the tree", at())));
            }
            let (size, min_point) = match (node.point, node.children) {
                (Some(p), None) => {
                    if p >= self.n_points() {
                        return Err(violation(format!("{} holds point {p} out of range", at())));
                    }
                    if node.ln_d != f64::NEG_INFINITY {
                        return Err(violation(format!("leaf {} has ln d = {}", at(), node.ln_d)));
                    }
                    (1, p)
                }
                (None, Some([l, r])) => {
                    for c in [l, r] {
                        if self.nodes.get(c).and_then(|cn| cn.parent) != Some(k) {
                            return Err(violation(format!(
                                "a child of {} does not link back to it",
                                at()
                            )));
                        }
                    }
                    if l == r {
                        return Err(violation(format!("{} has the same child twice", at())));
                    }
                    let (nl, nr) = (&self.nodes[l], &self.nodes[r]);
                    (nl.size + nr.size, nl.min_point.min(nr.min_point))
                }
                _ => {
                    return Err(violation(format!(
                        "{} must be either a leaf with a point or internal with two children",
                        at()
                    )))
                }
            };
            if node.size != size || node.min_point != min_point {
                return Err(violation(format!(
                    "{} records size {} and smallest point {}, its children give {size} and \
                     {min_point}",
                    at(),
                    node.size,
                    node.min_point
                )));
            }
            if kernel.count(&node.stat) != size {
                return Err(violation(format!(
                    "the statistic of {} counts {} points, the node has {size}",
                    at(),
                    kernel.count(&node.stat)
                )));
            }
            self.points(k, &mut points)?;
            let fresh_m = kernel.ln_marginal(&kernel.stat_of(&points));
            let fresh_kappa = prior.ln_kappa(size);
            let fresh_h = fresh_kappa + fresh_m;
            let fresh_d = match node.children {
                Some([l, r]) => fresh_phi[l] + fresh_phi[r] - fresh_h,
                None => f64::NEG_INFINITY,
            };
            let phi = fresh_h + softplus(fresh_d);
            fresh_phi.insert(k, phi);
            let checks = [
                (
                    "ln m of the statistic",
                    kernel.ln_marginal(&node.stat),
                    fresh_m,
                ),
                ("ln m", node.ln_marginal, fresh_m),
                ("ln kappa", node.ln_kappa, fresh_kappa),
                ("ln h", node.ln_h, fresh_h),
                ("ln d", node.ln_d, fresh_d),
                ("ln phi", node.ln_phi, phi),
            ];
            for (what, cached, fresh) in checks {
                if !close(cached, fresh) {
                    return Err(violation(format!(
                        "{}: cached {what} = {cached}, fresh = {fresh}",
                        at()
                    )));
                }
            }
        }
        Ok(())
    }
}
