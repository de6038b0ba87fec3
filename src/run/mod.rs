//! Running chains: a [`Chain`] (state + RNG stream + schedule of moves) advanced sweep by
//! sweep, each sweep summarised in a [`SweepRecord`] and handed to [`Observer`]s.
//!
//! One sweep is separate from the loop that runs it: callers decide when to stop (sweep
//! count, time budget), what to observe, and when to take a [`ChainCheckpoint`] from which
//! [`Chain::resume`] continues exactly as the chain would have gone on.

mod burn_in;
pub mod check;
pub mod checkpoint;
pub mod compare;
pub mod cost;
pub mod curves;
mod dahl;
pub mod density;
pub mod draws;
pub mod estimates;
pub mod executor;
pub mod header;
pub mod hyper;
pub mod ladder;
pub mod modes;
pub mod pilot;
pub mod progress;
pub mod record;
pub mod resume;
pub mod runner;
mod schedule;
pub mod score;
pub mod spec;
pub mod start;
pub mod summary;
pub mod svg;
pub mod trace;
pub mod uncertainty;

pub use crate::data::load::create_dir;
pub use checkpoint::{
    load_json, load_sealed, previous_path, save_json, save_sealed, write_atomic, ChainCheckpoint,
    Sealed, SealedError,
};
pub use draws::{read_draws, BestDraw, Draw, DrawStride, DrawWriter};
pub use hyper::HyperState;
pub use ladder::{Ladder, LadderCheckpoint};
pub use record::{chain_dir, DataSource, RunDir, RunRecord};
pub use runner::{ChainEnd, ChainMonitor, Monitor, Outcome, Runner};
pub use spec::{
    AutoBudget, Budget, MoveSettings, SamplerKind, SamplerSettings, SamplerSpec, Start,
};
pub use summary::Summary;
pub use trace::{first_reaching, TraceColumns, TraceWriter};

use crate::error::{Error, Result};
use crate::kernel::{ConjugateKernel, KernelHyper, Tempered};
use crate::partition::Partition;
use crate::prior::NrmPrior;
use crate::rng::NrmmRng;
pub use crate::sampler::Scheduled;
use crate::sampler::{KernelUpdate, RngChooser, State, StepInfo};
use std::borrow::Cow;
use std::time::Instant;

/// What one sweep did and where it left the chain.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SweepRecord {
    /// 1-based sweep number.
    pub sweep: u64,
    /// Seconds of sampling since the chain started (excludes observers).
    pub seconds: f64,
    /// Number of clusters after the sweep.
    pub n_clusters: usize,
    /// The log joint after the sweep (see [`NrmPrior::joint_label`]).
    pub ln_joint: f64,
    /// Per move, in schedule order: name and accumulated step information.
    pub moves: Vec<(&'static str, StepInfo)>,
    /// Hyperparameter values after the sweep.
    pub hyper: HyperState,
}

/// Receives every sweep of a chain.
pub trait Observer<K: ConjugateKernel, P: NrmPrior> {
    /// Called after each sweep.
    fn observe(&mut self, record: &SweepRecord, state: &State<K, P>) -> Result<()>;
}

/// A Markov chain: its state, its own RNG stream and its schedule of moves, and optionally
/// an update of the kernel's own hyperparameters run once per sweep after the schedule.
///
/// **Kernel hyperparameters.** Moves see an immutable kernel. With a [`KernelUpdate`]
/// ([`Chain::with_kernel_update`]), the kernel's hyperparameters are part of the chain's state:
/// the chain starts on the kernel it is given and, whenever the update changes the values,
/// owns the kernel rebuilt at them (over the same data), refreshes every cluster's statistic
/// ([`Partition::refresh_stats`]) and tells every move ([`Move::kernel_changed`](crate::sampler::Move::kernel_changed)) before the
/// next sweep. Checkpoints carry the values, so a resumed chain rebuilds the same kernel.
pub struct Chain<'k, K: ConjugateKernel, P: NrmPrior> {
    kernel: Cow<'k, K>,
    state: State<K, P>,
    rng: NrmmRng,
    schedule: Vec<Scheduled<K, P>>,
    sweep: u64,
    seconds: f64,
    kernel_update: Option<Box<dyn KernelUpdate<K>>>,
    ladder: Option<Ladder<K, P>>,
}

impl<'k, K: ConjugateKernel, P: NrmPrior> Chain<'k, K, P> {
    /// A chain over `kernel`'s data from `state`, drawing from `rng`.
    pub fn new(
        kernel: &'k K,
        state: State<K, P>,
        rng: NrmmRng,
        schedule: Vec<Scheduled<K, P>>,
    ) -> Self {
        Chain {
            kernel: Cow::Borrowed(kernel),
            state,
            rng,
            schedule,
            sweep: 0,
            seconds: 0.0,
            kernel_update: None,
            ladder: None,
        }
    }

    /// The chain with `update` resampling the kernel's hyperparameters once per sweep, after
    /// the schedule (see the type's documentation). Give it before the first sweep.
    pub fn with_kernel_update(mut self, update: Box<dyn KernelUpdate<K>>) -> Self {
        self.kernel_update = Some(update);
        self
    }

    /// The chain with the hot replicas of `ladder` swept after each of its sweeps and swapped
    /// with it (parallel tempering, [`ladder`]); the chain's own state stays the `β = 1`
    /// replica's, the only one reported. Give it before the first sweep. Errors for a chain
    /// that resamples its kernel's hyperparameters or draws latent values, which the ladder
    /// does not temper.
    pub fn with_ladder(mut self, ladder: Ladder<K, P>) -> Result<Self> {
        if self.kernel_update.is_some() {
            return Err(Error::Usage(
                "tempering (`temperatures`) with kernel hyperpriors: the kernel's \
                 hyperparameters would have to move with the swapped states; run one without \
                 the other"
                    .into(),
            ));
        }
        if self.kernel.has_latent() {
            return Err(Error::Usage(
                "tempering (`temperatures`): the kernel draws missing real entries inside the \
                 sweep, a step the ladder does not temper"
                    .into(),
            ));
        }
        self.ladder = Some(ladder);
        Ok(self)
    }

    /// The chain's tempering ladder, if it has one.
    pub fn ladder(&self) -> Option<&Ladder<K, P>> {
        self.ladder.as_ref()
    }

    /// The kernel the chain is on now (the one it was given, or that kernel rebuilt at the
    /// hyperparameter values the chain has reached).
    pub fn kernel(&self) -> &K {
        &self.kernel
    }

    /// The current values of the kernel's resampled hyperparameters; `None` without a kernel
    /// update.
    pub fn kernel_hyper(&self) -> Option<KernelHyper> {
        self.kernel_update.as_ref().map(|u| u.hyper(&self.kernel))
    }

    /// The current hyperparameters of the state: the prior's and the resampled kernel's.
    pub fn hyper(&self) -> HyperState {
        HyperState {
            prior: self.state.prior.hyperparameters(),
            kernel: self.kernel_hyper(),
        }
    }

    /// The current state.
    pub fn state(&self) -> &State<K, P> {
        &self.state
    }

    /// Sweeps done so far.
    pub fn sweeps_done(&self) -> u64 {
        self.sweep
    }

    /// Sampling seconds so far (observers excluded; continued across a resume).
    pub fn seconds(&self) -> f64 {
        self.seconds
    }

    /// A checkpoint of the chain between sweeps (see [`checkpoint`]).
    ///
    /// The live partition is rebuilt from the checkpoint's layout, so that its statistics are
    /// the batch statistics a resumed chain computes, bit for bit: the chain that goes on and
    /// a chain resumed from the checkpoint then continue identically. The rebuild also clears
    /// any rounding drift of the incremental updates. Cost: O(n + Σ_c stat_of), for
    /// Normal-Wishart O(n d² + K d³).
    pub fn checkpoint(&mut self) -> Result<ChainCheckpoint<P>> {
        let partition = self.state.partition.snapshot();
        self.state.partition = Partition::restore(&*self.kernel, &partition)?;
        let mut aux = Vec::with_capacity(self.schedule.len());
        for s in &self.schedule {
            aux.push(s.mv.save_aux()?);
        }
        if aux.iter().all(Option::is_none) {
            aux.clear();
        }
        Ok(ChainCheckpoint {
            sweep: self.sweep,
            seconds: self.seconds,
            partition,
            prior: self.state.prior.clone(),
            rng: self.rng.clone(),
            aux,
            kernel_hyper: self.kernel_hyper().map(|h| h.values()).unwrap_or_default(),
            latent: self.kernel.latent(),
            ladder: self.ladder.as_mut().map(Ladder::checkpoint).transpose()?,
        })
    }

    /// The chain that `checkpoint` was taken from, continuing over `kernel`'s data with a
    /// fresh `schedule`, which must be the one the chain ran: moves that keep state of their
    /// own get it back through [`Move::restore_aux`](crate::sampler::Move::restore_aux). Errors if the checkpoint's partition does
    /// not fit the data or its move states do not fit the schedule.
    pub fn resume(
        kernel: &'k K,
        checkpoint: ChainCheckpoint<P>,
        schedule: Vec<Scheduled<K, P>>,
    ) -> Result<Self> {
        Self::resume_with(kernel, checkpoint, schedule, None)
    }

    /// [`Chain::resume`] for a chain that ran with the kernel update `kernel_update` (the one
    /// given to [`Chain::with_kernel_update`], or `None`): the kernel is rebuilt at the
    /// checkpoint's hyperparameter values before the partition and the moves' states are.
    /// Errors if the checkpoint has such values and no update is given, or the reverse.
    pub fn resume_with(
        kernel: &'k K,
        checkpoint: ChainCheckpoint<P>,
        schedule: Vec<Scheduled<K, P>>,
        kernel_update: Option<Box<dyn KernelUpdate<K>>>,
    ) -> Result<Self> {
        if checkpoint.ladder.is_some() {
            return Err(Error::Usage(
                "checkpoint: it holds a tempering ladder, but the chain resumed has none (its \
                 `temperatures`)"
                    .into(),
            ));
        }
        Self::resume_parts(kernel, checkpoint, schedule, kernel_update)
    }

    /// [`Chain::resume`] of a tempered chain: its ladder at inverse temperatures `betas`
    /// rebuilt from the checkpoint with fresh `hot` schedules (one per hot replica, those it
    /// ran). Errors if the checkpoint holds no ladder or another one.
    pub fn resume_tempered(
        kernel: &'k K,
        mut checkpoint: ChainCheckpoint<P>,
        schedule: Vec<Scheduled<K, P>>,
        betas: &[f64],
        hot: Vec<Vec<Scheduled<Tempered<K>, P>>>,
    ) -> Result<Self> {
        let Some(saved) = checkpoint.ladder.take() else {
            return Err(Error::Usage(
                "checkpoint: it holds no tempering ladder, but the chain resumed has \
                 `temperatures`"
                    .into(),
            ));
        };
        let chain = Self::resume_parts(kernel, checkpoint, schedule, None)?;
        let ladder = Ladder::resume(&*chain.kernel, betas, saved, hot)?;
        chain.with_ladder(ladder)
    }

    /// The chain of a checkpoint, its ladder aside.
    fn resume_parts(
        kernel: &'k K,
        checkpoint: ChainCheckpoint<P>,
        mut schedule: Vec<Scheduled<K, P>>,
        kernel_update: Option<Box<dyn KernelUpdate<K>>>,
    ) -> Result<Self> {
        if !(checkpoint.seconds >= 0.0 && checkpoint.seconds.is_finite()) {
            return Err(Error::Usage(format!(
                "checkpoint: sampling time {} is not a finite number of seconds",
                checkpoint.seconds
            )));
        }
        let kernel: Cow<'k, K> =
            match (&kernel_update, checkpoint.kernel_hyper.is_empty()) {
                (None, true) => Cow::Borrowed(kernel),
                (Some(u), false) => Cow::Owned(u.rebuild(kernel, &checkpoint.kernel_hyper)?),
                (None, false) => return Err(Error::Usage(
                    "checkpoint: it holds kernel hyperparameters, but the chain resumed has no \
                     kernel hyperpriors"
                        .into(),
                )),
                (Some(_), true) => return Err(Error::Usage(
                    "checkpoint: it holds no kernel hyperparameters, but the chain resumed has \
                     kernel hyperpriors"
                        .into(),
                )),
            };
        let kernel = match (kernel.has_latent(), checkpoint.latent.is_empty()) {
            (false, true) => kernel,
            (true, false) => Cow::Owned(kernel.with_latent(&checkpoint.latent)?),
            (true, true) => {
                return Err(Error::Usage(
                    "checkpoint: it holds no values of the missing real entries, but the \
                     chain's kernel draws them inside the sweep"
                        .into(),
                ))
            }
            (false, false) => {
                return Err(Error::Usage(
                    "checkpoint: it holds values of missing entries, but the chain's kernel \
                     has none to draw"
                        .into(),
                ))
            }
        };
        let partition = Partition::restore(&*kernel, &checkpoint.partition)?;
        let state = State {
            partition,
            prior: checkpoint.prior,
        };
        if !checkpoint.aux.is_empty() && checkpoint.aux.len() != schedule.len() {
            return Err(Error::Usage(format!(
                "checkpoint: it holds the states of {} moves, the schedule has {}",
                checkpoint.aux.len(),
                schedule.len()
            )));
        }
        for (i, s) in schedule.iter_mut().enumerate() {
            let aux = checkpoint.aux.get(i).cloned().flatten();
            s.mv.restore_aux(&kernel, &state, aux)?;
        }
        Ok(Chain {
            kernel,
            state,
            rng: checkpoint.rng,
            schedule,
            sweep: checkpoint.sweep,
            seconds: checkpoint.seconds,
            kernel_update,
            ladder: None,
        })
    }

    /// Runs every scheduled move its number of times and summarises the result. Errors if a
    /// move fails or the log joint after the sweep is not finite (overflow in the statistics).
    pub fn sweep(&mut self) -> Result<SweepRecord> {
        let start = Instant::now();
        let mut moves = Vec::with_capacity(self.schedule.len());
        for s in &mut self.schedule {
            let mut info = StepInfo::default();
            for _ in 0..s.repeats {
                let mut chooser = RngChooser::new(&mut self.rng);
                info.absorb(s.mv.step(&self.kernel, &mut self.state, &mut chooser)?);
            }
            moves.push((s.mv.name(), info));
        }
        self.redraw_latent()?;
        self.update_kernel()?;
        if let Some(ladder) = &mut self.ladder {
            ladder.sweep()?;
            moves.extend(ladder.swap(&self.kernel, &mut self.state, self.sweep));
        }
        self.seconds += start.elapsed().as_secs_f64();
        self.sweep += 1;
        let ln_joint = self.state.ln_joint();
        if !ln_joint.is_finite() {
            return Err(Error::Numerical(format!(
                "the log joint after sweep {} is {ln_joint}: a value of the data or of the \
                 hyperparameters is too extreme for double precision; rescale them",
                self.sweep
            )));
        }
        let hyper = self.hyper();
        Ok(SweepRecord {
            sweep: self.sweep,
            seconds: self.seconds,
            n_clusters: self.state.partition.n_clusters(),
            ln_joint,
            moves,
            hyper,
        })
    }

    /// Runs the kernel update, if any; when the values change, moves the chain onto the
    /// rebuilt kernel (see the type's documentation). Cost: the update, and on a change one
    /// kernel rebuild, one statistic refresh per cluster and each move's
    /// [`Move::kernel_changed`](crate::sampler::Move::kernel_changed).
    fn update_kernel(&mut self) -> Result<()> {
        let Some(update) = self.kernel_update.as_mut() else {
            return Ok(());
        };
        let Some(new) = update.update(&self.kernel, &self.state.partition, &mut self.rng)? else {
            return Ok(());
        };
        self.state
            .partition
            .refresh_stats(&new, |s| update.refresh_stat(&new, s));
        self.kernel = Cow::Owned(new);
        for s in &mut self.schedule {
            s.mv.kernel_changed(&self.kernel, &self.state)?;
        }
        Ok(())
    }

    /// Redraws the kernel's latent values given the partition, when it has any
    /// ([`ConjugateKernel::redraw_latent`]), and moves the chain onto the kernel over the new
    /// values: every cluster's statistic rebuilt, every move told
    /// ([`Move::latent_changed`](crate::sampler::Move::latent_changed)). A Gibbs step of the
    /// joint of partition and latent values, so the sweep keeps that joint invariant. Cost:
    /// the kernel's redraw and O(n) statistic updates.
    fn redraw_latent(&mut self) -> Result<()> {
        if !self.kernel.has_latent() {
            return Ok(());
        }
        let new = {
            let lists: Vec<Vec<usize>> = self
                .state
                .partition
                .clusters()
                .map(|(_, c)| c.member_indices().collect())
                .collect();
            let clusters: Vec<&[usize]> = lists.iter().map(Vec::as_slice).collect();
            self.kernel.redraw_latent(&clusters, &mut self.rng)?
        };
        let Some(new) = new else {
            return Ok(());
        };
        self.state.partition.rebuild_stats(&new);
        self.kernel = Cow::Owned(new);
        for s in &mut self.schedule {
            s.mv.latent_changed(&self.kernel, &self.state)?;
        }
        Ok(())
    }

    /// Runs `sweeps` sweeps, handing each record to every observer.
    pub fn run(&mut self, sweeps: u64, observers: &mut [&mut dyn Observer<K, P>]) -> Result<()> {
        for _ in 0..sweeps {
            let record = self.sweep()?;
            for o in observers.iter_mut() {
                o.observe(&record, &self.state)?;
            }
        }
        Ok(())
    }

    /// Consumes the chain, returning its state and stream.
    pub fn into_parts(self) -> (State<K, P>, NrmmRng) {
        (self.state, self.rng)
    }
}
