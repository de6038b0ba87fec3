//! Running chains to a budget, in parallel, each writing its trace, draws, final labels, end
//! state and best state, with periodic checkpoints, exact resume and a clean stop on Ctrl-C.

use crate::args::{SamplerArgs, SamplerKind};
use crate::commands::{name_flag, SAMPLER_FLAGS};
use crate::interrupt;
use crate::output::create_dir;
use crate::progress::Progress;
use crate::rundir::{chain_dir, RunSettings, CHECKPOINT_FORMAT};
use nrmm::data::load;
use nrmm::kernel::{HyperKernel, KernelHyperPriors, ParametricKernel};
use nrmm::partition::Partition;
use nrmm::prior::Prior;
use nrmm::run::{
    load_sealed, previous_path, save_json, save_sealed, BestDraw, Chain, ChainCheckpoint,
    DrawStride, DrawWriter, Observer, Scheduled, Sealed, SealedError, TraceWriter,
};
use nrmm::sampler::{
    Gibbs, GibbsScan, HyperMove, JainNeal, KernelHyperMove, KernelUpdate, Move, Sams, State,
};
use nrmm::sva::SvaKernel;
use nrmm::tree::Forest;
use nrmm::{Error, Result};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The moves of a sweep for the chosen sampler (MATH §6), plus the hyperparameter move when
/// anything is resampled. `initial` is the run's prior with its initial hyperparameters, which
/// moves that fix a reference prior (tgmcmc's canonical trees) keep whatever the chain's
/// current prior is, also after a resume.
pub fn schedule<K: ParametricKernel + 'static>(
    s: &SamplerArgs,
    resample_hyper: bool,
    initial: &Prior,
) -> Result<Vec<Scheduled<K, Prior>>> {
    let m = &s.moves;
    let scan = match m.gibbs_subset {
        Some(k) => GibbsScan::Subset(k),
        None => GibbsScan::Full,
    };
    let gibbs = || Gibbs::new(scan).map_err(|e| name_flag(e, SAMPLER_FLAGS));
    let mut moves: Vec<Scheduled<K, Prior>> = Vec::new();
    match s.sampler {
        SamplerKind::Gibbs => moves.push(Scheduled {
            mv: Box::new(gibbs()?),
            repeats: 1,
        }),
        SamplerKind::Tgmcmc => return crate::tree_cmd::tgmcmc(s, resample_hyper, initial),
        SamplerKind::TgmcmcPaper => return crate::tree_cmd::tgmcmc_paper(s, resample_hyper),
        SamplerKind::Subcluster
        | SamplerKind::SubclusterDpmm
        | SamplerKind::Direct
        | SamplerKind::QuasiDirect
        | SamplerKind::QuasiCollapsed => moves.push(Scheduled {
            mv: dpmm_move(s.sampler, m),
            repeats: 1,
        }),
        SamplerKind::JainNeal | SamplerKind::Sams => {
            if m.proposals == 0 && m.gibbs_sweeps == 0 {
                return Err(Error::Usage(
                    "--proposals 0 with --gibbs-sweeps 0 leaves nothing to do".into(),
                ));
            }
            let mv: Box<dyn Move<K, Prior>> = match s.sampler {
                SamplerKind::Sams => Box::new(Sams::new()),
                _ => Box::new(JainNeal::new(m.launch_scans)),
            };
            moves.push(Scheduled {
                mv,
                repeats: m.proposals,
            });
            if m.gibbs_sweeps > 0 {
                moves.push(Scheduled {
                    mv: Box::new(gibbs()?),
                    repeats: m.gibbs_sweeps,
                });
            }
        }
    }
    if resample_hyper {
        moves.push(Scheduled {
            mv: Box::new(HyperMove),
            repeats: 1,
        });
    }
    Ok(moves)
}

/// The move of one of DPMM.jl's samplers (MATH §6.4); `subcluster` takes `--proposals`
/// split/merge proposals per sweep, each launched by `--launch-scans` sub-cluster iterations.
fn dpmm_move<K: ParametricKernel + 'static>(
    kind: SamplerKind,
    m: &crate::args::MoveArgs,
) -> Box<dyn Move<K, Prior>> {
    use nrmm::sampler::dpmm::{
        Direct, DpmmOptions, QuasiCollapsed, QuasiDirect, SubCluster, SubClusterOptions,
    };
    match kind {
        SamplerKind::Subcluster => Box::new(SubCluster::new(SubClusterOptions {
            launch_iters: m.launch_scans,
            proposals: m.proposals,
        })),
        SamplerKind::SubclusterDpmm => Box::new(SubCluster::dpmm(DpmmOptions::default())),
        SamplerKind::Direct => Box::new(Direct::new()),
        SamplerKind::QuasiDirect => Box::new(QuasiDirect::new()),
        _ => Box::new(QuasiCollapsed::new()),
    }
}

/// A resolved `--init`: a labels file is read once, before any chain starts.
pub enum Init {
    /// All points in one cluster.
    Single,
    /// Every point alone.
    Singletons,
    /// The labels of the file, one per point.
    Labels(Vec<i64>),
    /// The clusters of an IBHC forest.
    Ibhc(nrmm::tree::IbhcMode),
    /// The components of a one-pass SVA-PM fit.
    Sva,
    /// The better by log joint of one cluster and the SVA-PM fit.
    Auto,
}

impl Init {
    /// Reads a labels file (checking it has one label per point) or notes the fixed choice.
    pub fn resolve(init: &crate::args::InitArg, n: usize) -> Result<Self> {
        use crate::args::InitArg;
        Ok(match init {
            InitArg::Single => Init::Single,
            InitArg::Singletons => Init::Singletons,
            InitArg::Labels(path) => Init::Labels(load::load_labels(path, n)?),
            InitArg::Ibhc(mode) => Init::Ibhc(*mode),
            InitArg::Sva => Init::Sva,
            InitArg::Auto => Init::Auto,
        })
    }

    /// The initial partition of chain `chain` over `kernel`'s data (an IBHC build or an SVA
    /// pass draws its order from the chain's own stream of `seed`), with the forest it was
    /// read from when it is an IBHC forest's (moves that keep trees start from it,
    /// [`Move::start_from_forest`]).
    pub fn start<K: SvaKernel + 'static>(
        &self,
        kernel: &K,
        prior: &Prior,
        seed: u64,
        chain: usize,
    ) -> Result<(Partition<K>, Option<Forest<K>>)> {
        let partition = match self {
            Init::Single => Partition::single(kernel),
            Init::Singletons => Partition::singletons(kernel),
            Init::Labels(labels) => Partition::from_labels(kernel, labels)?,
            Init::Ibhc(mode) => {
                let forest = crate::tree_cmd::ibhc_forest(kernel, prior, *mode, seed, chain)?;
                let partition = Partition::from_labels(kernel, &forest.labels()?)?;
                return Ok((partition, Some(forest)));
            }
            Init::Sva => crate::sva_cmd::sva_partition(kernel, prior, seed, chain)?,
            Init::Auto => {
                // A one-pass fit can leave dozens of components on data with no structure
                // (pure noise in 100 dimensions), which single-point moves take long to merge;
                // one cluster is then the better start, and the log joint says so.
                let fit = crate::sva_cmd::sva_partition(kernel, prior, seed, chain)?;
                let single = Partition::single(kernel);
                if single.ln_joint(prior) > fit.ln_joint(prior) {
                    single
                } else {
                    fit
                }
            }
        };
        Ok((partition, None))
    }
}

/// The checkpoint file of one chain: its state and where its observers are, sealed with a
/// checksum of its contents, which include the identity of the run (see [`Sealed`]).
#[derive(Clone, Serialize, Deserialize)]
pub struct ChainFile {
    /// [`CHECKPOINT_FORMAT`].
    pub format: String,
    /// The checksum of the file's contents (see [`nrmm::run::checkpoint`]).
    #[serde(default)]
    pub checksum: String,
    /// [`RunSettings::chain_identity`] of the chain that wrote it: a hash of the data's
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
    /// Hyperparameters by name.
    pub hyper: std::collections::BTreeMap<String, f64>,
    /// Whether the chain ended in the partition it started from without its number of
    /// clusters ever changing (a chain stuck at its start); false for a resumed chain, whose
    /// start this launch did not see.
    #[serde(default)]
    pub never_moved: bool,
}

/// How a chain ended.
pub enum ChainEnd {
    /// It used up its budget.
    Finished,
    /// It stopped because another chain failed.
    Stopped,
    /// Ctrl-C stopped it after `sweep` sweeps; its last checkpoint, if any, is at `checkpoint`.
    Interrupted {
        /// Sweeps done.
        sweep: u64,
        /// Sweep of the last checkpoint.
        checkpoint: Option<u64>,
    },
}

/// One chain to run.
pub struct ChainJob<'a> {
    /// The run directory.
    pub run_dir: PathBuf,
    /// Its settings.
    pub settings: &'a RunSettings,
    /// The chain's index (its stream and directory).
    pub chain: u64,
    /// Its progress bar's label.
    pub label: String,
    /// The checkpoint to continue from ([`load_checkpoint`]); `None` starts afresh.
    pub checkpoint: Option<ChainFile>,
}

/// What the chains of one launch share: the initial state, the bars, and the flag a failing
/// chain raises to stop the others at their next sweep.
pub struct Shared<'a> {
    /// The prior with its initial hyperparameters.
    pub prior: &'a Prior,
    /// The initial partition.
    pub init: &'a Init,
    /// Progress bars.
    pub progress: &'a Progress,
    /// Set by the first chain that fails.
    pub failed: AtomicBool,
}

/// Runs every job in parallel (each chain on its own stream, so results do not depend on the
/// number of threads) and returns their ends in job order; the first error in job order is
/// returned once every chain has stopped (a failure stops the others at their next sweep).
pub fn launch<K: SvaKernel + HyperKernel + 'static>(
    kernel: &K,
    jobs: Vec<(ChainJob<'_>, Vec<Scheduled<K, Prior>>)>,
    shared: &Shared<'_>,
) -> Result<Vec<ChainEnd>> {
    let results: Vec<Result<ChainEnd>> = jobs
        .into_par_iter()
        .map(|(job, moves)| {
            let result = run_chain(kernel, job, moves, shared);
            if result.is_err() {
                shared.failed.store(true, Ordering::Relaxed);
            }
            result
        })
        .collect();
    results.into_iter().collect()
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

/// Chain `chain`'s checkpoint in run directory `dir`, checked to belong to the run of
/// `settings` (whose initial prior is `prior`) and to be within its budget; called for every
/// chain before anything is written, so that a mistaken resume changes nothing.
///
/// When the last checkpoint is missing or corrupt, the previous one is used, and a line on
/// standard error says so. When neither exists, the chain restarts only if it never reached
/// its first checkpoint (its trace ends before sweep `--checkpoint-every` and it did not
/// finish), which a line also says; otherwise resuming would silently throw its sweeps away,
/// and this refuses. A corrupt checkpoint with no good previous one is refused too.
pub fn load_checkpoint(
    dir: &Path,
    settings: &RunSettings,
    chain: u64,
    prior: &Prior,
) -> Result<Option<ChainFile>> {
    let chain_path = chain_dir(dir, chain);
    let path = chain_path.join("checkpoint.json");
    let previous = previous_path(&path);
    let file = match load_sealed::<ChainFile>(&path) {
        Ok(file) => file,
        Err(SealedError::Unreadable(e)) => return Err(e),
        Err(last) => match load_sealed::<ChainFile>(&previous) {
            Ok(mut file) => {
                crate::output::report_line(&format!(
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
            Err(SealedError::Missing) => return missing_checkpoint(dir, settings, chain, last),
            Err(prev) => {
                return Err(Error::Usage(format!(
                    "chain {chain} cannot be resumed: {} is {last} and {} is {prev}; start the \
                     run afresh with --force (or with another --out)",
                    path.display(),
                    previous.display()
                )))
            }
        },
    };
    check_checkpoint(file, dir, settings, chain, prior).map(Some)
}

/// What to do about chain `chain` when neither its checkpoint nor the previous one can be
/// used (`last` says why the checkpoint cannot): restart a chain that never reached its first
/// checkpoint, saying so, and refuse otherwise.
fn missing_checkpoint(
    dir: &Path,
    settings: &RunSettings,
    chain: u64,
    last: SealedError,
) -> Result<Option<ChainFile>> {
    let chain_path = chain_dir(dir, chain);
    let path = chain_path.join("checkpoint.json");
    let traced = last_traced_sweep(&chain_path.join("trace.csv"));
    let every = settings.checkpoint_every.unwrap_or(1);
    let finished = chain_path.join("end.json").exists();
    if matches!(last, SealedError::Missing) && traced < every && !finished {
        crate::output::report_line(&format!(
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
         checkpoint, or start the run afresh with `nrmm run ... --out {} --force`",
        path.display(),
        dir.display()
    )))
}

/// Checks that a sealed checkpoint belongs to chain `chain` of the run of `settings` and fits
/// its prior and budget.
fn check_checkpoint(
    file: ChainFile,
    dir: &Path,
    settings: &RunSettings,
    chain: u64,
    prior: &Prior,
) -> Result<ChainFile> {
    let path = chain_dir(dir, chain).join("checkpoint.json");
    let identity = settings.chain_identity(chain)?;
    if file.format != CHECKPOINT_FORMAT || file.chain != chain || file.identity != identity {
        return Err(Error::Usage(format!(
            "{} belongs to another run (its data, model, sampler, seed or chain differ from \
             those in {}): it cannot be resumed here",
            path.display(),
            dir.join("run.json").display()
        )));
    }
    if !same_prior(&file.state.prior, prior) {
        return Err(Error::Usage(format!(
            "{} is damaged: its prior does not fit the run's model",
            path.display()
        )));
    }
    let sweep = file.state.sweep;
    if let crate::progress::Budget::Sweeps(n) = settings.budget {
        if n < sweep {
            return Err(Error::Usage(format!(
                "chain {chain} was checkpointed at sweep {sweep}, past the budget of {n} \
                 sweeps: give --sweeps {sweep} or more"
            )));
        }
    }
    Ok(file)
}

/// The update of the kernel's own hyperparameters when the run's model has
/// `--kernel-hyperpriors`: the default priors, centred on `kernel` (the run's kernel as built
/// from its settings, so a resumed run has the same priors).
fn kernel_update<K: HyperKernel + 'static>(
    kernel: &K,
    settings: &RunSettings,
) -> Result<Option<Box<dyn KernelUpdate<K>>>> {
    if !settings.model.kernel_hyperpriors {
        return Ok(None);
    }
    let priors = KernelHyperPriors::default_for(kernel)?;
    Ok(Some(Box::new(KernelHyperMove::new(priors)?)))
}

/// The number of clusters of canonical labels.
fn chain_start_k(labels: &[usize]) -> usize {
    labels.iter().max().map_or(0, |m| m + 1)
}

/// Runs one chain to its budget (see [`launch`]).
fn run_chain<K: SvaKernel + HyperKernel + 'static>(
    kernel: &K,
    job: ChainJob<'_>,
    mut moves: Vec<Scheduled<K, Prior>>,
    shared: &Shared<'_>,
) -> Result<ChainEnd> {
    let settings = job.settings;
    let dir = chain_dir(&job.run_dir, job.chain);
    create_dir(&dir)?;
    let checkpoint_path = dir.join("checkpoint.json");
    let trace_path = dir.join("trace.csv");
    let draws_path = dir.join("draws.jsonl");
    let previous = previous_path(&checkpoint_path);
    match &job.checkpoint {
        // Checkpoints of an earlier run in the same directory must not outlive its trace.
        None => {
            for stale in [&checkpoint_path, &previous] {
                if stale.exists() {
                    std::fs::remove_file(stale).map_err(|source| Error::Write {
                        path: stale.clone(),
                        source,
                    })?;
                }
            }
        }
        // The damaged last checkpoint gives way to the good one, so that the next write keeps
        // a good previous checkpoint.
        Some(file) if file.from_previous => {
            std::fs::copy(&previous, &checkpoint_path).map_err(|source| Error::Write {
                path: checkpoint_path.clone(),
                source,
            })?;
        }
        Some(_) => {}
    }
    let resumed = job.checkpoint.is_some();
    let (mut chain, mut trace, mut draws, mut best, mut last_checkpoint) = match job.checkpoint {
        Some(file) => {
            let sweep = file.state.sweep;
            let trace = TraceWriter::resume(&trace_path, settings.thin, sweep)?;
            let draws =
                DrawWriter::resume(&draws_path, settings.draws_per_chain, file.draws, sweep)?;
            let update = kernel_update(kernel, settings)?;
            let chain = Chain::resume_with(kernel, file.state, moves, update)?;
            (chain, trace, draws, file.best, Some(sweep))
        }
        None => {
            let (partition, forest) =
                shared
                    .init
                    .start(kernel, shared.prior, settings.seed, job.chain as usize)?;
            if let Some(forest) = &forest {
                for s in &mut moves {
                    s.mv.start_from_forest(forest);
                }
            }
            let state = State {
                partition,
                prior: shared.prior.clone(),
            };
            let rng = nrmm::rng::SeedPlan::new(settings.seed).chain(job.chain);
            let mut chain = Chain::new(kernel, state, rng, moves);
            if let Some(update) = kernel_update(kernel, settings)? {
                chain = chain.with_kernel_update(update);
            }
            let trace = TraceWriter::create(&trace_path, settings.thin)?;
            let draws = DrawWriter::create(&draws_path, settings.thin, settings.draws_per_chain)?;
            (chain, trace, draws, BestDraw::default(), None)
        }
    };
    let start = chain.state().partition.canonical_labels();
    let start_k = chain_start_k(&start);
    let mut k_changed = false;
    let mut bar = shared.progress.bar(&job.label);
    while !settings
        .budget
        .reached(chain.sweeps_done(), chain.seconds())
    {
        if shared.failed.load(Ordering::Relaxed) {
            return Ok(ChainEnd::Stopped);
        }
        if interrupt::requested() {
            trace.flush()?;
            draws.flush()?;
            return Ok(ChainEnd::Interrupted {
                sweep: chain.sweeps_done(),
                checkpoint: last_checkpoint,
            });
        }
        let record = chain.sweep()?;
        k_changed |= record.n_clusters != start_k;
        trace.observe(&record, chain.state())?;
        draws.observe(&record, chain.state())?;
        best.observe(&record, chain.state())?;
        bar.update(&record);
        if let Some(every) = settings.checkpoint_every {
            if record.sweep.is_multiple_of(every) {
                // Rows up to the checkpoint must be on disk before it: a resume cuts the files
                // back to it and appends.
                trace.flush()?;
                draws.flush()?;
                let file = ChainFile {
                    format: CHECKPOINT_FORMAT.to_string(),
                    checksum: String::new(),
                    identity: settings.chain_identity(job.chain)?,
                    chain: job.chain,
                    state: chain.checkpoint()?,
                    draws: draws.stride(),
                    best: best.clone(),
                    from_previous: false,
                };
                save_sealed(&checkpoint_path, &file)?;
                last_checkpoint = Some(record.sweep);
            }
        }
    }
    trace.flush()?;
    draws.flush()?;
    let state = chain.state();
    let end = EndState {
        sweeps: chain.sweeps_done(),
        seconds: chain.seconds(),
        n_clusters: state.partition.n_clusters(),
        log_joint: state.ln_joint(),
        hyper: nrmm::prior::NrmPrior::hyper_values(&state.prior)
            .into_iter()
            .chain(chain.kernel_hyper_values())
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        never_moved: !resumed
            && !k_changed
            && chain.sweeps_done() > 0
            && state.partition.canonical_labels() == start,
    };
    load::write_labels(dir.join("labels.txt"), &state.partition.canonical_labels())?;
    save_json(&dir.join("end.json"), &end)?;
    save_json(&dir.join("best.json"), &best)?;
    Ok(ChainEnd::Finished)
}
