//! The paper-faithful global move against a hand computation of MATH §4.3: on fixed trees
//! over data set A, with every random decision scripted, the log acceptance ratio the move
//! hands to its accept step equals `ln q_rev - ln q_fwd + Σ ℓh(new) - Σ ℓh(old)` computed here
//! from scratch (fresh marginals, potentials recomputed from the tree structure), for splits
//! (StocInsert joining and starting trees) and for merges (one and two partners, with and
//! without trees left out). A rejected proposal restores the forest exactly.

use std::collections::VecDeque;
use std::sync::Arc;

use nrmm::data::generate::data_set_a;
use nrmm::kernel::{ConjugateKernel, NormalWishart, NwHyper};
use nrmm::math::{ln_add_exp, log_sum_exp, softplus};
use nrmm::partition::Partition;
use nrmm::prior::{Dp, Nggp, NrmPrior, Prior};
use nrmm::rng::NrmmRng;
use nrmm::sampler::{Chooser, State, TgmcmcPaper};
use nrmm::tree::{Forest, NewickInfo, NodeKey};

/// Plays a fixed list of decisions and records what the accept step was asked.
struct Script {
    decisions: VecDeque<usize>,
    accept_with: bool,
    asked: Vec<f64>,
}

impl Script {
    fn new(decisions: &[usize], accept_with: bool) -> Self {
        Script {
            decisions: decisions.iter().copied().collect(),
            accept_with,
            asked: Vec::new(),
        }
    }

    fn next(&mut self, options: usize) -> usize {
        let d = self.decisions.pop_front().expect("the script ran out");
        assert!(d < options, "scripted {d} of {options} options");
        d
    }
}

impl Chooser for Script {
    fn choose_log(&mut self, ln_w: &[f64]) -> nrmm::Result<(usize, f64)> {
        let i = self.next(ln_w.len());
        Ok((i, ln_w[i] - log_sum_exp(ln_w)))
    }
    fn choose_uniform(&mut self, n: usize) -> usize {
        self.next(n)
    }
    fn accept(&mut self, ln_a: f64) -> bool {
        self.asked.push(ln_a);
        self.accept_with
    }
    fn rng(&mut self) -> Option<&mut NrmmRng> {
        None
    }
}

fn kernel() -> NormalWishart {
    let data = data_set_a();
    let hyper = NwHyper::from_data(&data).unwrap();
    NormalWishart::new(Arc::new(data), hyper).unwrap()
}

/// `ℓh(S)` from scratch.
fn h<P: NrmPrior>(k: &NormalWishart, prior: &P, points: &[usize]) -> f64 {
    prior.ln_kappa(points.len()) + k.ln_marginal(&k.stat_of(points))
}

fn points(f: &Forest<NormalWishart>, key: NodeKey) -> Vec<usize> {
    let mut out = Vec::new();
    f.points(key, &mut out).unwrap();
    out.sort_unstable();
    out
}

/// `ln φ` of the subtree of `key` from its structure: `φ(leaf) = h`, `φ(S) = h(S) + φ(L) φ(R)`.
fn phi<P: NrmPrior>(k: &NormalWishart, prior: &P, f: &Forest<NormalWishart>, key: NodeKey) -> f64 {
    let own = h(k, prior, &points(f, key));
    match f.node(key).unwrap().children() {
        None => own,
        Some([l, r]) => ln_add_exp(own, phi(k, prior, f, l) + phi(k, prior, f, r)),
    }
}

/// `ln d` of an internal node from its structure.
fn node_ln_d<P: NrmPrior>(
    k: &NormalWishart,
    prior: &P,
    f: &Forest<NormalWishart>,
    key: NodeKey,
) -> f64 {
    let [l, r] = f.node(key).unwrap().children().unwrap();
    phi(k, prior, f, l) + phi(k, prior, f, r) - h(k, prior, &points(f, key))
}

/// `ln d(A, B) = ln φ(A) + ln φ(B) - ℓh(A ∪ B)` of two disjoint trees (possibly in two forests).
fn pair_ln_d<P: NrmPrior>(
    k: &NormalWishart,
    prior: &P,
    (fa, a): (&Forest<NormalWishart>, NodeKey),
    (fb, b): (&Forest<NormalWishart>, NodeKey),
) -> f64 {
    let mut union = points(fa, a);
    union.extend(points(fb, b));
    phi(k, prior, fa, a) + phi(k, prior, fb, b) - h(k, prior, &union)
}

fn ln_b(ln_d: f64) -> f64 {
    -softplus(ln_d)
}

fn ln_1mb(ln_d: f64) -> f64 {
    ln_d - softplus(ln_d)
}

/// The internal nodes of a tree breadth first (the candidate order of SampleSub).
fn internal_bfs(f: &Forest<NormalWishart>, top: NodeKey) -> Vec<NodeKey> {
    let mut out = vec![top];
    let mut next = 0;
    while next < out.len() {
        if let Some(ch) = f.node(out[next]).unwrap().children() {
            out.extend(ch.into_iter().filter(|&c| !f.node(c).unwrap().is_leaf()));
        }
        next += 1;
    }
    out
}

/// `ln P_sub(target | tree)` over internal nodes, in plain arithmetic:
/// `(d_v + d_max) / Σ (d_v' + d_max)` with `d` from the structure.
fn p_sub<P: NrmPrior>(
    k: &NormalWishart,
    prior: &P,
    f: &Forest<NormalWishart>,
    top: NodeKey,
    target: NodeKey,
) -> f64 {
    let nodes = internal_bfs(f, top);
    let d: Vec<f64> = nodes
        .iter()
        .map(|&v| node_ln_d(k, prior, f, v).exp())
        .collect();
    let d_max = d.iter().copied().fold(0.0, f64::max);
    let total: f64 = d.iter().map(|v| v + d_max).sum();
    let at = nodes.iter().position(|&v| v == target).unwrap();
    ((d[at] + d_max) / total).ln()
}

/// A forest of the given trees, each built by SeqInsert in the listed order.
fn forest_of<P: NrmPrior>(
    k: &NormalWishart,
    prior: &P,
    trees: &[&[usize]],
) -> Forest<NormalWishart> {
    let mut f = Forest::new(k, prior);
    for t in trees {
        let root = f.build_tree(k, t).unwrap();
        f.register_root(root).unwrap();
    }
    f
}

fn state_of(
    k: &NormalWishart,
    f: &Forest<NormalWishart>,
    prior: &Prior,
) -> State<NormalWishart, Prior> {
    State {
        partition: Partition::from_labels(k, &f.labels().unwrap()).unwrap(),
        prior: prior.clone(),
    }
}

fn priors() -> [Prior; 2] {
    [
        Dp::new(1.0).unwrap().into(),
        Nggp::fixed(1.5, 0.35, 3.0).unwrap().into(),
    ]
}

/// Runs one scripted global move from `f` and returns the move and the `ln A` it computed.
fn run_move(
    k: &NormalWishart,
    f: &Forest<NormalWishart>,
    prior: &Prior,
    script: &[usize],
    accept: bool,
) -> (TgmcmcPaper<NormalWishart>, State<NormalWishart, Prior>, f64) {
    let mut mv = TgmcmcPaper::new(1, 2).with_forest(f.clone());
    let mut state = state_of(k, f, prior);
    let mut chooser = Script::new(script, accept);
    let info = mv.global_move(k, &mut state, &mut chooser).unwrap();
    assert!(
        chooser.decisions.is_empty(),
        "decisions left: {:?}",
        chooser.decisions
    );
    assert_eq!(chooser.asked.len(), 1);
    assert_eq!(info.proposed, 1);
    assert_eq!(info.accepted, usize::from(accept));
    (mv, state, chooser.asked[0])
}

/// Split of `c*` = the tree of points 0, 1, 2, 5 (inserted in that order) next to the tree of
/// 3, 4, 6, at the first internal child of its root, with the queued sibling's StocInsert
/// decision `stoc` (0, 1: join that tree; 2: new).
fn check_split(prior: &Prior, stoc: usize) {
    let k = kernel();
    let f = forest_of(&k, prior, &[&[0, 1, 2, 5], &[3, 4, 6]]);
    let roots: Vec<NodeKey> = f.roots().collect();
    let (c_star, other) = (roots[0], roots[1]);
    let cands = internal_bfs(&f, c_star);
    assert!(
        cands.len() >= 2,
        "the split tree has a non-root internal node"
    );
    let a = cands[1];
    let [al, ar] = f.node(a).unwrap().children().unwrap();
    // Destroy(a) queues a's sibling, then the siblings further up (here: the root's other
    // child only if a is two levels down).
    let mut queue = Vec::new();
    let mut cur = a;
    while let Some(p) = f.node(cur).unwrap().parent() {
        let [l, r] = f.node(p).unwrap().children().unwrap();
        queue.push(if l == cur { r } else { l });
        cur = p;
    }
    assert_eq!(queue.len(), 1, "a is a child of the root");
    let x = queue[0];

    // Forward, by hand: pick c* (1/2), leave the other tree out, SampleSub a, StocInsert x.
    let ln_d_other = pair_ln_d(&k, prior, (&f, c_star), (&f, other));
    let inv: Vec<f64> = [al, ar]
        .iter()
        .map(|&s| -pair_ln_d(&k, prior, (&f, x), (&f, s)))
        .collect();
    let ln_norm = log_sum_exp(&[0.0, inv[0], inv[1]]);
    let ln_stoc = if stoc < 2 { inv[stoc] } else { 0.0 } - ln_norm;
    let ln_q_fwd = -(2f64.ln()) + ln_1mb(ln_d_other) + p_sub(&k, prior, &f, c_star, a) + ln_stoc;

    let (mv, state, ln_a) = run_move(&k, &f, prior, &[0, 1, 1, stoc], true);
    let g = mv.forest().unwrap();
    g.validate(&k, prior).unwrap();
    // The new trees S are the registered trees other than the untouched one.
    let new_trees: Vec<NodeKey> = g
        .roots()
        .filter(|&r| points(g, r) != points(&f, other))
        .collect();
    assert_eq!(new_trees.len(), if stoc < 2 { 2 } else { 3 });
    let other_now = g
        .roots()
        .find(|&r| points(g, r) == points(&f, other))
        .unwrap();

    // Reverse, by hand: any s ∈ S first, the rest of S in, the other tree out (eq. 11).
    let k_new = (1 + new_trees.len()) as f64;
    let terms: Vec<f64> = new_trees
        .iter()
        .map(|&s| {
            let mut t = -k_new.ln();
            for &s2 in new_trees.iter().filter(|&&s2| s2 != s) {
                t += ln_b(pair_ln_d(&k, prior, (g, s), (g, s2)));
            }
            t + ln_1mb(pair_ln_d(&k, prior, (g, s), (g, other_now)))
        })
        .collect();
    let ln_q_rev = log_sum_exp(&terms);
    let ln_target: f64 = new_trees
        .iter()
        .map(|&s| h(&k, prior, &points(g, s)))
        .sum::<f64>()
        - h(&k, prior, &points(&f, c_star));
    let expected = ln_q_rev - ln_q_fwd + ln_target;
    assert!(
        (ln_a - expected).abs() < 1e-9,
        "split (StocInsert decision {stoc}): move ln A = {ln_a}, MATH §4.3 gives {expected}"
    );
    assert_eq!(state.partition.canonical_labels(), g.labels().unwrap());

    // Rejected: the forest is restored, tree shapes included.
    let (mv, state, ln_a_again) = run_move(&k, &f, prior, &[0, 1, 1, stoc], false);
    assert_eq!(ln_a_again, ln_a);
    let g = mv.forest().unwrap();
    g.validate(&k, prior).unwrap();
    assert_eq!(g.to_newick(NewickInfo::LnD), f.to_newick(NewickInfo::LnD));
    assert_eq!(state.partition.canonical_labels(), f.labels().unwrap());
}

#[test]
fn split_ratio_matches_the_hand_computation() {
    for prior in priors() {
        for stoc in 0..3 {
            check_split(&prior, stoc);
        }
    }
}

/// Merge of `c*` with the scripted partners. `trees` lists the trees (build orders);
/// `include[t]` says whether root `t` (canonical order, `c*` excluded) joins `M`.
fn check_merge(prior: &Prior, trees: &[&[usize]], c_star_at: usize, include: &[bool]) {
    let k = kernel();
    let f = forest_of(&k, prior, trees);
    let roots: Vec<NodeKey> = f.roots().collect();
    let c_star = roots[c_star_at];
    let rest: Vec<NodeKey> = roots.iter().copied().filter(|&r| r != c_star).collect();
    assert_eq!(rest.len(), include.len());
    let m: Vec<NodeKey> = rest
        .iter()
        .zip(include)
        .filter(|(_, &i)| i)
        .map(|(&r, _)| r)
        .collect();
    let out: Vec<NodeKey> = rest
        .iter()
        .zip(include)
        .filter(|(_, &i)| !i)
        .map(|(&r, _)| r)
        .collect();
    let kk = roots.len() as f64;

    // Forward (MATH §4.3): 1/K, then b for members of M and 1 - b for the rest.
    let mut ln_q_fwd = -kk.ln();
    for (&r, &inc) in rest.iter().zip(include) {
        let ln_d = pair_ln_d(&k, prior, (&f, c_star), (&f, r));
        ln_q_fwd += if inc { ln_b(ln_d) } else { ln_1mb(ln_d) };
    }

    // The cascade g₁ = (c*, m₁), g_j = (g_{j-1}, m_j), by hand: ln φ and ln d of each node.
    let mut g_points = points(&f, c_star);
    let mut g_phi = phi(&k, prior, &f, c_star);
    let mut cascade_d = Vec::new();
    for &mj in &m {
        let mut union = g_points.clone();
        union.extend(points(&f, mj));
        let hu = h(&k, prior, &union);
        let ln_d = g_phi + phi(&k, prior, &f, mj) - hu;
        cascade_d.push(ln_d);
        g_phi = hu + softplus(ln_d);
        g_points = union;
    }
    // P_sub(g₁ | T_{g_J}) over the internal nodes: the cascade nodes and those of c*, M.
    let mut all_d: Vec<f64> = cascade_d.clone();
    for &t in std::iter::once(&c_star).chain(&m) {
        if !f.node(t).unwrap().is_leaf() {
            all_d.extend(
                internal_bfs(&f, t)
                    .iter()
                    .map(|&v| node_ln_d(&k, prior, &f, v)),
            );
        }
    }
    let d: Vec<f64> = all_d.iter().map(|v| v.exp()).collect();
    let d_max = d.iter().copied().fold(0.0, f64::max);
    let total: f64 = d.iter().map(|v| v + d_max).sum();
    let ln_p_sub_g1 = ((d[0] + d_max) / total).ln();
    // The reverse StocInsert starts a new tree for m₂ .. m_J.
    let mut ln_all_new = 0.0;
    for j in 1..m.len() {
        let mut inv = vec![0.0];
        for &s in std::iter::once(&c_star).chain(&m[..j]) {
            inv.push(-pair_ln_d(&k, prior, (&f, s), (&f, m[j])));
        }
        ln_all_new -= log_sum_exp(&inv);
    }
    let k_new = kk - m.len() as f64;
    let mut ln_q_rev = -k_new.ln() + ln_p_sub_g1 + ln_all_new;
    for &c in &out {
        let mut union = g_points.clone();
        union.extend(points(&f, c));
        let ln_d = g_phi + phi(&k, prior, &f, c) - h(&k, prior, &union);
        ln_q_rev += ln_1mb(ln_d);
    }
    let ln_target = h(&k, prior, &g_points)
        - std::iter::once(&c_star)
            .chain(&m)
            .map(|&t| h(&k, prior, &points(&f, t)))
            .sum::<f64>();
    let expected = ln_q_rev - ln_q_fwd + ln_target;

    let mut script = vec![c_star_at];
    script.extend(include.iter().map(|&i| usize::from(!i)));
    let (mv, state, ln_a) = run_move(&k, &f, prior, &script, true);
    assert!(
        (ln_a - expected).abs() < 1e-9,
        "merge of {} trees: move ln A = {ln_a}, MATH §4.3 gives {expected}",
        m.len() + 1
    );
    let g = mv.forest().unwrap();
    g.validate(&k, prior).unwrap();
    assert_eq!(g.n_roots(), roots.len() - m.len());
    assert_eq!(state.partition.canonical_labels(), g.labels().unwrap());
    // The merged tree is the cascade: c* and m₁ under g₁, then each m_j on top.
    let merged = g.roots().find(|&r| {
        points(g, r) == {
            let mut p = g_points.clone();
            p.sort_unstable();
            p
        }
    });
    let mut expected_newick = f.tree_to_newick(c_star, NewickInfo::Topology).unwrap();
    expected_newick.pop();
    for &mj in &m {
        let mut s = f.tree_to_newick(mj, NewickInfo::Topology).unwrap();
        s.pop();
        expected_newick = format!("({expected_newick},{s})");
    }
    expected_newick.push(';');
    assert_eq!(
        g.tree_to_newick(merged.unwrap(), NewickInfo::Topology)
            .unwrap(),
        expected_newick
    );

    let (mv, state, _) = run_move(&k, &f, prior, &script, false);
    let g = mv.forest().unwrap();
    g.validate(&k, prior).unwrap();
    assert_eq!(g.to_newick(NewickInfo::LnD), f.to_newick(NewickInfo::LnD));
    assert_eq!(state.partition.canonical_labels(), f.labels().unwrap());
}

#[test]
fn merge_ratio_matches_the_hand_computation() {
    for prior in priors() {
        // One partner, no tree left out.
        check_merge(&prior, &[&[0, 1, 2], &[3, 4, 6, 5]], 0, &[true]);
        // One partner, one tree left out, c* not first.
        check_merge(&prior, &[&[0, 2], &[1], &[3, 4, 6, 5]], 1, &[true, false]);
        // Two partners (the cascade and the reverse StocInsert term), one left out; the
        // canonical order of the roots (3 before 5) fixes the cascade order.
        check_merge(
            &prior,
            &[&[0, 1, 2], &[5], &[4, 3], &[6]],
            0,
            &[true, true, false],
        );
        // Three partners, a leaf as c*.
        check_merge(
            &prior,
            &[&[0, 1], &[2], &[3, 4], &[5, 6]],
            1,
            &[true, true, true],
        );
    }
}

/// The split of a one-leaf tree is the reference's no-op: no proposal, nothing changes.
#[test]
fn splitting_a_leaf_is_a_no_op() {
    let k = kernel();
    let prior: Prior = Dp::new(1.0).unwrap().into();
    let f = forest_of(&k, &prior, &[&[0, 1, 2, 3, 4, 5], &[6]]);
    let mut mv = TgmcmcPaper::new(1, 2).with_forest(f.clone());
    let mut state = state_of(&k, &f, &prior);
    let mut chooser = Script::new(&[1, 1], true);
    let info = mv.global_move(&k, &mut state, &mut chooser).unwrap();
    assert_eq!(info.proposed, 0);
    assert!(chooser.asked.is_empty());
    assert_eq!(
        mv.forest().unwrap().to_newick(NewickInfo::LnD),
        f.to_newick(NewickInfo::LnD)
    );
}
