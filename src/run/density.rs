//! The posterior predictive density of a run's data on a grid, with pointwise credible bands
//! ([`crate::diagnostics::density`]): over the data's range for 1-D data, on a square grid
//! for 2-D data. Each draw's density is the predictive given that draw's partition, with the
//! kernel and prior moved to the draw's hyperparameters; the plots ([`super::svg`]) draw the
//! mean with its band (1-D) or its contours beside the band's width (2-D).
//!
//! **Margins** ([`margin_grids`]) for data of more dimensions: the density of one coordinate,
//! the predictive's margin, on a line with its bands, for the first [`MAX_MARGINS`]
//! coordinates. The margin is exact and in closed form: a Normal-Wishart predictive
//! `t_ν'(ξ_n, (r_n + 1)/(r_n ν') Ψ_n)` (MATH §2.1, `ν' = ν_n - d + 1`) has in coordinate `j`
//! the Student-t `t_ν'(ξ_n,j, (r_n + 1)/(r_n ν') Ψ_n,jj)`, which is the predictive of the
//! 1-D Normal-Wishart `(ξ_j, Ψ_jj, r, ν - d + 1)` over the same cluster's coordinate `j`
//! (its posterior's `Ψ_n,jj`, `ξ_n,j`, `r_n` are the d-D ones' and its `ν' = ν - d + 1 + n`
//! the same); the diagonal kernel's coordinates are independent 1-D Normal-Wisharts, so its
//! margin is coordinate `j`'s own. The mixture weights depend on the sizes only, so a draw's
//! margin is [`ln_predictive_of_draw`] under the margin's kernel over the same partition.

use super::summary::DrawSource;
use super::HyperState;
use crate::data::{Dataset, DenseData};
use crate::diagnostics::{ln_predictive_of_draw, pointwise_bands, PointwiseBands};
use crate::error::{Error, Result};
use crate::kernel::{AnyKernel, DiagHyper, Diagonal, Kernel, NormalWishart, NwHyper};
use crate::model::Model;
use crate::partition::Partition;
use crate::prior::Prior;
use rayon::prelude::*;
use std::sync::Arc;

/// The level of the pointwise bands the plots draw.
pub const BAND_LEVEL: f64 = 0.95;

/// Grid points of a 1-D density.
pub const LINE_POINTS: usize = 240;

/// Grid points per axis of a 2-D density (its grid has the square of it).
pub const SURFACE_POINTS: usize = 64;

/// Most coordinates whose margins [`margin_grids`] gives (the first ones): more panels than
/// a page shows legibly.
pub const MAX_MARGINS: usize = 12;

/// Most draws the bands are over, evenly spaced within each chain: enough for the 2.5% and
/// 97.5% quantiles to rest on several draws each.
const MAX_DRAWS: usize = 400;

/// Point-draw pairs `n S` the draws' partitions are built over at most (each draw's partition
/// costs O(n d²)), but never fewer than [`MIN_DRAWS`] draws.
const MAX_CELLS: usize = 20_000_000;

/// The fewest draws the bands are over when there are as many.
const MIN_DRAWS: usize = 40;

/// Share of the data's range the grid extends beyond it on each side, so that the tails show.
const MARGIN: f64 = 0.1;

/// The posterior predictive density of a run's data on a grid with its pointwise bands.
#[derive(Clone, Debug)]
pub struct DensityGrid {
    /// The grid's coordinates along each data dimension (one axis for 1-D data, two for 2-D);
    /// the grid is their product, the first axis varying fastest.
    pub axes: Vec<Vec<f64>>,
    /// The density and its band at each grid point, in the grid's order.
    pub bands: PointwiseBands,
}

impl DensityGrid {
    /// The density at grid point `(i, j)` of a 2-D grid (`i` along the first axis).
    pub fn at(&self, values: &[f64], i: usize, j: usize) -> f64 {
        values[j * self.axes[0].len() + i]
    }
}

/// `count` evenly spaced values over the range of `values` extended by [`MARGIN`] of it on
/// each side (by 1 when the values are all equal).
pub fn axis(values: impl Iterator<Item = f64>, count: usize) -> Vec<f64> {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let span = hi - lo;
    let pad = if span > 0.0 { MARGIN * span } else { 1.0 };
    let (lo, hi) = (lo - pad, hi + pad);
    let step = (hi - lo) / (count.max(2) - 1) as f64;
    (0..count.max(2)).map(|i| lo + step * i as f64).collect()
}

/// The grid of `data` (1-D or 2-D) as points: [`LINE_POINTS`] for 1-D, [`SURFACE_POINTS`]²
/// for 2-D, the first coordinate varying fastest.
fn grid_of(data: &DenseData) -> Result<(Vec<Vec<f64>>, DenseData)> {
    let column = |c: usize, count: usize| axis((0..data.n()).map(|i| data.row(i)[c]), count);
    match data.d() {
        1 => {
            let x = column(0, LINE_POINTS);
            let points = DenseData::new(x.len(), 1, x.clone())?;
            Ok((vec![x], points))
        }
        2 => {
            let (x, y) = (column(0, SURFACE_POINTS), column(1, SURFACE_POINTS));
            let values: Vec<f64> = y
                .iter()
                .flat_map(|&b| x.iter().flat_map(move |&a| [a, b]))
                .collect();
            let points = DenseData::new(x.len() * y.len(), 2, values)?;
            Ok((vec![x, y], points))
        }
        d => Err(Error::Usage(format!(
            "a density on a grid is drawn for 1-D and 2-D data, not for {d} dimensions"
        ))),
    }
}

/// The draws of `sources` for the bands: each chain's evenly thinned to its share of the
/// limit set by [`MAX_DRAWS`], [`MAX_CELLS`] and [`MIN_DRAWS`] for `n` points.
fn thinned(sources: &[DrawSource], n: usize) -> Result<Vec<(Vec<usize>, HyperState)>> {
    let limit = (MAX_CELLS / n.max(1)).clamp(MIN_DRAWS, MAX_DRAWS);
    let share = limit.div_ceil(sources.len().max(1));
    let mut kept = Vec::new();
    for source in sources {
        let draws = source.read()?;
        let stride = draws.len().div_ceil(share).max(1);
        kept.extend(
            draws
                .into_iter()
                .step_by(stride)
                .map(|d| (d.labels, d.hyper)),
        );
    }
    Ok(kept)
}

/// The posterior predictive density of `data` (the data `model` was built over, 1-D or 2-D
/// real vectors) on a grid over their range, with pointwise bands at [`BAND_LEVEL`] over the
/// draws of `sources` (a summary's, after its burn-in). Errors for other dimensions or
/// kernels on other data than real vectors, without draws, or if a draw does not label the
/// model's points. Cost: per draw (at most [`MAX_DRAWS`]), building its partition (O(n d²))
/// and O(G K) predictives for G grid points; the draws in parallel.
pub fn density_grid(
    model: &Model,
    data: &DenseData,
    sources: &[DrawSource],
) -> Result<DensityGrid> {
    if !matches!(model.kernel, AnyKernel::Nw(_) | AnyKernel::Diag(_)) {
        return Err(Error::Usage(format!(
            "a density on a grid needs a kernel on real vectors, not `kernel` {}",
            model.kernel.kind().name()
        )));
    }
    let (axes, grid) = grid_of(data)?;
    let draws = thinned(sources, data.n())?;
    if draws.is_empty() {
        return Err(Error::Usage(
            "no partition draws after the burn-in: no density (lower `burn_in`)".into(),
        ));
    }
    let grid = Dataset::Dense(grid);
    let p = &model.prior;
    let ln_f = crate::with_kernel!(&model.kernel, |k| per_draw(k, p, &grid, &draws))?;
    Ok(DensityGrid {
        axes,
        bands: pointwise_bands(&ln_f, BAND_LEVEL)?,
    })
}

/// The predictive density's margins in each of the first [`MAX_MARGINS`] coordinates, on a
/// line over each coordinate's range with pointwise bands (see the module documentation).
#[derive(Clone, Debug)]
pub struct MarginGrids {
    /// The data's dimension.
    pub d: usize,
    /// Per coordinate drawn (0, 1, ... up to [`MAX_MARGINS`]), its grid of [`LINE_POINTS`].
    pub axes: Vec<Vec<f64>>,
    /// Per coordinate drawn, the margin's density and band at its grid's points.
    pub bands: Vec<PointwiseBands>,
}

/// The Normal-Wishart kernel whose predictive, for any cluster, is the margin in coordinate
/// `j` of `kernel`'s: over coordinate `j` of its data with `(ξ_j, Ψ_jj, r, ν - d + 1)` (see
/// the module documentation). Errors if `j` is not a coordinate. Cost: O(n).
pub fn nw_margin(kernel: &NormalWishart, j: usize) -> Result<NormalWishart> {
    let h = kernel.hyper();
    let d = h.xi().len();
    let column = coordinate(kernel.data(), j)?;
    let hyper = NwHyper::new(
        vec![h.xi()[j]],
        vec![h.psi()[j * d + j]],
        h.r(),
        h.nu() - d as f64 + 1.0,
    )?;
    NormalWishart::new(Arc::new(column), hyper)
}

/// The diagonal kernel of coordinate `j` of `kernel` alone: its predictive, for any cluster,
/// is the margin in coordinate `j` of `kernel`'s (the coordinates are independent). Errors if
/// `j` is not a coordinate. Cost: O(n).
pub fn diag_margin(kernel: &Diagonal, j: usize) -> Result<Diagonal> {
    let h = kernel.hyper();
    let column = coordinate(kernel.data(), j)?;
    let hyper = DiagHyper::new(vec![h.xi()[j]], vec![h.psi()[j]], h.r(), h.nu())?;
    Diagonal::new(Arc::new(column), hyper)
}

/// Coordinate `j` of `data` as 1-D data. Cost: O(n).
fn coordinate(data: &DenseData, j: usize) -> Result<DenseData> {
    if j >= data.d() {
        return Err(Error::param(
            "coordinate",
            j,
            &format!("a coordinate below the data's dimension {}", data.d()),
        ));
    }
    DenseData::new(data.n(), 1, (0..data.n()).map(|i| data.row(i)[j]).collect())
}

/// The margins of the posterior predictive density of `data` (the data `model` was built
/// over, real vectors) in each of its first [`MAX_MARGINS`] coordinates, each on a line of
/// [`LINE_POINTS`] over the coordinate's range, with pointwise bands at [`BAND_LEVEL`] over
/// the draws of `sources`. Errors for kernels other than Normal-Wishart and diagonal, or
/// without draws. Cost: per draw and coordinate, building the margin's partition (O(n)) and
/// O(G K) 1-D predictives; the draws in parallel.
pub fn margin_grids(
    model: &Model,
    data: &DenseData,
    sources: &[DrawSource],
) -> Result<MarginGrids> {
    let dims = data.d().min(MAX_MARGINS);
    let axes: Vec<Vec<f64>> = (0..dims)
        .map(|j| axis((0..data.n()).map(|i| data.row(i)[j]), LINE_POINTS))
        .collect();
    let lines = axes
        .iter()
        .map(|x| DenseData::new(x.len(), 1, x.clone()).map(Dataset::Dense))
        .collect::<Result<Vec<_>>>()?;
    let draws = thinned(sources, data.n())?;
    if draws.is_empty() {
        return Err(Error::Usage(
            "no partition draws after the burn-in: no density (lower `burn_in`)".into(),
        ));
    }
    let p = &model.prior;
    // Per draw, per coordinate, the margin's log density on its line.
    let ln_f: Vec<Vec<Vec<f64>>> = match &model.kernel {
        AnyKernel::Nw(k) => margins_per_draw(k, nw_margin, p, &lines, &draws)?,
        AnyKernel::Diag(k) => margins_per_draw(k, diag_margin, p, &lines, &draws)?,
        other => {
            return Err(Error::Usage(format!(
                "a density's margins need a kernel on real vectors, not `kernel` {}",
                other.kind().name()
            )))
        }
    };
    let bands = (0..dims)
        .map(|j| {
            let rows: Vec<Vec<f64>> = ln_f.iter().map(|per| per[j].clone()).collect();
            pointwise_bands(&rows, BAND_LEVEL)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(MarginGrids {
        d: data.d(),
        axes,
        bands,
    })
}

/// Each draw's log margin density at the points of each of `lines` (one per coordinate), the
/// margin's kernel `margin(k, j)` taken from the kernel moved to the draw's hyperparameters.
fn margins_per_draw<K: Kernel>(
    kernel: &K,
    margin: fn(&K, usize) -> Result<K>,
    base: &Prior,
    lines: &[Dataset],
    draws: &[(Vec<usize>, HyperState)],
) -> Result<Vec<Vec<Vec<f64>>>>
where
    K::NewData: Sync,
{
    let fixed = (0..lines.len())
        .map(|j| margin(kernel, j))
        .collect::<Result<Vec<_>>>()?;
    let new = fixed
        .iter()
        .zip(lines)
        .map(|(k, line)| k.new_points(line))
        .collect::<Result<Vec<_>>>()?;
    draws
        .par_iter()
        .map(|(labels, hyper)| {
            let prior = base.at(hyper.prior)?;
            let moved = match hyper.kernel {
                Some(h) => {
                    let k = kernel.at(&h)?;
                    Some(
                        (0..lines.len())
                            .map(|j| margin(&k, j))
                            .collect::<Result<Vec<_>>>()?,
                    )
                }
                None => None,
            };
            let kernels = moved.as_ref().unwrap_or(&fixed);
            kernels
                .iter()
                .zip(&new)
                .map(|(k, new)| {
                    let partition = Partition::from_labels(k, labels)?;
                    ln_predictive_of_draw(k, &partition, &prior, new)
                })
                .collect()
        })
        .collect()
}

/// Each draw's log density at the points of `grid`, under the kernel and prior moved to the
/// draw's hyperparameters.
fn per_draw<K: Kernel>(
    kernel: &K,
    base: &Prior,
    grid: &Dataset,
    draws: &[(Vec<usize>, HyperState)],
) -> Result<Vec<Vec<f64>>>
where
    K::NewData: Sync,
{
    let new = kernel.new_points(grid)?;
    draws
        .par_iter()
        .map(|(labels, hyper)| {
            let moved = hyper.kernel.map(|h| kernel.at(&h)).transpose()?;
            let k = moved.as_ref().unwrap_or(kernel);
            let prior = base.at(hyper.prior)?;
            let partition = Partition::from_labels(k, labels)?;
            ln_predictive_of_draw(k, &partition, &prior, new)
        })
        .collect()
}

/// A segment of a contour line, from one point to another.
pub type Segment = [(f64, f64); 2];

/// The contour at `level` of `values` on a 2-D grid (`values[j * nx + i]` at
/// `(x[i], y[j])`) as segments, by marching squares: in each grid cell, the crossings of
/// `level` on its edges by linear interpolation, joined in pairs (a saddle cell, whose
/// opposite corners lie on the same side, is joined by its centre's value). Cost: O(nx ny).
pub fn contour(x: &[f64], y: &[f64], values: &[f64], level: f64) -> Vec<Segment> {
    let nx = x.len();
    let mut segments = Vec::new();
    for j in 0..y.len().saturating_sub(1) {
        for i in 0..nx.saturating_sub(1) {
            // Corners counter-clockwise from the lower left, and the edges between them.
            let corners = [
                (x[i], y[j], values[j * nx + i]),
                (x[i + 1], y[j], values[j * nx + i + 1]),
                (x[i + 1], y[j + 1], values[(j + 1) * nx + i + 1]),
                (x[i], y[j + 1], values[(j + 1) * nx + i]),
            ];
            let mut crossings = Vec::with_capacity(4);
            for e in 0..4 {
                let (a, b) = (corners[e], corners[(e + 1) % 4]);
                if (a.2 >= level) != (b.2 >= level) {
                    let t = (level - a.2) / (b.2 - a.2);
                    crossings.push((a.0 + t * (b.0 - a.0), a.1 + t * (b.1 - a.1)));
                }
            }
            match crossings.len() {
                2 => segments.push([crossings[0], crossings[1]]),
                4 => {
                    // A saddle: with the centre above the level, the high corners join
                    // through it, so each low corner is cut off on its own.
                    let centre = corners.iter().map(|c| c.2).sum::<f64>() / 4.0;
                    let first_high = corners[0].2 >= level;
                    if (centre >= level) == first_high {
                        segments.push([crossings[0], crossings[1]]);
                        segments.push([crossings[2], crossings[3]]);
                    } else {
                        segments.push([crossings[3], crossings[0]]);
                        segments.push([crossings[1], crossings[2]]);
                    }
                }
                _ => {}
            }
        }
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_cover_the_data_with_a_margin() {
        let a = axis([1.0, 3.0].into_iter(), 5);
        for (v, w) in a.iter().zip([0.8, 1.4, 2.0, 2.6, 3.2]) {
            assert!((v - w).abs() < 1e-12, "{a:?}");
        }
        assert_eq!(axis([2.0].into_iter(), 3), vec![1.0, 2.0, 3.0]);
        let data = DenseData::new(2, 2, vec![0.0, 10.0, 1.0, 20.0]).unwrap();
        let (axes, points) = grid_of(&data).unwrap();
        assert_eq!(points.n(), SURFACE_POINTS * SURFACE_POINTS);
        // The first coordinate varies fastest.
        assert_eq!(points.row(1), &[axes[0][1], axes[1][0]]);
        assert_eq!(points.row(SURFACE_POINTS), &[axes[0][0], axes[1][1]]);
        assert!(grid_of(&DenseData::new(1, 3, vec![0.0; 3]).unwrap()).is_err());
    }

    #[test]
    fn contours_cross_cell_edges_where_the_level_lies() {
        // f(x, y) = x + y on a 3 x 3 grid over 0..2: the contour at 1.5 is the line
        // x + y = 1.5, cut into one segment per cell it crosses.
        let (x, y) = ([0.0, 1.0, 2.0], [0.0, 1.0, 2.0]);
        let values: Vec<f64> = y
            .iter()
            .flat_map(|b| x.iter().map(move |a| a + b))
            .collect();
        let segments = contour(&x, &y, &values, 1.5);
        assert_eq!(segments.len(), 3);
        for s in &segments {
            for p in s {
                assert!((p.0 + p.1 - 1.5).abs() < 1e-12, "{s:?}");
            }
        }
        assert!(contour(&x, &y, &values, 9.0).is_empty());
        // A saddle (high at two opposite corners) gives two segments.
        let saddle = contour(&[0.0, 1.0], &[0.0, 1.0], &[1.0, 0.0, 0.0, 1.0], 0.5);
        assert_eq!(saddle.len(), 2);
    }
}
