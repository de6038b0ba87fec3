//! The undo record: every change made to a forest while a record is open is journaled with
//! what it overwrote, so that a rejected proposal is taken back exactly by replaying the
//! journal backwards ([`Forest::rollback`]) instead of being made on a copy of its tree.
//! Nodes deleted while a record is open stay in the arena, unreachable, until
//! [`Forest::commit`]. Nodes made while it is open are deleted by a rollback whatever they
//! went through, so their own changes are not journaled. Statistics of deleted nodes and
//! journaled images are kept as spare buffers that later nodes reuse, so that proposals
//! allocate nothing once warm.

use super::{Forest, Node, NodeKey};
use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;

/// At most this many spare statistics per point of the data set are kept for reuse.
const SPARES_PER_POINT: usize = 2;

/// One journaled change, holding what it overwrote.
#[derive(Clone, Debug)]
pub(super) enum Undo {
    /// A node's parent link was set; the old link.
    Parent(NodeKey, Option<NodeKey>),
    /// A node's children were set; the old children.
    Children(NodeKey, Option<[NodeKey; 2]>),
    /// A node's `ln d` and `ln φ` were refreshed; the old values and stamp.
    Potentials(NodeKey, f64, f64, u64),
    /// A node's contents (statistic, size, caches) changed; its whole old image is the last
    /// of the forest's saved images (kept apart so that every entry stays small).
    Image(NodeKey),
    /// A node was made.
    Created(NodeKey),
    /// A node was deleted (it stays in the arena until the record is committed).
    Removed(NodeKey),
    /// The tree `key` was registered under this smallest point.
    Registered(usize, NodeKey),
    /// The tree `key` registered under this smallest point was unregistered.
    Unregistered(usize, NodeKey),
    /// A point's live leaf was set; the old one.
    LiveLeaf(usize, Option<NodeKey>),
    /// The `θ` caches were recomputed; the old `ln κ` table and epoch.
    Theta(Vec<f64>, u64),
}

impl<K: ConjugateKernel> Forest<K> {
    /// Opens an undo record: from now on every change to the forest is journaled until
    /// [`Forest::commit`] keeps it or [`Forest::rollback`] takes it back. Nodes deleted
    /// meanwhile stay in the arena (unreachable) until the commit, so [`Forest::validate`]
    /// reports them as leaked while the record is open. Errors if a record is already open.
    /// Cost: O(1).
    pub fn begin_undo(&mut self) -> Result<()> {
        if self.recording {
            return Err(Error::Usage(
                "an undo record is already open on this forest: commit or roll it back first"
                    .into(),
            ));
        }
        self.recording = true;
        self.undo.clear();
        self.images.clear();
        Ok(())
    }

    /// Whether an undo record is open.
    pub fn is_recording(&self) -> bool {
        self.recording
    }

    /// Keeps every change since [`Forest::begin_undo`] and closes the record: nodes deleted
    /// meanwhile leave the arena. Nothing happens without an open record. Cost: O(journal).
    pub fn commit(&mut self) {
        if !self.recording {
            return;
        }
        self.recording = false;
        let mut undo = std::mem::take(&mut self.undo);
        for entry in undo.drain(..) {
            match entry {
                Undo::Image(k) => {
                    if let Some(node) = self.nodes.get_mut(k) {
                        node.imaged = false;
                    }
                }
                Undo::Removed(k) => {
                    if let Some(node) = self.nodes.remove(k) {
                        self.recycle(node.stat);
                    }
                }
                Undo::Created(k) => {
                    if let Some(node) = self.nodes.get_mut(k) {
                        node.fresh = false;
                    }
                }
                _ => {}
            }
        }
        self.undo = undo;
        let mut images = std::mem::take(&mut self.images);
        for node in images.drain(..) {
            self.recycle(node.stat);
        }
        self.images = images;
    }

    /// Takes back every change since [`Forest::begin_undo`], newest first, and closes the
    /// record: the forest is then exactly what it was when the record was opened (the same
    /// nodes under the same keys, bit for bit), and nodes made meanwhile are gone. Nothing
    /// happens without an open record. Cost: O(journal).
    pub fn rollback(&mut self) {
        if !self.recording {
            return;
        }
        self.recording = false;
        let mut undo = std::mem::take(&mut self.undo);
        while let Some(entry) = undo.pop() {
            match entry {
                Undo::Parent(k, p) => self.nodes[k].parent = p,
                Undo::Children(k, c) => self.nodes[k].children = c,
                Undo::Potentials(k, ln_d, ln_phi, stamp) => {
                    let node = &mut self.nodes[k];
                    node.ln_d = ln_d;
                    node.ln_phi = ln_phi;
                    node.stamp = stamp;
                }
                Undo::Image(k) => {
                    let image = self.images.pop().expect("one saved image per entry");
                    let now = std::mem::replace(&mut self.nodes[k], image);
                    self.recycle(now.stat);
                }
                Undo::Created(k) => {
                    if let Some(node) = self.nodes.remove(k) {
                        self.recycle(node.stat);
                    }
                }
                Undo::Removed(k) => self.nodes[k].dead = false,
                Undo::Registered(min, k) => {
                    self.roots.remove(&min);
                    if let Some(node) = self.nodes.get_mut(k) {
                        node.registered = false;
                    }
                }
                Undo::Unregistered(min, k) => {
                    self.roots.insert(min, k);
                    if let Some(node) = self.nodes.get_mut(k) {
                        node.registered = true;
                    }
                }
                Undo::LiveLeaf(i, leaf) => self.live_leaf[i] = leaf,
                Undo::Theta(table, epoch) => {
                    self.ln_kappa = table;
                    self.epoch = epoch;
                }
            }
        }
        self.undo = undo;
    }

    /// Keeps a statistic's buffer for reuse by a later node.
    pub(super) fn recycle(&mut self, stat: K::Stat) {
        if self.spare.len() < SPARES_PER_POINT * self.live_leaf.len() {
            self.spare.push(stat);
        }
    }

    /// A copy of node `k`'s statistic, in a spare buffer when there is one.
    pub(super) fn clone_stat(&mut self, k: NodeKey) -> K::Stat {
        match self.spare.pop() {
            Some(mut s) => {
                s.clone_from(&self.nodes[k].stat);
                s
            }
            None => self.nodes[k].stat.clone(),
        }
    }

    /// Whether a change to node `k` must be journaled: a record is open, the node existed
    /// before it (a node made under the record is deleted by its rollback), and its whole
    /// image was not journaled under it yet. Once it was, the rollback restores the image
    /// after replaying every later entry, so those entries would change nothing: a node that
    /// absorbs many insertions (the root a proposal grows) is journaled once.
    #[inline]
    pub(super) fn journals(&self, k: NodeKey) -> bool {
        let node = &self.nodes[k];
        self.recording && !node.fresh && !node.imaged
    }

    /// Journals node `k`'s whole image before its contents change.
    pub(super) fn save_image(&mut self, k: NodeKey) {
        if self.journals(k) {
            let stat = self.clone_stat(k);
            let n = &mut self.nodes[k];
            let image = Node { stat, ..*n };
            n.imaged = true;
            self.images.push(image);
            self.undo.push(Undo::Image(k));
        }
    }

    /// Sets node `k`'s parent link.
    pub(super) fn set_parent(&mut self, k: NodeKey, parent: Option<NodeKey>) {
        if self.journals(k) {
            self.undo.push(Undo::Parent(k, self.nodes[k].parent));
        }
        self.nodes[k].parent = parent;
    }

    /// Sets node `k`'s children.
    pub(super) fn set_children(&mut self, k: NodeKey, children: Option<[NodeKey; 2]>) {
        if self.journals(k) {
            self.undo.push(Undo::Children(k, self.nodes[k].children));
        }
        self.nodes[k].children = children;
    }

    /// Puts a new node in the arena, with a fresh stamp (and no journal mark a copied node
    /// may carry).
    pub(super) fn insert_node(&mut self, mut node: Node<K::Stat>) -> NodeKey {
        node.stamp = self.next_stamp();
        node.fresh = self.recording;
        node.imaged = false;
        let key = self.nodes.insert(node);
        if self.recording {
            self.undo.push(Undo::Created(key));
        }
        key
    }

    /// Deletes node `k` (deferred to the commit while a record is open, unless the node was
    /// made under it).
    pub(super) fn remove_node(&mut self, k: NodeKey) {
        // The deletion is journaled even after an image: the commit deletes what it lists.
        if self.recording && !self.nodes[k].fresh {
            self.nodes[k].dead = true;
            self.undo.push(Undo::Removed(k));
        } else if let Some(node) = self.nodes.remove(k) {
            self.recycle(node.stat);
        }
    }

    /// Sets point `i`'s live leaf.
    pub(super) fn set_live_leaf(&mut self, i: usize, leaf: Option<NodeKey>) {
        if self.recording {
            self.undo.push(Undo::LiveLeaf(i, self.live_leaf[i]));
        }
        self.live_leaf[i] = leaf;
    }
}
