//! `nrmm sva`: Lin's one-pass sequential variational approximation.

use crate::args::{DataArgs, SvaArgs};
use crate::common::{build_model, Builtin};
use crate::output;
use nrmm::data::load;
use nrmm::data::Dataset;
use nrmm::diagnostics::{adjusted_rand_index, normalized_mutual_information};
use nrmm::kernel::ConjugateKernel;
use nrmm::model::{AnyKernel, PriorKind};
use nrmm::rng::SeedPlan;
use nrmm::sva::{fit, fit_shuffled, PruneMerge, SvaConfig, SvaFit, SvaKernel};
use nrmm::{Error, Result};
use serde_json::json;
use std::time::Instant;

/// The SVA settings of the command line, checked with the flags' names.
fn config(a: &SvaArgs) -> Result<SvaConfig> {
    let m = &a.model;
    let refuse = |flag: &str| {
        Err(Error::Usage(format!(
            "{flag} sets the NGGP or the hyperpriors of a sampler; sva fits a Dirichlet \
             process with a fixed --alpha: drop {flag}"
        )))
    };
    if m.prior == PriorKind::Nggp {
        return refuse("--prior nggp");
    }
    if m.sigma.is_some() {
        return refuse("--sigma");
    }
    if m.u.is_some() {
        return refuse("--u");
    }
    if m.hyperpriors {
        return refuse("--hyperpriors");
    }
    if m.kernel_hyperpriors {
        return refuse("--kernel-hyperpriors");
    }
    let defaults = PruneMerge::default();
    let c = SvaConfig {
        alpha: m.alpha.unwrap_or(1.0),
        epsilon: a.epsilon.unwrap_or(SvaConfig::DEFAULT_EPSILON),
        prune_merge: a.prune_merge.then(|| PruneMerge {
            prune_threshold: a.prune_threshold.unwrap_or(defaults.prune_threshold),
            merge_threshold: a.merge_threshold.unwrap_or(defaults.merge_threshold),
            check_interval: a.check_interval.unwrap_or(defaults.check_interval),
        }),
    };
    c.validate().map_err(|e| {
        crate::common::name_flag(
            e,
            &[
                ("alpha", "--alpha"),
                ("epsilon", "--epsilon"),
                ("prune threshold", "--prune-threshold"),
                ("merge threshold", "--merge-threshold"),
                ("check interval", "--check-interval"),
            ],
        )
    })?;
    Ok(c)
}

/// What one fit reports, whatever the kernel.
struct Report {
    k: usize,
    weights: Vec<f64>,
    labels: Vec<usize>,
    events: nrmm::sva::SvaEvents,
    ln_pred: Vec<f64>,
}

fn report<K: SvaKernel>(f: &SvaFit<K>, heldout: Option<&K::NewData>) -> Result<Report> {
    let ln_pred = match heldout {
        Some(h) => f.ln_predictive_new(h)?,
        None => f.ln_predictive_points(&(0..f.kernel().n_points()).collect::<Vec<_>>())?,
    };
    Ok(Report {
        k: f.n_components(),
        weights: f.weights(),
        labels: f.labels().to_vec(),
        events: f.events(),
        ln_pred,
    })
}

fn run_fit<K: SvaKernel>(k: &K, c: &SvaConfig, seed: Option<u64>) -> Result<SvaFit<K>> {
    match seed {
        Some(s) => fit_shuffled(k, c, &mut SeedPlan::new(s).chain(0)),
        None => fit(k, c),
    }
}

/// `nrmm sva`: one pass of SVA (or SVA-PM) over the data; prints a summary and, with
/// `--out`, writes `labels.txt` and `summary.json`.
pub fn sva(a: SvaArgs) -> Result<()> {
    let config = config(&a)?;
    let data = DataArgs {
        data: Some(a.data.clone()),
        format: a.format,
        header: a.header,
        skip_columns: a.skip_columns.clone(),
    };
    let (built, _) = build_model(&data, &a.model.spec(), Builtin::Toy)?;
    // Held-out points are read as the data are: the same header and skipped columns.
    let heldout = match &a.heldout {
        Some(p) => Some(
            crate::common::load_table(
                &DataArgs {
                    data: Some(p.clone()),
                    ..data
                },
                Builtin::Toy,
            )?
            .dataset,
        ),
        None => None,
    };
    let truth = match &a.labels {
        Some(p) => Some(load::load_labels(p, with_kernel_n(&built.kernel))?),
        None => None,
    };
    let start = Instant::now();
    let (r, d) = match (&built.kernel, heldout.as_ref()) {
        (AnyKernel::Nw(k), h) => {
            let h = match h {
                None => None,
                Some(Dataset::Dense(x)) => Some(x),
                Some(Dataset::Counts(_)) => return Err(mismatch("count data", "real vectors")),
            };
            let f = run_fit(k, &config, a.shuffle_seed)?;
            (report(&f, h)?, k.dim())
        }
        (AnyKernel::Diag(k), h) => {
            let h = match h {
                None => None,
                Some(Dataset::Dense(x)) => Some(x),
                Some(Dataset::Counts(_)) => return Err(mismatch("count data", "real vectors")),
            };
            let f = run_fit(k, &config, a.shuffle_seed)?;
            (report(&f, h)?, k.dim())
        }
        (AnyKernel::Md(k), h) => {
            let h = match h {
                None => None,
                Some(Dataset::Counts(x)) => Some(x),
                Some(Dataset::Dense(_)) => return Err(mismatch("real vectors", "count data")),
            };
            let f = run_fit(k, &config, a.shuffle_seed)?;
            (report(&f, h)?, k.hyper().vocab())
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    let n = r.labels.len();
    // Components can keep weight without being any point's most likely one.
    let used = r
        .labels
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let mean_ln_pred = r.ln_pred.iter().sum::<f64>() / r.ln_pred.len().max(1) as f64;
    let agreement = match &truth {
        Some(t) => Some((
            adjusted_rand_index(&r.labels, t)?,
            normalized_mutual_information(&r.labels, t)?,
        )),
        None => None,
    };
    let which = if a.heldout.is_some() {
        "heldout"
    } else {
        "training"
    };
    if let Some(dir) = &a.out {
        output::create_dir(dir)?;
        load::write_labels(dir.join("labels.txt"), &r.labels)?;
        let summary = json!({
            "method": if config.prune_merge.is_some() { "sva-pm" } else { "sva" },
            "data": a.data,
            "n": n,
            "dimension": d,
            "config": config,
            "shuffle_seed": a.shuffle_seed,
            "n_components": r.k,
            "n_components_used": used,
            "weights": r.weights,
            "events": r.events,
            "seconds": seconds,
            "predictive": {
                "on": which,
                "points": r.ln_pred.len(),
                "mean_ln_density": mean_ln_pred,
                "total_ln_density": r.ln_pred.iter().sum::<f64>(),
            },
            "ari": agreement.map(|x| x.0),
            "nmi": agreement.map(|x| x.1),
        });
        let text = serde_json::to_string_pretty(&summary)
            .map_err(|e| Error::Numerical(format!("summary not representable as JSON: {e}")))?;
        nrmm::run::write_atomic(&dir.join("summary.json"), text.as_bytes())?;
    }
    output::stdout(|out| {
        writeln!(
            out,
            "{} over {n} points (dimension {d}) in {:.3} s: {} components, {} of them holding \
             points under the hard assignment",
            if config.prune_merge.is_some() {
                "SVA-PM"
            } else {
                "SVA"
            },
            seconds,
            r.k,
            used
        )?;
        writeln!(
            out,
            "events: {} created, {} pruned, {} merged",
            r.events.created, r.events.pruned, r.events.merged
        )?;
        let mut w: Vec<f64> = r.weights.clone();
        w.sort_by(|a, b| b.total_cmp(a));
        let shown: Vec<String> = w.iter().take(12).map(|x| format!("{x:.1}")).collect();
        let more = if w.len() > 12 {
            format!(" ... ({} more)", w.len() - 12)
        } else {
            String::new()
        };
        writeln!(out, "weights: {}{more}", shown.join(" "))?;
        writeln!(
            out,
            "mean log predictive density ({which}, {} points): {mean_ln_pred:.4}",
            r.ln_pred.len()
        )?;
        if let Some((ari, nmi)) = agreement {
            writeln!(
                out,
                "agreement with the true labels: ARI {ari:.4}, NMI {nmi:.4}"
            )?;
        }
        if let Some(dir) = &a.out {
            writeln!(out, "wrote {}/labels.txt and summary.json", dir.display())?;
        }
        Ok(())
    })
}

fn with_kernel_n(k: &AnyKernel) -> usize {
    nrmm::with_kernel!(k, |k| k.n_points())
}

fn mismatch(found: &str, expected: &str) -> Error {
    Error::Usage(format!(
        "--heldout holds {found} but the model was fitted to {expected}: give held-out points \
         in the data's format"
    ))
}
