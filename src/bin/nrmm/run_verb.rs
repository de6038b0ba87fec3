//! `nrmm run` (chains to a budget, with checkpoints and resume) and `nrmm diagnose`
//! (the report of any set of run directories).

use crate::args::{DiagnoseArgs, InitArg, RunArgs};
use crate::commands::{build_model, print_json, resamples_hyper, Builtin, Status};
use crate::interrupt;
use crate::output::{self, create_dir};
use crate::progress::{Budget, Progress};
use crate::report::Report;
use crate::rundir::{self, chain_dir, RunDir, RunSettings, DRAWS_PER_CHAIN, RUN_FORMAT};
use crate::runner::{launch, load_checkpoint, schedule, ChainEnd, ChainJob, Init, Shared};
use nrmm::kernel::ConjugateKernel;
use nrmm::model::ModelSpec;
use nrmm::prior::NrmPrior;
use nrmm::{with_kernel, Error, Result};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// The command line as typed (lossily for non-UTF-8 arguments), for the record.
pub fn command_line() -> Vec<String> {
    std::env::args_os()
        .map(|s| s.to_string_lossy().into_owned())
        .collect()
}

/// `path` made absolute, so that a run can be resumed or read from any directory.
pub fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// How `run.json` records `--data`: a file by its absolute path, standard input as `-`.
pub fn data_record(data: Option<&Path>) -> Result<Option<PathBuf>> {
    match data {
        Some(p) if p.as_os_str() == crate::commands::STDIN => Ok(Some(p.to_path_buf())),
        p => p.map(absolute).transpose(),
    }
}

/// The budget given by `--sweeps` / `--seconds`, if any.
fn budget_flags(a: &RunArgs) -> Result<Option<Budget>> {
    match (a.sweeps, a.seconds) {
        (Some(0), _) => Err(Error::param("--sweeps", 0, "at least 1")),
        (Some(n), _) => Ok(Some(Budget::Sweeps(n))),
        (None, Some(s)) if !(s > 0.0 && s.is_finite()) => Err(Error::param(
            "--seconds",
            s,
            "a finite number of seconds > 0",
        )),
        (None, Some(s)) => Ok(Some(Budget::Seconds(s))),
        (None, None) => Ok(None),
    }
}

/// Refuses a burn-in that leaves a sweep budget without draws.
fn check_burn_in(burn_in: Option<u64>, budget: Budget) -> Result<()> {
    if let (Some(b), Budget::Sweeps(n)) = (burn_in, budget) {
        if b >= n {
            return Err(Error::param(
                "--burn-in",
                b,
                &format!("fewer sweeps than the {n} of each chain"),
            ));
        }
    }
    Ok(())
}

/// The settings of a new run from its command line (the data's fingerprint comes later).
fn new_settings(a: &RunArgs) -> Result<RunSettings> {
    if a.chains == 0 {
        return Err(Error::param("--chains", 0, "at least 1"));
    }
    if a.thin == 0 {
        return Err(Error::param("--thin", 0, "at least 1"));
    }
    if a.checkpoint_every == Some(0) {
        return Err(Error::param("--checkpoint-every", 0, "at least 1 sweep"));
    }
    if a.chain_offset.checked_add(a.chains as u64).is_none() {
        return Err(Error::param(
            "--chain-offset",
            a.chain_offset,
            "an index that leaves room for every chain",
        ));
    }
    let budget = budget_flags(a)?.unwrap_or(Budget::Sweeps(1000));
    check_burn_in(a.burn_in, budget)?;
    if let Budget::Sweeps(n) = budget {
        if a.thin > n {
            return Err(Error::param(
                "--thin",
                a.thin,
                &format!("at most the {n} sweeps of each chain, or no sweep is traced"),
            ));
        }
    }
    let init = match &a.init {
        InitArg::Labels(p) => InitArg::Labels(absolute(p)?),
        other => other.clone(),
    };
    Ok(RunSettings {
        format: RUN_FORMAT.to_string(),
        commands: vec![command_line()],
        data: data_record(a.data.data.as_deref())?,
        data_format: a.data.format,
        data_header: a.data.header,
        skip_columns: a.data.skip_columns.clone(),
        fingerprint: rundir::Fingerprint {
            n: 0,
            dim: 0,
            hash: String::new(),
        },
        model: a.model.clone(),
        sampler: a.sampler.clone(),
        seed: a.seed,
        chain_offset: a.chain_offset,
        chains: a.chains,
        init,
        thin: a.thin,
        budget,
        burn_in: a.burn_in,
        checkpoint_every: a.checkpoint_every,
        draws_per_chain: DRAWS_PER_CHAIN,
    })
}

/// The settings of the run in `dir`, with the budget and burn-in the resuming command gives.
fn resumed_settings(a: &RunArgs, dir: &Path) -> Result<RunSettings> {
    let mut s = RunSettings::load(dir)?;
    if s.checkpoint_every.is_none() {
        return Err(Error::Usage(format!(
            "{} was run without --checkpoint-every, so it has no checkpoint to resume from",
            dir.display()
        )));
    }
    if let Some(b) = budget_flags(a)? {
        s.budget = b;
    }
    if a.burn_in.is_some() {
        s.burn_in = a.burn_in;
    }
    check_burn_in(s.burn_in, s.budget)?;
    s.commands.push(command_line());
    Ok(s)
}

/// Removes `path` if it exists: outputs of an earlier run in the same directory must not be
/// mistaken for this run's.
fn remove_stale(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::Write {
            path: path.to_path_buf(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// The files `nrmm run` and `nrmm plot` write at the top of a run directory.
const RUN_FILES: [&str; 8] = [
    "run.json",
    "summary.json",
    "estimate.txt",
    "map.txt",
    "log_joint.svg",
    "n_clusters.svg",
    "acceptance.svg",
    "scatter.svg",
];

/// The entries of `dir` that belong to a run: its [`RUN_FILES`] and `chain-<i>` directories.
fn run_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    // A path that cannot be listed holds no run; creating the directory reports why.
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let chain = name
            .strip_prefix("chain-")
            .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()));
        if (chain && entry.path().is_dir()) || RUN_FILES.contains(&name.as_str()) {
            found.push(entry.path());
        }
    }
    found.sort();
    Ok(found)
}

/// Refuses an `--out` that already holds a run (a `run.json`) unless `--force` is given
/// (checked before the data are read, so the mistake costs nothing).
fn check_out(out: &Path, force: bool) -> Result<()> {
    if force || !out.join("run.json").exists() {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "{} already holds a run: continue it with `nrmm run --resume {}`, replace it with \
         --force (its run.json, results and chain-*/ directories are deleted), or choose \
         another --out",
        out.display(),
        out.display()
    )))
}

/// Deletes the run in `out` that `--force` replaces: its [`RUN_FILES`] and every `chain-<i>/`,
/// so no chain of the old run is mistaken for one of the new.
fn clear_run(out: &Path) -> Result<()> {
    for path in run_entries(out)? {
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|source| Error::Write { path, source })?;
    }
    Ok(())
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
    crate::data_parallel::refuse_under_mpi()?;
    let wall = Instant::now();
    let (mut settings, dir, resume) = match &a.resume {
        Some(dir) => (resumed_settings(&a, dir)?, dir.clone(), true),
        None => {
            let out = a
                .out
                .clone()
                .ok_or_else(|| Error::Usage("--out DIR is required (or --resume DIR)".into()))?;
            check_out(&out, a.force)?;
            (new_settings(&a)?, out, false)
        }
    };
    let data = settings.data_args();
    let built = build_model(&data, &settings.model, Builtin::Toy)?;
    if resume && built.fingerprint != settings.fingerprint {
        return Err(Error::Usage(format!(
            "the data ({}) differ from those {} was run on: resume needs the same data",
            settings
                .data
                .as_ref()
                .map_or_else(|| "built-in".to_string(), |p| p.display().to_string()),
            dir.display()
        )));
    }
    settings.fingerprint = built.fingerprint.clone();
    let spec = built.spec.clone();
    let prior = built.prior.clone();
    let n = with_kernel!(&built.kernel, |k| k.n_points());
    let init = Init::resolve(&settings.init, n)?;
    let progress = Progress::new(settings.budget);
    let shared = Shared {
        prior: &prior,
        init: &init,
        progress: &progress,
        failed: AtomicBool::new(false),
    };
    let ends: Vec<ChainEnd> = with_kernel!(&built.kernel, |k| {
        // Every setting and checkpoint is checked before anything is written.
        let schedules = settings
            .chain_indices()
            .map(|_| schedule(&settings.sampler, resamples_hyper(&spec), &prior))
            .collect::<Result<Vec<_>>>()?;
        let mut checkpoints = Vec::new();
        for c in settings.chain_indices() {
            checkpoints.push(if resume {
                load_checkpoint(&dir, &settings, c, &prior)?
            } else {
                None
            });
        }
        if !resume && a.force {
            clear_run(&dir)?;
        }
        create_dir(&dir)?;
        for stale in ["summary.json", "estimate.txt", "map.txt"] {
            remove_stale(&dir.join(stale))?;
        }
        for c in settings.chain_indices() {
            for stale in ["end.json", "best.json", "labels.txt"] {
                remove_stale(&chain_dir(&dir, c).join(stale))?;
            }
        }
        settings.save(&dir)?;
        if !resume {
            warn_of_slow_sweeps(k, settings.sampler.sampler);
        }
        interrupt::install();
        let jobs = settings
            .chain_indices()
            .zip(schedules.into_iter().zip(checkpoints))
            .map(|(c, (moves, checkpoint))| {
                let job = ChainJob {
                    run_dir: dir.clone(),
                    settings: &settings,
                    chain: c,
                    label: format!("chain {c}"),
                    checkpoint,
                };
                (job, moves)
            })
            .collect();
        launch(k, jobs, &shared)
    })?;
    let ends: Vec<(u64, ChainEnd)> = settings.chain_indices().zip(ends).collect();
    if ends
        .iter()
        .any(|(_, e)| matches!(e, ChainEnd::Interrupted { .. }))
    {
        let line = interrupted_line(&dir, &ends, settings.checkpoint_every.is_some());
        output::report_line(&line);
        return Ok(Status::Interrupted);
    }
    let run = RunDir {
        dir: dir.clone(),
        settings: settings.clone(),
    };
    let report = Report::of(std::slice::from_ref(&run), None, prior.joint_label())?;
    let mut record = run_record(&settings, &spec, wall.elapsed().as_secs_f64());
    if let Some(columns) = &built.columns {
        record["columns"] = json!(columns);
    }
    report.write(&dir, record)?;
    output::stdout(|out| {
        report.print(out)?;
        writeln!(out, "wrote {}", dir.display())
    })?;
    Ok(Status::Done)
}

/// Sweep time (measured lower bound) above which a run is announced as slow before it starts.
const SLOW_SWEEP_SECONDS: f64 = 60.0;

/// Warns on standard error, before any chain starts, when one sweep will take at least a
/// minute: every sampler weighs each point against at least two clusters per sweep, and one
/// predictive's time is measured on the data ([`nrmm::run::cost::predictive_seconds`]).
fn warn_of_slow_sweeps<K: ConjugateKernel>(kernel: &K, sampler: crate::args::SamplerKind) {
    let n = kernel.n_points();
    let sweep = 2.0 * n as f64 * nrmm::run::cost::predictive_seconds(kernel);
    if sweep > SLOW_SWEEP_SECONDS {
        output::report_line(&format!(
            "warning: one sweep of {} over {n} points will take at least {:.0} s (minutes per              sweep, more as clusters appear); a diagonal kernel (--kernel diag) or fewer              dimensions (principal components) make each sweep far cheaper",
            crate::report::kind_name(sampler),
            sweep
        ));
    }
}

/// The fields of `summary.json` that describe the run itself.
fn run_record(settings: &RunSettings, spec: &ModelSpec, wall_seconds: f64) -> serde_json::Value {
    json!({
        "command": settings.commands.last(),
        "commands": settings.commands,
        "seed": settings.seed,
        "chain_offset": settings.chain_offset,
        "sampler": settings.sampler.sampler,
        "sampler_settings": settings.sampler,
        "model": spec,
        "budget": settings.budget,
        "thin": settings.thin,
        "burn_in": settings.burn_in,
        "checkpoint_every": settings.checkpoint_every,
        "wall_seconds": wall_seconds,
    })
}

/// The label of the log joint of a run's model.
pub fn joint_label(settings: &RunSettings) -> Result<&'static str> {
    Ok(ModelSpec::from(&settings.model)
        .build_prior()?
        .joint_label())
}

/// `nrmm diagnose`: the report of every chain of the given run directories, merged.
pub fn diagnose(a: DiagnoseArgs) -> Result<()> {
    let runs = rundir::resolve(&a.dirs)?;
    let report = Report::of(&runs, a.burn_in, joint_label(&runs[0].settings)?)?;
    if let Some(out) = &a.out {
        create_dir(out)?;
        let dirs: Vec<String> = runs.iter().map(|r| r.dir.display().to_string()).collect();
        report.write(out, json!({ "runs": dirs, "burn_in": a.burn_in }))?;
    }
    if a.json {
        let value = serde_json::to_value(&report)
            .map_err(|e| Error::Usage(format!("cannot print the summary: {e}")))?;
        return print_json(&value);
    }
    output::stdout(|out| {
        report.print(out)?;
        if let Some(dir) = &a.out {
            writeln!(out, "wrote {}", dir.display())?;
        }
        Ok(())
    })
}
