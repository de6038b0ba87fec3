//! What the plots of runs show, computed from their traces: the log joint and the number of
//! clusters against sampling time (one curve per chain, keyed by sampler when several are
//! drawn), the running acceptance ratio of every Metropolis-Hastings move, and the point
//! estimate to colour a scatter of 2-D data by ([`scatter`]). Front ends only draw them.

use super::record::{Builtin, STDIN};
use super::{chain_dir, RunDir, Summary, TraceColumns};
use crate::data::{Dataset, DenseData, Fingerprint};
use crate::error::Result;
use crate::prior::NrmPrior;

/// Points kept per curve: enough for the eye, small enough for a light picture.
pub const POINTS_PER_CURVE: usize = 1500;

/// Rows of a trace read per column (more than a curve can show).
const TRACE_ROWS: usize = 1 << 13;

/// One curve of a panel.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    /// Legend text, shown once per key.
    pub key: String,
    /// Index of the key among the panel's keys, which picks the colour.
    pub key_index: usize,
    /// The points `(sampling seconds, value)`, at most [`POINTS_PER_CURVE`] and the last.
    pub points: Vec<(f64, f64)>,
}

/// One picture: curves against sampling seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    /// File stem (`log_joint`, `n_clusters`, `acceptance`).
    pub name: &'static str,
    /// Title.
    pub title: String,
    /// Label of the y axis.
    pub y_label: String,
    /// The curves; the parts outside `y` are not drawn ([`clip`]).
    pub curves: Vec<Curve>,
    /// Range of the y axis.
    pub y: (f64, f64),
    /// Whether the y axis shows whole numbers.
    pub integer: bool,
}

/// One chain's trace, keyed.
struct Keyed {
    key: String,
    key_index: usize,
    trace: TraceColumns,
}

/// Every `step`-th point so that at most [`POINTS_PER_CURVE`] remain, always with the last.
pub fn thin_points(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let step = points.len().div_ceil(POINTS_PER_CURVE).max(1);
    let last = points.last().copied();
    let mut out: Vec<(f64, f64)> = points.into_iter().step_by(step).collect();
    if let (Some(l), Some(o)) = (last, out.last()) {
        if *o != l {
            out.push(l);
        }
    }
    out
}

/// The range of the finite `values`, padded by 4% (by 1 when they are all equal); `(0, 1)`
/// without finite values, so that an axis always has a finite, non-empty range.
pub fn padded(values: impl Iterator<Item = f64>) -> (f64, f64) {
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
pub fn clip(points: &[(f64, f64)], lo: f64, hi: f64) -> Vec<Vec<(f64, f64)>> {
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

/// The sampler of a run by its name.
pub fn sampler_name(run: &RunDir) -> String {
    run.record.spec.sampler.kind.to_string()
}

/// Reads the traces of every chain of `runs`, keyed by sampler when the runs use several, else
/// by chain (and run directory when there are several).
fn keyed(runs: &[RunDir]) -> Result<Vec<Keyed>> {
    let samplers: Vec<String> = runs.iter().map(sampler_name).collect();
    let by_sampler = samplers.windows(2).any(|w| w[0] != w[1]);
    let mut keys: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (run, sampler) in runs.iter().zip(&samplers) {
        for c in run.record.spec.chain_indices() {
            let trace = TraceColumns::read(&chain_dir(&run.dir, c).join("trace.csv"), TRACE_ROWS)?;
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
            out.push(Keyed {
                key,
                key_index,
                trace,
            });
        }
    }
    Ok(out)
}

/// The curve of `column` against sampling seconds of a chain.
fn series(chain: &Keyed, column: &str) -> Curve {
    let t = chain.trace.column("seconds").unwrap_or(&[]);
    let v = chain.trace.column(column).unwrap_or(&[]);
    Curve {
        key: chain.key.clone(),
        key_index: chain.key_index,
        points: thin_points(t.iter().copied().zip(v.iter().copied()).collect()),
    }
}

/// The running acceptance ratio of every move of a chain that makes proposals.
fn acceptance(c: &Keyed) -> Vec<Curve> {
    let mut curves = Vec::new();
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
            curves.push(Curve {
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
    curves
}

/// The panels of `runs`: the log joint, the number of clusters and, when a move makes
/// proposals, the running acceptance ratio. Cost: one read of every chain's trace.
pub fn panels(runs: &[RunDir]) -> Result<Vec<Panel>> {
    let chains = keyed(runs)?;
    let joint = runs[0].record.model.build_prior()?.joint_label();
    let curves: Vec<Curve> = chains.iter().map(|c| series(c, "log_joint")).collect();
    // The first tenth of each chain climbs from a poor start; the axis shows the rest.
    let y = padded(
        curves
            .iter()
            .flat_map(|l| l.points[l.points.len() / 10..].iter().map(|p| p.1)),
    );
    let mut panels = vec![Panel {
        name: "log_joint",
        title: "log joint".into(),
        y_label: joint.into(),
        curves,
        y,
        integer: false,
    }];
    let curves: Vec<Curve> = chains.iter().map(|c| series(c, "n_clusters")).collect();
    let (lo, hi) = padded(curves.iter().flat_map(|l| l.points.iter().map(|p| p.1)));
    panels.push(Panel {
        name: "n_clusters",
        title: "number of clusters".into(),
        y_label: "K".into(),
        curves,
        // Whole numbers of clusters sit half a step inside the axis.
        y: (lo.round() - 0.5, hi.round() + 0.5),
        integer: true,
    });
    let curves: Vec<Curve> = chains.iter().flat_map(acceptance).collect();
    if !curves.is_empty() {
        let hi = curves
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(0.0f64, f64::max);
        panels.push(Panel {
            name: "acceptance",
            title: "running acceptance ratio of Metropolis-Hastings moves".into(),
            y_label: "accepted / proposed".into(),
            curves,
            y: (0.0, (hi * 1.1).clamp(1e-3, 1.0)),
            integer: false,
        });
    }
    Ok(panels)
}

/// The run of 2-D data whose point estimate has the largest log joint, with that estimate's
/// labels and number of clusters; `None` when no run has 2-D data with an estimate.
fn best_2d_estimate(runs: &[RunDir]) -> Result<Option<(&RunDir, Vec<usize>, usize)>> {
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
    Ok(best.map(|(_, run, labels, k)| (run, labels, k)))
}

/// 2-D points coloured by a run's point estimate.
#[derive(Clone, Debug)]
pub struct Scatter {
    /// What the picture shows: the run and its number of clusters.
    pub title: String,
    /// The points.
    pub points: DenseData,
    /// Each point's cluster in the point estimate.
    pub labels: Vec<usize>,
    /// The names of the two columns, when the data had a header.
    pub columns: Option<[String; 2]>,
}

/// The scatter of 2-D real data coloured by the point estimate of the run whose estimate has
/// the largest log joint: `Ok(None)` when no run has 2-D real data with an estimate, and
/// `Err` with a note when the data cannot be read here or have changed since. Runs copied
/// from another machine may name data that are not here: the other plots do not need them,
/// so only the scatter is left out. Cost: one summary per 2-D run, and reading the data.
pub fn scatter(runs: &[RunDir]) -> Result<Option<std::result::Result<Scatter, String>>> {
    let Some((run, labels, k)) = best_2d_estimate(runs)? else {
        return Ok(None);
    };
    let data = match data_of(run)? {
        Ok(data) => data,
        Err(why) => return Ok(Some(Err(format!("no scatter: {why}")))),
    };
    let Dataset::Dense(points) = data else {
        return Ok(None);
    };
    let title = format!(
        "point estimate of {} seed {}: K = {k}",
        sampler_name(run),
        run.record.spec.seed
    );
    let columns = column_names(&run.dir).and_then(|c| <[String; 2]>::try_from(c).ok());
    Ok(Some(Ok(Scatter {
        title,
        points,
        labels,
        columns,
    })))
}

/// The data `run` was run on, read again: `Err` with the reason when they cannot be read here
/// (they came from standard input, or the file is not here) or have changed since. Runs
/// copied from another machine may name data that are not here: plots that need the data are
/// left out with that reason, the others drawn. Cost: reading the data.
pub fn data_of(run: &RunDir) -> Result<std::result::Result<Dataset, String>> {
    let source = &run.record.source;
    let dir = run.dir.display();
    if source.data.as_ref().is_some_and(|p| p.as_os_str() == STDIN) {
        return Ok(Err(format!("the data of {dir} came from standard input")));
    }
    let data = match source.load(Builtin::Toy) {
        Ok(loaded) => loaded.dataset,
        Err(e) => return Ok(Err(format!("the data of {dir} cannot be read here ({e})"))),
    };
    if Fingerprint::of(&data) != run.record.fingerprint {
        return Ok(Err(format!("the data {dir} was run on have changed since")));
    }
    Ok(Ok(data))
}

/// The names of a run's data columns, as its `summary.json` records them from the data's
/// header; `None` without a header (or a summary).
pub fn column_names(dir: &std::path::Path) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(dir.join("summary.json")).ok()?;
    let summary: serde_json::Value = serde_json::from_str(&text).ok()?;
    let columns = summary.get("columns")?.as_array()?;
    columns
        .iter()
        .map(|c| c.as_str().map(str::to_string))
        .collect()
}

/// Which estimate a run's `summary.json` names as its default (`estimate.txt`): `"vi"` or
/// `"dahl"`; `None` without a summary (or the field).
pub fn default_estimate(dir: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("summary.json")).ok()?;
    let summary: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some(summary.get("default_estimate")?.as_str()?.to_string())
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
        assert!(thin.len() <= POINTS_PER_CURVE + 1);
        assert_eq!(thin.last(), Some(&(3999.0, 0.0)));
        assert_eq!(padded([].into_iter()), (0.0, 1.0));
        assert_eq!(padded([f64::NAN, 2.0].into_iter()), (1.0, 3.0));
        assert_eq!(padded([0.0, 100.0].into_iter()), (-4.0, 104.0));
    }
}
