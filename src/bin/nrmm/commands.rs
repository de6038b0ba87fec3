//! The verbs on a model without a run: `loglik`, `exact`, `check-exact` and `generate`.

use crate::args::*;
use crate::common::{build, flags, print_json};
use crate::output;
use nrmm::data::load;
use nrmm::data::synthetic::{PartitionSource, SyntheticSpec};
use nrmm::model::{Model, PriorKind};
use nrmm::prior::{KPrior, NrmPrior};
use nrmm::run::check::{check_sampler, exact_posterior, log_joint};
use nrmm::run::record::Builtin;
use nrmm::run::score::{score_run, Scored};
use nrmm::run::RunDir;
use nrmm::{Error, Result};
use serde_json::json;
use std::path::Path;

/// `nrmm loglik`: the log joint of the given labels under the model (MATH §1.2), or with
/// `--run` under that run's own model ([`loglik_run`]).
pub fn loglik(a: LoglikArgs) -> Result<()> {
    if let Some(dir) = &a.run {
        return loglik_run(dir, &a.labels, a.json);
    }
    let model = build(&a.data, &a.model, Builtin::Toy)?;
    let n = model.n_points();
    let labels = load::load_labels(&a.labels, n)?;
    let (ln_joint, k) = log_joint(&model, &labels).map_err(flags)?;
    let Model { kernel, prior, .. } = model;
    if a.json {
        return print_json(&json!({
            "log_joint": ln_joint,
            "joint": prior.joint_label(),
            "n_clusters": k,
            "n": n,
            "d": kernel.dim(),
            "hyper": prior.hyper_values().into_iter().collect::<std::collections::BTreeMap<_, _>>(),
        }));
    }
    output::stdout(|out| {
        writeln!(out, "{} = {ln_joint:.6}", prior.joint_label())?;
        writeln!(
            out,
            "clusters: {k}   points: {n}   dimension: {}",
            kernel.dim()
        )
    })
}

/// `nrmm loglik --run DIR`: the labels and the run's chains scored under the run's own
/// model ([`score_run`]), each chain's distance from the labels in nats per point.
fn loglik_run(dir: &Path, labels: &Path, json: bool) -> Result<()> {
    let run = RunDir::open(dir)?;
    let s = score_run(&run, labels).map_err(flags)?;
    if json {
        let gap = |x: &Option<Scored>| x.as_ref().map(|x| s.gap_per_point(x));
        let chains: Vec<_> = (s.chains.iter())
            .map(|c| {
                json!({
                    "chain": c.chain,
                    "log_joint": c.last.map(|x| x.log_joint),
                    "n_clusters": c.last.map(|x| x.n_clusters),
                    "gap_per_point": gap(&c.last),
                    "best_log_joint": c.best.map(|x| x.log_joint),
                    "best_n_clusters": c.best.map(|x| x.n_clusters),
                    "best_gap_per_point": gap(&c.best),
                    "recorded_log_joint": c.recorded_log_joint,
                })
            })
            .collect();
        return print_json(&json!({
            "run": dir.display().to_string(),
            "labels": labels.display().to_string(),
            "log_joint": s.labels.log_joint,
            "log_joint_per_point": s.labels.log_joint / s.n as f64,
            "joint": s.joint,
            "n_clusters": s.labels.n_clusters,
            "n": s.n,
            "d": s.d,
            "kernel": s.kernel.map_or("", nrmm::Choice::name),
            "hyper": s.hyper,
            "resampled": s.resampled,
            "chains": chains,
        }));
    }
    output::stdout(|out| {
        let (l, n) = (&s.labels, s.n);
        writeln!(
            out,
            "{} = {:.6} ({:.6} per point) under the model of {}",
            s.joint,
            l.log_joint,
            l.log_joint / n as f64,
            dir.display()
        )?;
        writeln!(
            out,
            "clusters: {}   points: {n}   dimension: {}   kernel: {}",
            l.n_clusters,
            s.d,
            s.kernel.map_or("", nrmm::Choice::name)
        )?;
        if !s.resampled.is_empty() {
            writeln!(
                out,
                "the run resamples {}: every score here is at the values its run.json records",
                s.resampled.join(", ")
            )?;
        }
        for c in &s.chains {
            let show = |x: &Option<Scored>| match x {
                Some(x) => format!(
                    "{:.6} (K = {}, {:+.6} per point)",
                    x.log_joint,
                    x.n_clusters,
                    s.gap_per_point(x)
                ),
                None => "none".to_string(),
            };
            writeln!(
                out,
                "chain {}: final {}, best {}",
                c.chain,
                show(&c.last),
                show(&c.best)
            )?;
        }
        Ok(())
    })
}

/// `nrmm exact`: the exact posterior over partitions by enumeration (MATH §7.1).
pub fn exact(a: ExactArgs) -> Result<()> {
    let post = exact_posterior(&build(&a.data, &a.model, Builtin::SetB)?).map_err(flags)?;
    // More than every partition is every partition; the clamp also keeps a huge --top from
    // reserving memory for entries that cannot exist.
    let top = a.top.min(post.n_partitions());
    if a.json {
        let summary = serde_json::to_value(post.summary(top))
            .map_err(|e| Error::Numerical(format!("the exact posterior summary: {e}")))?;
        return print_json(&summary);
    }
    output::stdout(|out| post.print(out, top))
}

/// The library's names of generator parameters, spelled as the flags of `generate`.
fn generate_flag(name: &str) -> Option<String> {
    let flag = match name {
        "n" | "d" | "k" | "alpha" | "sigma" | "beta" | "prior" | "gamma" => name,
        "doc_length" => "doc-length",
        "k_prior" => "k-prior",
        _ => return None,
    };
    Some(format!("--{flag}"))
}

/// `nrmm generate`: a partition (uniform with `--k`, else from the DP's CRP, the NGGP's or
/// Pitman-Yor's urn, or the MFM's definition), then Gaussian data from Normal-Wishart clusters
/// or bags of words from Dirichlet-multinomial clusters.
pub fn generate(a: GenerateArgs) -> Result<()> {
    let rename = |e: Error| e.rename_parameters(&generate_flag);
    let prior = a.prior.unwrap_or(PriorKind::Dp);
    if prior != PriorKind::Mfm && (a.gamma.is_some() || a.k_prior.is_some()) {
        return Err(Error::Usage(
            "--gamma and --k-prior are the MFM's: add --prior mfm".into(),
        ));
    }
    let partition = match prior {
        PriorKind::PitmanYor => PartitionSource::PitmanYor {
            theta: a.alpha.unwrap_or(1.0),
            sigma: a.sigma.unwrap_or(0.5),
        },
        PriorKind::Mfm => {
            if a.alpha.is_some() || a.sigma.is_some() {
                return Err(Error::Usage(
                    "the MFM has no --alpha or --sigma: give --gamma and --k-prior".into(),
                ));
            }
            PartitionSource::Mfm {
                gamma: a.gamma.unwrap_or(1.0),
                k_prior: a.k_prior.unwrap_or(KPrior::Poisson { lambda: 1.0 }),
            }
        }
        PriorKind::Dp | PriorKind::Nggp => {
            PartitionSource::of(a.k, prior == PriorKind::Nggp, a.alpha, a.sigma).map_err(rename)?
        }
    };
    let spec = SyntheticSpec {
        kind: a.kind,
        n: a.n,
        d: a.d,
        partition,
        beta: a.beta,
        doc_length: a.doc_length,
        seed: a.seed,
    };
    let drawn = spec.generate().map_err(rename)?;
    drawn.write(&a.out, a.labels_out.as_deref())?;
    output::stdout(|out| {
        let (n, k) = (a.n, drawn.n_clusters);
        writeln!(
            out,
            "wrote {n} points in {k} clusters to {}",
            a.out.display()
        )
    })
}

/// `nrmm check-exact`: one chain from the single-cluster partition, its post-burn-in
/// partitions compared with the exact posterior ([`check_sampler`]).
pub fn check_exact(a: CheckExactArgs) -> Result<()> {
    let model = build(&a.data, &a.model, Builtin::SetB)?;
    let c = check_sampler(
        &model,
        &a.sampler.settings(model.n_points()).map_err(flags)?,
        a.sweeps,
        a.seed,
    )
    .map_err(flags)?;
    if a.json {
        return print_json(&c.json());
    }
    output::stdout(|out| c.print(out))
}
