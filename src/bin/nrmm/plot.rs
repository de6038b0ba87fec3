//! `nrmm plot`: SVG plots of runs. The log joint and the number of clusters against sampling
//! time, one line per chain (coloured by sampler when several samplers are drawn), the
//! running acceptance ratio of every Metropolis-Hastings move, and for 2-D data a scatter
//! of the points coloured by the best run's point estimate.

use crate::args::PlotArgs;
use crate::common::data_args;
use crate::common::{load_data, Builtin};
use crate::output::{self, create_dir};
use nrmm::data::{Dataset, DenseData, Fingerprint};
use nrmm::prior::NrmPrior;
use nrmm::run::{chain_dir, RunDir, Summary, TraceColumns};
use nrmm::{Error, Result};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Points drawn per line: enough for the eye, small enough for a light SVG.
const POINTS_PER_LINE: usize = 1500;

/// Rows of a trace read per column (more than a line can show).
const TRACE_ROWS: usize = 1 << 13;

/// Picture size in pixels.
const SIZE: (u32, u32) = (960, 600);

/// Colours of lines (Tableau 10) and of clusters (Tableau 20), cycled.
const LINE_COLOURS: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];
const CLUSTER_COLOURS: [(u8, u8, u8); 20] = [
    (31, 119, 180),
    (174, 199, 232),
    (255, 127, 14),
    (255, 187, 120),
    (44, 160, 44),
    (152, 223, 138),
    (214, 39, 40),
    (255, 152, 150),
    (148, 103, 189),
    (197, 176, 213),
    (140, 86, 75),
    (196, 156, 148),
    (227, 119, 194),
    (247, 182, 210),
    (127, 127, 127),
    (199, 199, 199),
    (188, 189, 34),
    (219, 219, 141),
    (23, 190, 207),
    (158, 218, 229),
];

fn colour(palette: &[(u8, u8, u8)], i: usize) -> RGBColor {
    let (r, g, b) = palette[i % palette.len()];
    RGBColor(r, g, b)
}

/// One line of a plot.
struct Line {
    /// Legend text, shown once per key.
    key: String,
    /// Index of the key, which picks the colour.
    key_index: usize,
    /// The points.
    points: Vec<(f64, f64)>,
}

/// One chain's trace, named.
struct Chain {
    key: String,
    key_index: usize,
    trace: TraceColumns,
}

/// Every `step`-th element so that at most [`POINTS_PER_LINE`] remain, always with the last.
fn thin_points(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let step = points.len().div_ceil(POINTS_PER_LINE).max(1);
    let last = points.last().copied();
    let mut out: Vec<(f64, f64)> = points.into_iter().step_by(step).collect();
    if let (Some(l), Some(o)) = (last, out.last()) {
        if *o != l {
            out.push(l);
        }
    }
    out
}

/// Maps a plotting failure to a write error on `path`.
fn plot_error<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> Error + '_ {
    move |e| Error::Write {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    }
}

/// The range of the finite `values`, padded by 4% (by 1 when they are all equal); `(0, 1)`
/// without finite values, so that an axis always has a finite, non-empty range.
fn padded(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        return (0.0, 1.0);
    }
    let span = hi - lo;
    if span <= 0.0 || !span.is_finite() {
        return (lo - 1.0, hi + 1.0);
    }
    (lo - 0.04 * span, hi + 0.04 * span)
}

/// The parts of a polyline inside `lo ≤ y ≤ hi`, each ending or starting where the line
/// crosses a bound, so that nothing outside is drawn and nothing is flattened onto a bound.
fn clip(points: &[(f64, f64)], lo: f64, hi: f64) -> Vec<Vec<(f64, f64)>> {
    let inside = |p: (f64, f64)| p.1 >= lo && p.1 <= hi;
    let cross = |a: (f64, f64), b: (f64, f64), bound: f64| {
        let t = (bound - a.1) / (b.1 - a.1);
        (a.0 + t * (b.0 - a.0), bound)
    };
    let mut parts = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    for (k, &p) in points.iter().enumerate() {
        let prev = k.checked_sub(1).map(|j| points[j]);
        match (prev, inside(p)) {
            (_, true) => {
                if let Some(a) = prev.filter(|&a| !inside(a)) {
                    current.push(cross(a, p, if a.1 < lo { lo } else { hi }));
                }
                current.push(p);
            }
            (Some(a), false) if inside(a) => {
                current.push(cross(a, p, if p.1 < lo { lo } else { hi }));
                parts.push(std::mem::take(&mut current));
            }
            _ => {}
        }
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

/// Draws `lines` against sampling seconds into `path`; the parts of lines outside `y` are left
/// out. `integer` labels the y axis with whole numbers.
fn line_plot(
    path: &Path,
    title: &str,
    y_label: &str,
    lines: &[Line],
    y: (f64, f64),
    integer: bool,
) -> Result<()> {
    let err = plot_error(path);
    let x_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .fold(0.0f64, f64::max)
        .max(1e-3);
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
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
        .y_desc(y_label)
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

/// The scatter of 2-D points coloured by `labels`, its axes named by `columns` when the data
/// had a header.
fn scatter(
    path: &Path,
    title: &str,
    x: &DenseData,
    labels: &[usize],
    columns: Option<[String; 2]>,
) -> Result<()> {
    let err = plot_error(path);
    let (x0, x1) = padded((0..x.n()).map(|i| x.row(i)[0]));
    let (y0, y1) = padded((0..x.n()).map(|i| x.row(i)[1]));
    let root = SVGBackend::new(path, (SIZE.1 + 80, SIZE.1)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(18)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(&err)?;
    let [x_name, y_name] = columns.unwrap_or_default();
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

/// Reads the traces of every chain of `runs`, keyed by sampler when the runs use several, else
/// by chain (and run directory when there are several).
fn chains(runs: &[RunDir]) -> Result<Vec<Chain>> {
    let samplers: Vec<String> = runs.iter().map(sampler_name).collect();
    let by_sampler = samplers.windows(2).any(|w| w[0] != w[1]);
    let mut keys: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (run, sampler) in runs.iter().zip(&samplers) {
        for c in run.record.spec.chain_indices() {
            let path = chain_dir(&run.dir, c).join("trace.csv");
            let trace = TraceColumns::read(&path, TRACE_ROWS)?;
            let key = if by_sampler {
                sampler.clone()
            } else if runs.len() > 1 {
                let name = run
                    .dir
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                format!("{name} chain {c}")
            } else {
                format!("chain {c}")
            };
            let key_index = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                keys.push(key.clone());
                keys.len() - 1
            });
            out.push(Chain {
                key,
                key_index,
                trace,
            });
        }
    }
    Ok(out)
}

/// The points `(seconds, column)` of a chain.
fn series(chain: &Chain, column: &str) -> Vec<(f64, f64)> {
    let t = chain.trace.column("seconds").unwrap_or(&[]);
    let v = chain.trace.column(column).unwrap_or(&[]);
    thin_points(t.iter().copied().zip(v.iter().copied()).collect())
}

/// The sampler of a run by its name.
fn sampler_name(run: &RunDir) -> String {
    run.record.spec.sampler.kind.to_string()
}

/// Writes the plots of `runs` into `out` and returns their paths, with notes on what was left
/// out: `log_joint.svg`, `n_clusters.svg`, `acceptance.svg` (when a move makes proposals) and
/// `scatter.svg` (for 2-D real data that can be read).
pub fn draw(runs: &[RunDir], out: &Path) -> Result<(Vec<PathBuf>, Vec<String>)> {
    let mut notes = Vec::new();
    create_dir(out)?;
    let chains = chains(runs)?;
    let mut written = Vec::new();
    let joint = runs[0].record.model.build_prior()?.joint_label();

    let lines: Vec<Line> = chains
        .iter()
        .map(|c| Line {
            key: c.key.clone(),
            key_index: c.key_index,
            points: series(c, "log_joint"),
        })
        .collect();
    // The first tenth of each chain climbs from a poor start; the axis shows the rest.
    let y = padded(
        lines
            .iter()
            .flat_map(|l| l.points[l.points.len() / 10..].iter().map(|p| p.1)),
    );
    let path = out.join("log_joint.svg");
    line_plot(&path, "log joint", joint, &lines, y, false)?;
    written.push(path);

    let lines: Vec<Line> = chains
        .iter()
        .map(|c| Line {
            key: c.key.clone(),
            key_index: c.key_index,
            points: series(c, "n_clusters"),
        })
        .collect();
    let (lo, hi) = padded(lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)));
    // Whole numbers of clusters sit half a step inside the axis.
    let k_range = (lo.round() - 0.5, hi.round() + 0.5);
    let path = out.join("n_clusters.svg");
    line_plot(&path, "number of clusters", "K", &lines, k_range, true)?;
    written.push(path);

    let mut lines = Vec::new();
    for c in &chains {
        for h in c.trace.header() {
            let Some(mv) = h.strip_suffix("_proposed") else {
                continue;
            };
            let proposed = c.trace.column(h).unwrap_or(&[]);
            let accepted = c.trace.column(&format!("{mv}_accepted")).unwrap_or(&[]);
            let seconds = c.trace.column("seconds").unwrap_or(&[]);
            let (mut p, mut a) = (0.0, 0.0);
            let mut points = Vec::new();
            for ((&t, &dp), &da) in seconds.iter().zip(proposed).zip(accepted) {
                p += dp;
                a += da;
                if p > 0.0 {
                    points.push((t, a / p));
                }
            }
            if !points.is_empty() {
                lines.push(Line {
                    key: if c.key == mv {
                        c.key.clone()
                    } else {
                        format!("{} ({mv})", c.key)
                    },
                    key_index: c.key_index,
                    points: thin_points(points),
                });
            }
        }
    }
    if !lines.is_empty() {
        let hi = lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(0.0f64, f64::max);
        let path = out.join("acceptance.svg");
        line_plot(
            &path,
            "running acceptance ratio of Metropolis-Hastings moves",
            "accepted / proposed",
            &lines,
            (0.0, (hi * 1.1).clamp(1e-3, 1.0)),
            false,
        )?;
        written.push(path);
    }

    if let Some(path) = draw_scatter(runs, out, &mut notes)? {
        written.push(path);
    }
    Ok((written, notes))
}

/// The scatter of 2-D real data coloured by the point estimate of the run whose estimate has
/// the largest log joint; `None` when the data are not 2-D real vectors, or (with a note) when
/// they cannot be read or have changed.
fn draw_scatter(runs: &[RunDir], out: &Path, notes: &mut Vec<String>) -> Result<Option<PathBuf>> {
    let mut best: Option<(f64, &RunDir, Vec<usize>, usize)> = None;
    for run in runs {
        if run.record.fingerprint.dim != 2 {
            continue;
        }
        let report = Summary::of(std::slice::from_ref(run), None)?;
        if let Some(e) = report.point_estimate {
            if best.as_ref().is_none_or(|b| e.log_joint > b.0) {
                best = Some((e.log_joint, run, e.labels, e.n_clusters));
            }
        }
    }
    let Some((_, run, labels, k)) = best else {
        return Ok(None);
    };
    // Runs copied from another machine may name data that are not here: the other plots do
    // not need them, so the scatter is left out with a note instead of failing the verb.
    if run
        .record
        .source
        .data
        .as_ref()
        .is_some_and(|p| p.as_os_str() == crate::common::STDIN)
    {
        notes.push(format!(
            "no scatter: the data of {} came from standard input",
            run.dir.display()
        ));
        return Ok(None);
    }
    let data = match load_data(&data_args(&run.record.source), Builtin::Toy) {
        Ok(data) => data,
        Err(e) => {
            notes.push(format!(
                "no scatter: the data of {} cannot be read here ({e})",
                run.dir.display()
            ));
            return Ok(None);
        }
    };
    if Fingerprint::of(&data) != run.record.fingerprint {
        notes.push(format!(
            "no scatter: the data {} was run on have changed since",
            run.dir.display()
        ));
        return Ok(None);
    }
    let Dataset::Dense(x) = data else {
        return Ok(None);
    };
    let path = out.join("scatter.svg");
    let title = format!(
        "point estimate of {} seed {}: K = {k}",
        sampler_name(run),
        run.record.spec.seed
    );
    scatter(&path, &title, &x, &labels, column_names(&run.dir))?;
    Ok(Some(path))
}

/// The names of a run's two data columns, as its `summary.json` records them from the data's
/// header; `None` without a header (or a summary).
fn column_names(dir: &Path) -> Option<[String; 2]> {
    let text = std::fs::read_to_string(dir.join("summary.json")).ok()?;
    let summary: serde_json::Value = serde_json::from_str(&text).ok()?;
    let columns = summary.get("columns")?.as_array()?;
    match columns.as_slice() {
        [a, b] => Some([a.as_str()?.to_string(), b.as_str()?.to_string()]),
        _ => None,
    }
}

/// `nrmm plot`.
pub fn plot(a: PlotArgs) -> Result<()> {
    let runs = RunDir::resolve(&a.dirs)?;
    let out = a.out.clone().unwrap_or_else(|| a.dirs[0].clone());
    let (written, notes) = draw(&runs, &out)?;
    output::stdout(|o| {
        for p in &written {
            writeln!(o, "wrote {}", p.display())?;
        }
        for n in &notes {
            writeln!(o, "note: {n}")?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_cuts_lines_at_the_bounds() {
        let pts = [
            (0.0, -10.0),
            (1.0, 0.0),
            (2.0, 2.0),
            (3.0, 20.0),
            (4.0, 1.0),
        ];
        let parts = clip(&pts, -5.0, 5.0);
        assert_eq!(parts.len(), 2);
        assert_eq!(
            parts[0],
            vec![
                (0.5, -5.0),
                (1.0, 0.0),
                (2.0, 2.0),
                (2.1666666666666665, 5.0)
            ]
        );
        assert_eq!(parts[1], vec![(3.7894736842105265, 5.0), (4.0, 1.0)]);
        assert!(clip(&[(0.0, 9.0), (1.0, 8.0)], 0.0, 1.0).is_empty());
        let thin = thin_points((0..4000).map(|i| (i as f64, 0.0)).collect());
        assert!(thin.len() <= POINTS_PER_LINE + 1);
        assert_eq!(thin.last(), Some(&(3999.0, 0.0)));
        assert_eq!(padded([].into_iter()), (0.0, 1.0));
        assert_eq!(padded([f64::NAN, 2.0].into_iter()), (1.0, 3.0));
        assert_eq!(padded([0.0, 100.0].into_iter()), (-4.0, 104.0));
    }
}
