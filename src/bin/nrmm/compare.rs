//! `nrmm compare`: samplers side by side under equal time budgets on the same data and model,
//! one single-chain run per sampler and seed, summarised in tables ([`nrmm::run::compare`])
//! and drawn in plots.

use crate::args::CompareArgs;
use crate::common::{build_model, command_line, flag, flags, summary_of, Status};
use crate::output;
use nrmm::prior::NrmPrior;
use nrmm::run::compare::{self, Comparison};
use nrmm::run::progress::Progress;
use nrmm::run::record::{Builtin, RUNS_FILE};
use nrmm::run::runner::run_all;
use nrmm::run::{Budget, Outcome, RunDir, Runner};
use nrmm::Result;

/// `nrmm compare`.
pub fn compare(a: CompareArgs) -> Result<Status> {
    let (model, _) = build_model(&a.data.source(), &a.model.spec(), Builtin::Toy)?;
    let n = model.n_points();
    let truth = a.data.source().truth(a.labels.as_deref(), n)?;
    let init = a.init.absolute()?;
    let source = a.data.source().absolute()?;
    let budget = Budget::Seconds(a.seconds);
    let progress = Progress::new(budget, flag);
    let plan = compare::plan(&a.samplers, a.seeds, a.seconds, &a.moves.settings(n), &init)
        .map_err(flags)?;
    let mut runners = Vec::new();
    for (name, spec) in &plan {
        let label = format!("{} seed {}", spec.sampler.kind, spec.seed);
        runners.push(
            Runner::new(&model, spec.clone(), a.out.join(name))
                .source(source.clone())
                .invocation(command_line())
                .replace(true)
                .label(label)
                .interrupt(&crate::interrupt::REQUESTED)
                .monitor(&progress),
        );
    }
    let names: Vec<&String> = plan.iter().map(|(name, _)| name).collect();
    nrmm::run::create_dir(&a.out)?;
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
        // Each run's summary without the searches: a comparison is of samplers, and
        // `nrmm diagnose` adds the estimates by loss to any of its runs.
        let report = summary_of(std::slice::from_ref(r), None, None)?;
        report.write(&r.dir, compare::run_record(r, &model.spec))?;
        reports.push(report);
    }
    // Each run's leave-one-out predictive fit from its draws; a run without draws after its
    // burn-in (a budget too short for one) has none and is left out of that table.
    let mut fits = Vec::new();
    for (r, report) in runs.iter().zip(&reports) {
        if report.point_estimate.is_none() {
            continue;
        }
        let fit = nrmm::predict::predictive_fit_of(&model, &report.sources).map_err(flags)?;
        let name = r
            .dir
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        fits.push((name, fit));
    }
    let names = a.samplers.iter().map(|s| s.to_string()).collect();
    let comparison = Comparison::new(
        &runs,
        &reports,
        truth.as_deref(),
        n,
        names,
        a.seconds,
        joint,
    )?
    .with_predictive(fits);
    let (plots, notes) = nrmm::run::svg::draw(&runs, &a.out)?;
    let plots: Vec<String> = plots
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    comparison.write(&a.out, &plots)?;
    output::stdout(|out| {
        comparison.print(out, a.seeds)?;
        let files = ["compare.md", "compare.csv"].map(String::from);
        let files = files
            .into_iter()
            .chain(plots)
            .collect::<Vec<_>>()
            .join(", ");
        writeln!(out, "wrote {} ({files})", a.out.display())?;
        for n in &notes {
            writeln!(out, "note: {n}")?;
        }
        Ok(())
    })?;
    Ok(Status::Done)
}
