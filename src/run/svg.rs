//! The plots of runs drawn as SVG files: the panels of [`super::curves`] as line charts; for
//! 2-D data, a scatter of the points coloured by the best run's point estimate; and the
//! pictures of the posterior's uncertainty ([`super::uncertainty`]): P(K) as bars, the
//! similarity matrix as a heatmap ordered by the point estimate, and the predictive density
//! with pointwise bands (a band around a curve for 1-D data, contours of the mean beside a
//! map of the band's width for 2-D data, a small panel per coordinate's margin beyond). Every front end writes the same pictures through
//! [`draw`].

use super::curves::{self, clip, padded, panels, Panel, Scatter};
use super::density::contour;
use super::uncertainty::{self, DensityPicture, MarginsPicture, OrderedSimilarity, Uncertainty};
use super::RunDir;
use crate::diagnostics::PointwiseBands;
use crate::error::{Error, Result};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Picture size in pixels.
const SIZE: (u32, u32) = (960, 600);

/// Colours of lines (Tableau 10) and of clusters (Tableau 20) as 0xRRGGBB, cycled.
const LINE_COLOURS: [u32; 10] = [
    0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22,
    0x17becf,
];
const CLUSTER_COLOURS: [u32; 20] = [
    0x1f77b4, 0xaec7e8, 0xff7f0e, 0xffbb78, 0x2ca02c, 0x98df8a, 0xd62728, 0xff9896, 0x9467bd,
    0xc5b0d5, 0x8c564b, 0xc49c94, 0xe377c2, 0xf7b6d2, 0x7f7f7f, 0xc7c7c7, 0xbcbd22, 0xdbdb8d,
    0x17becf, 0x9edae5,
];

/// Colour `i` of `palette`, cycled.
fn colour(palette: &[u32], i: usize) -> RGBColor {
    let [_, r, g, b] = palette[i % palette.len()].to_be_bytes();
    RGBColor(r, g, b)
}

/// Maps a plotting failure to a write error on `path`.
fn plot_error<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> Error + '_ {
    move |e| Error::Write {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    }
}

/// Draws `panel` into `path`.
fn line_plot(path: &Path, panel: &Panel) -> Result<()> {
    let err = plot_error(path);
    let (lines, y, integer) = (&panel.curves, panel.y, panel.integer);
    let x_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .fold(0.0f64, f64::max)
        .max(1e-3);
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&panel.title, ("sans-serif", 22))
        .margin(18)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..x_max * 1.02, y.0..y.1)
        .map_err(&err)?;
    let y_format = |v: &f64| {
        if integer || v.abs() >= 100.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.2}")
        }
    };
    chart
        .configure_mesh()
        .x_desc("sampling seconds")
        .y_desc(&panel.y_label)
        .y_label_formatter(&y_format)
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(&err)?;
    let mut shown = Vec::new();
    for l in lines {
        let c = colour(&LINE_COLOURS, l.key_index);
        for (k, part) in clip(&l.points, y.0, y.1).into_iter().enumerate() {
            let series = chart
                .draw_series(LineSeries::new(part, c.stroke_width(2)))
                .map_err(&err)?;
            if k == 0 && !shown.contains(&l.key) {
                shown.push(l.key.clone());
                series.label(l.key.clone()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(3))
                });
            }
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(&err)?;
    root.present().map_err(&err)?;
    Ok(())
}

/// Draws the scatter `s` into `path`, its axes named by the data's columns when it had a
/// header.
fn scatter(path: &Path, s: &Scatter) -> Result<()> {
    let err = plot_error(path);
    let (x, labels) = (&s.points, &s.labels);
    let (x0, x1) = padded((0..x.n()).map(|i| x.row(i)[0]));
    let (y0, y1) = padded((0..x.n()).map(|i| x.row(i)[1]));
    let root = SVGBackend::new(path, (SIZE.1 + 80, SIZE.1)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&s.title, ("sans-serif", 20))
        .margin(18)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(&err)?;
    let [x_name, y_name] = s.columns.clone().unwrap_or_default();
    chart
        .configure_mesh()
        .light_line_style(WHITE.mix(0.0))
        .x_desc(x_name)
        .y_desc(y_name)
        .draw()
        .map_err(&err)?;
    chart
        .draw_series((0..x.n()).map(|i| {
            let p = x.row(i);
            Circle::new(
                (p[0], p[1]),
                2,
                colour(&CLUSTER_COLOURS, labels[i]).filled(),
            )
        }))
        .map_err(&err)?;
    root.present().map_err(&err)?;
    Ok(())
}

/// A colour between white (`t` = 0) and `to` (`t` = 1), `t` clamped to [0, 1].
fn shade(to: (u8, u8, u8), t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0);
    let mix = |c: u8| (255.0 - t * (255.0 - f64::from(c))).round() as u8;
    RGBColor(mix(to.0), mix(to.1), mix(to.2))
}

/// Dark blue: high density and high similarity.
const BLUE: (u8, u8, u8) = (8, 48, 107);

/// Dark orange: wide bands.
const ORANGE: (u8, u8, u8) = (166, 54, 3);

/// Draws P(K) as bars into `path`, the point estimate's K marked and the credible ball's
/// range of K in the title.
fn k_bars(path: &Path, u: &Uncertainty) -> Result<()> {
    let err = plot_error(path);
    let ks = &u.k_distribution;
    let (k0, k1) = (ks.first().map_or(0, |k| k.0), ks.last().map_or(1, |k| k.0));
    let top = ks.iter().map(|k| k.1).fold(0.0f64, f64::max).max(1e-3) * 1.1;
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let ball = match u.ball_clusters {
        Some((lo, hi)) if lo < hi => format!("; credible ball's bounds: K = {lo} to {hi}"),
        Some((k, _)) => format!("; credible ball's bounds: K = {k}"),
        None => String::new(),
    };
    let title = format!(
        "posterior of K, {} ({}: K = {}{ball})",
        u.subject, u.estimate_name, u.estimate_clusters
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(18)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d(k0 as f64 - 0.6..k1 as f64 + 0.6, 0.0..top)
        .map_err(&err)?;
    let whole = |v: &f64| {
        if (v - v.round()).abs() < 1e-9 {
            format!("{v:.0}")
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("K")
        .y_desc("P(K | data)")
        .x_labels((k1 - k0 + 2).min(30))
        .x_label_formatter(&whole)
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(&err)?;
    chart
        .draw_series(ks.iter().map(|&(k, p)| {
            let c = if k == u.estimate_clusters {
                colour(&LINE_COLOURS, 1)
            } else {
                colour(&LINE_COLOURS, 0)
            };
            Rectangle::new([(k as f64 - 0.4, 0.0), (k as f64 + 0.4, p)], c.filled())
        }))
        .map_err(&err)?;
    root.present().map_err(&err)?;
    Ok(())
}

/// Draws the ordered similarity `s` as a heatmap into `path` (white 0 to dark blue 1), the
/// estimate's clusters framed. Cells of one row and one shade are drawn as one rectangle.
fn similarity(path: &Path, s: &OrderedSimilarity, u: &Uncertainty) -> Result<()> {
    let err = plot_error(path);
    let m = s.shown.len();
    let side = SIZE.1;
    let root = SVGBackend::new(path, (side + 40, side + 40)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let sampled = if m < s.n {
        format!(", {m} of {} points", s.n)
    } else {
        String::new()
    };
    let title = format!(
        "P(i and j together), {}: ordered by the K = {} {}{sampled}",
        u.subject, u.estimate_clusters, u.estimate_name
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 17))
        .margin(14)
        .build_cartesian_2d(0.0..m as f64, 0.0..m as f64)
        .map_err(&err)?;
    // Row `a` is drawn from the top; shades are rounded to 1/64 so runs merge.
    let level = |v: f64| (v * 64.0).round() as u32;
    let mut cells = Vec::new();
    for a in 0..m {
        let row = &s.values[a * m..(a + 1) * m];
        let mut b = 0;
        while b < m {
            let l = level(row[b]);
            let mut e = b + 1;
            while e < m && level(row[e]) == l {
                e += 1;
            }
            if l > 0 {
                let y = (m - a) as f64;
                cells.push(Rectangle::new(
                    [(b as f64, y - 1.0), (e as f64, y)],
                    shade(BLUE, f64::from(l) / 64.0).filled(),
                ));
            }
            b = e;
        }
    }
    chart.draw_series(cells).map_err(&err)?;
    let mut ends: Vec<usize> = s.starts[1..].to_vec();
    ends.push(m);
    chart
        .draw_series(s.starts.iter().zip(&ends).map(|(&a, &b)| {
            let (a, b) = (a as f64, b as f64);
            Rectangle::new(
                [(a, m as f64 - b), (b, m as f64 - a)],
                colour(&LINE_COLOURS, 1).stroke_width(1),
            )
        }))
        .map_err(&err)?;
    root.present().map_err(&err)?;
    Ok(())
}

/// The axis name of column `c` of a density picture.
fn column_name(d: &DensityPicture, c: usize) -> String {
    d.columns
        .as_ref()
        .and_then(|names| names.get(c).cloned())
        .unwrap_or_else(|| format!("x{c}"))
}

/// Draws a 1-D density into `path`: the band, the mean over it and the data as a rug.
fn density_line(path: &Path, d: &DensityPicture) -> Result<()> {
    let err = plot_error(path);
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let rug = (0..d.points.n()).map(|i| d.points.row(i)[0]);
    let line = BandLine {
        caption: &d.title,
        caption_size: 18,
        x_desc: column_name(d, 0),
        x: &d.grid.axes[0],
        bands: &d.grid.bands,
        legend: true,
    };
    band_line(&root, &line, rug, path)?;
    root.present().map_err(&err)?;
    Ok(())
}

/// A density on a line with its band, as [`band_line`] draws it.
struct BandLine<'a> {
    caption: &'a str,
    caption_size: u32,
    x_desc: String,
    x: &'a [f64],
    bands: &'a PointwiseBands,
    legend: bool,
}

/// Draws `line` into `area`: its band, its mean over it and `rug` (the data) as ticks on the
/// axis, with a legend when asked. Errors name `path`.
fn band_line(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    line: &BandLine<'_>,
    rug: impl Iterator<Item = f64>,
    path: &Path,
) -> Result<()> {
    let err = plot_error(path);
    let (x, b) = (line.x, line.bands);
    let top = b.upper.iter().chain(&b.mean).fold(0.0f64, |a, &v| a.max(v)) * 1.05;
    let top = if top > 0.0 && top.is_finite() {
        top
    } else {
        1.0
    };
    let small = !line.legend;
    let mut chart = ChartBuilder::on(area)
        .caption(line.caption, ("sans-serif", line.caption_size))
        .margin(if small { 8 } else { 18 })
        .x_label_area_size(if small { 36 } else { 48 })
        .y_label_area_size(if small { 56 } else { 80 })
        .build_cartesian_2d(x[0]..x[x.len() - 1], 0.0..top)
        .map_err(&err)?;
    chart
        .configure_mesh()
        .x_desc(line.x_desc.as_str())
        .y_desc("density")
        .x_labels(if small { 4 } else { 10 })
        .y_labels(if small { 4 } else { 10 })
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(&err)?;
    let blue = colour(&LINE_COLOURS, 0);
    let mut outline: Vec<(f64, f64)> = x.iter().copied().zip(b.upper.iter().copied()).collect();
    outline.extend(x.iter().copied().zip(b.lower.iter().copied()).rev());
    chart
        .draw_series(std::iter::once(Polygon::new(
            outline,
            blue.mix(0.25).filled(),
        )))
        .map_err(&err)?
        .label(format!("{:.0}% pointwise band", 100.0 * b.level))
        .legend(move |(x, y)| {
            Rectangle::new([(x, y - 6), (x + 22, y + 6)], blue.mix(0.25).filled())
        });
    chart
        .draw_series(LineSeries::new(
            x.iter().copied().zip(b.mean.iter().copied()),
            blue.stroke_width(2),
        ))
        .map_err(&err)?
        .label("posterior mean")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], blue.stroke_width(3)));
    let tick = 0.025 * top;
    chart
        .draw_series(rug.map(|v| PathElement::new(vec![(v, 0.0), (v, tick)], BLACK.mix(0.6))))
        .map_err(&err)?;
    if line.legend {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(&err)?;
    }
    Ok(())
}

/// Draws the margins of a density of more than two dimensions into `path`: one small panel
/// per coordinate (at most [`super::density::MAX_MARGINS`], the title saying how many of
/// how many), each the margin's band around its mean with the coordinate's values as a rug.
fn density_margins(path: &Path, m: &MarginsPicture) -> Result<()> {
    let err = plot_error(path);
    let panels = m.grids.axes.len();
    let cols = panels.clamp(1, 4);
    let rows = panels.div_ceil(cols);
    let size = (SIZE.0, 60 + 260 * rows as u32);
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let root = root.titled(&m.title, ("sans-serif", 18)).map_err(&err)?;
    let areas = root.split_evenly((rows, cols));
    for (j, area) in areas.iter().enumerate().take(panels) {
        let name = m
            .columns
            .as_ref()
            .and_then(|names| names.get(j).cloned())
            .unwrap_or_else(|| format!("x{j}"));
        let line = BandLine {
            caption: &name,
            caption_size: 14,
            x_desc: name.clone(),
            x: &m.grids.axes[j],
            bands: &m.grids.bands[j],
            legend: false,
        };
        let rug = (0..m.points.n()).map(|i| m.points.row(i)[j]);
        band_line(area, &line, rug, path)?;
    }
    root.present().map_err(&err)?;
    Ok(())
}

/// Draws a 2-D density into `path`: on the left the mean density as shades with contours and
/// the data over it, on the right the width of the pointwise band (upper minus lower) with
/// the same contours, so that where the density is uncertain shows at a glance.
fn density_surface(path: &Path, d: &DensityPicture) -> Result<()> {
    let err = plot_error(path);
    let g = &d.grid;
    let (x, y, b) = (&g.axes[0], &g.axes[1], &g.bands);
    let peak = b.mean.iter().fold(0.0f64, |a, &v| a.max(v));
    let width: Vec<f64> = b.upper.iter().zip(&b.lower).map(|(u, l)| u - l).collect();
    let widest = width.iter().fold(0.0f64, |a, &v| a.max(v));
    let levels: Vec<f64> = [0.02, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8]
        .iter()
        .map(|f| f * peak)
        .collect();
    let root = SVGBackend::new(path, (2 * SIZE.1 + 80, SIZE.1 + 40)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let root = root.titled(&d.title, ("sans-serif", 18)).map_err(&err)?;
    let panels = root.split_evenly((1, 2));
    let (dx, dy) = ((x[1] - x[0]) / 2.0, (y[1] - y[0]) / 2.0);
    let specs = [
        (
            "mean density (contours at 2-80% of its peak)",
            &b.mean,
            peak,
            BLUE,
        ),
        (
            "width of the pointwise band (upper - lower)",
            &width,
            widest,
            ORANGE,
        ),
    ];
    for (k, (panel, (caption, values, high, to))) in panels.iter().zip(specs).enumerate() {
        let mut chart = ChartBuilder::on(panel)
            .caption(caption, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(x[0]..x[x.len() - 1], y[0]..y[y.len() - 1])
            .map_err(&err)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(column_name(d, 0))
            .y_desc(column_name(d, 1))
            .draw()
            .map_err(&err)?;
        let high = if high > 0.0 { high } else { 1.0 };
        // Shades in 48 steps; cells of one row and one shade are one rectangle, white ones
        // none, which keeps the file small.
        let step = |v: f64| (48.0 * 0.85 * v / high).round().clamp(0.0, 48.0) as u32;
        let mut cells = Vec::new();
        for (j, &yj) in y.iter().enumerate() {
            let mut i = 0;
            while i < x.len() {
                let s = step(g.at(values, i, j));
                let mut e = i + 1;
                while e < x.len() && step(g.at(values, e, j)) == s {
                    e += 1;
                }
                if s > 0 {
                    cells.push(Rectangle::new(
                        [(x[i] - dx, yj - dy), (x[e - 1] + dx, yj + dy)],
                        shade(to, f64::from(s) / 48.0).filled(),
                    ));
                }
                i = e;
            }
        }
        chart.draw_series(cells).map_err(&err)?;
        let line = if k == 0 {
            BLACK.mix(0.8)
        } else {
            BLACK.mix(0.45)
        };
        for &level in &levels {
            chart
                .draw_series(
                    contour(x, y, &b.mean, level)
                        .into_iter()
                        .map(|s| PathElement::new(s.to_vec(), line.stroke_width(1))),
                )
                .map_err(&err)?;
        }
        if k == 0 {
            chart
                .draw_series((0..d.points.n()).map(|i| {
                    let p = d.points.row(i);
                    Circle::new((p[0], p[1]), 1, colour(&LINE_COLOURS, 3).filled())
                }))
                .map_err(&err)?;
        }
    }
    root.present().map_err(&err)?;
    Ok(())
}

/// Draws the density picture `d` into `path`: its band around its mean for 1-D data, the
/// contours of its mean beside its band's width for 2-D data.
pub fn density(path: &Path, d: &DensityPicture) -> Result<()> {
    match d.grid.axes.len() {
        1 => density_line(path, d),
        _ => density_surface(path, d),
    }
}

/// Draws the pictures of `u` into `out`: `k_posterior.svg`, `similarity.svg` and
/// `density.svg`, those there is something to show for; returns their paths.
fn draw_uncertainty(u: &Uncertainty, out: &Path) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    if !u.k_distribution.is_empty() {
        let path = out.join("k_posterior.svg");
        k_bars(&path, u)?;
        written.push(path);
    }
    if let Some(s) = &u.similarity {
        let path = out.join("similarity.svg");
        similarity(&path, s, u)?;
        written.push(path);
    }
    if let Some(d) = &u.density {
        let path = out.join("density.svg");
        density(&path, d)?;
        written.push(path);
    } else if let Some(m) = &u.margins {
        let path = out.join("density.svg");
        density_margins(&path, m)?;
        written.push(path);
    }
    Ok(written)
}

/// Writes the plots of `runs` into `out` and returns their paths, with notes on what was left
/// out: `log_joint.svg`, `n_clusters.svg`, `acceptance.svg` (when a move makes proposals),
/// `scatter.svg` (for 2-D real data that can be read), and the pictures of the posterior's
/// uncertainty ([`uncertainty::uncertainty`]): `k_posterior.svg`, `similarity.svg` and
/// `density.svg` (for 1-D and 2-D real data that can be read; for more dimensions a panel
/// per coordinate's margin, the first 12). Cost: reading every chain's
/// trace ([`panels`]), for the scatter one summary and the data ([`curves::scatter`]), and
/// the uncertainty's (a summary, the similarity of at most [`uncertainty::MAX_SHOWN`]
/// points, the density over at most a few hundred draws).
pub fn draw(runs: &[RunDir], out: &Path) -> Result<(Vec<PathBuf>, Vec<String>)> {
    let mut notes = Vec::new();
    super::create_dir(out)?;
    let mut written = Vec::new();
    for panel in panels(runs)? {
        let path = out.join(format!("{}.svg", panel.name));
        line_plot(&path, &panel)?;
        written.push(path);
    }
    match curves::scatter(runs)? {
        Some(Ok(s)) => {
            let path = out.join("scatter.svg");
            scatter(&path, &s)?;
            written.push(path);
        }
        Some(Err(note)) => notes.push(note),
        None => {}
    }
    let (u, more) = uncertainty::uncertainty(runs)?;
    notes.extend(more);
    if let Some(u) = u {
        written.extend(draw_uncertainty(&u, out)?);
    }
    Ok((written, notes))
}
