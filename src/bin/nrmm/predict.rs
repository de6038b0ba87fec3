//! `nrmm predict`: new points assigned to the clusters of a run's point estimate, with their
//! cluster probabilities and their posterior predictive density over the run's draws
//! ([`nrmm::predict`]).

use crate::args::{ImputeArgs, PredictArgs};
use crate::common::{flag, rebuild_model};
use crate::output;
use nrmm::run::record::Builtin;
use nrmm::run::RunDir;
use nrmm::Result;

/// `nrmm predict`.
pub fn predict(a: PredictArgs) -> Result<()> {
    let run = RunDir::open(&a.run)?;
    let source = &run.record.source;
    let built = rebuild_model(&run)?;
    let new = source
        .other_file(a.data.clone(), a.format)
        .load(Builtin::Toy)?
        .dataset;
    let file = a.data.display().to_string();
    let (rows, k) = nrmm::predict::predict_run(&run, &built, &new, a.burn_in).map_err(|e| {
        e.rename_parameters(&|n| (n == "new").then(|| file.clone()).or_else(|| flag(n)))
    })?;
    let csv = rows.csv(k);
    match &a.out {
        Some(path) => {
            nrmm::run::write_atomic(path, csv.as_bytes())?;
            output::stdout(|out| {
                writeln!(
                    out,
                    "wrote {} predictions to {} ({k} clusters of the point estimate; label {k} \
                     is a new cluster)",
                    rows.ln_density.len(),
                    path.display()
                )
            })
        }
        None => output::stdout(|out| out.write_all(csv.as_bytes())),
    }
}

/// `nrmm impute`.
pub fn impute(a: ImputeArgs) -> Result<()> {
    let run = RunDir::open(&a.run)?;
    let built = rebuild_model(&run)?;
    let done = nrmm::impute::impute_run(&run, &built, a.burn_in).map_err(crate::common::flags)?;
    let filled = a.out.with_extension("filled.csv");
    let profiles = a.out.with_extension("profiles.json");
    nrmm::data::table::write_table(&a.out, &done.table)?;
    nrmm::run::write_atomic(&filled, done.filled_csv().as_bytes())?;
    let json = serde_json::to_string_pretty(&done.profiles)
        .map_err(|e| nrmm::Error::Usage(format!("cannot write the profiles: {e}")))?;
    nrmm::run::write_atomic(&profiles, json.as_bytes())?;
    output::stdout(|out| {
        writeln!(
            out,
            "filled {} missing entries over {} draws: wrote {}, {} and {} ({} clusters)",
            done.filled.len(),
            done.draws,
            a.out.display(),
            filled.display(),
            profiles.display(),
            done.profiles.len()
        )
    })
}
