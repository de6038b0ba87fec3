//! Given labels scored under a finished run's own model: the run's data read again from where
//! the run recorded them (checked against its fingerprint), the kernel with the scale the
//! run's pilot chose, the prior at the hyperparameters `run.json` records. The chains' final
//! and best partitions are scored under the same model, so that a true partition and the
//! chains compare at equal hyperparameters even when the chains resample theirs.

use super::check::log_joint;
use super::load_json;
use super::record::{chain_dir, Builtin, RunDir};
use super::BestDraw;
use crate::data::load;
use crate::data::Fingerprint;
use crate::error::{Error, Result};
use crate::model::{KernelKind, Model, PriorKind};
use crate::prior::NrmPrior;
use std::collections::BTreeMap;
use std::path::Path;

/// The model `run` sampled, rebuilt over its data: the source `run.json` names (a file,
/// standard input piped again, or the built-in `builtin` set when it names none) and the
/// model it records (kernel, pilot-chosen scale, prior, initial hyperparameters). Errors,
/// naming the run and the file, if the data cannot be read or are not the data the run
/// sampled (their fingerprint differs). Cost: reading the data and building the kernel
/// (Normal-Wishart: O(N d² + d³)).
pub fn run_model(run: &RunDir, builtin: Builtin) -> Result<Model> {
    let dir = run.dir.display();
    let source = &run.record.source;
    let file = source.data.as_ref().map_or_else(
        || "the built-in data set".to_string(),
        |p| p.display().to_string(),
    );
    let loaded = source.load(builtin).map_err(|e| {
        Error::Usage(format!(
            "cannot read the data of run {dir} ({file}, as its run.json records them): {e}"
        ))
    })?;
    if Fingerprint::of(&loaded.dataset) != run.record.fingerprint {
        let f = &run.record.fingerprint;
        return Err(Error::Usage(format!(
            "the data of run {dir} ({file}) have changed since it ran: expected {} points of \
             dimension {} with fingerprint {}, as its run.json records",
            f.n, f.dim, f.hash
        )));
    }
    Model::build(&run.record.model, loaded.dataset)
}

/// A partition's score under a run's model.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Scored {
    /// Its log joint at the run's recorded hyperparameters (MATH §1.2).
    pub log_joint: f64,
    /// Its number of clusters.
    pub n_clusters: usize,
}

/// One chain's final and best partitions, scored under the run's model.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ChainScore {
    /// The chain's index (directory `chain-<index>`).
    pub chain: u64,
    /// Its final partition (`labels.txt`); `None` for a chain that did not finish.
    pub last: Option<Scored>,
    /// The best partition it visited (`best.json`); `None` when it has none.
    pub best: Option<Scored>,
    /// The log joint its `end.json` records, at the chain's own final hyperparameters (equal
    /// to `last` when the run holds them fixed).
    pub recorded_log_joint: Option<f64>,
}

/// Given labels and a run's chains, scored under the run's own model ([`score_run`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RunScore {
    /// What the log joint is (e.g. `ln p(X, partition | alpha)`).
    pub joint: String,
    /// The given labels.
    pub labels: Scored,
    /// Points.
    pub n: usize,
    /// Dimension.
    pub d: usize,
    /// The kernel the run recorded (`None` where its record names none).
    pub kernel: Option<KernelKind>,
    /// The prior's hyperparameters the scores are at: the run's recorded initial values.
    pub hyper: BTreeMap<String, f64>,
    /// The hyperparameters the run's chains resample (empty when all are fixed); the chains'
    /// traces give their log joints at their own values, the scores here at `hyper`.
    pub resampled: Vec<String>,
    /// Per chain of the run.
    pub chains: Vec<ChainScore>,
}

impl RunScore {
    /// `score - self.labels.log_joint` per point: how far above the given labels' log joint
    /// a partition scored, in nats per point.
    pub fn gap_per_point(&self, score: &Scored) -> f64 {
        (score.log_joint - self.labels.log_joint) / self.n as f64
    }
}

/// The labels of file `labels` (any integers, one per point) scored under `run`'s own model
/// ([`run_model`]), with each chain's final and best partitions scored the same way. Errors
/// name the file: a labels file of the wrong length, a missing run directory or chain file,
/// data that changed since the run. Cost: building the model, then one partition's statistics
/// per partition scored (Normal-Wishart O(N d² + K d³) each).
pub fn score_run(run: &RunDir, labels: &Path) -> Result<RunScore> {
    let model = run_model(run, Builtin::Toy)?;
    let n = model.n_points();
    let given = load::load_labels(labels, n).map_err(|e| match e {
        Error::DimensionMismatch(m) => Error::DimensionMismatch(format!(
            "{m} (the data of run {}: expected one label per point, one per line)",
            run.dir.display()
        )),
        other => other,
    })?;
    fn scored<L: Copy + Ord>(model: &Model, labels: &[L]) -> Result<Scored> {
        let (log_joint, n_clusters) = log_joint(model, labels)?;
        Ok(Scored {
            log_joint,
            n_clusters,
        })
    }
    let score = |labels: &[i64]| scored(&model, labels);
    let mut chains = Vec::new();
    for c in run.record.spec.chain_indices() {
        let dir = chain_dir(&run.dir, c);
        let last_path = dir.join("labels.txt");
        let last = if last_path.is_file() {
            Some(score(&load::load_labels(&last_path, n)?)?)
        } else {
            None
        };
        let best_path = dir.join("best.json");
        let best = if best_path.is_file() {
            let best: BestDraw = load_json(&best_path)?;
            best.draw()
                .map(|b| scored(&model, &b.widen().labels))
                .transpose()?
        } else {
            None
        };
        let end_path = dir.join("end.json");
        let recorded_log_joint = if end_path.is_file() {
            Some(load_json::<super::resume::EndState>(&end_path)?.log_joint)
        } else {
            None
        };
        chains.push(ChainScore {
            chain: c,
            last,
            best,
            recorded_log_joint,
        });
    }
    let spec = &run.record.model;
    let mut resampled = Vec::new();
    if spec.hyperpriors {
        match spec.prior {
            PriorKind::Dp => resampled.push("alpha".to_string()),
            PriorKind::Nggp | PriorKind::PitmanYor => {
                resampled.push("alpha".to_string());
                resampled.push("sigma".to_string());
            }
            PriorKind::Mfm => resampled.push("gamma".to_string()),
        }
    }
    if spec.prior == PriorKind::Nggp {
        resampled.push("u".to_string());
    }
    if spec.kernel_hyperpriors {
        resampled.push("kernel scale".to_string());
    }
    Ok(RunScore {
        joint: model.prior.joint_label().to_string(),
        labels: score(&given)?,
        n,
        d: model.fingerprint.dim,
        kernel: model.spec.kernel,
        hyper: model
            .prior
            .hyper_values()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        resampled,
        chains,
    })
}
