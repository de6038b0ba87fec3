//! What a chain leaves in its directory to be resumed or read: its sealed checkpoint file
//! ([`ChainFile`]) and its end state ([`EndState`]); and the checks that a checkpoint belongs
//! to the run that resumes it ([`load_checkpoint`]).

use super::checkpoint::{load_sealed, previous_path, ChainCheckpoint, Sealed, SealedError};
use super::draws::{BestDraw, DrawStride};
use super::record::{chain_dir, RunRecord, CHECKPOINT_FORMAT};
use super::spec::Budget;
use crate::error::{Error, Result};
use crate::prior::Prior;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The checkpoint file of one chain: its state and where its observers are, sealed with a
/// checksum of its contents, which include the identity of the run (see [`Sealed`]).
#[derive(Clone, Serialize, Deserialize)]
pub struct ChainFile {
    /// [`CHECKPOINT_FORMAT`].
    pub format: String,
    /// The checksum of the file's contents (see [`super::checkpoint`]).
    #[serde(default)]
    pub checksum: String,
    /// [`RunRecord::chain_identity`] of the chain that wrote it: a hash of the data's
    /// fingerprint, the model, the sampler, the seed and the chain.
    pub identity: String,
    /// The chain's index.
    pub chain: u64,
    /// The chain.
    pub state: ChainCheckpoint<Prior>,
    /// The draws writer's place in its doubling schedule.
    pub draws: DrawStride,
    /// The best state so far.
    pub best: BestDraw,
    /// Whether it was read from the previous checkpoint because the last was missing or
    /// corrupt (never written).
    #[serde(skip)]
    pub from_previous: bool,
}

impl Sealed for ChainFile {
    fn checksum_mut(&mut self) -> &mut String {
        &mut self.checksum
    }
}

/// The state a chain ended in, written to `chain-<i>/end.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EndState {
    /// Sweeps done.
    pub sweeps: u64,
    /// Sampling seconds.
    pub seconds: f64,
    /// Clusters.
    pub n_clusters: usize,
    /// Log joint.
    pub log_joint: f64,
    /// Hyperparameters (by the trace's column names in the file).
    pub hyper: super::HyperState,
    /// Whether the chain ended in the partition it started from without its number of
    /// clusters ever changing (a chain stuck at its start); false for a resumed chain, whose
    /// start this launch did not see.
    #[serde(default)]
    pub never_moved: bool,
}

/// Whether `loaded` is `expected` (the run's prior) moved to other hyperparameter values: the
/// same law, hyperpriors and update scheme, with values that the prior's own setters accept and
/// that give the same cached quantities. Guards against a damaged checkpoint.
fn same_prior(loaded: &Prior, expected: &Prior) -> bool {
    match (loaded, expected) {
        (Prior::Dp(x), Prior::Dp(y)) => {
            let mut z = y.clone();
            z.set_alpha(x.alpha()).is_ok() && z == *x
        }
        (Prior::Nggp(x), Prior::Nggp(y)) => {
            let mut z = y.clone();
            z.set_alpha(x.alpha()).is_ok()
                && z.set_sigma(x.sigma()).is_ok()
                && z.set_ln_u(x.ln_u()).is_ok()
                && z == *x
        }
        (Prior::PitmanYor(x), Prior::PitmanYor(y)) => {
            let mut z = y.clone();
            z.set_sigma(x.sigma()).is_ok() && z.set_theta(x.theta()).is_ok() && z == *x
        }
        (Prior::Mfm(x), Prior::Mfm(y)) => {
            let mut z = y.clone();
            z.set_gamma(x.gamma()).is_ok() && z == *x
        }
        _ => false,
    }
}

/// The last sweep recorded in a trace file (0 when it has no row or does not exist).
fn last_traced_sweep(path: &Path) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| {
            text.lines()
                .rev()
                .find_map(|l| l.split(',').next()?.parse::<u64>().ok())
        })
        .unwrap_or(0)
}

/// Chain `chain`'s checkpoint in run directory `dir`, checked to belong to the run of `record`
/// (whose initial prior is `prior`) and to be within its budget; called for every chain before
/// anything is written, so that a mistaken resume changes nothing.
///
/// When the last checkpoint is missing or corrupt, the previous one is used, and `note` is told
/// so. When neither exists, the chain restarts only if it never reached its first checkpoint
/// (its trace ends before sweep `checkpoint_every` and it did not finish), which `note` is also
/// told; otherwise resuming would silently throw its sweeps away, and this refuses. A corrupt
/// checkpoint with no good previous one is refused too.
pub fn load_checkpoint(
    dir: &Path,
    record: &RunRecord,
    chain: u64,
    prior: &Prior,
    note: &dyn Fn(&str),
) -> Result<Option<ChainFile>> {
    let path = chain_dir(dir, chain).join("checkpoint.json");
    let previous = previous_path(&path);
    let file = match load_sealed::<ChainFile>(&path) {
        Ok(file) => file,
        Err(SealedError::Unreadable(e)) => return Err(e),
        Err(last) => match load_sealed::<ChainFile>(&previous) {
            Ok(mut file) => {
                note(&format!(
                    "warning: chain {chain}: {} is {last}; resuming from the previous \
                     checkpoint {} (sweep {})",
                    path.display(),
                    previous.display(),
                    file.state.sweep
                ));
                file.from_previous = true;
                file
            }
            Err(SealedError::Unreadable(e)) => return Err(e),
            Err(SealedError::Missing) => return missing_checkpoint(dir, record, chain, last, note),
            Err(prev) => {
                return Err(Error::Usage(format!(
                    "chain {chain} cannot be resumed: {} is {last} and {} is {prev}; start the \
                     run afresh with `force` (or in another directory)",
                    path.display(),
                    previous.display()
                )))
            }
        },
    };
    check_checkpoint(file, dir, record, chain, prior).map(Some)
}

/// What to do about chain `chain` when neither its checkpoint nor the previous one can be
/// used (`last` says why the checkpoint cannot): restart a chain that never reached its first
/// checkpoint, saying so, and refuse otherwise.
fn missing_checkpoint(
    dir: &Path,
    record: &RunRecord,
    chain: u64,
    last: SealedError,
    note: &dyn Fn(&str),
) -> Result<Option<ChainFile>> {
    let chain_path = chain_dir(dir, chain);
    let path = chain_path.join("checkpoint.json");
    let traced = last_traced_sweep(&chain_path.join("trace.csv"));
    let every = record.spec.checkpoint_every.unwrap_or(1);
    let finished = chain_path.join("end.json").exists();
    if matches!(last, SealedError::Missing) && traced < every && !finished {
        note(&format!(
            "note: chain {chain} stopped before its first checkpoint: it starts again from \
             sweep 0"
        ));
        return Ok(None);
    }
    let done = if finished {
        "it finished".to_string()
    } else {
        format!("its trace reaches sweep {traced}")
    };
    Err(Error::Usage(format!(
        "chain {chain} has no checkpoint to resume from ({} is {last}, and there is no previous \
         checkpoint) although {done}: resuming would restart it from sweep 0. Restore the \
         checkpoint, or start the run in {} afresh with `force`",
        path.display(),
        dir.display()
    )))
}

/// Checks that a sealed checkpoint belongs to chain `chain` of the run of `record` and fits
/// its prior and budget.
fn check_checkpoint(
    file: ChainFile,
    dir: &Path,
    record: &RunRecord,
    chain: u64,
    prior: &Prior,
) -> Result<ChainFile> {
    let path = chain_dir(dir, chain).join("checkpoint.json");
    let identity = record.chain_identity(chain)?;
    if file.format != CHECKPOINT_FORMAT || file.chain != chain || file.identity != identity {
        return Err(Error::Usage(format!(
            "{} belongs to another run (its data, model, sampler, seed or chain differ from \
             those in {}): it cannot be resumed here",
            path.display(),
            dir.join("run.json").display()
        )));
    }
    let replicas = file.state.ladder.iter().flat_map(|l| &l.replicas);
    if !same_prior(&file.state.prior, prior)
        || replicas.into_iter().any(|r| !same_prior(&r.prior, prior))
    {
        return Err(Error::Usage(format!(
            "{} is damaged: its prior does not fit the run's model",
            path.display()
        )));
    }
    let sweep = file.state.sweep;
    if let Some(n) = record.spec.budget.max_sweeps() {
        if n < sweep {
            // The setting that bounds the chains: the count, or the rounds' most.
            let bound = match record.spec.budget {
                Budget::Auto(_) => "max_sweeps",
                _ => "sweeps",
            };
            return Err(Error::Usage(format!(
                "chain {chain} was checkpointed at sweep {sweep}, past the budget of {n} \
                 sweeps: give `{bound}` {sweep} or more"
            )));
        }
    }
    Ok(file)
}
