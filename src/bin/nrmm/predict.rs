//! `nrmm predict`: new points assigned to the clusters of a run's point estimate, with their
//! cluster probabilities and their posterior predictive density over the run's draws.

use crate::args::PredictArgs;
use crate::common::{build_model, Builtin};
use crate::common::{data_args, summary_of};
use crate::output;
use nrmm::data::load;
use nrmm::data::Dataset;
use nrmm::diagnostics::{cluster_log_probabilities, ln_predictive_density, PredictiveKernel};
use nrmm::kernel::HyperKernel;
use nrmm::math::ln_add_exp;
use nrmm::model::AnyKernel;
use nrmm::partition::Partition;
use nrmm::prior::Prior;
use nrmm::run::summary::DrawSource;
use nrmm::run::RunDir;
use nrmm::{Error, Result};
use std::collections::BTreeMap;
use std::io::Write;

/// One new point's prediction.
struct Row {
    /// Cluster log probabilities, the last for a new cluster.
    ln_probs: Vec<f64>,
    /// Log posterior predictive density.
    ln_density: f64,
}

/// Predictions of `new` under the partition `labels` with hyperparameters `hyper`, and the
/// predictive density averaged over the draws of `sources`, read one chain at a time. Cost
/// O((1 + draws) · m · K) predictives.
fn predict_with<K: PredictiveKernel + HyperKernel>(
    kernel: &K,
    new: &K::NewData,
    base: &Prior,
    labels: &[usize],
    hyper: &BTreeMap<String, f64>,
    sources: &[DrawSource],
) -> Result<Vec<Row>> {
    let run_kernel = kernel;
    let moved = run_kernel.at_values(hyper)?;
    let kernel = moved.as_ref().unwrap_or(run_kernel);
    let partition = Partition::from_labels(kernel, labels)?;
    let prior = base.at_values(hyper)?;
    let ln_probs = cluster_log_probabilities(kernel, &partition, &prior, new)?;
    let mut ln_sum = vec![f64::NEG_INFINITY; ln_probs.len()];
    let mut draws = 0usize;
    for source in sources {
        for d in source.read()? {
            let moved = run_kernel.at_values(&d.hyper)?;
            let kernel = moved.as_ref().unwrap_or(run_kernel);
            let state = [(
                Partition::from_labels(kernel, &d.labels)?,
                base.at_values(&d.hyper)?,
            )];
            for (s, v) in ln_sum
                .iter_mut()
                .zip(ln_predictive_density(kernel, &state, new)?)
            {
                *s = ln_add_exp(*s, v);
            }
            draws += 1;
        }
    }
    let ln_draws = (draws.max(1) as f64).ln();
    Ok(ln_probs
        .into_iter()
        .zip(ln_sum)
        .map(|(ln_probs, s)| Row {
            ln_probs,
            ln_density: s - ln_draws,
        })
        .collect())
}

/// `nrmm predict`.
pub fn predict(a: PredictArgs) -> Result<()> {
    let run = RunDir::open(&a.run)?;
    let record = &run.record;
    let (built, _) = build_model(&data_args(&record.source), &record.model, Builtin::Toy)?;
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
    let opts = load::LoadOptions {
        format: a.format,
        dense: load::DenseOptions {
            header: record.source.data_header,
            skip_columns: record.source.skip_columns.clone(),
        },
    };
    let new = crate::common::load_path(&a.data, &opts)?.dataset;
    let (labels, hyper) = (&estimate.labels, &estimate.hyper);
    let rows = match (&built.kernel, &new) {
        (AnyKernel::Nw(k), Dataset::Dense(x)) => {
            if x.d() != k.dim() {
                return Err(Error::Usage(format!(
                    "{} has points of dimension {}, but the run's data have dimension {}",
                    a.data.display(),
                    x.d(),
                    k.dim()
                )));
            }
            predict_with(k, x, &built.prior, labels, hyper, &report.sources)?
        }
        (AnyKernel::Diag(k), Dataset::Dense(x)) => {
            if x.d() != k.dim() {
                return Err(Error::Usage(format!(
                    "{} has points of dimension {}, but the run's data have dimension {}",
                    a.data.display(),
                    x.d(),
                    k.dim()
                )));
            }
            predict_with(k, x, &built.prior, labels, hyper, &report.sources)?
        }
        (AnyKernel::Md(k), Dataset::Counts(c)) => {
            if c.vocab() > k.hyper().vocab() {
                return Err(Error::Usage(format!(
                    "{} has a vocabulary of {} words, but the run's data have {}",
                    a.data.display(),
                    c.vocab(),
                    k.hyper().vocab()
                )));
            }
            predict_with(k, c, &built.prior, labels, hyper, &report.sources)?
        }
        (AnyKernel::Nw(_) | AnyKernel::Diag(_), Dataset::Counts(_)) => {
            return Err(Error::Usage(format!(
                "{} holds counts, but the run's data are real vectors",
                a.data.display()
            )))
        }
        (AnyKernel::Md(_), Dataset::Dense(_)) => {
            return Err(Error::Usage(format!(
                "{} holds real vectors, but the run's data are counts",
                a.data.display()
            )))
        }
    };
    let k = estimate.n_clusters;
    let write = |out: &mut dyn Write| -> std::io::Result<()> {
        write!(out, "point,label,probability,ln_predictive_density")?;
        for c in 0..k {
            write!(out, ",p_{c}")?;
        }
        writeln!(out, ",p_new")?;
        for (i, r) in rows.iter().enumerate() {
            let (best, &ln_p) = r
                .ln_probs
                .iter()
                .enumerate()
                .max_by(|x, y| x.1.total_cmp(y.1))
                .expect("at least the new-cluster option");
            write!(out, "{i},{best},{:.6},{:.6}", ln_p.exp(), r.ln_density)?;
            for lp in &r.ln_probs {
                write!(out, ",{:.6}", lp.exp())?;
            }
            writeln!(out)?;
        }
        Ok(())
    };
    match &a.out {
        Some(path) => {
            let mut buf = Vec::new();
            write(&mut buf).map_err(|source| Error::Write {
                path: path.clone(),
                source,
            })?;
            nrmm::run::write_atomic(path, &buf)?;
            output::stdout(|out| {
                writeln!(
                    out,
                    "wrote {} predictions to {} ({k} clusters of the point estimate; label {k} \
                     is a new cluster)",
                    rows.len(),
                    path.display()
                )
            })
        }
        None => output::stdout(|out| write(out)),
    }
}
