//! Dahl's least-squares point estimate (Dahl 2006): the draw whose co-clustering matrix is
//! closest in squared error to the posterior similarity matrix estimated from all draws.

use super::draws::{for_each_draw, kept_sweeps};
use super::{read_draws, Draw, HyperState};
use crate::diagnostics::{PairSample, SimilarityMatrix};
use crate::error::Result;
use serde::Serialize;
use std::path::PathBuf;

/// Largest n for the dense posterior similarity matrix (`n²/2` `f32`s: 32 MB at 4,000); above
/// it Dahl's estimate uses [`SAMPLED_PAIRS`] random pairs.
const DENSE_MAX_POINTS: usize = 4000;

/// Pairs of points sampled for Dahl's estimate when n is large.
const SAMPLED_PAIRS: usize = 200_000;

/// A point estimate: one draw of one chain.
#[derive(Clone, Debug, Serialize)]
pub struct Estimate {
    /// How it was chosen.
    pub method: String,
    /// The run directory of its chain.
    pub run: String,
    /// Its chain.
    pub chain: u64,
    /// Its sweep.
    pub sweep: u64,
    /// Its log joint.
    pub log_joint: f64,
    /// Its number of clusters.
    pub n_clusters: usize,
    /// Hyperparameters of the draw.
    pub hyper: HyperState,
    /// Draws it was chosen among.
    pub among: usize,
    /// Its canonical labels.
    #[serde(skip)]
    pub labels: Vec<usize>,
}

/// The partition draws of one chain after its burn-in.
#[derive(Clone, Debug)]
pub struct DrawSource {
    /// The chain's run directory, as shown.
    pub run: String,
    /// The chain.
    pub chain: u64,
    /// Its draws file.
    pub path: PathBuf,
    /// Its burn-in: draws of later sweeps are used.
    pub after: u64,
}

impl DrawSource {
    /// The draws, evenly spaced (see [`read_draws`]).
    pub fn read(&self) -> Result<Vec<Draw>> {
        read_draws(&self.path, self.after)
    }

    /// How many draws [`DrawSource::read`] gives, without reading their labels.
    pub fn count(&self) -> Result<usize> {
        Ok(kept_sweeps(&self.path, self.after)?.len())
    }

    /// Calls `f` with each draw [`DrawSource::read`] gives, in order, one in memory at a time.
    pub fn for_each(&self, f: impl FnMut(Draw) -> Result<()>) -> Result<()> {
        for_each_draw(&self.path, self.after, f)
    }
}

/// Co-clustering frequencies for Dahl's estimate: every pair for moderate n, sampled pairs
/// beyond.
enum Similarity {
    Dense(SimilarityMatrix),
    Pairs(PairSample),
}

impl Similarity {
    fn add(&mut self, labels: &[usize]) -> Result<()> {
        match self {
            Similarity::Dense(m) => m.add(labels),
            Similarity::Pairs(p) => p.observe(labels),
        }
    }

    fn loss(&self, labels: &[usize]) -> Result<f64> {
        match self {
            Similarity::Dense(m) => m.loss(labels),
            Similarity::Pairs(p) => p.loss(labels),
        }
    }
}

/// Dahl's least-squares draw among the draws of `sources`: the dense similarity matrix for
/// moderate n, [`SAMPLED_PAIRS`] random pairs (seeded by `seed`) beyond. Two passes over the
/// draws files, one draw in memory at a time besides the best so far.
pub(super) fn dahl(sources: &[DrawSource], seed: u64) -> Result<Option<Estimate>> {
    let mut similarity: Option<Similarity> = None;
    let mut among = 0;
    for source in sources {
        source.for_each(|d| {
            let s = match &mut similarity {
                Some(s) => s,
                None => {
                    let n = d.labels.len();
                    similarity.insert(if n <= DENSE_MAX_POINTS {
                        Similarity::Dense(SimilarityMatrix::new(n))
                    } else {
                        let mut rng = crate::rng::SeedPlan::new(seed).chain(u64::MAX);
                        Similarity::Pairs(PairSample::random(n, SAMPLED_PAIRS, &mut rng)?)
                    })
                }
            };
            s.add(&d.labels)?;
            among += 1;
            Ok(())
        })?;
    }
    let Some(similarity) = similarity else {
        return Ok(None);
    };
    let method = match similarity {
        Similarity::Dense(_) => "dahl-least-squares".to_string(),
        Similarity::Pairs(_) => format!("dahl-least-squares over {SAMPLED_PAIRS} random pairs"),
    };
    let mut best: Option<(f64, &DrawSource, Draw)> = None;
    for source in sources {
        source.for_each(|d| {
            let loss = similarity.loss(&d.labels)?;
            if best.as_ref().is_none_or(|b| loss < b.0) {
                best = Some((loss, source, d));
            }
            Ok(())
        })?;
    }
    Ok(best.map(|(_, source, d)| Estimate {
        method,
        run: source.run.clone(),
        chain: source.chain,
        sweep: d.sweep,
        log_joint: d.log_joint,
        n_clusters: d.labels.iter().max().map_or(0, |m| m + 1),
        hyper: d.hyper,
        among,
        labels: d.labels,
    }))
}
