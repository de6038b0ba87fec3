//! Parallel tempering across a chain's replicas (MATH §6.6): a [`Ladder`] of hotter copies of
//! a [`super::Chain`], each a state under the tempered posterior
//! `π_β(Π, θ) ∝ p(Π, θ) Π_c m(X_c)^β` at its own inverse temperature `1 > β_1 > … > β_{R-1} > 0`,
//! swept by the chain's own (collapsed) moves over the tempered kernel [`Tempered`], and
//! states exchanged between neighbours after every sweep.
//!
//! **Swaps.** After the replicas' sweeps, the pairs `(i, i+1)` with `i` of the sweep's
//! parity (even pairs after even sweeps, odd pairs after odd ones; every sweep for two
//! replicas: the deterministic even-odd scheme of Syed et al. 2022) each propose to exchange
//! their states, partition and prior hyperparameters together, accepted with probability
//! `min(1, exp((β_i - β_{i+1}) (L_{i+1} - L_i)))`, `L = Σ_c ln m(X_c)` the untempered log
//! likelihood of the state's partition. Each swap is a Metropolis step on the product space
//! that leaves `Π_r π_{β_r}` invariant (the prior's factors cancel); the chain's own replica,
//! at `β_0 = 1`, then has `π_1`, the posterior, as its margin, and only its states are
//! reported. Verified by enumeration (`tests/tempering_exact.rs`).
//!
//! **Streams.** Replica `r ≥ 1` draws from [`SeedPlan::replica`]`(chain, r)`, the swap
//! decisions from `(chain, 0)`; the chain's own replica keeps the chain's stream. The hot
//! replicas sweep in parallel, each on its own stream, so a run is the same on any number of
//! threads.

use super::spec::SamplerSettings;
use super::{Chain, Scheduled};
use crate::error::{Error, Result};
use crate::kernel::{ConjugateKernel, Tempered};
use crate::partition::{Partition, PartitionSnapshot};
use crate::prior::{NrmPrior, Prior};
use crate::rng::{NrmmRng, SeedPlan};
use crate::sampler::{Chooser, RngChooser, State, StepInfo};
use rayon::prelude::*;

/// The most replicas of a ladder (the chain's own included).
pub const MAX_REPLICAS: usize = 16;

/// The trace's name of the swap between replicas `i` and `i + 1`.
const SWAP_NAMES: [&str; MAX_REPLICAS - 1] = [
    "swap_0_1",
    "swap_1_2",
    "swap_2_3",
    "swap_3_4",
    "swap_4_5",
    "swap_5_6",
    "swap_6_7",
    "swap_7_8",
    "swap_8_9",
    "swap_9_10",
    "swap_10_11",
    "swap_11_12",
    "swap_12_13",
    "swap_13_14",
    "swap_14_15",
];

/// Checks a ladder of inverse temperatures: between 2 and [`MAX_REPLICAS`] of them, the first
/// 1, strictly decreasing, all positive. Errors name `temperatures`.
pub fn check_betas(betas: &[f64]) -> Result<()> {
    let list = || {
        betas
            .iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    if betas.len() < 2 || betas.len() > MAX_REPLICAS {
        return Err(Error::param(
            "temperatures",
            list(),
            &format!("between 2 and {MAX_REPLICAS} inverse temperatures"),
        ));
    }
    let decreasing = betas.windows(2).all(|w| w[1] < w[0]);
    let hottest = betas[betas.len() - 1];
    if betas[0] != 1.0 || !decreasing || hottest.is_nan() || hottest <= 0.0 {
        return Err(Error::param(
            "temperatures",
            list(),
            "inverse temperatures starting at 1 and strictly decreasing, all above 0",
        ));
    }
    Ok(())
}

/// The geometric ladder of `replicas` inverse temperatures, each `ratio` times the one before:
/// `β_r = ratio^r`. Errors unless `2 ≤ replicas ≤` [`MAX_REPLICAS`] and `0 < ratio < 1`.
pub fn geometric_betas(replicas: usize, ratio: f64) -> Result<Vec<f64>> {
    if !(2..=MAX_REPLICAS).contains(&replicas) {
        return Err(Error::param(
            "temper",
            replicas,
            &format!("between 2 and {MAX_REPLICAS} replicas"),
        ));
    }
    if !(ratio > 0.0 && ratio < 1.0) {
        return Err(Error::param(
            "temper_ratio",
            ratio,
            "a ratio of inverse temperatures strictly between 0 and 1",
        ));
    }
    Ok((0..replicas).map(|r| ratio.powi(r as i32)).collect())
}

/// One hot replica: its tempered kernel, state, stream and moves.
struct Replica<K: ConjugateKernel, P: NrmPrior> {
    kernel: Tempered<K>,
    state: State<Tempered<K>, P>,
    rng: NrmmRng,
    schedule: Vec<Scheduled<Tempered<K>, P>>,
}

impl<K: ConjugateKernel, P: NrmPrior> Replica<K, P> {
    /// One sweep of the replica's moves.
    fn sweep(&mut self) -> Result<()> {
        for s in &mut self.schedule {
            for _ in 0..s.repeats {
                let mut chooser = RngChooser::new(&mut self.rng);
                s.mv.step(&self.kernel, &mut self.state, &mut chooser)?;
            }
        }
        Ok(())
    }

    /// The untempered log likelihood of its partition.
    fn ln_likelihood(&self) -> f64 {
        self.state
            .partition
            .ln_likelihood_under(self.kernel.inner())
    }
}

/// A hot replica between two sweeps, in a [`LadderCheckpoint`].
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReplicaCheckpoint<P> {
    /// Its inverse temperature.
    pub beta: f64,
    /// Its partition's layout.
    pub partition: PartitionSnapshot,
    /// Its prior with the current hyperparameters.
    pub prior: P,
    /// Its stream.
    pub rng: NrmmRng,
    /// Its moves' own states ([`crate::sampler::Move::save_aux`]); empty when none keeps any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aux: Vec<Option<serde_json::Value>>,
}

/// The hot replicas of a chain's ladder and its swap stream, in a chain's checkpoint.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LadderCheckpoint<P> {
    /// The hot replicas, hottest last.
    pub replicas: Vec<ReplicaCheckpoint<P>>,
    /// The swap decisions' stream.
    pub swap_rng: NrmmRng,
}

/// The hot replicas of a chain and the swaps between them and the chain (see the module
/// documentation). The chain's own state, at `β = 1`, stays in the [`super::Chain`].
pub struct Ladder<K: ConjugateKernel, P: NrmPrior> {
    replicas: Vec<Replica<K, P>>,
    swap_rng: NrmmRng,
}

impl<K: ConjugateKernel, P: NrmPrior> Ladder<K, P> {
    /// The ladder of chain `chain` (streams of `plan`) at inverse temperatures `betas` (the
    /// first, 1, is the chain's own), each hot replica starting from a copy of `start` and
    /// sweeping with its entry of `schedules` (one per hot replica, over the tempered
    /// kernel). Errors if the ladder is invalid ([`check_betas`]), the schedules do not
    /// match it, or the kernel cannot be tempered ([`Tempered::new`]). Cost: one partition
    /// rebuild per hot replica.
    pub fn new(
        kernel: &K,
        betas: &[f64],
        start: &State<K, P>,
        schedules: Vec<Vec<Scheduled<Tempered<K>, P>>>,
        plan: SeedPlan,
        chain: u64,
    ) -> Result<Self> {
        check_betas(betas)?;
        check_schedules(betas, &schedules)?;
        let snapshot = start.partition.snapshot();
        let mut replicas = Vec::with_capacity(schedules.len());
        for (r, (&beta, schedule)) in betas[1..].iter().zip(schedules).enumerate() {
            let kernel = Tempered::new(kernel.clone(), beta)?;
            let partition = Partition::restore(&kernel, &snapshot)?;
            replicas.push(Replica {
                state: State {
                    partition,
                    prior: start.prior.clone(),
                },
                kernel,
                rng: plan.replica(chain, r as u64 + 1),
                schedule,
            });
        }
        Ok(Ladder {
            replicas,
            swap_rng: plan.replica(chain, 0),
        })
    }

    /// The ladder a [`LadderCheckpoint`] was taken from, at inverse temperatures `betas`,
    /// with fresh `schedules` (those the ladder ran). Errors if the checkpoint does not fit
    /// the ladder, the data or the schedules.
    pub fn resume(
        kernel: &K,
        betas: &[f64],
        checkpoint: LadderCheckpoint<P>,
        schedules: Vec<Vec<Scheduled<Tempered<K>, P>>>,
    ) -> Result<Self> {
        check_betas(betas)?;
        check_schedules(betas, &schedules)?;
        let same = checkpoint.replicas.len() + 1 == betas.len()
            && checkpoint
                .replicas
                .iter()
                .zip(&betas[1..])
                .all(|(r, &b)| r.beta.to_bits() == b.to_bits());
        if !same {
            return Err(Error::Usage(
                "checkpoint: its tempering ladder differs from the run's `temperatures`".into(),
            ));
        }
        let mut replicas = Vec::with_capacity(schedules.len());
        for (saved, mut schedule) in checkpoint.replicas.into_iter().zip(schedules) {
            let kernel = Tempered::new(kernel.clone(), saved.beta)?;
            let state = State {
                partition: Partition::restore(&kernel, &saved.partition)?,
                prior: saved.prior,
            };
            if !saved.aux.is_empty() && saved.aux.len() != schedule.len() {
                return Err(Error::Usage(format!(
                    "checkpoint: a tempered replica holds the states of {} moves, the schedule \
                     has {}",
                    saved.aux.len(),
                    schedule.len()
                )));
            }
            for (i, s) in schedule.iter_mut().enumerate() {
                let aux = saved.aux.get(i).cloned().flatten();
                s.mv.restore_aux(&kernel, &state, aux)?;
            }
            replicas.push(Replica {
                kernel,
                state,
                rng: saved.rng,
                schedule,
            });
        }
        Ok(Ladder {
            replicas,
            swap_rng: checkpoint.swap_rng,
        })
    }

    /// The inverse temperatures, the chain's own 1 first.
    pub fn betas(&self) -> Vec<f64> {
        std::iter::once(1.0)
            .chain(self.replicas.iter().map(|r| r.kernel.beta()))
            .collect()
    }

    /// The hot replicas' states, hottest last.
    pub fn states(&self) -> impl Iterator<Item = &State<Tempered<K>, P>> + '_ {
        self.replicas.iter().map(|r| &r.state)
    }

    /// Sets the hot replicas' states (hottest last) from partition labels and priors, for
    /// checks that start a ladder anywhere. Errors if their number or the labels do not fit.
    pub fn set_states(&mut self, states: Vec<(Vec<usize>, P)>) -> Result<()> {
        if states.len() != self.replicas.len() {
            return Err(Error::Usage(format!(
                "{} states for a ladder of {} hot replicas",
                states.len(),
                self.replicas.len()
            )));
        }
        for (r, (labels, prior)) in self.replicas.iter_mut().zip(states) {
            r.state = State {
                partition: Partition::from_labels(&r.kernel, &labels)?,
                prior,
            };
        }
        Ok(())
    }

    /// One sweep of every hot replica, in parallel (each on its own stream). Errors if a
    /// move fails.
    pub fn sweep(&mut self) -> Result<()> {
        self.replicas
            .par_iter_mut()
            .map(Replica::sweep)
            .collect::<Result<Vec<()>>>()?;
        Ok(())
    }

    /// The swaps after the sweep numbered `sweep` (0-based), decided by the ladder's stream;
    /// `cold` is the chain's state over `kernel`. Returns, per adjacent pair, its name and
    /// what its swap did (nothing for a pair of the other parity).
    pub fn swap(
        &mut self,
        kernel: &K,
        cold: &mut State<K, P>,
        sweep: u64,
    ) -> Vec<(&'static str, StepInfo)> {
        let Ladder { replicas, swap_rng } = self;
        let mut chooser = RngChooser::new(swap_rng);
        swap_pairs(replicas, kernel, cold, sweep, &mut chooser)
    }

    /// [`Ladder::swap`] with the decisions drawn from `chooser` (an enumeration of them).
    pub fn swap_with(
        &mut self,
        kernel: &K,
        cold: &mut State<K, P>,
        sweep: u64,
        chooser: &mut dyn Chooser,
    ) -> Vec<(&'static str, StepInfo)> {
        swap_pairs(&mut self.replicas, kernel, cold, sweep, chooser)
    }

    /// A checkpoint of the hot replicas, their partitions rebuilt from the checkpoint's
    /// layout as [`super::Chain::checkpoint`] rebuilds the chain's, so that the ladder that
    /// goes on and one resumed from the checkpoint continue identically.
    pub fn checkpoint(&mut self) -> Result<LadderCheckpoint<P>> {
        let mut replicas = Vec::with_capacity(self.replicas.len());
        for r in &mut self.replicas {
            let partition = r.state.partition.snapshot();
            r.state.partition = Partition::restore(&r.kernel, &partition)?;
            let mut aux = Vec::with_capacity(r.schedule.len());
            for s in &r.schedule {
                aux.push(s.mv.save_aux()?);
            }
            if aux.iter().all(Option::is_none) {
                aux.clear();
            }
            replicas.push(ReplicaCheckpoint {
                beta: r.kernel.beta(),
                partition,
                prior: r.state.prior.clone(),
                rng: r.rng.clone(),
                aux,
            });
        }
        Ok(LadderCheckpoint {
            replicas,
            swap_rng: self.swap_rng.clone(),
        })
    }
}

/// Errors unless there is one schedule per hot replica of `betas`.
fn check_schedules<T>(betas: &[f64], schedules: &[T]) -> Result<()> {
    if schedules.len() + 1 != betas.len() {
        return Err(Error::Usage(format!(
            "{} schedules for a ladder of {} hot replicas",
            schedules.len(),
            betas.len() - 1
        )));
    }
    Ok(())
}

/// The swaps of the ladder `cold`, `replicas` after sweep `sweep` (see the module
/// documentation).
fn swap_pairs<K: ConjugateKernel, P: NrmPrior>(
    replicas: &mut [Replica<K, P>],
    kernel: &K,
    cold: &mut State<K, P>,
    sweep: u64,
    chooser: &mut dyn Chooser,
) -> Vec<(&'static str, StepInfo)> {
    let pairs = replicas.len();
    let phase = if pairs == 1 { 0 } else { (sweep % 2) as usize };
    let mut beta = Vec::with_capacity(pairs + 1);
    let mut ln_l = Vec::with_capacity(pairs + 1);
    beta.push(1.0);
    ln_l.push(cold.partition.ln_likelihood_under(kernel));
    for r in replicas.iter() {
        beta.push(r.kernel.beta());
        ln_l.push(r.ln_likelihood());
    }
    let mut infos: Vec<(&'static str, StepInfo)> = SWAP_NAMES[..pairs]
        .iter()
        .map(|&name| (name, StepInfo::default()))
        .collect();
    for i in (phase..pairs).step_by(2) {
        let ln_a = (beta[i] - beta[i + 1]) * (ln_l[i + 1] - ln_l[i]);
        let accepted = chooser.accept(ln_a);
        infos[i].1 = StepInfo::proposal(accepted, ln_a);
        if !accepted {
            continue;
        }
        ln_l.swap(i, i + 1);
        if i == 0 {
            let hot = &mut replicas[0];
            cold.partition
                .exchange(kernel, &mut hot.state.partition, &hot.kernel);
            std::mem::swap(&mut cold.prior, &mut hot.state.prior);
        } else {
            let (a, b) = replicas.split_at_mut(i);
            let (a, b) = (&mut a[i - 1], &mut b[0]);
            a.state
                .partition
                .exchange(&a.kernel, &mut b.state.partition, &b.kernel);
            std::mem::swap(&mut a.state.prior, &mut b.state.prior);
        }
    }
    infos
}

/// The schedules of a ladder's hot replicas, one per replica, hottest last.
pub type HotSchedules<K> = Vec<Vec<Scheduled<Tempered<K>, Prior>>>;

/// The schedules of the hot replicas of `settings.temperatures` (one per replica below the
/// first; none without tempering): the sampler's moves over the tempered kernel, their trees
/// built at `initial` as the chain's are.
pub fn hot_schedules<K: ConjugateKernel + 'static>(
    settings: &SamplerSettings,
    resample_hyper: bool,
    initial: &Prior,
) -> Result<HotSchedules<K>> {
    let hot = settings.temperatures.len().saturating_sub(1);
    (0..hot)
        .map(|_| settings.collapsed_schedule::<Tempered<K>>(resample_hyper, initial))
        .collect()
}

/// `chain` (index `index` of a run seeded by `plan`, before its first sweep) with the ladder
/// of `settings.temperatures` attached, each hot replica starting from a copy of the chain's
/// state; the chain itself without tempering. Errors as [`Ladder::new`] and
/// [`Chain::with_ladder`].
pub fn temper<'k, K: ConjugateKernel + 'static>(
    chain: Chain<'k, K, Prior>,
    settings: &SamplerSettings,
    resample_hyper: bool,
    initial: &Prior,
    plan: SeedPlan,
    index: u64,
) -> Result<Chain<'k, K, Prior>> {
    if settings.temperatures.is_empty() {
        return Ok(chain);
    }
    let schedules = hot_schedules::<K>(settings, resample_hyper, initial)?;
    let ladder = Ladder::new(
        chain.kernel(),
        &settings.temperatures,
        chain.state(),
        schedules,
        plan,
        index,
    )?;
    chain.with_ladder(ladder)
}
