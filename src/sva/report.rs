//! One SVA fit of a model's data, from its settings to its report: what every front end needs
//! (the command line's `sva`), whatever the kernel.

use super::{fit, fit_shuffled, SvaConfig, SvaEvents, SvaFit, SvaKernel, SvaPrior};
use crate::data::Dataset;
use crate::diagnostics::{adjusted_rand_index, normalized_mutual_information};
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::model::{Model, ModelSpec, PriorKind};
use crate::rng::SeedPlan;
use std::time::Instant;

impl SvaConfig {
    /// Errors unless `model` is what SVA fits: a Dirichlet process, Pitman-Yor process or
    /// mixture of finite mixtures with fixed hyperparameters and fixed kernel
    /// hyperparameters. The error names the model parameter to drop (by its field name,
    /// between backticks).
    pub fn check_model(model: &ModelSpec) -> Result<()> {
        let refuse = |what: &str| {
            Err(Error::Usage(format!(
                "{what} sets a prior SVA does not take or the hyperpriors of a sampler; sva fits \
                 a Dirichlet process, Pitman-Yor process or MFM with fixed hyperparameters by \
                 its urn (NGGP is taken by the samplers): drop {what}"
            )))
        };
        if model.prior == PriorKind::Nggp {
            // Named here rather than through `choice`, which sits above this layer.
            return refuse("`prior` nggp");
        }
        for (given, name) in [
            (
                model.sigma.is_some() && model.prior != PriorKind::PitmanYor,
                "`sigma`",
            ),
            (model.u.is_some(), "`u`"),
            (model.hyperpriors, "`hyperpriors`"),
            (model.kernel_hyperpriors, "`kernel_hyperpriors`"),
        ] {
            if given {
                return refuse(name);
            }
        }
        Ok(())
    }

    /// The configuration's rule for `model`'s prior ([`SvaPrior::of`]), after
    /// [`SvaConfig::check_model`]: the Pitman-Yor or MFM urn at its given hyperparameters,
    /// the DP's otherwise. Errors as [`ModelSpec::build_prior`] on settings of another prior.
    pub fn rule_of(model: &ModelSpec) -> Result<SvaPrior> {
        Ok(SvaPrior::of(&model.build_prior()?))
    }
}

/// What one fit reports, whatever the kernel.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SvaReport {
    /// Points fitted.
    pub n: usize,
    /// Their dimension (vocabulary size for counts).
    pub dimension: usize,
    /// Components at the end.
    pub n_components: usize,
    /// Components that are some point's most likely one.
    pub n_components_used: usize,
    /// Component weights.
    pub weights: Vec<f64>,
    /// Hard label of every point (0-based component).
    pub labels: Vec<usize>,
    /// Components created, pruned and merged.
    pub events: SvaEvents,
    /// Seconds the fit and the predictive took.
    pub seconds: f64,
    /// Log predictive density of each held-out point (of each training point without them).
    pub ln_predictive: Vec<f64>,
    /// Adjusted Rand index and NMI against true labels, when given.
    pub agreement: Option<(f64, f64)>,
}

/// Fits `model`'s data by SVA with `config` (visiting the points in an order shuffled by
/// `shuffle_seed`, else in the data's order), then evaluates the predictive on `heldout` (the
/// training points without it) and compares the labels with `truth`. Held-out points of the
/// wrong kind are named `` `heldout` `` in the error. Cost: one pass ([`fit`]) plus `m (K + 1)`
/// predictives.
pub fn run(
    model: &Model,
    config: &SvaConfig,
    shuffle_seed: Option<u64>,
    heldout: Option<&Dataset>,
    truth: Option<&[i64]>,
) -> Result<SvaReport> {
    config.validate()?;
    let start = Instant::now();
    let mut r = crate::with_kernel!(&model.kernel, |k| report(
        k,
        config,
        shuffle_seed,
        heldout.map(|h| heldout_points(k, h)).transpose()?
    ))?;
    r.dimension = model.kernel.dim();
    r.seconds = start.elapsed().as_secs_f64();
    if let Some(t) = truth {
        r.agreement = Some((
            adjusted_rand_index(&r.labels, t)?,
            normalized_mutual_information(&r.labels, t)?,
        ));
    }
    Ok(r)
}

/// The fit and its report for one kernel type.
fn report<K: SvaKernel>(
    kernel: &K,
    config: &SvaConfig,
    shuffle_seed: Option<u64>,
    heldout: Option<&K::NewData>,
) -> Result<SvaReport> {
    let f: SvaFit<K> = match shuffle_seed {
        Some(s) => fit_shuffled(kernel, config, &mut SeedPlan::new(s).chain(0))?,
        None => fit(kernel, config)?,
    };
    let ln_predictive = match heldout {
        Some(h) => f.ln_predictive_new(h)?,
        None => f.ln_predictive_points(&(0..kernel.n_points()).collect::<Vec<_>>())?,
    };
    let labels = f.labels().to_vec();
    Ok(SvaReport {
        n: labels.len(),
        dimension: 0,
        n_components: f.n_components(),
        n_components_used: labels
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        weights: f.weights(),
        labels,
        events: f.events(),
        seconds: 0.0,
        ln_predictive,
        agreement: None,
    })
}

/// The points of `heldout` for `kernel`; errors, naming them `` `heldout` ``, when they are of
/// another kind than the kernel's data. The kernel only names its type.
fn heldout_points<'a, K: Kernel>(_: &K, heldout: &'a Dataset) -> Result<&'a K::NewData> {
    K::points_of(heldout).ok_or_else(|| {
        Error::Usage(format!(
            "`heldout` holds {} but the model was fitted to {}: give held-out points in the \
             data's format",
            heldout.kind_name(),
            K::DATA
        ))
    })
}

impl SvaReport {
    /// The mean log predictive density.
    pub fn mean_ln_predictive(&self) -> f64 {
        self.ln_predictive.iter().sum::<f64>() / self.ln_predictive.len().max(1) as f64
    }

    /// Writes `labels.txt` (each point's 0-based component) and `summary.json` (the report
    /// with its settings, [`SvaReport::summary`]) to `dir`, creating it. Cost: O(n).
    pub fn write(
        &self,
        dir: &std::path::Path,
        config: &SvaConfig,
        shuffle_seed: Option<u64>,
        data: &std::path::Path,
        on: &str,
    ) -> Result<()> {
        use crate::data::load;
        load::create_dir(dir)?;
        load::write_labels(dir.join("labels.txt"), &self.labels)?;
        let summary = self.summary(config, shuffle_seed, data, on);
        let text = serde_json::to_string_pretty(&summary)
            .map_err(|e| Error::Numerical(format!("not representable as JSON: {e}")))?;
        load::write_atomically(&dir.join("summary.json"), |out| {
            std::io::Write::write_all(out, text.as_bytes())
        })
    }

    /// The report as `summary.json` holds it; `on` says where the predictive was evaluated
    /// (`heldout` or `training`), `data` names the data.
    fn summary(
        &self,
        config: &SvaConfig,
        shuffle_seed: Option<u64>,
        data: &std::path::Path,
        on: &str,
    ) -> serde_json::Value {
        serde_json::json!({
            "method": if config.prune_merge.is_some() { "sva-pm" } else { "sva" },
            "data": data,
            "n": self.n,
            "dimension": self.dimension,
            "config": config,
            "shuffle_seed": shuffle_seed,
            "n_components": self.n_components,
            "n_components_used": self.n_components_used,
            "weights": self.weights,
            "events": self.events,
            "seconds": self.seconds,
            "predictive": {
                "on": on,
                "points": self.ln_predictive.len(),
                "mean_ln_density": self.mean_ln_predictive(),
                "total_ln_density": self.ln_predictive.iter().sum::<f64>(),
            },
            "ari": self.agreement.map(|x| x.0),
            "nmi": self.agreement.map(|x| x.1),
        })
    }

    /// The human summary: method, components, events, the largest weights, the predictive and
    /// the agreement with true labels.
    pub fn print(
        &self,
        out: &mut dyn std::io::Write,
        config: &SvaConfig,
        on: &str,
    ) -> std::io::Result<()> {
        let method = if config.prune_merge.is_some() {
            "SVA-PM"
        } else {
            "SVA"
        };
        writeln!(
            out,
            "{method} over {} points (dimension {}) in {:.3} s: {} components, {} of them \
             holding points under the hard assignment",
            self.n, self.dimension, self.seconds, self.n_components, self.n_components_used
        )?;
        let e = &self.events;
        writeln!(
            out,
            "events: {} created, {} pruned, {} merged",
            e.created, e.pruned, e.merged
        )?;
        let mut w = self.weights.clone();
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
            "mean log predictive density ({on}, {} points): {:.4}",
            self.ln_predictive.len(),
            self.mean_ln_predictive()
        )?;
        if let Some((ari, nmi)) = self.agreement {
            writeln!(
                out,
                "agreement with the true labels: ARI {ari:.4}, NMI {nmi:.4}"
            )?;
        }
        Ok(())
    }
}
