//! The executor: [`Runner`] runs the chains of a [`SamplerSpec`] over a [`Model`] into a run
//! directory, in parallel, each to its budget, writing its trace, draws, final labels, end
//! state and best state, with periodic checkpoints, exact resume and a clean stop when asked.
//!
//! In the manner of argmin's `Executor` and lace's `Engine::update`: the sweep itself is
//! [`Chain::sweep`]; around it, per chain and in this order, the runner's handlers decide
//! whether to go on (the budget, [`SamplerSpec::budget`]; another chain's failure; the
//! interrupt flag, [`Runner::interrupt`]), then the observers see the sweep (trace, draws, best
//! state, and the [`Monitor`]'s [`ChainMonitor`], a progress bar), then the checkpoint handler
//! writes a checkpoint every [`SamplerSpec::checkpoint_every`] sweeps.
//!
//! ```no_run
//! # fn main() -> nrmm::Result<()> {
//! use nrmm::model::{Model, ModelSpec};
//! use nrmm::run::{Budget, Runner, SamplerKind, SamplerSpec};
//! let (x, _) = nrmm::data::generate::toy_like(1);
//! let model = Model::build(&ModelSpec::default(), nrmm::data::Dataset::Dense(x))?;
//! let spec = SamplerSpec {
//!     checkpoint_every: Some(50),
//!     ..SamplerSpec::new(SamplerKind::Sams)
//! };
//! // The default cluster scale comes from a short pilot run (`nrmm::run::pilot`).
//! let model = nrmm::run::pilot::settled(model, spec.seed)?;
//! let done = Runner::new(&model, spec, "runs/toy").replace(true).run()?;
//! println!("{:?}", done.summary()?.point_estimate.map(|e| e.n_clusters));
//! Runner::resume(&model, "runs/toy")?.budget(Budget::Sweeps(2000)).run()?;
//! # Ok(())
//! # }
//! ```

use super::draws::{BestDraw, DrawWriter, NarrowLabels};
use super::executor::{Executor, Handler, Stop, StopFlag, StopReason};
use super::ladder::{hot_schedules, HotSchedules, Ladder};
use super::record::{chain_dir, DataSource, RunDir, RunRecord, CHECKPOINT_FORMAT};
use super::resume::{load_checkpoint, ChainFile, EndState};
use super::spec::{AutoBudget, Budget, SamplerSpec};
use super::start::Resolved;
use super::summary::{round_verdict, RoundVerdict, Summary, ESS_WANTED, RHAT_LIMIT};
use super::trace::TraceWriter;
use super::{
    create_dir, previous_path, save_json, save_sealed, Chain, Observer, Scheduled, SweepRecord,
};
use crate::error::{Error, Result};
use crate::kernel::{ConjugateKernel, HyperKernel, KernelHyperPriors, ParametricKernel};
use crate::model::{Model, ModelSpec};
use crate::prior::{NrmPrior, Prior};
use crate::sampler::tgmcmc::SharedReference;
use crate::sampler::{KernelHyperMove, KernelUpdate, State};
use crate::sva::SvaKernel;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What watches a run: one-line notes (a resumed chain falling back to its previous
/// checkpoint, a slow sweep ahead) and each chain's sweeps. Every method does nothing by
/// default; `()` is the monitor that watches nothing.
pub trait Monitor: Sync {
    /// A line the user should read (it starts with `warning:` or `note:` when it is one, and
    /// names parameters between backticks, see [`Error::rename_parameters`]).
    fn note(&self, _line: &str) {}

    /// The watcher of chain `chain`, shown as `label`, called after each of its sweeps.
    fn chain(&self, _chain: u64, _label: &str) -> Box<dyn ChainMonitor + '_> {
        Box::new(())
    }

    /// A phase of the launch outside the sweeps has begun (the chains' starts), named in one
    /// line; it lasts until [`Monitor::phase_done`] or the next phase.
    fn phase(&self, _what: &str) {}

    /// The phase begun last has ended.
    fn phase_done(&self) {}
}

impl Monitor for () {}

/// Watches one chain's sweeps (a progress bar); dropped when the chain stops.
pub trait ChainMonitor: Send {
    /// Called after each sweep.
    fn sweep(&mut self, _record: &SweepRecord) {}
}

impl ChainMonitor for () {}

/// How a chain ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainEnd {
    /// It used up its budget.
    Finished,
    /// It stopped because another chain failed.
    Stopped,
    /// The interrupt flag stopped it after `sweep` sweeps; its last checkpoint, if any, is at
    /// `checkpoint`.
    Interrupted {
        /// Sweeps done.
        sweep: u64,
        /// Sweep of the last checkpoint.
        checkpoint: Option<u64>,
    },
}

/// A run about to be launched: the model, what runs, where, and who watches.
pub struct Runner<'a> {
    model: &'a Model,
    record: RunRecord,
    dir: PathBuf,
    resume: bool,
    replace: bool,
    label: Option<String>,
    interrupt: Option<&'a AtomicBool>,
    monitor: &'a dyn Monitor,
}

/// What a launch did: per run, its directory, record and how each chain ended.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The run.
    pub run: RunDir,
    /// Per chain, its index and how it ended.
    pub ends: Vec<(u64, ChainEnd)>,
}

impl Outcome {
    /// Whether any chain was interrupted (the run can be resumed from its checkpoints).
    pub fn interrupted(&self) -> bool {
        self.ends
            .iter()
            .any(|(_, e)| matches!(e, ChainEnd::Interrupted { .. }))
    }

    /// The summary of the run's chains as they are on disk ([`Summary::of`]).
    pub fn summary(&self) -> Result<Summary> {
        Summary::of(std::slice::from_ref(&self.run), None)
    }
}

impl<'a> Runner<'a> {
    /// A new run of `spec` over `model` into directory `dir`.
    pub fn new(model: &'a Model, spec: SamplerSpec, dir: impl AsRef<Path>) -> Self {
        let record = RunRecord::new(
            model.requested.clone(),
            spec,
            model.fingerprint.clone(),
            DataSource::default(),
        );
        Runner {
            model,
            record,
            dir: dir.as_ref().to_path_buf(),
            resume: false,
            replace: false,
            label: None,
            interrupt: None,
            monitor: &(),
        }
    }

    /// The run in `dir` continued from its checkpoints over `model`, which must be the model
    /// the run recorded, on the same data (its fingerprint). Only the budget and the burn-in
    /// may change ([`Runner::budget`], [`Runner::burn_in`]).
    pub fn resume(model: &'a Model, dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let record = RunRecord::load(dir)?;
        if record.spec.checkpoint_every.is_none() {
            return Err(Error::Usage(format!(
                "{} was run without `checkpoint_every`, so it has no checkpoint to resume from",
                dir.display()
            )));
        }
        if model.fingerprint != record.fingerprint {
            return Err(Error::Usage(format!(
                "the data ({}) differ from those {} was run on: resume needs the same data",
                record
                    .source
                    .data
                    .as_ref()
                    .map_or_else(|| "built-in".to_string(), |p| p.display().to_string()),
                dir.display()
            )));
        }
        if model.requested != record.model {
            return Err(Error::Usage(format!(
                "the model differs from the one {} was run under: resume needs the same model",
                dir.display()
            )));
        }
        Ok(Runner {
            model,
            record,
            dir: dir.to_path_buf(),
            resume: true,
            replace: false,
            label: None,
            interrupt: None,
            monitor: &(),
        })
    }

    /// The record that `run.json` will hold.
    pub fn record(&self) -> &RunRecord {
        &self.record
    }

    /// Sets the budget (of a resumed run: the new total).
    pub fn budget(mut self, budget: Budget) -> Self {
        self.record.spec.budget = budget;
        self
    }

    /// Sets the burn-in of the run's diagnostics.
    pub fn burn_in(mut self, burn_in: Option<u64>) -> Self {
        self.record.spec.burn_in = burn_in;
        self
    }

    /// Records where the data came from, so that a front end can read them again.
    pub fn source(mut self, source: DataSource) -> Self {
        self.record.source = source;
        self
    }

    /// Records how the run was started or resumed (a command line).
    pub fn invocation(mut self, command: Vec<String>) -> Self {
        self.record.commands.push(command);
        self
    }

    /// Whether a run already in the directory is replaced (its `run.json`, results and
    /// `chain-*/` directories deleted first; other files kept). Without it, a directory that
    /// holds a run is refused.
    pub fn replace(mut self, replace: bool) -> Self {
        self.replace = replace;
        self
    }

    /// The label of the run's chains for the monitor (default `chain <i>`).
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// The flag that, once set (by a Ctrl-C handler), stops every chain at its next sweep
    /// with its trace flushed and its last checkpoint intact.
    pub fn interrupt(mut self, flag: &'a AtomicBool) -> Self {
        self.interrupt = Some(flag);
        self
    }

    /// Who watches the run.
    pub fn monitor(mut self, monitor: &'a dyn Monitor) -> Self {
        self.monitor = monitor;
        self
    }

    /// Runs the chains (see [`run_all`]).
    pub fn run(self) -> Result<Outcome> {
        let mut outcomes = run_all(vec![self])?;
        Ok(outcomes.remove(0))
    }
}

/// Refuses a directory that already holds a run (a `run.json`) unless it is to be replaced,
/// saying how to continue it instead; a front end calls it before reading data, so that the
/// mistake costs nothing.
pub fn check_target(dir: &Path, replace: bool) -> Result<()> {
    if replace || !dir.join("run.json").exists() {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "{} already holds a run: continue it with `resume` {}, replace it with `force` (its \
         run.json, results and chain-*/ directories are deleted), or choose another `out`",
        dir.display(),
        dir.display()
    )))
}

/// The files a run writes at the top of its directory, and the plots a front end adds.
const RUN_FILES: [&str; 8] = [
    "run.json",
    "summary.json",
    "estimate.txt",
    "map.txt",
    "log_joint.svg",
    "n_clusters.svg",
    "acceptance.svg",
    "scatter.svg",
];

/// Deletes the run in `dir` that a replacing run takes the place of: its [`RUN_FILES`] and
/// every `chain-<i>/`, so no chain of the old run is mistaken for one of the new.
fn clear_run(dir: &Path) -> Result<()> {
    // A path that cannot be listed holds no run; creating the directory reports why.
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let chain = name
            .strip_prefix("chain-")
            .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()));
        if (chain && entry.path().is_dir()) || RUN_FILES.contains(&name.as_str()) {
            found.push(entry.path());
        }
    }
    found.sort();
    for path in found {
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|source| Error::Write { path, source })?;
    }
    Ok(())
}

/// Removes `path` if it exists: outputs of an earlier run in the same directory must not be
/// mistaken for this run's.
fn remove_stale(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::Write {
            path: path.to_path_buf(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// Sweep time (measured lower bound) above which a run is announced as slow before it starts.
const SLOW_SWEEP_SECONDS: f64 = 60.0;

/// Notes, before any chain starts, when one sweep will take at least a minute: every sampler
/// weighs each point against at least two clusters per sweep, and one predictive's time is
/// measured on the data ([`super::cost::predictive_seconds`]).
fn warn_of_slow_sweeps<K: ConjugateKernel>(kernel: &K, runner: &Runner<'_>) {
    let n = kernel.n_points();
    let sweep = 2.0 * n as f64 * super::cost::predictive_seconds(kernel);
    if sweep > SLOW_SWEEP_SECONDS {
        runner.monitor.note(&format!(
            "warning: one sweep of {} over {n} points will take at least {sweep:.0} s (minutes \
             per sweep, more as clusters appear); a diagonal kernel (`kernel` diag) or fewer \
             dimensions (principal components) make each sweep far cheaper",
            runner.record.spec.sampler.kind
        ));
    }
}

/// A chain's moves: its own schedule and its hot replicas' ([`hot_schedules`]).
type ChainMoves<K> = (Vec<Scheduled<K, Prior>>, HotSchedules<K>);

/// Errors, before anything is written, when a run's chains cannot be tempered: the model
/// resamples the kernel's hyperparameters, or the kernel draws latent values.
fn check_temperable<K: ConjugateKernel>(kernel: &K, model: &ModelSpec) -> Result<()> {
    if model.kernel_hyperpriors {
        return Err(Error::Usage(
            "tempering (`temperatures`) with `kernel_hyperpriors`: the kernel's \
             hyperparameters would have to move with the swapped states; run one without the \
             other"
                .into(),
        ));
    }
    if kernel.has_latent() {
        return Err(Error::Usage(
            "tempering (`temperatures`): the kernel draws missing real entries inside the \
             sweep (the mixed block over rows with missing values), a step the ladder does \
             not temper; run without `temperatures`, or with independent real columns"
                .into(),
        ));
    }
    Ok(())
}

/// One chain to run.
struct Job<'r> {
    /// The run it belongs to (its index in the launch).
    run: usize,
    /// The chain's index (its stream and directory).
    chain: u64,
    /// Its label.
    label: String,
    /// The checkpoint to continue from; `None` starts afresh.
    checkpoint: Option<ChainFile>,
    /// Its start, read once per run.
    start: &'r Resolved,
}

/// Runs every chain of every runner in parallel (as many at a time as rayon has threads; each
/// chain on its own stream, so results do not depend on their number) and returns, per
/// runner, how its chains ended. The runners must share one model.
///
/// Before anything is written, every setting is validated, every start read and every
/// checkpoint checked to belong to its run, so that a mistaken launch changes nothing. Then
/// each run directory is prepared (a replaced run cleared, stale results removed, `run.json`
/// written) and the chains run. The first error in job order is returned once every chain has
/// stopped (a failure stops the others at their next sweep).
pub fn run_all(runners: Vec<Runner<'_>>) -> Result<Vec<Outcome>> {
    let Some(first) = runners.first() else {
        return Ok(Vec::new());
    };
    let model = first.model;
    if runners.iter().any(|r| !std::ptr::eq(r.model, model)) {
        return Err(Error::Usage(
            "the runs of one launch must share one model".into(),
        ));
    }
    crate::with_kernel!(&model.kernel, |k| launch(
        k,
        &model.prior,
        &model.spec,
        model.pilot_partition.as_ref(),
        runners
    ))
}

/// [`run_all`] for one kernel type.
fn launch<K: SvaKernel + HyperKernel + ParametricKernel + 'static>(
    kernel: &K,
    prior: &Prior,
    model: &ModelSpec,
    pilot: Option<&Arc<[u32]>>,
    runners: Vec<Runner<'_>>,
) -> Result<Vec<Outcome>> {
    let n = kernel.n_points();
    let mut starts = Vec::with_capacity(runners.len());
    let mut schedules = Vec::new();
    let mut checkpoints = Vec::new();
    // The chains share one kernel object: tgmcmc's reference tree is built once for them all,
    // unless the kernel's hyperparameters move (a resumed chain's differ from the others').
    let shared = (!model.kernel_hyperpriors).then(SharedReference::default);
    for (i, r) in runners.iter().enumerate() {
        let spec = &r.record.spec;
        spec.validate()?;
        if !r.resume {
            check_target(&r.dir, r.replace)?;
        }
        starts.push(spec.init.resolve(n, spec.sampler.kind, pilot)?);
        if !spec.sampler.temperatures.is_empty() {
            check_temperable(kernel, model)?;
        }
        for c in spec.chain_indices() {
            schedules.push((
                spec.sampler.schedule_sharing::<K>(
                    model.resamples_hyper(),
                    prior,
                    shared.as_ref(),
                )?,
                hot_schedules::<K>(&spec.sampler, model.resamples_hyper(), prior)?,
            ));
            let checkpoint = if r.resume {
                let note = |line: &str| r.monitor.note(line);
                load_checkpoint(&r.dir, &r.record, c, prior, &note)?
            } else {
                None
            };
            checkpoints.push((i, c, checkpoint));
        }
    }
    let mut runners = runners;
    for r in &mut runners {
        if !r.resume && r.replace {
            clear_run(&r.dir)?;
        }
        create_dir(&r.dir)?;
        for stale in ["summary.json", "estimate.txt", "map.txt"] {
            remove_stale(&r.dir.join(stale))?;
        }
        for c in r.record.spec.chain_indices() {
            for stale in ["end.json", "best.json", "labels.txt"] {
                remove_stale(&chain_dir(&r.dir, c).join(stale))?;
            }
        }
        r.record.save(&r.dir)?;
        if !r.resume {
            warn_of_slow_sweeps(kernel, r);
        }
    }
    let jobs: Vec<(Job<'_>, ChainMoves<K>)> = checkpoints
        .into_iter()
        .zip(schedules)
        .map(|((run, chain, checkpoint), moves)| {
            let label = runners[run]
                .label
                .clone()
                .unwrap_or_else(|| format!("chain {chain}"));
            let job = Job {
                run,
                chain,
                label,
                checkpoint,
                start: &starts[run],
            };
            (job, moves)
        })
        .collect();
    let failed = AtomicBool::new(false);
    // The starts (an SVA pass per chain under `init` auto) are the one phase before the
    // sweeps whose time grows with the data; the first run's monitor shows it.
    let fresh = jobs
        .iter()
        .filter(|(job, _)| job.checkpoint.is_none())
        .count();
    let monitor = runners[0].monitor;
    monitor.phase(&if fresh == 0 {
        format!("resuming {} chains from their checkpoints", jobs.len())
    } else {
        format!(
            "start: {fresh} chains from `init` {}",
            runners[0].record.spec.init
        )
    });
    let opened: Vec<Result<Running<'_, '_, K>>> = jobs
        .into_par_iter()
        .map(|(job, moves)| {
            let r = &runners[job.run];
            Running::open(kernel, prior, model, r, job, moves)
        })
        .collect();
    monitor.phase_done();
    let mut running = Vec::with_capacity(opened.len());
    for chain in opened {
        running.push(chain?);
    }
    run_rounds(&runners, &mut running, &failed)?;
    let results: Vec<(usize, u64, Result<ChainEnd>)> = running
        .into_par_iter()
        .map(|chain| (chain.run, chain.chain_index, chain.finish()))
        .collect();
    let mut outcomes: Vec<Outcome> = runners
        .iter()
        .map(|r| Outcome {
            run: RunDir {
                dir: r.dir.clone(),
                record: r.record.clone(),
            },
            ends: Vec::new(),
        })
        .collect();
    for (run, chain, result) in results {
        outcomes[run].ends.push((chain, result?));
    }
    Ok(outcomes)
}

/// Runs the chains of every run to its budget, all in parallel: a sweep or time budget in one
/// round; an [`AutoBudget`] in rounds, each ended by every chain of the run reaching the
/// round's length, after which the run's traces decide whether another round follows
/// ([`round_verdict`]). A chain that fails stops the others at their next sweep; the first
/// error in job order is returned once every chain has stopped.
fn run_rounds<K: SvaKernel + HyperKernel + ParametricKernel + 'static>(
    runners: &[Runner<'_>],
    running: &mut [Running<'_, '_, K>],
    failed: &AtomicBool,
) -> Result<()> {
    // Per run, the budget of its next round, or `None` once it is done.
    let mut rounds: Vec<Option<Budget>> = runners
        .iter()
        .enumerate()
        .map(|(i, r)| match r.record.spec.budget {
            Budget::Auto(a) => {
                let done = running
                    .iter()
                    .filter(|c| c.run == i)
                    .map(|c| c.chain.sweeps_done())
                    .max()
                    .unwrap_or(0);
                Some(Budget::Sweeps(a.round_end(done)))
            }
            fixed => Some(fixed),
        })
        .collect();
    while rounds.iter().any(Option::is_some) {
        let errors: Vec<Result<()>> = running
            .par_iter_mut()
            .filter(|c| c.stopped.is_none())
            .filter_map(|c| rounds[c.run].map(|budget| (c, budget)))
            .map(|(c, budget)| {
                let r = &runners[c.run];
                let result = c.advance(budget, r.interrupt, failed);
                if result.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                result
            })
            .collect();
        for e in errors {
            e?;
        }
        for (i, r) in runners.iter().enumerate() {
            rounds[i] = match (rounds[i], r.record.spec.budget) {
                (Some(Budget::Sweeps(end)), Budget::Auto(auto)) => {
                    next_round(r, running.iter_mut().filter(|c| c.run == i), end, auto)?
                }
                _ => None,
            };
        }
    }
    Ok(())
}

/// The update of the kernel's own hyperparameters when the model has `kernel_hyperpriors`:
/// the default priors, centred on `kernel` (the run's kernel as built from its settings, so a
/// resumed run has the same priors).
fn kernel_update<K: HyperKernel + 'static>(
    kernel: &K,
    model: &ModelSpec,
) -> Result<Option<Box<dyn KernelUpdate<K>>>> {
    if !model.kernel_hyperpriors {
        return Ok(None);
    }
    let priors = KernelHyperPriors::default_for(kernel)?;
    Ok(Some(Box::new(KernelHyperMove::new(priors)?)))
}

/// A chain's files as a handler: after each sweep its trace row, its draw (on the doubling
/// schedule), its best state, and every `checkpoint_every` sweeps its sealed checkpoint; it
/// also keeps the start's labels while the number of clusters has not left the start's.
struct ChainFiles<'r> {
    trace: TraceWriter,
    draws: DrawWriter,
    best: BestDraw,
    record: &'r RunRecord,
    chain: u64,
    /// The checkpoint file.
    path: PathBuf,
    /// The sweep of the last checkpoint written or resumed from.
    last_checkpoint: Option<u64>,
    start_k: usize,
    /// The starting partition, as far as `never_moved` needs it, while every sweep has had
    /// the start's number of clusters.
    start: Start,
}

/// What a chain keeps of its starting partition to tell whether it ever moved.
enum Start {
    /// A sweep has left the start's number of clusters (the chain has moved; on a million
    /// points a copy of the labels would hold 4 MB for nothing).
    Left,
    /// The start had at most one cluster: any partition with as many clusters is the start
    /// (all labels 0), so no labels are kept (the default start of a large data set, where
    /// four chains' copies would hold 16 MB at 10⁶ points while the chains are largest).
    Trivial,
    /// The start's canonical labels, in the narrowest width (one byte a point up to 256
    /// clusters: a pilot's start of 6 clusters held in `u32` cost four chains 16 MB at 10⁶
    /// points for as long as they keep its number of clusters).
    Labels(NarrowLabels),
}

impl Start {
    /// The start of a chain whose state is `partition`.
    fn of<K: ConjugateKernel>(partition: &crate::partition::Partition<K>) -> Self {
        if partition.n_clusters() <= 1 {
            Start::Trivial
        } else {
            Start::Labels(NarrowLabels::of(partition))
        }
    }

    /// Whether the partition of `k` clusters and canonical `labels` is the start, given that
    /// every sweep had the start's number of clusters `start_k` (else `Left`).
    fn is(&self, labels: &NarrowLabels, k: usize, start_k: usize) -> bool {
        match self {
            Start::Left => false,
            Start::Trivial => k == start_k,
            Start::Labels(start) => labels == start,
        }
    }
}

impl<K: ConjugateKernel> Handler<K, Prior> for ChainFiles<'_> {
    fn after_sweep(&mut self, chain: &mut Chain<'_, K, Prior>, sweep: &SweepRecord) -> Result<()> {
        if sweep.n_clusters != self.start_k {
            self.start = Start::Left;
        }
        self.trace.observe(sweep, chain.state())?;
        self.draws.observe(sweep, chain.state())?;
        self.best.observe(sweep, chain.state())?;
        let Some(every) = self.record.spec.checkpoint_every else {
            return Ok(());
        };
        if !sweep.sweep.is_multiple_of(every) {
            return Ok(());
        }
        // Rows up to the checkpoint must be on disk before it: a resume cuts the files back
        // to it and appends.
        self.trace.flush()?;
        self.draws.flush()?;
        let file = ChainFile {
            format: CHECKPOINT_FORMAT.to_string(),
            checksum: String::new(),
            identity: self.record.chain_identity(self.chain)?,
            chain: self.chain,
            state: chain.checkpoint()?,
            draws: self.draws.stride(),
            best: self.best.clone(),
            from_previous: false,
        };
        save_sealed(&self.path, &file)?;
        self.last_checkpoint = Some(sweep.sweep);
        Ok(())
    }
}

/// A [`ChainMonitor`] as a handler.
struct Watching<'m>(Box<dyn ChainMonitor + 'm>);

impl<K: ConjugateKernel, P: NrmPrior> Handler<K, P> for Watching<'_> {
    fn after_sweep(&mut self, _chain: &mut Chain<'_, K, P>, sweep: &SweepRecord) -> Result<()> {
        self.0.sweep(sweep);
        Ok(())
    }
}

/// After a round of an automatic budget that ended at `end` sweeps, the budget of the next
/// round of `runner`'s `chains`, or `None` when the run is done: a chain stopped early, the
/// most sweeps are reached, or the chains agree or some sit apart where more sweeps are
/// unlikely to move them ([`round_verdict`], on the traces flushed here).
fn next_round<'c, 'r: 'c, 'k: 'c, K: ConjugateKernel + 'static>(
    runner: &Runner<'_>,
    chains: impl Iterator<Item = &'c mut Running<'r, 'k, K>>,
    end: u64,
    auto: AutoBudget,
) -> Result<Option<Budget>> {
    let mut all_there = true;
    for c in chains {
        c.files.trace.flush()?;
        all_there &= c.stopped.is_none();
    }
    let run = RunDir {
        dir: runner.dir.clone(),
        record: runner.record.clone(),
    };
    if !all_there || end >= auto.max {
        return Ok(None);
    }
    match round_verdict(&run)? {
        RoundVerdict::Agree => return Ok(None),
        RoundVerdict::StuckApart(stuck) => {
            let names: Vec<String> = stuck.iter().map(u64::to_string).collect();
            runner.monitor.note(&format!(
                "note: after {end} sweeps chain{} {} sit{} far below the best chain in \
                 clusters it never visits and no longer rise{}: more sweeps of these chains \
                 are unlikely to settle it, so they stop here (the summary says where each \
                 chain sits and what would settle it)",
                if stuck.len() > 1 { "s" } else { "" },
                names.join(", "),
                if stuck.len() > 1 { "" } else { "s" },
                if stuck.len() > 1 { "" } else { "s" },
            ));
            return Ok(None);
        }
        RoundVerdict::Disagree => {}
    }
    let next = auto.round_end(end + 1);
    runner.monitor.note(&format!(
        "note: the chains have not agreed after {end} sweeps (R-hat above {RHAT_LIMIT} or \
         fewer than {ESS_WANTED} effective draws); running them to {next}"
    ));
    Ok(Some(Budget::Sweeps(next)))
}

/// A chain of a launch between its rounds: the chain, its files and its watcher.
struct Running<'r, 'k, K: ConjugateKernel> {
    /// The run it belongs to (its index in the launch).
    run: usize,
    /// The chain's index.
    chain_index: u64,
    chain: Chain<'k, K, Prior>,
    files: ChainFiles<'r>,
    watcher: Watching<'r>,
    /// Its directory.
    dir: PathBuf,
    /// Whether it continues a checkpoint.
    resumed: bool,
    /// How it stopped early (another chain's failure, the interrupt flag), if it did.
    stopped: Option<ChainEnd>,
}

impl<'r, 'k, K: SvaKernel + HyperKernel + ParametricKernel + 'static> Running<'r, 'k, K> {
    /// Prepares one chain (see [`run_all`]): its directory, its start or checkpoint, its files.
    fn open(
        kernel: &'k K,
        prior: &Prior,
        model: &ModelSpec,
        runner: &'r Runner<'_>,
        job: Job<'_>,
        (mut moves, hot): ChainMoves<K>,
    ) -> Result<Self> {
        let record = &runner.record;
        let betas = &record.spec.sampler.temperatures;
        let spec = &record.spec;
        let dir = chain_dir(&runner.dir, job.chain);
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
            // The damaged last checkpoint gives way to the good one, so that the next write
            // keeps a good previous checkpoint.
            Some(file) if file.from_previous => {
                std::fs::copy(&previous, &checkpoint_path).map_err(|source| Error::Write {
                    path: checkpoint_path.clone(),
                    source,
                })?;
            }
            Some(_) => {}
        }
        let resumed = job.checkpoint.is_some();
        let (chain, trace, draws, best, last_checkpoint) = match job.checkpoint {
            Some(file) => {
                let sweep = file.state.sweep;
                let trace = TraceWriter::resume(&trace_path, spec.thin, sweep)?;
                let draws =
                    DrawWriter::resume(&draws_path, spec.draws_per_chain, file.draws, sweep)?;
                let chain = if betas.is_empty() {
                    let update = kernel_update(kernel, model)?;
                    Chain::resume_with(kernel, file.state, moves, update)?
                } else {
                    Chain::resume_tempered(kernel, file.state, moves, betas, hot)?
                };
                (chain, trace, draws, file.best, Some(sweep))
            }
            None => {
                let (partition, forest) =
                    job.start.partition(kernel, prior, spec.seed, job.chain)?;
                if let Some(forest) = &forest {
                    for s in &mut moves {
                        s.mv.start_from_forest(forest);
                    }
                }
                let state = State {
                    partition,
                    prior: prior.clone(),
                };
                let plan = crate::rng::SeedPlan::new(spec.seed);
                let mut chain = Chain::new(kernel, state, plan.chain(job.chain), moves);
                if let Some(update) = kernel_update(kernel, model)? {
                    chain = chain.with_kernel_update(update);
                }
                if !betas.is_empty() {
                    let ladder = Ladder::new(kernel, betas, chain.state(), hot, plan, job.chain)?;
                    chain = chain.with_ladder(ladder)?;
                }
                let trace = TraceWriter::create(&trace_path, spec.thin)?;
                let draws = DrawWriter::create(&draws_path, spec.thin, spec.draws_per_chain)?;
                (chain, trace, draws, BestDraw::default(), None)
            }
        };
        let start = Start::of(&chain.state().partition);
        let files = ChainFiles {
            trace,
            draws,
            best,
            record,
            chain: job.chain,
            path: checkpoint_path,
            last_checkpoint,
            start_k: chain.state().partition.n_clusters(),
            start,
        };
        Ok(Running {
            run: job.run,
            chain_index: job.chain,
            chain,
            files,
            watcher: Watching(runner.monitor.chain(job.chain, &job.label)),
            dir,
            resumed,
            stopped: None,
        })
    }

    /// Sweeps the chain until `budget` is used up or a flag stops it (then recorded in
    /// `stopped`).
    fn advance(
        &mut self,
        mut budget: Budget,
        interrupt: Option<&AtomicBool>,
        failed: &AtomicBool,
    ) -> Result<()> {
        let mut failure = StopFlag {
            flag: failed,
            reason: StopReason::Failed,
        };
        let never = AtomicBool::new(false);
        let mut interrupt = StopFlag {
            flag: interrupt.unwrap_or(&never),
            reason: StopReason::Interrupted,
        };
        let stop = Executor::new(&mut self.chain)
            .with(&mut budget)
            .with(&mut failure)
            .with(&mut interrupt)
            .with(&mut self.files)
            .with(&mut self.watcher)
            .run()?;
        self.stopped = match stop {
            Stop::Flag(StopReason::Failed) => Some(ChainEnd::Stopped),
            Stop::Flag(StopReason::Interrupted) => Some(ChainEnd::Interrupted {
                sweep: self.chain.sweeps_done(),
                checkpoint: self.files.last_checkpoint,
            }),
            Stop::Budget | Stop::Done => None,
        };
        Ok(())
    }

    /// Flushes the chain's files and, unless it stopped early, writes its end state, best
    /// state and final labels.
    fn finish(mut self) -> Result<ChainEnd> {
        self.files.trace.flush()?;
        self.files.draws.flush()?;
        if let Some(end) = self.stopped {
            return Ok(end);
        }
        let Running {
            chain,
            files,
            dir,
            resumed,
            ..
        } = self;
        let (start, best) = (files.start, files.best);
        let state = chain.state();
        // In the narrowest width (the same text): the chains finish together, each with its
        // state.
        let labels = NarrowLabels::of(&state.partition);
        let end = EndState {
            sweeps: chain.sweeps_done(),
            seconds: chain.seconds(),
            n_clusters: state.partition.n_clusters(),
            log_joint: state.ln_joint(),
            hyper: chain.hyper(),
            never_moved: !resumed
                && chain.sweeps_done() > 0
                && start.is(&labels, state.partition.n_clusters(), files.start_k),
        };
        labels.write(&dir.join("labels.txt"))?;
        save_json(&dir.join("end.json"), &end)?;
        save_json(&dir.join("best.json"), &best)?;
        Ok(ChainEnd::Finished)
    }
}
