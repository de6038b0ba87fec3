//! The IBHC tree engine's operations (MATH §3.1, §3.4, P16-P18): golden SeqInsert placements
//! and `ln d` values computed by hand, potentials against their definition as a sum over
//! tree-consistent partitions, the three cases of Detach, stale-cache detection, bad input,
//! and `validate()` after every step of random operation sequences on both kernels.

use crate::tree_support;

use std::sync::Arc;

use nrmm::data::DenseData;
use nrmm::kernel::{ConjugateKernel, NormalWishart, NwHyper};
use nrmm::math::softplus;
use nrmm::prior::{Dp, Nggp, NrmPrior, Prior};
use nrmm::rng::SeedPlan;
use nrmm::sampler::{Chooser, RngChooser};
use nrmm::tree::{Candidates, Forest, IbhcMode, NewickInfo, NodeKey, StocChoice};
use proptest::prelude::*;
use statrs::function::gamma::ln_gamma;
use tree_support::*;

// ---------------------------------------------------------------------------------------------
// Golden values by hand.

/// The 1-D Normal-Wishart prior of the golden tests: ξ = 0, Ψ = 0.5, r = 0.5, ν = 3.
const PSI: f64 = 0.5;
const R: f64 = 0.5;
const NU: f64 = 3.0;

fn golden_kernel(xs: &[f64]) -> NormalWishart {
    let rows: Vec<Vec<f64>> = xs.iter().map(|&x| vec![x]).collect();
    let data = DenseData::from_rows(&rows).unwrap();
    let hyper = NwHyper::new(vec![0.0], vec![PSI], R, NU).unwrap();
    NormalWishart::new(Arc::new(data), hyper).unwrap()
}

/// MATH §2.1 for d = 1 and ξ = 0, written out: `ℓm(S) = -n/2 ln π + ½ ln(r / r_n)
/// + ν/2 ln Ψ - ν_n/2 ln Ψ_n + ln Γ(ν_n/2) - ln Γ(ν/2)` with
/// `Ψ_n = Ψ + Σ (x - x̄)² + r n / (r + n) x̄²`.
fn hand_ln_m(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let scatter: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    let psi_n = PSI + scatter + R * n / (R + n) * mean * mean;
    let (r_n, nu_n) = (R + n, NU + n);
    -0.5 * n * std::f64::consts::PI.ln() + 0.5 * (R.ln() - r_n.ln()) + 0.5 * NU * PSI.ln()
        - 0.5 * nu_n * psi_n.ln()
        + ln_gamma(0.5 * nu_n)
        - ln_gamma(0.5 * NU)
}

/// `ℓh(S)` under the DP with α = 1: `ln κ(n) = ln Γ(n)` (MATH §1.5).
fn hand_ln_h(xs: &[f64]) -> f64 {
    ln_gamma(xs.len() as f64) + hand_ln_m(xs)
}

/// `ln d(A, B) = ln φ(A) + ln φ(B) - ℓh(A ∪ B)` and `ln φ(S) = ℓh(S) + softplus(ln d(S))`
/// (MATH §3.1).
fn hand_d(phi_a: f64, phi_b: f64, union: &[f64]) -> f64 {
    phi_a + phi_b - hand_ln_h(union)
}

fn hand_phi(union: &[f64], ln_d: f64) -> f64 {
    hand_ln_h(union) + softplus(ln_d)
}

fn children(f: &Forest<NormalWishart>, k: NodeKey) -> [NodeKey; 2] {
    f.node(k).unwrap().children().unwrap()
}

fn assert_near(what: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-10 * want.abs().max(1.0),
        "{what}: got {got}, computed by hand {want}"
    );
}

/// Points -1, 1, 0, 6. `{-1, 1}` joined; 0 is inserted and, equidistant from both children
/// (an exact tie), descends to the right child; then the tree is inserted into the leaf 6
/// (swap rule) and stops at the root, which is far better joined than split by 6.
#[test]
fn golden_seq_insert_tie_to_the_right_and_swap_rule() {
    let xs = [-1.0, 1.0, 0.0, 6.0];
    let kernel = golden_kernel(&xs);
    let prior = Dp::new(1.0).unwrap();
    let mut f = Forest::new(&kernel, &prior);
    let [a, b, c, e] = [0, 1, 2, 3].map(|i| f.make_leaf(&kernel, i).unwrap());
    let h = |s: &[f64]| hand_ln_h(s);

    let ab = f.join(&kernel, a, b).unwrap();
    let d_ab = hand_d(h(&[-1.0]), h(&[1.0]), &[-1.0, 1.0]);
    assert_near("ln d({-1}, {1})", f.node(ab).unwrap().ln_d(), d_ab);

    // Descent at {-1, 1} when inserting 0: d(l, r) is not below both d(l, x) and d(r, x), and
    // d(l, x) = d(r, x) exactly, so the right child {1} takes the pair.
    let d_ac = hand_d(h(&[-1.0]), h(&[0.0]), &[-1.0, 0.0]);
    let d_bc = hand_d(h(&[1.0]), h(&[0.0]), &[1.0, 0.0]);
    assert_eq!(d_ac, d_bc);
    assert!(d_ab >= d_ac);
    assert_eq!(
        f.ln_d_pair(&kernel, a, c).unwrap(),
        f.ln_d_pair(&kernel, b, c).unwrap()
    );
    let pair = f.seq_insert(&kernel, ab, c).unwrap();
    assert_eq!(f.update(pair).unwrap(), ab, "the root stays the root");
    assert_eq!(children(&f, pair), [b, c]);
    assert_eq!(
        children(&f, ab),
        [pair, a],
        "the new pair becomes the first child"
    );
    assert_near("ln d({1}, {0})", f.node(pair).unwrap().ln_d(), d_bc);
    let phi_bc = hand_phi(&[1.0, 0.0], d_bc);
    let d_root = hand_d(phi_bc, h(&[-1.0]), &[-1.0, 1.0, 0.0]);
    assert_near("ln d of the root", f.node(ab).unwrap().ln_d(), d_root);
    f.validate_tree(&kernel, &prior, ab).unwrap();

    // Swap rule: the target is the leaf 6, so the descent runs in the tree with 6 as the item;
    // at its root d(l, r) is below both d(l, 6) and d(r, 6): the pair is made at the root.
    let phi_root = hand_phi(&[-1.0, 1.0, 0.0], d_root);
    let d_l6 = hand_d(phi_bc, h(&[6.0]), &[1.0, 0.0, 6.0]);
    let d_r6 = hand_d(h(&[-1.0]), h(&[6.0]), &[-1.0, 6.0]);
    assert!(d_root < d_l6 && d_root < d_r6);
    let top = f.seq_insert(&kernel, e, ab).unwrap();
    assert_eq!(f.update(top).unwrap(), top);
    assert_eq!(children(&f, top), [ab, e]);
    let d_top = hand_d(phi_root, h(&[6.0]), &xs);
    assert_near("ln d of the new root", f.node(top).unwrap().ln_d(), d_top);
    assert_near(
        "ln phi of the new root",
        f.node(top).unwrap().ln_phi(),
        hand_phi(&xs, d_top),
    );
    f.register_root(top).unwrap();
    f.validate(&kernel, &prior).unwrap();
    assert_eq!(f.to_newick(NewickInfo::Topology), "(((1,2),0),3);\n");
}

/// Points -1, 1, 0, 0.5. After `((1,0),-1)` is built as above, 0.5 descends left into
/// `{1, 0}` (it is much closer to it than to -1), then left again to the leaf 1, which it is
/// closer to than the leaf 0 once the prior mean at 0 is taken into account.
#[test]
fn golden_seq_insert_left_descent() {
    let xs = [-1.0, 1.0, 0.0, 0.5];
    let kernel = golden_kernel(&xs);
    let prior = Dp::new(1.0).unwrap();
    let mut f = Forest::new(&kernel, &prior);
    let [a, b, c, x] = [0, 1, 2, 3].map(|i| f.make_leaf(&kernel, i).unwrap());
    let h = |s: &[f64]| hand_ln_h(s);
    let ab = f.join(&kernel, a, b).unwrap();
    let p = f.seq_insert(&kernel, ab, c).unwrap();
    f.update(p).unwrap();
    f.register_root(ab).unwrap();

    let d_bc = hand_d(h(&[1.0]), h(&[0.0]), &[1.0, 0.0]);
    let phi_bc = hand_phi(&[1.0, 0.0], d_bc);
    let d_root = hand_d(phi_bc, h(&[-1.0]), &[-1.0, 1.0, 0.0]);
    // At the root (children {1,0} and {-1}):
    let d_lx = hand_d(phi_bc, h(&[0.5]), &[1.0, 0.0, 0.5]);
    let d_rx = hand_d(h(&[-1.0]), h(&[0.5]), &[-1.0, 0.5]);
    assert!(!(d_root < d_lx && d_root < d_rx), "no pair at the root");
    assert!(d_lx < d_rx, "descend left");
    // At {1, 0} (children {1} and {0}):
    let d_bx = hand_d(h(&[1.0]), h(&[0.5]), &[1.0, 0.5]);
    let d_cx = hand_d(h(&[0.0]), h(&[0.5]), &[0.0, 0.5]);
    assert!(!(d_bc < d_bx && d_bc < d_cx), "no pair at {{1, 0}}");
    assert!(d_bx < d_cx, "descend left");

    let pair = f.seq_insert(&kernel, ab, x).unwrap();
    assert_eq!(f.update(pair).unwrap(), ab);
    assert_eq!(children(&f, pair), [b, x]);
    assert_eq!(children(&f, p), [pair, c]);
    assert_eq!(children(&f, ab), [p, a]);
    assert_eq!(f.to_newick(NewickInfo::Topology), "(((1,3),2),0);\n");

    let phi_bx = hand_phi(&[1.0, 0.5], d_bx);
    let d_p = hand_d(phi_bx, h(&[0.0]), &[1.0, 0.5, 0.0]);
    let phi_p = hand_phi(&[1.0, 0.5, 0.0], d_p);
    let d_top = hand_d(phi_p, h(&[-1.0]), &xs);
    assert_near("ln d({1}, {0.5})", f.node(pair).unwrap().ln_d(), d_bx);
    assert_near("ln d({1, 0.5}, {0})", f.node(p).unwrap().ln_d(), d_p);
    assert_near("ln d of the root", f.node(ab).unwrap().ln_d(), d_top);
    f.validate(&kernel, &prior).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Potentials and their definition.

fn check_phi_definition<K: ConjugateKernel, P: NrmPrior>(f: &Forest<K>, kernel: &K, prior: &P) {
    for root in f.roots() {
        for k in f.subtree(root).unwrap() {
            let cached = f.node(k).unwrap().ln_phi();
            let defined = ln_phi_by_enumeration(f, kernel, prior, k);
            assert!(
                close(cached, defined, 1e-10),
                "ln phi = {cached}, sum over tree-consistent partitions = {defined}"
            );
        }
    }
}

#[test]
fn potentials_are_sums_over_tree_consistent_partitions() {
    let nw = nw_kernel(&data_b());
    let md = md_kernel(8, &docs(), 0.3);
    let priors: [Prior; 2] = [
        Dp::new(0.8).unwrap().into(),
        Nggp::fixed(1.3, 0.35, 2.5).unwrap().into(),
    ];
    for (s, prior) in priors.iter().enumerate() {
        for seed in 0..6 {
            let mut rng = SeedPlan::new(seed).chain(s as u64);
            for mode in [IbhcMode::Exact, IbhcMode::Noisy] {
                let f = Forest::ibhc(&nw, prior, mode, &mut RngChooser::new(&mut rng)).unwrap();
                check_phi_definition(&f, &nw, prior);
                let f = Forest::ibhc(&md, prior, mode, &mut RngChooser::new(&mut rng)).unwrap();
                check_phi_definition(&f, &md, prior);
            }
            // One tree over all points, so every potential covers deep trees too.
            let mut f = Forest::new(&nw, prior);
            let root = f.build_tree(&nw, &[3, 0, 6, 1, 5, 2, 4]).unwrap();
            f.register_root(root).unwrap();
            check_phi_definition(&f, &nw, prior);
            assert_eq!(tree_consistent(&f, root).len(), {
                // Count by the recursion N(S) = 1 + N(L) N(R).
                fn count(f: &Forest<NormalWishart>, k: NodeKey) -> usize {
                    match f.node(k).unwrap().children() {
                        Some([l, r]) => 1 + count(f, l) * count(f, r),
                        None => 1,
                    }
                }
                count(&f, root)
            });
        }
    }
}

#[test]
fn recompute_refreshes_theta_caches_and_bumps_the_epoch() {
    let kernel = nw_kernel(&data_b());
    let p0: Prior = Nggp::fixed(1.0, 0.3, 1.0).unwrap().into();
    let p1: Prior = Nggp::fixed(2.0, 0.6, 4.0).unwrap().into();
    let mut rng = SeedPlan::new(3).chain(0);
    let mut f = Forest::ibhc(
        &kernel,
        &p0,
        IbhcMode::Exact,
        &mut RngChooser::new(&mut rng),
    )
    .unwrap();
    let ln_m: Vec<f64> = f
        .roots()
        .map(|r| f.node(r).unwrap().ln_marginal())
        .collect();
    assert_eq!(f.epoch(), 0);
    let stale = f.validate(&kernel, &p1).unwrap_err().to_string();
    assert!(stale.contains("recompute"), "{stale}");
    f.recompute(&p1);
    assert_eq!(f.epoch(), 1);
    f.validate(&kernel, &p1).unwrap();
    check_phi_definition(&f, &kernel, &p1);
    let after: Vec<f64> = f
        .roots()
        .map(|r| f.node(r).unwrap().ln_marginal())
        .collect();
    assert_eq!(ln_m, after, "ln m does not depend on the hyperparameters");
}

// ---------------------------------------------------------------------------------------------
// Detach, Destroy, staleness, errors.

/// A fixed tree `((((0,1),2),3),4)` over data set B, built by joins.
fn chain_tree(f: &mut Forest<NormalWishart>, kernel: &NormalWishart) -> Vec<NodeKey> {
    let leaves: Vec<NodeKey> = (0..5).map(|i| f.make_leaf(kernel, i).unwrap()).collect();
    let mut top = leaves[0];
    for &l in &leaves[1..] {
        top = f.join(kernel, top, l).unwrap();
    }
    f.register_root(top).unwrap();
    leaves
}

#[test]
fn detach_covers_its_three_cases() {
    let kernel = nw_kernel(&data_b()[..5]);
    let prior = Dp::new(1.0).unwrap();
    let mut f = Forest::new(&kernel, &prior);
    let leaves = chain_tree(&mut f, &kernel);

    // Case 3: the parent of 1 is not the root: 0 is spliced in its place, ancestors shrink.
    f.detach_leaf(&kernel, leaves[1]).unwrap();
    f.register_root(leaves[1]).unwrap();
    f.validate(&kernel, &prior).unwrap();
    assert_eq!(f.to_newick(NewickInfo::Topology), "(((0,2),3),4);\n1;\n");

    // Case 2: the parent of 4 is the root: the sibling becomes the registered root.
    f.detach_leaf(&kernel, leaves[4]).unwrap();
    f.register_root(leaves[4]).unwrap();
    f.validate(&kernel, &prior).unwrap();
    assert_eq!(f.to_newick(NewickInfo::Topology), "((0,2),3);\n1;\n4;\n");

    // Case 1: a leaf that is a root leaves the registry.
    f.detach_leaf(&kernel, leaves[1]).unwrap();
    assert!(!f.is_registered(leaves[1]));
    assert!(
        f.validate(&kernel, &prior).is_err(),
        "a loose leaf is reported"
    );
    let first = f.roots().next().unwrap();
    f.insert(&kernel, first, leaves[1]).unwrap();
    f.validate(&kernel, &prior).unwrap();
    assert_eq!(f.n_roots(), 2);
}

#[test]
fn destroy_queues_siblings_bottom_up() {
    let kernel = nw_kernel(&data_b()[..5]);
    let prior = Dp::new(1.0).unwrap();
    let mut f = Forest::new(&kernel, &prior);
    let leaves = chain_tree(&mut f, &kernel);
    let mut queue = Vec::new();
    f.destroy(leaves[1], &mut queue).unwrap();
    assert_eq!(queue, vec![leaves[0], leaves[2], leaves[3], leaves[4]]);
    assert!(
        f.is_registered(leaves[1]),
        "the registration passes to the destroyed node"
    );
    assert_eq!(f.n_nodes(), 5, "all four ancestors are deleted");
    for q in queue {
        f.register_root(q).unwrap();
    }
    f.validate(&kernel, &prior).unwrap();
    assert_eq!(f.labels().unwrap(), vec![0, 1, 2, 3, 4]);
}

#[test]
fn traversals_lca_and_copies() {
    let kernel = nw_kernel(&data_b());
    let prior = Dp::new(1.0).unwrap();
    let mut f = Forest::new(&kernel, &prior);
    let leaves = chain_tree(&mut f, &kernel);
    let root = f.roots().next().unwrap();
    let mut bfs = Vec::new();
    f.leaves_bfs(root, &mut bfs).unwrap();
    assert_eq!(
        bfs,
        vec![leaves[4], leaves[3], leaves[2], leaves[0], leaves[1]]
    );
    let mut pts = Vec::new();
    f.points(root, &mut pts).unwrap();
    assert_eq!(pts, vec![0, 1, 2, 3, 4]);
    assert_eq!(f.subtree(root).unwrap().len(), 9);
    assert_eq!(f.root_of(leaves[1]).unwrap(), root);
    let p01 = f.node(leaves[0]).unwrap().parent().unwrap();
    assert_eq!(f.lca(leaves[0], leaves[1]).unwrap(), Some(p01));
    assert_eq!(f.lca(leaves[1], leaves[4]).unwrap(), Some(root));
    assert_eq!(f.lca(leaves[2], leaves[2]).unwrap(), Some(leaves[2]));
    let x = f.make_leaf(&kernel, 5).unwrap();
    assert_eq!(f.lca(leaves[0], x).unwrap(), None);
    assert_eq!(f.leaf_of(5), Some(x));

    // A copy has shadow leaves until adopted; deleting the original and adopting the copy
    // restores an identical forest.
    let before = f.to_newick(NewickInfo::LnD);
    f.unregister_root(root).unwrap();
    let copy = f.copy_tree(root).unwrap();
    assert_eq!(
        f.leaf_of(0),
        Some(leaves[0]),
        "the copy's leaves are shadows"
    );
    f.delete_tree(root).unwrap();
    assert_eq!(f.leaf_of(0), None);
    f.adopt_leaves(copy).unwrap();
    f.register_root(copy).unwrap();
    f.delete_tree(x).unwrap();
    assert_eq!(f.to_newick(NewickInfo::LnD), before);
    f.validate(&kernel, &prior).unwrap();
    assert_eq!(f.n_nodes(), 9);
}

#[test]
fn seq_insert_leaves_ancestors_stale_until_update() {
    let kernel = nw_kernel(&data_b());
    let prior = Dp::new(1.0).unwrap();
    let mut f = Forest::new(&kernel, &prior);
    // Descent is forced by a root whose children are far apart: {0,1,2} vs {3,4,6}; point 5
    // sits between them.
    let left = f.build_tree(&kernel, &[0, 1, 2]).unwrap();
    let right = f.build_tree(&kernel, &[3, 4, 6]).unwrap();
    let root = f.join(&kernel, left, right).unwrap();
    f.register_root(root).unwrap();
    let x = f.make_leaf(&kernel, 5).unwrap();
    let pair = f.seq_insert(&kernel, root, x).unwrap();
    assert!(
        f.node(pair).unwrap().parent().is_some(),
        "5 descends below the root"
    );
    assert!(
        f.node(root).unwrap().ln_d().is_nan(),
        "stale ln d is flagged"
    );
    assert!(f.validate(&kernel, &prior).is_err());
    assert_eq!(f.update(pair).unwrap(), root);
    f.validate(&kernel, &prior).unwrap();
}

#[test]
fn bad_input_is_an_error() {
    let kernel = nw_kernel(&data_b());
    let prior = Dp::new(1.0).unwrap();
    let mut f = Forest::new(&kernel, &prior);
    assert!(f.make_leaf(&kernel, 7).is_err());
    let a = f.make_leaf(&kernel, 0).unwrap();
    let b = f.make_leaf(&kernel, 1).unwrap();
    assert!(f.pair_stats(&kernel, a, a).is_err());
    let ab = f.join(&kernel, a, b).unwrap();
    assert!(f.join(&kernel, a, ab).is_err(), "a has a parent");
    assert!(f.detach_leaf(&kernel, ab).is_err(), "not a leaf");
    assert!(f.split_root(a).is_err(), "not a root");
    f.register_root(ab).unwrap();
    assert!(f.register_root(ab).is_err(), "already registered");
    let c = f.make_leaf(&kernel, 2).unwrap();
    assert!(
        f.seq_insert(&kernel, c, ab).is_err(),
        "the item must be loose"
    );
    let copy = f.copy_tree(ab).unwrap();
    assert!(f.register_root(copy).is_err(), "overlaps a registered tree");
    assert!(
        f.ln_prob_sub(ab, c, Candidates::AllNodes).is_err(),
        "not in the subtree"
    );
    let mut trees = vec![];
    assert!(f
        .stoc_insert_replay(&kernel, &mut trees, &[c], &[StocChoice::Join(0)])
        .is_err());
    assert!(f.build_tree(&kernel, &[]).is_err());
    let mut trees = vec![];
    let mut choices = vec![];
    let mut rng = SeedPlan::new(0).chain(0);
    let twice = [c, c];
    assert!(
        f.stoc_insert(
            &kernel,
            &mut trees,
            &twice,
            &mut RngChooser::new(&mut rng),
            &mut choices
        )
        .is_err(),
        "a queued tree cannot be inserted twice"
    );
    assert_eq!(trees, vec![c], "the first copy was placed");
    assert!(
        f.stoc_insert(
            &kernel,
            &mut trees,
            &[c],
            &mut RngChooser::new(&mut rng),
            &mut choices
        )
        .is_err(),
        "a tree cannot be queued against itself"
    );
    assert!(
        f.build_tree(&kernel, &[3, 4, 3]).is_err(),
        "a repeated point"
    );
    let shadow = f.copy_tree(c).unwrap();
    let twice = f.join(&kernel, c, shadow).unwrap();
    assert!(
        f.validate_tree(&kernel, &prior, twice).is_err(),
        "point 2 twice"
    );
    f.split_root(twice).unwrap();
    f.delete_tree(shadow).unwrap();
    f.delete_tree(copy).unwrap();
    f.delete_tree(c).unwrap();
    f.split_root(ab).unwrap();
    assert_eq!(f.n_roots(), 0);
    f.register_root(a).unwrap();
    f.register_root(b).unwrap();
    assert!(f.labels().is_err(), "points 2..7 are in no tree");
    for i in 2..7 {
        let l = f.make_leaf(&kernel, i).unwrap();
        f.register_root(l).unwrap();
    }
    f.validate(&kernel, &prior).unwrap();
    // A deleted node's key is unknown, never aliased.
    assert!(f.node(ab).is_none());
    assert!(f.root_of(ab).is_err());
}

// ---------------------------------------------------------------------------------------------
// Random operation sequences.

/// The priors a run cycles through on `recompute`.
fn priors() -> Vec<Prior> {
    vec![
        Dp::new(1.0).unwrap().into(),
        Nggp::fixed(1.5, 0.3, 2.0).unwrap().into(),
        Dp::new(0.2).unwrap().into(),
        Nggp::fixed(0.7, 0.6, 0.4).unwrap().into(),
    ]
}

/// The state of a random-operation run: the forest's prior (cycled by recomputes) and stream.
struct Run {
    priors: Vec<Prior>,
    which: usize,
    prior: Prior,
    rng: nrmm::rng::NrmmRng,
    choices: Vec<StocChoice>,
}

impl Run {
    fn new(seed: u64) -> Self {
        let priors = priors();
        let prior = priors[0].clone();
        Run {
            priors,
            which: 0,
            prior,
            rng: SeedPlan::new(seed).chain(0),
            choices: Vec::new(),
        }
    }

    fn forest<K: ConjugateKernel>(&mut self, kernel: &K) -> Forest<K> {
        Forest::ibhc(
            kernel,
            &self.prior,
            IbhcMode::Exact,
            &mut RngChooser::new(&mut self.rng),
        )
        .unwrap()
    }
}

/// Runs `ops` on an exact-IBHC forest and validates the forest after every step. Each
/// operation takes its fixed picks from the operation's number `r`; random decisions of
/// SampleSub, StocInsert and the build go through an `RngChooser`.
fn exercise<K: ConjugateKernel>(kernel: &K, ops: &[(u8, u64)], seed: u64) {
    let mut run = Run::new(seed);
    let mut f = run.forest(kernel);
    f.validate(kernel, &run.prior).unwrap();
    let n = kernel.n_points();
    for (step, &(op, r)) in ops.iter().enumerate() {
        apply(&mut f, kernel, &mut run, op, r);
        f.validate(kernel, &run.prior)
            .unwrap_or_else(|e| panic!("after step {step} (operation {}): {e}", op % 8));
        let labels = f.labels().unwrap();
        assert_eq!(labels.len(), n);
    }
}

/// Everything a forest holds, node by node under its keys (statistics by their exact debug
/// form), with the live leaves, the registry and the epoch.
fn fingerprint<K: ConjugateKernel>(f: &Forest<K>) -> String {
    let mut out = format!("epoch {} nodes {}\n", f.epoch(), f.n_nodes());
    for root in f.roots() {
        for k in f.subtree(root).unwrap() {
            out += &format!("{k:?} {:?}\n", f.node(k).unwrap());
        }
    }
    for i in 0..f.n_points() {
        out += &format!("{:?} ", f.leaf_of(i));
    }
    out
}

/// Runs `ops` in groups of up to three under undo records: each group is rolled back (the
/// forest must then be exactly what it was, bit for bit and key for key) or committed (the
/// forest must then pass every invariant, with no node left over).
fn exercise_undo<K: ConjugateKernel>(kernel: &K, ops: &[(u8, u64)], seed: u64) {
    let mut run = Run::new(seed);
    let mut f = run.forest(kernel);
    for group in ops.chunks(3) {
        let before = fingerprint(&f);
        let (which, prior) = (run.which, run.prior.clone());
        f.begin_undo().unwrap();
        assert!(f.begin_undo().is_err(), "a second record while one is open");
        for &(op, r) in group {
            apply(&mut f, kernel, &mut run, op, r);
        }
        assert!(f.is_recording());
        if group[0].1.is_multiple_of(2) {
            f.rollback();
            (run.which, run.prior) = (which, prior);
            assert_eq!(fingerprint(&f), before);
        } else {
            f.commit();
        }
        assert!(!f.is_recording());
        f.validate(kernel, &run.prior).unwrap();
    }
}

/// One random operation (see [`exercise`]).
fn apply<K: ConjugateKernel>(f: &mut Forest<K>, kernel: &K, run: &mut Run, op: u8, r: u64) {
    let n = kernel.n_points();
    let choices = &mut run.choices;
    let priors = &run.priors;
    let (which, prior) = (&mut run.which, &mut run.prior);
    {
        let roots: Vec<NodeKey> = f.roots().collect();
        let pick = |m: usize, salt: u64| ((r / (salt + 1)) % m as u64) as usize;
        let mut ch = RngChooser::new(&mut run.rng);
        match op % 8 {
            0 => {
                let leaf = f.leaf_of(pick(n, 0)).unwrap();
                f.detach_leaf(kernel, leaf).unwrap();
                let roots: Vec<NodeKey> = f.roots().collect();
                let t = pick(roots.len() + 1, 6);
                if t == roots.len() {
                    f.register_root(leaf).unwrap();
                } else {
                    f.insert(kernel, roots[t], leaf).unwrap();
                }
            }
            1 => {
                let nodes = f.subtree(roots[pick(roots.len(), 0)]).unwrap();
                let mut queue = Vec::new();
                f.destroy(nodes[pick(nodes.len(), 4)], &mut queue).unwrap();
                f.sequential_insert(kernel, queue, IbhcMode::Exact).unwrap();
            }
            2 => {
                *which = (*which + 1) % priors.len();
                *prior = priors[*which].clone();
                assert!(
                    f.validate(kernel, &*prior).is_err(),
                    "stale caches go unnoticed"
                );
                f.recompute(&*prior);
            }
            3 => {
                let top = roots[pick(roots.len(), 0)];
                for cand in [Candidates::AllNodes, Candidates::InternalNodes] {
                    let (v, lp) = f.sample_sub(top, cand, &mut ch).unwrap();
                    let rev = f.ln_prob_sub(top, v, cand).unwrap();
                    assert!(close(rev, lp, 1e-12), "reverse {rev} vs forward {lp}");
                }
            }
            4 => {
                let big: Vec<NodeKey> = roots
                    .iter()
                    .copied()
                    .filter(|&k| f.node(k).unwrap().size() >= 2)
                    .collect();
                if big.is_empty() {
                    return;
                }
                let c = big[pick(big.len(), 0)];
                f.unregister_root(c).unwrap();
                let copy = f.copy_tree(c).unwrap();
                let (a, _) = f.sample_sub(c, Candidates::InternalNodes, &mut ch).unwrap();
                let mut queue = Vec::new();
                f.destroy(a, &mut queue).unwrap();
                let mut trees = f.split_root(a).unwrap().to_vec();
                f.stoc_insert(kernel, &mut trees, &queue, &mut ch, choices)
                    .unwrap();
                assert!(trees.len() >= 2);
                for &t in &trees {
                    f.validate_tree(kernel, &*prior, t).unwrap();
                }
                if r.is_multiple_of(2) {
                    f.delete_tree(copy).unwrap();
                    for t in trees {
                        f.register_root(t).unwrap();
                    }
                } else {
                    for t in trees {
                        f.delete_tree(t).unwrap();
                    }
                    f.adopt_leaves(copy).unwrap();
                    f.register_root(copy).unwrap();
                }
            }
            5 => {
                if roots.len() < 2 {
                    return;
                }
                let i = pick(roots.len(), 0);
                let j = (i + 1 + pick(roots.len() - 1, 2)) % roots.len();
                f.unregister_root(roots[i]).unwrap();
                f.unregister_root(roots[j]).unwrap();
                let p = f.join(kernel, roots[i], roots[j]).unwrap();
                f.register_root(p).unwrap();
            }
            6 => {
                let leaf = f.leaf_of(pick(n, 0)).unwrap();
                f.detach_leaf(kernel, leaf).unwrap();
                let roots: Vec<NodeKey> = f.roots().collect();
                let mut queue = vec![leaf];
                if !roots.is_empty() {
                    queue.clear();
                    f.insert_with_destroy(kernel, roots[pick(roots.len(), 3)], leaf, &mut queue)
                        .unwrap();
                }
                let mode = if r.is_multiple_of(3) {
                    IbhcMode::Noisy
                } else {
                    IbhcMode::Exact
                };
                f.sequential_insert(kernel, queue, mode).unwrap();
            }
            _ => f.greedy_merge(kernel).unwrap(),
        }
    }
}

fn nw_data() -> impl Strategy<Value = Vec<Vec<f64>>> {
    prop::collection::vec(prop::collection::vec(-2.0f64..2.0, 2), 4..=8)
}

fn md_data() -> impl Strategy<Value = Vec<Vec<(u32, u32)>>> {
    prop::collection::vec(prop::collection::vec((0u32..6, 1u32..4), 1..4), 3..=8)
}

fn op_sequence() -> impl Strategy<Value = Vec<(u8, u64)>> {
    prop::collection::vec((0u8..8, any::<u64>()), 1..40)
}

/// Where SeqInsert of the leaf `x` into the tree of `target` pairs it, by the rule of MATH
/// §3.4 with both children weighed at every level (the engine may skip one by a bound).
fn two_sided_descent<K: ConjugateKernel>(
    f: &Forest<K>,
    kernel: &K,
    target: NodeKey,
    x: NodeKey,
) -> NodeKey {
    let mut nd = target;
    while let Some([l, r]) = f.node(nd).unwrap().children() {
        let d0 = f.ln_d_pair(kernel, l, x).unwrap();
        let d1 = f.ln_d_pair(kernel, r, x).unwrap();
        let ln_d = f.node(nd).unwrap().ln_d();
        if ln_d < d0 && ln_d < d1 {
            break;
        }
        nd = if d0 < d1 { l } else { r };
    }
    nd
}

/// Leaves inserted one by one into a growing tree land where the two-sided rule puts them,
/// on data sets whose trees are deep enough for the bound to skip many weighings.
fn check_descents<K: ConjugateKernel>(kernel: &K, n: usize, order: &[usize]) {
    let prior = Dp::new(1.0).unwrap();
    let mut f = Forest::new(kernel, &prior);
    let mut root = f.make_leaf(kernel, order[0]).unwrap();
    for &i in &order[1..n] {
        let x = f.make_leaf(kernel, i).unwrap();
        let want = two_sided_descent(&f, kernel, root, x);
        // A leaf target swaps roles (the descent runs in the item); only trees are checked.
        let internal = f.node(root).unwrap().children().is_some();
        let pair = f.seq_insert(kernel, root, x).unwrap();
        if internal {
            assert_eq!(f.node(pair).unwrap().children().unwrap(), [want, x]);
        }
        root = f.update(pair).unwrap();
        f.validate_tree(kernel, &prior, root).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn seq_insert_places_as_the_two_sided_rule(
        rows in prop::collection::vec(prop::collection::vec(-2.0f64..2.0, 2), 6..=24),
        docs in md_data(),
        seed in any::<u64>(),
    ) {
        let mut order: Vec<usize> = (0..rows.len()).collect();
        let mut rng = SeedPlan::new(seed).chain(0);
        let mut chooser = RngChooser::new(&mut rng);
        for i in (1..order.len()).rev() {
            order.swap(i, chooser.choose_uniform(i + 1));
        }
        check_descents(&nw_kernel(&rows), rows.len(), &order);
        let md_order: Vec<usize> = (0..docs.len()).collect();
        check_descents(&md_kernel(6, &docs, 0.4), docs.len(), &md_order);
    }

    #[test]
    fn random_operations_keep_a_normal_wishart_forest_valid(
        rows in nw_data(), ops in op_sequence(), seed in any::<u64>()
    ) {
        exercise(&nw_kernel(&rows), &ops, seed);
    }

    /// Random operations under undo records, rolled back or committed (see
    /// [`exercise_undo`]), on both kernels.
    #[test]
    fn undo_records_take_random_operations_back_exactly(
        rows in nw_data(), docs in md_data(), ops in op_sequence(), seed in any::<u64>()
    ) {
        exercise_undo(&nw_kernel(&rows), &ops, seed);
        exercise_undo(&md_kernel(6, &docs, 0.4), &ops, seed);
    }

    #[test]
    fn random_operations_keep_a_multinomial_dirichlet_forest_valid(
        docs in md_data(), ops in op_sequence(), seed in any::<u64>()
    ) {
        exercise(&md_kernel(6, &docs, 0.4), &ops, seed);
    }
}

/// Nodes made under an open record have their own changes left out of its journal (the
/// rollback deletes them); once the record is committed they are ordinary nodes, whose
/// changes a later record journals and takes back.
#[test]
fn nodes_made_under_a_committed_record_are_journaled_afterwards() {
    let kernel = nw_kernel(&data_b());
    let prior = Dp::new(1.0).unwrap();
    let mut f = Forest::new(&kernel, &prior);
    let empty = fingerprint(&f);
    for keep in [false, true] {
        f.begin_undo().unwrap();
        let mut root = f.make_leaf(&kernel, 0).unwrap();
        for i in 1..kernel.n_points() {
            let leaf = f.make_leaf(&kernel, i).unwrap();
            root = f.insert(&kernel, root, leaf).unwrap();
        }
        f.register_root(root).unwrap();
        if keep {
            f.commit();
        } else {
            f.rollback();
            assert_eq!(fingerprint(&f), empty);
        }
    }
    f.validate(&kernel, &prior).unwrap();
    let built = fingerprint(&f);
    f.begin_undo().unwrap();
    for i in [3, 0, 5] {
        let leaf = f.leaf_of(i).unwrap();
        f.detach_leaf(&kernel, leaf).unwrap();
        let target = f.roots().next().unwrap();
        f.insert(&kernel, target, leaf).unwrap();
    }
    let mut queue = Vec::new();
    let top = f.roots().next().unwrap();
    let inner = f.node(top).unwrap().children().unwrap()[0];
    f.destroy(inner, &mut queue).unwrap();
    f.rollback();
    assert_eq!(fingerprint(&f), built);
    f.validate(&kernel, &prior).unwrap();
}

/// The remembered `ln d` of ordered root pairs is the fresh value to the bit, before and
/// after the trees change and after a recompute.
#[test]
fn cached_root_pairs_are_fresh_values() {
    let kernel = nw_kernel(&data_b());
    let priors = priors();
    let mut f = Forest::singletons(&kernel, &priors[0]);
    let check = |f: &mut Forest<NormalWishart>| {
        let roots: Vec<NodeKey> = f.roots().collect();
        for _ in 0..2 {
            for &a in &roots {
                for &b in roots.iter().filter(|&&b| b != a) {
                    let fresh = f.ln_d_pair(&kernel, a, b).unwrap();
                    let cached = f.ln_d_pair_cached(&kernel, a, b).unwrap();
                    assert_eq!(fresh.to_bits(), cached.to_bits());
                }
            }
        }
    };
    check(&mut f);
    for step in 0..4 {
        let roots: Vec<NodeKey> = f.roots().collect();
        f.unregister_root(roots[1]).unwrap();
        f.insert(&kernel, roots[0], roots[1]).unwrap();
        check(&mut f);
        f.recompute(&priors[(step + 1) % priors.len()]);
        check(&mut f);
    }
    let roots: Vec<NodeKey> = f.roots().collect();
    assert!(f.ln_d_pair_cached(&kernel, roots[0], roots[0]).is_err());
}
