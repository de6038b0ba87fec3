//! Samplers side by side: one row per run (speed, how soon it came within [`WITHIN`] nat of
//! the best log joint any run saw, final K, ESS of K per second, ARI), and the tables of
//! `nrmm compare` in Markdown and CSV.

use super::{chain_dir, first_reaching, RunDir, Summary};
use super::{Budget, MoveSettings, SamplerKind, SamplerSettings, SamplerSpec, Start};
use crate::data::load;
use crate::diagnostics::{adjusted_rand_index, PredictiveFit};
use crate::error::{Error, Result};

/// How far below the best log joint seen a run counts as having found the mode (nats).
pub const WITHIN: f64 = 1.0;

/// One run of the comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The sampler.
    pub sampler: String,
    /// The seed.
    pub seed: u64,
    /// Sweeps done.
    pub sweeps: u64,
    /// Sampling seconds.
    pub seconds: f64,
    /// Sweeps per second.
    pub sweeps_per_second: f64,
    /// Clusters at the end.
    pub final_k: usize,
    /// Log joint at the end.
    pub final_log_joint: f64,
    /// Best log joint seen.
    pub best_log_joint: f64,
    /// Seconds until the log joint came within [`WITHIN`] of the best of all runs.
    pub time_to_best: Option<f64>,
    /// Effective sample size of K per second.
    pub ess_k_per_second: f64,
    /// Adjusted Rand index of the final labels against the true ones.
    pub ari: Option<f64>,
}

/// A number for a table, or a dash.
fn cell(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        _ => "-".to_string(),
    }
}

/// The mean of the finite values, if any.
fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The median of the values, if any.
fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    })
}

/// The per-sampler table in Markdown: runs, speed, how many runs came within [`WITHIN`] nat of
/// the best log joint seen and how fast, final K, ESS of K per second and ARI.
pub fn sampler_table(rows: &[Row], samplers: &[String], truth: bool) -> String {
    let mut t = String::from(
        "| sampler | runs | sweeps/s | within 1 nat of best | median time to it (s) | final K | ESS(K)/s |",
    );
    t.push_str(if truth { " ARI |\n" } else { "\n" });
    t.push_str("|---|---:|---:|---:|---:|---:|---:|");
    t.push_str(if truth { "---:|\n" } else { "\n" });
    for s in samplers {
        let mine: Vec<&Row> = rows.iter().filter(|r| &r.sampler == s).collect();
        let reached: Vec<f64> = mine.iter().filter_map(|r| r.time_to_best).collect();
        t.push_str(&format!(
            "| {s} | {} | {} | {}/{} | {} | {} | {} |",
            mine.len(),
            cell(mean(mine.iter().map(|r| r.sweeps_per_second)), 1),
            reached.len(),
            mine.len(),
            cell(median(reached), 2),
            cell(mean(mine.iter().map(|r| r.final_k as f64)), 1),
            cell(mean(mine.iter().map(|r| r.ess_k_per_second)), 2),
        ));
        if truth {
            t.push_str(&format!(
                " {} |",
                cell(mean(mine.iter().filter_map(|r| r.ari)), 3)
            ));
        }
        t.push('\n');
    }
    t
}

/// The per-run table in Markdown.
pub fn run_table(rows: &[Row], truth: bool) -> String {
    let mut t = String::from(
        "| sampler | seed | sweeps | sweeps/s | final K | final log joint | best log joint | time to within 1 nat (s) | ESS(K)/s |",
    );
    t.push_str(if truth { " ARI |\n" } else { "\n" });
    t.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    t.push_str(if truth { "---:|\n" } else { "\n" });
    for r in rows {
        t.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.sampler,
            r.seed,
            r.sweeps,
            cell(Some(r.sweeps_per_second), 1),
            r.final_k,
            cell(Some(r.final_log_joint), 3),
            cell(Some(r.best_log_joint), 3),
            cell(r.time_to_best, 2),
            cell(Some(r.ess_k_per_second), 2),
        ));
        if truth {
            t.push_str(&format!(" {} |", cell(r.ari, 3)));
        }
        t.push('\n');
    }
    t
}

/// The per-run table as CSV.
pub fn run_csv(rows: &[Row]) -> String {
    let mut t = String::from(
        "sampler,seed,sweeps,seconds,sweeps_per_second,final_k,final_log_joint,best_log_joint,time_to_within_1_nat,ess_k_per_second,ari\n",
    );
    let opt = |v: Option<f64>| v.map_or_else(String::new, |x| format!("{x:.6}"));
    for r in rows {
        t.push_str(&format!(
            "{},{},{},{:.6},{:.6},{},{:.6},{:.6},{},{:.6},{}\n",
            r.sampler,
            r.seed,
            r.sweeps,
            r.seconds,
            r.sweeps_per_second,
            r.final_k,
            r.final_log_joint,
            r.best_log_joint,
            opt(r.time_to_best),
            r.ess_k_per_second,
            opt(r.ari)
        ));
    }
    t
}

/// The rows of `runs` (single-chain runs with their `reports`), compared with the best log
/// joint any of them saw, and their ARI against `truth` when given (`n` points). Returns the
/// rows and that best log joint. Cost: one pass over each run's trace.
pub fn rows(
    runs: &[RunDir],
    reports: &[Summary],
    truth: Option<&[i64]>,
    n: usize,
) -> Result<(Vec<Row>, f64)> {
    let best = reports
        .iter()
        .flat_map(|r| r.chains.iter().map(|c| c.best_log_joint))
        .fold(f64::NEG_INFINITY, f64::max);
    let mut rows = Vec::new();
    for (r, report) in runs.iter().zip(reports) {
        let c = &report.chains[0];
        let trace = chain_dir(&r.dir, 0).join("trace.csv");
        let ari = match truth {
            Some(t) => {
                let labels = load::load_labels(chain_dir(&r.dir, 0).join("labels.txt"), n)?;
                Some(adjusted_rand_index(&labels, t)?)
            }
            None => None,
        };
        let ess = report
            .diagnostics
            .get("n_clusters")
            .map_or(f64::NAN, |s| s.ess_bulk);
        rows.push(Row {
            sampler: c.sampler.clone(),
            seed: r.record.spec.seed,
            sweeps: c.sweeps,
            seconds: c.seconds,
            sweeps_per_second: c.sweeps_per_second,
            final_k: c.n_clusters,
            final_log_joint: c.log_joint,
            best_log_joint: c.best_log_joint,
            time_to_best: first_reaching(&trace, best - WITHIN)?,
            ess_k_per_second: ess / c.seconds,
            ari,
        });
    }
    Ok((rows, best))
}

/// What `summary.json` of one run of a comparison records besides its diagnostics: the command
/// that made it, its seed, sampler, `model` (as built, see [`super::summary::model_record`])
/// and budget.
pub fn run_record(run: &RunDir, model: &crate::model::ModelSpec) -> serde_json::Value {
    let s = &run.record.spec;
    serde_json::json!({
        "command": run.record.commands.last(),
        "seed": s.seed,
        "sampler": s.sampler.kind,
        "model": super::summary::model_record(model),
        "budget": s.budget,
    })
}

/// The runs of a comparison, each with its name (`<sampler>-seed<seed>`): for each of
/// `samplers` and each seed from 1 to `seeds`, one chain of `seconds` sampling seconds with
/// the `moves` from `init`. Errors on no seed, a budget that is not a finite number of
/// seconds > 0, a sampler named twice, or settings a sampler refuses.
pub fn plan(
    samplers: &[SamplerKind],
    seeds: u64,
    seconds: f64,
    moves: &MoveSettings,
    init: &Start,
) -> Result<Vec<(String, SamplerSpec)>> {
    if seeds == 0 {
        return Err(Error::param("seeds", 0, "at least 1 run per sampler"));
    }
    if !(seconds > 0.0 && seconds.is_finite()) {
        return Err(Error::param(
            "seconds",
            seconds,
            "a finite number of seconds > 0",
        ));
    }
    let mut runs = Vec::new();
    for (i, &kind) in samplers.iter().enumerate() {
        if samplers[..i].contains(&kind) {
            return Err(Error::Usage(format!("`samplers` names {kind} twice")));
        }
        for seed in 1..=seeds {
            let spec = SamplerSpec {
                sampler: SamplerSettings {
                    kind,
                    moves: moves.clone(),
                    temperatures: Vec::new(),
                },
                seed,
                chains: 1,
                init: init.clone(),
                budget: Budget::Seconds(seconds),
                ..SamplerSpec::default()
            };
            spec.validate()?;
            runs.push((format!("{kind}-seed{seed}"), spec));
        }
    }
    Ok(runs)
}

/// A finished comparison: one row per run, and what the runs were compared on.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The runs' rows ([`rows`]).
    pub rows: Vec<Row>,
    /// The best log joint any run saw.
    pub best: f64,
    /// The samplers, in the order the tables list them.
    pub samplers: Vec<String>,
    /// Each run's sampling time in seconds.
    pub seconds: f64,
    /// Number of points.
    pub n: usize,
    /// What the log joint is ([`crate::prior::NrmPrior::joint_label`]).
    pub joint: &'static str,
    /// Whether the rows have an ARI against true labels.
    pub truth: bool,
    /// Each run's leave-one-out predictive fit, by run name, once
    /// [`Comparison::with_predictive`] has added them; the tables then show it.
    pub predictive: Vec<(String, PredictiveFit)>,
}

/// The predictive fit of each run as a Markdown table: LPML, PSIS-LOO's elpd with its
/// standard error, WAIC, and the points whose Pareto k exceeds 0.7. Higher
/// LPML and elpd_loo (lower WAIC) predict held-out points better.
pub fn predictive_table(fits: &[(String, PredictiveFit)]) -> String {
    let mut t = String::from(
        "| run | LPML | elpd_loo (se) | WAIC | Pareto k > 0.7 |\n|---|---:|---:|---:|---:|\n",
    );
    for (name, f) in fits {
        t.push_str(&format!(
            "| {name} | {:.2} | {:.2} ({:.2}) | {:.2} | {} of {} |\n",
            f.lpml, f.elpd_loo, f.elpd_loo_se, f.waic, f.pareto_k_over_limit, f.points
        ));
    }
    t
}

impl Comparison {
    /// The comparison of `runs` (single-chain runs of `seconds` each with their `reports`)
    /// of `samplers` on `n` points, with the ARI against `truth` when given. Cost: as
    /// [`rows`].
    pub fn new(
        runs: &[RunDir],
        reports: &[Summary],
        truth: Option<&[i64]>,
        n: usize,
        samplers: Vec<String>,
        seconds: f64,
        joint: &'static str,
    ) -> Result<Self> {
        let (rows, best) = rows(runs, reports, truth, n)?;
        Ok(Comparison {
            rows,
            best,
            samplers,
            seconds,
            n,
            joint,
            truth: truth.is_some(),
            predictive: Vec::new(),
        })
    }

    /// This comparison with each run's predictive fit (`fits`, by run name): the same model
    /// fitted by different samplers should predict alike, and a run that predicts worse has
    /// not found the posterior.
    pub fn with_predictive(self, fits: Vec<(String, PredictiveFit)>) -> Self {
        Comparison {
            predictive: fits,
            ..self
        }
    }

    /// The table by sampler ([`sampler_table`]).
    pub fn by_sampler(&self) -> String {
        sampler_table(&self.rows, &self.samplers, self.truth)
    }

    /// The report in Markdown: what was compared and the best log joint seen, the table by
    /// sampler, the table of runs and the `plots` (file names) as images.
    pub fn markdown(&self, plots: &[String]) -> String {
        let (joint, best) = (self.joint, self.best);
        let mut md = format!(
            "# Sampler comparison\n\n{} runs of {} s each on {} points; best {joint} seen: \
             {best:.3}.\nA run counts as within 1 nat once its log joint is at least {:.3}.\n\n",
            self.rows.len(),
            self.seconds,
            self.n,
            best - WITHIN
        );
        md.push_str(&self.by_sampler());
        md.push_str("\n## Runs\n\n");
        md.push_str(&run_table(&self.rows, self.truth));
        md.push('\n');
        if !self.predictive.is_empty() {
            md.push_str("## Predictive fit (leave-one-out, from each run's draws)\n\n");
            md.push_str(&predictive_table(&self.predictive));
            md.push('\n');
        }
        for name in plots {
            md.push_str(&format!("![{name}]({name})\n"));
        }
        md
    }

    /// Writes the report to `out`: `compare.md` ([`Comparison::markdown`] with the `plots`)
    /// and `compare.csv` ([`run_csv`]), each atomically.
    pub fn write(&self, out: &std::path::Path, plots: &[String]) -> Result<()> {
        super::write_atomic(&out.join("compare.md"), self.markdown(plots).as_bytes())?;
        super::write_atomic(&out.join("compare.csv"), run_csv(&self.rows).as_bytes())
    }

    /// Writes the headline (how many samplers and `seeds`, the budget, the best log joint
    /// seen) and the table by sampler.
    pub fn print(&self, out: &mut dyn std::io::Write, seeds: u64) -> std::io::Result<()> {
        let plural = |k: u64, what: &str| format!("{k} {what}{}", if k == 1 { "" } else { "s" });
        writeln!(
            out,
            "{} x {}, {} s each; best {} seen: {:.3}",
            plural(self.samplers.len() as u64, "sampler"),
            plural(seeds, "seed"),
            self.seconds,
            self.joint,
            self.best
        )?;
        out.write_all(self.by_sampler().as_bytes())?;
        if !self.predictive.is_empty() {
            writeln!(
                out,
                "predictive fit (leave-one-out, from each run's draws):"
            )?;
            out.write_all(predictive_table(&self.predictive).as_bytes())?;
        }
        Ok(())
    }
}
