//! `nrmm compare`: samplers side by side under equal time budgets on the same data and model,
//! one single-chain run per sampler and seed, summarised in a table and drawn in plots.

use crate::args::CompareArgs;
use crate::common::{absolute_start, command_line, data_source, model_record, summary_of};
use crate::common::{build_model, flags, Builtin, Status};
use crate::output::{self, create_dir};
use crate::progress::Progress;
use nrmm::data::load;
use nrmm::diagnostics::adjusted_rand_index;
use nrmm::prior::NrmPrior;
use nrmm::run::record::RUNS_FILE;
use nrmm::run::runner::run_all;
use nrmm::run::{chain_dir, first_reaching, Budget, Outcome, RunDir, Runner};
use nrmm::run::{SamplerKind, SamplerSettings, SamplerSpec};
use nrmm::{Error, Result};
use std::path::Path;

/// How far below the best log joint seen a run counts as having found the mode (nats).
const WITHIN: f64 = 1.0;

/// One run of the comparison.
struct Row {
    sampler: String,
    seed: u64,
    sweeps: u64,
    seconds: f64,
    sweeps_per_second: f64,
    final_k: usize,
    final_log_joint: f64,
    best_log_joint: f64,
    time_to_best: Option<f64>,
    ess_k_per_second: f64,
    ari: Option<f64>,
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
fn sampler_table(rows: &[Row], samplers: &[String], truth: bool) -> String {
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
fn run_table(rows: &[Row], truth: bool) -> String {
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
fn run_csv(rows: &[Row]) -> String {
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

/// `nrmm compare`.
pub fn compare(a: CompareArgs) -> Result<Status> {
    if a.seeds == 0 {
        return Err(Error::param("--seeds", 0, "at least 1 run per sampler"));
    }
    if !(a.seconds > 0.0 && a.seconds.is_finite()) {
        return Err(Error::param(
            "--seconds",
            a.seconds,
            "a finite number of seconds > 0",
        ));
    }
    let mut samplers: Vec<SamplerKind> = Vec::new();
    for &s in &a.samplers {
        if samplers.contains(&s) {
            return Err(Error::Usage(format!("--samplers names {s} twice")));
        }
        samplers.push(s);
    }
    let (model, _) = build_model(&a.data, &a.model.spec(), Builtin::Toy)?;
    let n = model.n_points();
    let truth: Option<Vec<i64>> = match (&a.labels, &a.data.data) {
        (Some(path), _) => Some(load::load_labels(path, n)?),
        (None, None) => Some(
            nrmm::data::generate::toy_like(1)
                .1
                .into_iter()
                .map(|l| l as i64)
                .collect(),
        ),
        (None, Some(_)) => None,
    };
    let init = absolute_start(&a.init)?;
    let source = data_source(&a.data)?;
    let budget = Budget::Seconds(a.seconds);
    let progress = Progress::new(budget);
    let mut runners = Vec::new();
    let mut names = Vec::new();
    for &sampler in &samplers {
        for seed in 1..=a.seeds {
            let spec = SamplerSpec {
                sampler: SamplerSettings {
                    kind: sampler,
                    moves: a.moves.settings(),
                },
                seed,
                chains: 1,
                init: init.clone(),
                budget,
                ..SamplerSpec::default()
            };
            spec.validate().map_err(flags)?;
            let name = format!("{sampler}-seed{seed}");
            runners.push(
                Runner::new(&model, spec, a.out.join(&name))
                    .source(source.clone())
                    .invocation(command_line())
                    .replace(true)
                    .label(format!("{sampler} seed {seed}"))
                    .interrupt(&crate::interrupt::REQUESTED)
                    .monitor(&progress),
            );
            names.push(name);
        }
    }
    create_dir(&a.out)?;
    nrmm::run::save_json(
        &a.out.join(RUNS_FILE),
        &serde_json::json!({ "runs": names, "command": command_line() }),
    )?;
    crate::interrupt::install();
    let outcomes = run_all(runners).map_err(flags)?;
    if outcomes.iter().any(Outcome::interrupted) {
        output::report_line(&format!(
            "interrupted: the comparison stopped before its budget; the runs so far are in {} \
             (nrmm diagnose or nrmm plot read them)",
            a.out.display()
        ));
        return Ok(Status::Interrupted);
    }
    let runs: Vec<RunDir> = outcomes.into_iter().map(|o| o.run).collect();
    let joint = model.prior.joint_label();
    let mut reports = Vec::new();
    for r in &runs {
        let report = summary_of(std::slice::from_ref(r), None)?;
        report.write(
            &r.dir,
            serde_json::json!({
                "command": command_line(),
                "seed": r.record.spec.seed,
                "sampler": r.record.spec.sampler.kind,
                "model": model_record(&model.spec),
                "budget": budget,
            }),
        )?;
        reports.push(report);
    }
    let best = reports
        .iter()
        .flat_map(|r| r.chains.iter().map(|c| c.best_log_joint))
        .fold(f64::NEG_INFINITY, f64::max);
    let mut rows = Vec::new();
    for (r, report) in runs.iter().zip(&reports) {
        let c = &report.chains[0];
        let trace = chain_dir(&r.dir, 0).join("trace.csv");
        let ari = match &truth {
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
    let names: Vec<String> = samplers.iter().map(|s| s.to_string()).collect();
    let (plots, notes) = crate::plot::draw(&runs, &a.out)?;
    let by_sampler = sampler_table(&rows, &names, truth.is_some());
    let mut md = format!(
        "# Sampler comparison\n\n{} runs of {} s each on {} points; best {joint} seen: {best:.3}.\n\
         A run counts as within 1 nat once its log joint is at least {:.3}.\n\n",
        runs.len(),
        a.seconds,
        n,
        best - WITHIN
    );
    md.push_str(&by_sampler);
    md.push_str("\n## Runs\n\n");
    md.push_str(&run_table(&rows, truth.is_some()));
    md.push('\n');
    for p in &plots {
        if let Some(name) = p.file_name() {
            let name = name.to_string_lossy();
            md.push_str(&format!("![{name}]({name})\n"));
        }
    }
    write_text(&a.out.join("compare.md"), &md)?;
    write_text(&a.out.join("compare.csv"), &run_csv(&rows))?;
    output::stdout(|out| {
        let plural = |k: usize, what: &str| format!("{k} {what}{}", if k == 1 { "" } else { "s" });
        writeln!(
            out,
            "{} x {}, {} s each; best {joint} seen: {best:.3}",
            plural(names.len(), "sampler"),
            plural(a.seeds as usize, "seed"),
            a.seconds
        )?;
        out.write_all(by_sampler.as_bytes())?;
        let files: Vec<String> = ["compare.md", "compare.csv"]
            .iter()
            .map(|s| s.to_string())
            .chain(
                plots
                    .iter()
                    .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned())),
            )
            .collect();
        writeln!(out, "wrote {} ({})", a.out.display(), files.join(", "))?;
        for n in &notes {
            writeln!(out, "note: {n}")?;
        }
        Ok(())
    })?;
    Ok(Status::Done)
}

/// Writes a text file atomically.
fn write_text(path: &Path, text: &str) -> Result<()> {
    nrmm::run::write_atomic(path, text.as_bytes())
}
