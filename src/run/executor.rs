//! The loop that runs one chain: [`Executor`] sweeps a [`Chain`] until one of its handlers
//! says stop, handing every sweep to every handler (in the manner of argmin's `Executor`).
//!
//! A [`Handler`] is asked before each sweep whether the chain goes on, and sees each sweep
//! after it with the chain in hand (to write a trace, keep a best state, take a checkpoint,
//! draw a progress bar). The stock handlers: [`Budget`] (a sweep or time budget),
//! [`StopFlag`] (a flag set by Ctrl-C or by a failing chain) and any [`Observer`]
//! ([`Observing`]). [`super::Runner`] composes them with its files; a caller with its own
//! clock or target writes a handler of its own.

use super::spec::Budget;
use super::{Chain, Observer, SweepRecord};
use crate::error::Result;
use crate::kernel::ConjugateKernel;
use crate::prior::NrmPrior;
use std::sync::atomic::{AtomicBool, Ordering};

/// Why a chain stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Its budget is used up.
    Budget,
    /// A flag asked it to stop (see [`StopFlag`]).
    Flag(StopReason),
    /// A handler of the caller's reached its own goal (a target log joint).
    Done,
}

/// What a [`StopFlag`] stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The user asked (Ctrl-C).
    Interrupted,
    /// Another chain of the same launch failed.
    Failed,
}

/// Runs with a chain: asked before each sweep whether to go on, and shown each sweep after it.
/// Both do nothing by default.
pub trait Handler<K: ConjugateKernel, P: NrmPrior> {
    /// `Some` to stop before the next sweep.
    fn before_sweep(&mut self, _chain: &Chain<'_, K, P>) -> Option<Stop> {
        None
    }

    /// Called after each sweep, with the chain (which a checkpoint needs mutably).
    fn after_sweep(&mut self, _chain: &mut Chain<'_, K, P>, _record: &SweepRecord) -> Result<()> {
        Ok(())
    }
}

impl<K: ConjugateKernel, P: NrmPrior> Handler<K, P> for Budget {
    fn before_sweep(&mut self, chain: &Chain<'_, K, P>) -> Option<Stop> {
        self.reached(chain.sweeps_done(), chain.seconds())
            .then_some(Stop::Budget)
    }
}

/// Stops the chain once `flag` is set (by a Ctrl-C handler, or by another chain that failed).
pub struct StopFlag<'f> {
    /// The flag.
    pub flag: &'f AtomicBool,
    /// What it stands for.
    pub reason: StopReason,
}

impl<K: ConjugateKernel, P: NrmPrior> Handler<K, P> for StopFlag<'_> {
    fn before_sweep(&mut self, _chain: &Chain<'_, K, P>) -> Option<Stop> {
        self.flag
            .load(Ordering::Relaxed)
            .then_some(Stop::Flag(self.reason))
    }
}

/// An [`Observer`] as a handler: it sees each sweep's record and state.
pub struct Observing<'o, K: ConjugateKernel, P: NrmPrior>(pub &'o mut dyn Observer<K, P>);

impl<K: ConjugateKernel, P: NrmPrior> Handler<K, P> for Observing<'_, K, P> {
    fn after_sweep(&mut self, chain: &mut Chain<'_, K, P>, record: &SweepRecord) -> Result<()> {
        self.0.observe(record, chain.state())
    }
}

/// A chain and the handlers it runs with.
pub struct Executor<'e, 'k, K: ConjugateKernel, P: NrmPrior> {
    chain: &'e mut Chain<'k, K, P>,
    handlers: Vec<&'e mut dyn Handler<K, P>>,
}

impl<'e, 'k, K: ConjugateKernel, P: NrmPrior> Executor<'e, 'k, K, P> {
    /// The executor of `chain`, with no handler yet (add at least one that stops).
    pub fn new(chain: &'e mut Chain<'k, K, P>) -> Self {
        Executor {
            chain,
            handlers: Vec::new(),
        }
    }

    /// Adds a handler; handlers are asked and shown sweeps in the order they were added.
    pub fn with(mut self, handler: &'e mut dyn Handler<K, P>) -> Self {
        self.handlers.push(handler);
        self
    }

    /// Sweeps until a handler says stop (asked in order before every sweep, the first
    /// `Some` wins) and returns why; errors of a sweep or of a handler end the run.
    pub fn run(self) -> Result<Stop> {
        let Executor { chain, handlers } = self;
        let mut handlers = handlers;
        loop {
            for h in handlers.iter_mut() {
                if let Some(stop) = h.before_sweep(chain) {
                    return Ok(stop);
                }
            }
            let record = chain.sweep()?;
            for h in handlers.iter_mut() {
                h.after_sweep(chain, &record)?;
            }
        }
    }
}
