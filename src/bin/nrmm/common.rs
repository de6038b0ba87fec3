//! What the verbs share: how they end, the library's parameter names spelled as flags, the
//! model built over the data of `--data` or a built-in set, and what a run records.

use crate::args::{DataArgs, ModelArgs};
use crate::output;
use nrmm::model::{Model, ModelSpec};
use nrmm::run::record::Builtin;
use nrmm::run::{DataSource, RunDir, Summary};
use nrmm::{Error, Result};

/// How a verb that did not fail ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// It did what was asked.
    Done,
    /// Ctrl-C stopped it cleanly (it has said so on standard error).
    Interrupted,
}

/// The flag that sets the library's parameter `name` (`nu` is `--nw-nu`, `burn_in` is
/// `--burn-in`), for the verbs that build a model and run samplers.
pub fn flag(name: &str) -> Option<String> {
    let spelled = match name {
        "xi" | "psi" | "r" | "nu" => format!("--nw-{name}"),
        "nw_*" | "nw_xi" | "nw_psi" | "nw_r" | "nw_nu" | "nw_defaults" => {
            name.replace('_', "-").replace("nw", "--nw")
        }
        "data_format" => "--format".into(),
        "data_header" => "--header".into(),
        "column_types" => "--types".into(),
        "continue_run" => "--continue".into(),
        "alpha" | "sigma" | "u" | "gamma" | "k_prior" | "beta" | "kernel" | "prior" | "sweeps"
        | "seconds" | "chains" | "chain_offset" | "max_sweeps" | "thin" | "burn_in"
        | "checkpoint_every" | "init" | "sampler" | "proposals" | "launch_scans"
        | "gibbs_sweeps" | "gibbs_subset" | "global_moves" | "depth" | "seed" | "force"
        | "resume" | "out" | "hyperpriors" | "kernel_hyperpriors" | "epsilon"
        | "prune_threshold" | "merge_threshold" | "check_interval" | "heldout" | "data"
        | "header" | "skip_columns" | "types" | "data_parallel" | "block" | "seeds"
        | "samplers" | "loss_a" | "mixed_real" | "temper" | "temper_ratio" | "temperatures" => {
            format!("--{}", name.replace('_', "-"))
        }
        _ => return None,
    };
    Some(spelled)
}

/// A library error in the command line's words: parameters named by their flags ([`flag`]).
pub fn flags(e: Error) -> Error {
    e.rename_parameters(&flag)
}

/// The model of the command line over the data of `--data` (or the built-in data set), with
/// the names of the data's columns when a header gave them; errors name the flag to change,
/// and a kernel chosen for a reason is announced on standard error.
pub fn build_model(
    data: &DataSource,
    spec: &ModelSpec,
    builtin: Builtin,
) -> Result<(Model, Option<Vec<String>>)> {
    spec.build_prior().map_err(flags)?;
    let loaded = data.load(builtin).map_err(flags)?;
    let built = Model::build(spec, loaded.dataset).map_err(flags)?;
    if let Some(columns) = &built.columns {
        output::report_line(&columns.note());
    }
    if let Some(note) = &built.kernel_note {
        output::report_line(&nrmm::error::rename_in_text(note, &flag));
    }
    Ok((built, loaded.columns))
}

/// The model a run recorded, over its data, rebuilt for `predict`, `impute` and `diagnose`:
/// [`build_model`] without its notes, which the run announced already.
pub fn rebuild_model(run: &nrmm::run::RunDir) -> Result<Model> {
    let loaded = run.record.source.load(Builtin::Toy).map_err(flags)?;
    Model::build(&run.record.model, loaded.dataset).map_err(flags)
}

/// [`build_model`] without the column names.
pub fn build(data: &DataArgs, model: &ModelArgs, builtin: Builtin) -> Result<Model> {
    build_model(&data.source(), &model.spec(), builtin).map(|(m, _)| m)
}

/// Prints `value` as pretty JSON on standard output.
pub fn print_json(value: &serde_json::Value) -> Result<()> {
    output::stdout(|out| {
        serde_json::to_writer_pretty(&mut *out, value)?;
        writeln!(out)
    })
}

/// The command line as typed (lossily for non-UTF-8 arguments), for the record.
pub fn command_line() -> Vec<String> {
    std::env::args_os()
        .map(|s| s.to_string_lossy().into_owned())
        .collect()
}

/// A summary in the command line's words: its warnings name flags; with `by_loss` (the
/// parameter `a` of the VI and Binder's loss), also the point estimates by loss and the
/// credible ball.
pub fn summary_of(runs: &[RunDir], burn_in: Option<u64>, by_loss: Option<f64>) -> Result<Summary> {
    let mut summary = Summary::of(runs, burn_in).map_err(flags)?;
    if let Some(a) = by_loss {
        summary.add_estimates_by_loss(a).map_err(flags)?;
    }
    for w in &mut summary.warnings {
        *w = nrmm::error::rename_in_text(w, &flag);
    }
    Ok(summary)
}
