//! The plots of runs drawn as SVG files: the panels of [`super::curves`] as line charts and,
//! for 2-D data, a scatter of the points coloured by the best run's point estimate. Every front
//! end writes the same pictures through [`draw`].

use super::curves::{self, clip, padded, panels, Panel, Scatter};
use super::RunDir;
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

/// Writes the plots of `runs` into `out` and returns their paths, with notes on what was left
/// out: `log_joint.svg`, `n_clusters.svg`, `acceptance.svg` (when a move makes proposals) and
/// `scatter.svg` (for 2-D real data that can be read). Cost: reading every chain's trace
/// ([`panels`]) and, for the scatter, one summary and the data ([`curves::scatter`]).
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
    Ok((written, notes))
}
