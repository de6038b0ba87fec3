//! Exports of the registered trees: a petgraph graph, Graphviz DOT, and Newick. Trees come in
//! canonical order, children in stored order (`[l, r]`), so the output is deterministic.

use std::fmt::Write;

use petgraph::graph::{DiGraph, NodeIndex};
use slotmap::SecondaryMap;

use super::{Forest, NodeKey};
use crate::error::Result;
use crate::kernel::ConjugateKernel;

/// The weight of a node in [`Forest::to_graph`]: what the tree knows about it, without the
/// kernel statistic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExportNode {
    /// The node's key in the forest.
    pub key: NodeKey,
    /// The data point of a leaf.
    pub point: Option<usize>,
    /// Number of points under the node.
    pub size: usize,
    /// `ℓh` of the node.
    pub ln_h: f64,
    /// `ln d` of the node (`-∞` for a leaf).
    pub ln_d: f64,
    /// `ln φ` of the node.
    pub ln_phi: f64,
}

/// What a Newick export writes besides the topology.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NewickInfo {
    /// Leaf labels (point indices) only: `((0,1),2);`.
    #[default]
    Topology,
    /// Internal nodes labelled by their `ln d` (6 decimals): `((0,1)-2.302585,2)0.693147;`.
    LnD,
}

impl<K: ConjugateKernel> Forest<K> {
    /// The registered trees as one directed graph with edges parent → child. Nodes are added
    /// tree by tree in canonical order, each tree in preorder, so indices are deterministic.
    /// Cost: O(number of nodes).
    pub fn to_graph(&self) -> DiGraph<ExportNode, ()> {
        let mut graph = DiGraph::with_capacity(self.nodes.len(), self.nodes.len());
        let mut index: SecondaryMap<NodeKey, NodeIndex> = SecondaryMap::new();
        for root in self.roots() {
            let mut cur = Some(root);
            while let Some(k) = cur {
                let node = &self.nodes[k];
                let ix = graph.add_node(ExportNode {
                    key: k,
                    point: node.point,
                    size: node.size,
                    ln_h: node.ln_h,
                    ln_d: node.ln_d,
                    ln_phi: node.ln_phi,
                });
                index.insert(k, ix);
                if let Some(p) = node.parent {
                    graph.add_edge(index[p], ix, ());
                }
                cur = self.preorder_next(k, root);
            }
        }
        graph
    }

    /// The registered trees in Graphviz DOT: one digraph, leaves as ellipses labelled by
    /// their point, internal nodes as boxes labelled by size and `ln d`. Cost: O(number of
    /// nodes).
    pub fn to_dot(&self) -> String {
        let graph = self.to_graph();
        let mut out = String::from("digraph forest {\n");
        for ix in graph.node_indices() {
            let n = &graph[ix];
            let _ = match n.point {
                Some(p) => writeln!(out, "  n{} [label=\"{p}\", shape=ellipse];", ix.index()),
                None => writeln!(
                    out,
                    "  n{} [label=\"n = {}\\nln d = {:.4}\", shape=box];",
                    ix.index(),
                    n.size,
                    n.ln_d
                ),
            };
        }
        for e in graph.raw_edges() {
            let _ = writeln!(out, "  n{} -> n{};", e.source().index(), e.target().index());
        }
        out.push_str("}\n");
        out
    }

    /// The tree under `top` in Newick format, terminated by `;`: leaves are point indices,
    /// internal nodes `(l,r)` optionally followed by their `ln d`. Written without recursion,
    /// so deep trees are fine. Cost: O(size of the subtree).
    pub fn tree_to_newick(&self, top: NodeKey, info: NewickInfo) -> Result<String> {
        self.get(top, "tree_to_newick")?;
        let mut out = String::new();
        self.write_newick(top, info, &mut out);
        Ok(out)
    }

    /// Every registered tree in Newick format, one per line in canonical order. Cost:
    /// O(number of nodes).
    pub fn to_newick(&self, info: NewickInfo) -> String {
        let mut out = String::new();
        for root in self.roots() {
            self.write_newick(root, info, &mut out);
            out.push('\n');
        }
        out
    }

    /// Walks the subtree of `top` through the parent links: going down, an internal node
    /// opens `(` and a leaf writes its point; coming back up from a first child writes `,`
    /// and goes down the second, from a second child closes `)` with the optional label.
    fn write_newick(&self, top: NodeKey, info: NewickInfo, out: &mut String) {
        let mut cur = top;
        'down: loop {
            while let Some([l, _]) = self.nodes[cur].children {
                out.push('(');
                cur = l;
            }
            let _ = write!(
                out,
                "{}",
                self.nodes[cur].point.expect("a leaf has a point")
            );
            loop {
                if cur == top {
                    break 'down;
                }
                let p = self.nodes[cur].parent.expect("below the top");
                let [l, r] = self.nodes[p].children.expect("a parent is internal");
                if cur == l {
                    out.push(',');
                    cur = r;
                    continue 'down;
                }
                out.push(')');
                if info == NewickInfo::LnD {
                    let _ = write!(out, "{:.6}", self.nodes[p].ln_d);
                }
                cur = p;
            }
        }
        out.push(';');
    }
}
