//! `nrmm compare`: samplers side by side under equal time budgets on the same data and model,
//! one single-chain run per sampler and seed, summarised in tables ([`nrmm::run::compare`])
//! and drawn in plots.

use crate::args::CompareArgs;
use crate::common::{absolute_start, command_line, data_source, model_record, summary_of};
use crate::common::{build_model, flags, Status};
use crate::output::{self, create_dir};
use crate::progress::Progress;
use nrmm::data::load;
use nrmm::prior::NrmPrior;
use nrmm::run::compare::{self, WITHIN};
use nrmm::run::record::{Builtin, RUNS_FILE};
use nrmm::run::runner::run_all;
use nrmm::run::{Budget, Outcome, RunDir, Runner};
use nrmm::run::{SamplerKind, SamplerSettings, SamplerSpec};
use nrmm::{Error, Result};
use std::path::Path;

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
    let (model, _) = build_model(&a.data.source(), &a.model.spec(), Builtin::Toy)?;
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
                    moves: a.moves.settings(n),
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
    let (rows, best) = compare::rows(&runs, &reports, truth.as_deref(), n)?;
    let names: Vec<String> = samplers.iter().map(|s| s.to_string()).collect();
    let (plots, notes) = crate::plot::draw(&runs, &a.out)?;
    let by_sampler = compare::sampler_table(&rows, &names, truth.is_some());
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
    md.push_str(&compare::run_table(&rows, truth.is_some()));
    md.push('\n');
    for p in &plots {
        if let Some(name) = p.file_name() {
            let name = name.to_string_lossy();
            md.push_str(&format!("![{name}]({name})\n"));
        }
    }
    write_text(&a.out.join("compare.md"), &md)?;
    write_text(&a.out.join("compare.csv"), &compare::run_csv(&rows))?;
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
