//! What the plots of a run's posterior uncertainty show: the posterior distribution of the
//! number of clusters, the posterior similarity matrix with its points ordered by the point
//! estimate's clusters, and the predictive density with pointwise bands
//! ([`super::density`]). Computed from the chains' draws; [`super::svg`] draws them.

use std::collections::BTreeSet;

use super::curves::{column_names, data_of, default_estimate, sampler_name};
use super::density::{density_grid, margin_grids, DensityGrid, MarginGrids, MAX_MARGINS};
use super::summary::DrawSource;
use super::{RunDir, Summary};
use crate::data::load::load_labels;
use crate::data::{Dataset, DenseData};
use crate::error::Result;
use crate::model::Model;

/// Most points the similarity matrix shows; beyond, evenly spaced points of the estimate's
/// order stand for the rest (a heatmap of more cells than pixels shows no more).
pub const MAX_SHOWN: usize = 300;

/// Most draws the similarity matrix is estimated from, evenly spaced within each chain.
const MAX_DRAWS: usize = 1000;

/// The posterior similarity `P(i ~ j | X)` of the points shown, ordered by the estimate's
/// clusters (largest first), so that clusters the posterior is sure of are bright blocks on
/// the diagonal and uncertain ones bleed into each other.
#[derive(Clone, Debug, PartialEq)]
pub struct OrderedSimilarity {
    /// Points the matrix is over.
    pub n: usize,
    /// The points shown, in the order shown (all of them up to [`MAX_SHOWN`]).
    pub shown: Vec<usize>,
    /// `P(shown[a] ~ shown[b])` at `a * shown.len() + b`.
    pub values: Vec<f64>,
    /// Positions in `shown` where a cluster of the estimate begins (the first is 0).
    pub starts: Vec<usize>,
    /// Draws the similarities are over.
    pub draws: usize,
}

/// The similarity of the points of `labels` (a point estimate) over `draws`, ordered by the
/// estimate's clusters, largest first, each cluster's points in index order; every
/// `⌈n / MAX_SHOWN⌉`-th point of that order is shown. Cost: O(S m²) for S draws and m shown
/// points.
pub fn ordered_similarity(labels: &[usize], draws: &[Vec<usize>]) -> OrderedSimilarity {
    let n = labels.len();
    let k = labels.iter().max().map_or(0, |m| m + 1);
    let mut sizes = vec![0usize; k];
    for &l in labels {
        sizes[l] += 1;
    }
    let mut clusters: Vec<usize> = (0..k).collect();
    clusters.sort_by_key(|&c| (std::cmp::Reverse(sizes[c]), c));
    let mut rank = vec![0usize; k];
    for (r, &c) in clusters.iter().enumerate() {
        rank[c] = r;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (rank[labels[i]], i));
    let shown: Vec<usize> = order
        .into_iter()
        .step_by(n.div_ceil(MAX_SHOWN).max(1))
        .collect();
    let starts: Vec<usize> = (0..shown.len())
        .filter(|&a| a == 0 || labels[shown[a]] != labels[shown[a - 1]])
        .collect();
    let m = shown.len();
    let mut counts = vec![0u32; m * m];
    for d in draws {
        for a in 0..m {
            let la = d[shown[a]];
            for b in a + 1..m {
                if d[shown[b]] == la {
                    counts[a * m + b] += 1;
                }
            }
        }
    }
    let total = draws.len().max(1) as f64;
    let mut values = vec![1.0; m * m];
    for a in 0..m {
        for b in a + 1..m {
            let p = f64::from(counts[a * m + b]) / total;
            values[a * m + b] = p;
            values[b * m + a] = p;
        }
    }
    OrderedSimilarity {
        n,
        shown,
        values,
        starts,
        draws: draws.len(),
    }
}

/// The predictive density of a run's 1-D or 2-D data with its bands, and the data.
#[derive(Clone, Debug)]
pub struct DensityPicture {
    /// What the picture shows.
    pub title: String,
    /// The density on its grid.
    pub grid: DensityGrid,
    /// The data, drawn over the density.
    pub points: DenseData,
    /// The names of the data's columns, when the data had a header.
    pub columns: Option<Vec<String>>,
}

/// The margins of the predictive density of a run's data of more than two dimensions, with
/// the data.
#[derive(Clone, Debug)]
pub struct MarginsPicture {
    /// What the picture shows.
    pub title: String,
    /// The margins on their lines.
    pub grids: MarginGrids,
    /// The data, whose coordinates are drawn as rugs.
    pub points: DenseData,
    /// The names of the data's columns, when the data had a header.
    pub columns: Option<Vec<String>>,
}

/// The pictures of a run's posterior uncertainty.
#[derive(Clone, Debug)]
pub struct Uncertainty {
    /// The posterior probability of each number of clusters.
    pub k_distribution: Vec<(usize, f64)>,
    /// The similarity matrix ordered by the point estimate, when there are draws.
    pub similarity: Option<OrderedSimilarity>,
    /// The number of clusters of the point estimate the similarity is ordered by.
    pub estimate_clusters: usize,
    /// Which estimate that is: "VI estimate" (the run's default, `estimate.txt`, when its
    /// summary searched for it) or "Dahl's estimate".
    pub estimate_name: &'static str,
    /// The numbers of clusters of the credible ball's bounds the run wrote
    /// (`ball-horizontal.txt`, `ball-upper.txt`, `ball-lower.txt`), fewest and most.
    pub ball_clusters: Option<(usize, usize)>,
    /// The density, for 1-D and 2-D real data that can be read here.
    pub density: Option<DensityPicture>,
    /// The density's margins per coordinate, for real data of more dimensions.
    pub margins: Option<MarginsPicture>,
    /// What the pictures are of (the runs, their sampler and seed).
    pub subject: String,
}

/// Every draw of `sources` after the burn-in, each chain's evenly thinned to its share of
/// [`MAX_DRAWS`].
fn draw_labels(sources: &[DrawSource]) -> Result<Vec<Vec<usize>>> {
    let share = MAX_DRAWS.div_ceil(sources.len().max(1));
    let mut kept = Vec::new();
    for source in sources {
        let draws = source.read()?;
        let stride = draws.len().div_ceil(share).max(1);
        kept.extend(draws.into_iter().step_by(stride).map(|d| d.labels));
    }
    Ok(kept)
}

/// The pictures of the posterior the chains of `runs` sample, with notes on what was left
/// out. Runs that sample different posteriors (a comparison of models) are pictured by the
/// first alone. The similarity is ordered by the summary's point estimate; the density is
/// drawn for 1-D and 2-D real data that can be read here. `None` without a summary.
/// Cost: the summary, O(S m²) for the similarity and the density's ([`density_grid`]).
pub fn uncertainty(runs: &[RunDir]) -> Result<(Option<Uncertainty>, Vec<String>)> {
    let mut notes = Vec::new();
    let (summary, runs) = match Summary::of(runs, None) {
        Ok(s) => (s, runs),
        Err(e) if runs.len() > 1 => {
            notes.push(format!(
                "density, similarity and P(K) drawn for {} alone: {e}",
                runs[0].dir.display()
            ));
            (Summary::of(&runs[..1], None)?, &runs[..1])
        }
        Err(e) => return Err(e),
    };
    let first = &runs[0];
    let subject = if runs.len() == 1 {
        format!("{} seed {}", sampler_name(first), first.record.spec.seed)
    } else {
        format!("{} runs", runs.len())
    };
    let k_distribution: Vec<(usize, f64)> = summary
        .k_distribution
        .iter()
        .map(|(&k, &p)| (k, p))
        .collect();
    let (mut similarity, mut estimate_clusters) = (None, 0);
    let (mut estimate_name, mut ball_clusters) = ("Dahl's estimate", None);
    if let Some(e) = &summary.point_estimate {
        // One run whose summary found the VI estimate wrote it as estimate.txt, its default,
        // with the ball's bounds: the pictures follow that estimate and its ball.
        let vi_written = runs.len() == 1 && default_estimate(&first.dir).as_deref() == Some("vi");
        let written = |name: &str| -> Option<Vec<usize>> {
            let labels = load_labels(first.dir.join(name), e.labels.len()).ok()?;
            labels
                .into_iter()
                .map(|l| usize::try_from(l).ok())
                .collect()
        };
        let count = |labels: &[usize]| labels.iter().collect::<BTreeSet<_>>().len();
        let labels = match vi_written.then(|| written("estimate.txt")).flatten() {
            Some(vi) => {
                estimate_name = "VI estimate";
                vi
            }
            None => e.labels.clone(),
        };
        estimate_clusters = count(&labels);
        if vi_written {
            let bounds: Option<Vec<usize>> =
                ["ball-horizontal.txt", "ball-upper.txt", "ball-lower.txt"]
                    .iter()
                    .map(|f| written(f).map(|b| count(&b)))
                    .collect();
            ball_clusters = bounds.map(|b| {
                let all = || b.iter().copied().chain([estimate_clusters]);
                (all().min().unwrap_or(0), all().max().unwrap_or(0))
            });
        }
        similarity = Some(ordered_similarity(&labels, &draw_labels(&summary.sources)?));
    }
    let (mut density, mut margins) = (None, None);
    let mut dim = first.record.fingerprint.dim;
    if summary.point_estimate.is_some() {
        match data_of(first)? {
            Ok(Dataset::Dense(points)) => {
                let model = Model::build(&first.record.model, Dataset::Dense(points.clone()))?;
                let mut columns = column_names(&first.dir);
                // The density is the model's: over the columns it kept, when it left some out.
                let points = match &model.columns {
                    Some(kept) => {
                        columns = columns
                            .and_then(|c| kept.kept.iter().map(|&j| c.get(j).cloned()).collect());
                        dim = kept.kept.len();
                        kept.select(&points)?
                    }
                    None => points,
                };
                if dim <= 2 {
                    match density_grid(&model, &points, &summary.sources) {
                        Ok(grid) => {
                            density = Some(DensityPicture {
                                title: format!(
                                    "posterior predictive density of {subject}, {:.0}% \
                                     pointwise bands over {} draws",
                                    100.0 * grid.bands.level,
                                    grid.bands.draws
                                ),
                                grid,
                                points,
                                columns,
                            })
                        }
                        Err(e) => notes.push(format!("no density: {e}")),
                    }
                } else {
                    match margin_grids(&model, &points, &summary.sources) {
                        Ok(grids) => {
                            let shown = grids.axes.len();
                            let which = if dim > MAX_MARGINS {
                                format!("the first {shown} of {dim} coordinates")
                            } else {
                                format!("{dim} coordinates")
                            };
                            let draws = grids.bands.first().map_or(0, |b| b.draws);
                            let level = 100.0 * super::density::BAND_LEVEL;
                            margins = Some(MarginsPicture {
                                title: format!(
                                    "margins of the posterior predictive density of {subject} \
                                     ({which}), {level:.0}% pointwise bands over {draws} draws"
                                ),
                                grids,
                                points,
                                columns,
                            })
                        }
                        Err(e) => notes.push(format!("no density: {e}")),
                    }
                }
            }
            Ok(_) => {}
            Err(why) => notes.push(format!("no density: {why}")),
        }
    }
    Ok((
        Some(Uncertainty {
            k_distribution,
            similarity,
            estimate_clusters,
            estimate_name,
            ball_clusters,
            density,
            margins,
            subject,
        }),
        notes,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similarity_is_ordered_by_the_estimate_largest_cluster_first() {
        let estimate = [1, 0, 1, 1, 0];
        // Two draws: the estimate itself, and everything together.
        let draws = vec![estimate.to_vec(), vec![0; 5]];
        let s = ordered_similarity(&estimate, &draws);
        assert_eq!(s.shown, vec![0, 2, 3, 1, 4]);
        assert_eq!(s.starts, vec![0, 3]);
        let at = |a: usize, b: usize| s.values[a * 5 + b];
        assert_eq!(at(0, 1), 1.0);
        assert_eq!(at(0, 3), 0.5);
        assert_eq!(at(3, 0), 0.5);
        assert_eq!(at(4, 4), 1.0);
        // Beyond MAX_SHOWN points, every ⌈n / MAX_SHOWN⌉-th point is shown.
        let many: Vec<usize> = (0..1000).map(|i| i % 3).collect();
        let s = ordered_similarity(&many, std::slice::from_ref(&many));
        assert_eq!(s.shown.len(), 250);
        assert_eq!(s.starts.len(), 3);
        assert!(s.values.iter().all(|&v| v == 0.0 || v == 1.0));
    }
}
