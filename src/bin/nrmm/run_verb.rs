//! `nrmm run` (chains to a budget, with checkpoints and resume) and `nrmm diagnose`
//! (the summary of any set of run directories): the command line translated for the library's
//! [`Runner`] and [`Summary`].

use crate::args::{DiagnoseArgs, RunArgs};
use crate::common::{
    build_model, command_line, flags, print_json, rebuild_model, summary_of, Status,
};
use crate::output;
use nrmm::run::pilot::{self, Settled};
use nrmm::run::progress::{Phase, Progress};
use nrmm::run::record::Builtin;
use nrmm::run::runner::check_target;
use nrmm::run::spec::draws_per_chain;
use nrmm::run::summary::run_record;
use nrmm::run::SamplerSpec;
use nrmm::run::{AutoBudget, Budget, ChainEnd, Outcome, RunDir, RunRecord, Runner};
use nrmm::{Error, Result};
use serde_json::json;
use std::path::Path;
use std::time::Instant;

/// The budget given by `--sweeps` / `--seconds` / `--max-sweeps`, if any, for `n` points in
/// `d` dimensions.
fn budget_flags(a: &RunArgs, n: usize, d: usize) -> Result<Option<Budget>> {
    Budget::of_limits(a.sweeps, a.seconds, a.max_sweeps, (n, d)).map_err(flags)
}

/// The spec of a new run from its command line, for `n` points in `d` dimensions.
fn new_spec(a: &RunArgs, n: usize, d: usize) -> Result<SamplerSpec> {
    let budget = budget_flags(a, n, d)?;
    Ok(SamplerSpec {
        sampler: a.sampler.settings(n).map_err(flags)?,
        seed: a.seed,
        chain_offset: a.chain_offset,
        chains: a.chains,
        init: a.init.absolute()?,
        thin: a.thin,
        budget: budget.unwrap_or(Budget::Auto(AutoBudget::for_data(n, d))),
        burn_in: a.burn_in,
        checkpoint_every: a.checkpoint_every,
        draws_per_chain: draws_per_chain(n),
    })
}

/// What the pilot of a new run of `model` runs on ([`pilot::pilot_rows`]), for its
/// progress line.
fn pilot_line(model: &nrmm::model::Model) -> String {
    let n = model.n_points();
    let points = if n > pilot::PILOT_POINTS {
        format!("{} random points of {n}", pilot::PILOT_POINTS)
    } else {
        format!("all {n} points")
    };
    format!(
        "pilot: {} on {points} for the cluster scale",
        pilot::sweeps_line(model)
    )
}

/// The one line that tells what an interruption left behind and how to go on.
fn interrupted_line(dir: &Path, ends: &[(u64, ChainEnd)], checkpoints: bool) -> String {
    let mut stops = Vec::new();
    let mut kept = Vec::new();
    for (c, end) in ends {
        if let ChainEnd::Interrupted { sweep, checkpoint } = end {
            stops.push(format!("chain {c} at sweep {sweep}"));
            kept.push(match checkpoint {
                Some(s) => format!("chain {c} at sweep {s}"),
                None => format!("none yet for chain {c} (it restarts)"),
            });
        }
    }
    let resume = if checkpoints {
        format!(
            "checkpoints kept: {}; resume with: nrmm run --resume {}",
            kept.join(", "),
            dir.display()
        )
    } else {
        format!(
            "the run has no checkpoints (start it with --checkpoint-every N to be able to \
             resume); nrmm diagnose {} reads what was done",
            dir.display()
        )
    };
    format!(
        "interrupted: stopped {}; traces flushed; {resume}",
        stops.join(", ")
    )
}

/// `nrmm run`: `--chains` chains in parallel (or the chains of `--resume DIR` from their
/// checkpoints), each writing `chain-<i>/` under the run directory, then `summary.json`,
/// `estimate.txt`, `map.txt` and the human summary on standard output.
pub fn run(a: RunArgs) -> Result<Status> {
    if a.parallel.data_parallel {
        return crate::data_parallel::run(&a);
    }
    nrmm::distributed::request::refuse_under_mpi().map_err(flags)?;
    nrmm::run::estimates::validate_loss_a(a.loss_a).map_err(flags)?;
    let wall = Instant::now();
    let (model_spec, source, dir, spec) = match &a.resume {
        Some(dir) => {
            let record = RunRecord::load(dir)?;
            (record.model, record.source, dir.clone(), None)
        }
        None => {
            let out = a
                .out
                .clone()
                .ok_or_else(|| Error::Usage("--out DIR is required (or --resume DIR)".into()))?;
            check_target(&out, a.force).map_err(flags)?;
            // Checked before the data are read; the defaults that follow the data's size
            // are set once they are.
            let spec = new_spec(&a, 0, 0)?;
            spec.validate().map_err(flags)?;
            (a.model.spec(), a.data.source().absolute()?, out, Some(spec))
        }
    };
    let (model, columns) = build_model(&source, &model_spec, Builtin::Toy)?;
    if let Some(s) = &spec {
        // Before the pilot: a sampler that cannot take the prior wastes none of its time.
        s.sampler.check_prior(&model.prior).map_err(flags)?;
    }
    crate::interrupt::install();
    let model = match &spec {
        Some(s) if pilot::is_due(&model) => {
            let phase = Phase::start(&pilot_line(&model));
            let settled = pilot::settle(&model, s.seed, Some(&crate::interrupt::REQUESTED))?;
            phase.finish();
            match settled {
                // The model it replaces goes now: its kernel's per-point caches are as large
                // as the data and would otherwise stay for the whole run.
                Settled::Scaled(settled) => {
                    drop(model);
                    release_freed_memory();
                    *settled
                }
                // The header says the scaled defaults stay; the reason is the library's to give.
                Settled::NotDue | Settled::Kept(_) => model,
                Settled::Interrupted => {
                    output::report_line("interrupted during the pilot run: nothing was written");
                    return Ok(Status::Interrupted);
                }
            }
        }
        _ => model,
    };
    let runner = match spec {
        None => {
            let mut runner = Runner::resume(&model, &dir).map_err(flags)?;
            if let Some(b) = budget_flags(&a, model.n_points(), model.fingerprint.dim)? {
                runner = runner.budget(b);
            }
            if a.burn_in.is_some() {
                runner = runner.burn_in(a.burn_in);
            }
            runner
        }
        Some(_) => Runner::new(
            &model,
            new_spec(&a, model.n_points(), model.fingerprint.dim)?,
            &dir,
        )
        .source(source)
        .replace(a.force),
    };
    let runner = runner.invocation(command_line());
    // A new run whose sampler was not asked for has it chosen by size, which the header says.
    let by_size = a.resume.is_none() && a.sampler.sampler.is_none();
    let header = nrmm::run::header::header(&model, &runner.record().spec, by_size);
    output::report_line(&nrmm::error::rename_in_text(&header, &crate::common::flag));
    let progress = Progress::new(runner.record().spec.budget, crate::common::flag);
    let outcome = runner
        .interrupt(&crate::interrupt::REQUESTED)
        .monitor(&progress)
        .run()
        .map_err(flags)?;
    // The summary reads the run directory, not the model: the data and the kernel's copy of
    // them (32 MB at 10⁶ × 2) go with the chains' states, and what they all freed goes back
    // before the summary allocates.
    let spec = model.spec.clone();
    drop(model);
    release_freed_memory();
    let wall = wall.elapsed().as_secs_f64();
    finish(&outcome, columns.as_deref(), &spec, wall, a.loss_a)
}

/// Returns the memory that the allocator holds free to the system (glibc's `malloc_trim`;
/// elsewhere nothing), between the phases of a run. glibc keeps what a thread frees in that
/// thread's arena, where the next phase's threads do not reuse it: after the chains of a
/// default run on a million points, 60 MB of resident memory that the summary would
/// otherwise add to. Cost: one pass over the allocator's free lists, once per phase.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: `malloc_trim` takes no pointer and only returns free memory to the system;
        // glibc makes it safe to call from any thread at any time.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// Writes and prints the summary of a run that ended, or says how to go on after an
/// interruption.
fn finish(
    outcome: &Outcome,
    columns: Option<&[String]>,
    model: &nrmm::model::ModelSpec,
    wall_seconds: f64,
    loss_a: f64,
) -> Result<Status> {
    let run = &outcome.run;
    if outcome.interrupted() {
        let checkpoints = run.record.spec.checkpoint_every.is_some();
        output::report_line(&interrupted_line(&run.dir, &outcome.ends, checkpoints));
        return Ok(Status::Interrupted);
    }
    let phase = Phase::start("summary: diagnostics, Dahl's estimate, estimates by loss");
    let summary = summary_of(std::slice::from_ref(run), None, Some(loss_a))?;
    summary.write(&run.dir, run_record(run, model, columns, wall_seconds))?;
    phase.finish();
    output::stdout(|out| {
        summary.print(out)?;
        writeln!(out, "wrote {}", run.dir.display())
    })?;
    Ok(Status::Done)
}

/// `nrmm diagnose`: the summary of every chain of the given run directories, merged.
pub fn diagnose(a: DiagnoseArgs) -> Result<()> {
    nrmm::run::estimates::validate_loss_a(a.loss_a).map_err(flags)?;
    let runs = RunDir::resolve(&a.dirs)?;
    let summary = summary_of(&runs, a.burn_in, Some(a.loss_a))?;
    // The merged runs share data and model (checked by the summary): the first's serve.
    let fit = if a.predictive {
        let run = &runs[0];
        let model = rebuild_model(run)?;
        Some(nrmm::predict::predictive_fit_of(&model, &summary.sources).map_err(flags)?)
    } else {
        None
    };
    if let Some(out) = &a.out {
        nrmm::run::create_dir(out)?;
        let dirs: Vec<String> = runs.iter().map(|r| r.dir.display().to_string()).collect();
        let mut extra = json!({ "runs": dirs, "burn_in": a.burn_in });
        if let Some(fit) = &fit {
            extra["predictive"] = json!(fit);
        }
        summary.write(out, extra)?;
    }
    if a.json {
        let mut value = serde_json::to_value(&summary)
            .map_err(|e| Error::Usage(format!("cannot print the summary: {e}")))?;
        if let Some(fit) = &fit {
            value["predictive"] = json!(fit);
        }
        return print_json(&value);
    }
    output::stdout(|out| {
        summary.print(out)?;
        if let Some(fit) = &fit {
            fit.print(out)?;
        }
        if let Some(dir) = &a.out {
            writeln!(out, "wrote {}", dir.display())?;
        }
        Ok(())
    })
}
