//! `nrmm predict`: new points assigned to the clusters of a run's point estimate, with their
//! cluster probabilities and their posterior predictive density over the run's draws
//! ([`nrmm::predict`]).

use crate::args::PredictArgs;
use crate::common::{build_model, summary_of};
use crate::output;
use nrmm::run::record::Builtin;
use nrmm::run::{DataSource, RunDir};
use nrmm::{Error, Result};

/// `nrmm predict`.
pub fn predict(a: PredictArgs) -> Result<()> {
    let run = RunDir::open(&a.run)?;
    let record = &run.record;
    let (built, _) = build_model(&record.source, &record.model, Builtin::Toy)?;
    if built.fingerprint != record.fingerprint {
        return Err(Error::Usage(format!(
            "the data {} was run on have changed since: its draws no longer describe them",
            a.run.display()
        )));
    }
    let report = summary_of(std::slice::from_ref(&run), a.burn_in)?;
    let estimate = report.point_estimate.as_ref().ok_or_else(|| {
        Error::Usage(format!(
            "{} has no partition draws after its burn-in: lower --burn-in",
            a.run.display()
        ))
    })?;
    // The new points are read like the run's data: the same header and skipped columns.
    let new = DataSource {
        data: Some(a.data.clone()),
        data_format: a.format,
        ..record.source.clone()
    }
    .load(Builtin::Toy)?
    .dataset;
    // The draws are read one chain at a time.
    let draws = report.sources.iter().flat_map(|s| match s.read() {
        Ok(d) => d.into_iter().map(|d| Ok((d.labels, d.hyper))).collect(),
        Err(e) => vec![Err(e)],
    });
    let rows = nrmm::predict::predict(&built, &new, (&estimate.labels, &estimate.hyper), draws)
        .map_err(|e| {
            let file = a.data.display().to_string();
            e.rename_parameters(&|n| (n == "new").then(|| file.clone()))
        })?;
    let k = estimate.n_clusters;
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
