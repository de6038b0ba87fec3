//! The moves of one sweep of each sampler (MATH §6): [`SamplerSettings::schedule`].

use super::spec::{SamplerKind, SamplerSettings};
use crate::error::{Error, Result};
use crate::kernel::{ConjugateKernel, ParametricKernel};
use crate::prior::{NrmPrior, Prior};
use crate::sampler::dpmm::{
    Direct, DpmmOptions, QuasiCollapsed, QuasiDirect, SubCluster, SubClusterOptions,
};
use crate::sampler::tgmcmc::{tgmcmc_paper_schedule, tgmcmc_schedule_sharing, SharedReference};
use crate::sampler::{Gibbs, GibbsScan, HyperMove, JainNeal, Move, Sams, Scheduled};

impl SamplerSettings {
    /// Errors, naming the samplers that take it, when `prior` is a Gibbs-type prior whose
    /// weights depend on the number of clusters (Pitman-Yor, MFM) and this sampler's moves
    /// weigh clusters by the Dirichlet process's or the NGGP's weights given `u` only (the
    /// DPMM.jl reproductions, the paper's tgMCMC). Front ends call it before any work (a
    /// pilot run); [`SamplerSettings::schedule`] calls it too. Cost: O(1).
    pub fn check_prior(&self, prior: &Prior) -> Result<()> {
        if prior.k_dependent() && !self.kind.takes_gibbs_type() {
            return Err(Error::Usage(format!(
                "sampler {}: its moves weigh clusters by the Dirichlet process's or the NGGP's \
                 weights only; the Pitman-Yor and MFM priors are taken by the samplers {}",
                self.kind.name(),
                SamplerKind::taking_gibbs_type()
            )));
        }
        Ok(())
    }

    /// The moves of one sweep, after [`SamplerSettings::validate`]:
    ///
    /// - `gibbs`: one Gibbs scan (of `gibbs_subset` random points, or all);
    /// - `jain-neal`, `sams`: `proposals` split-merge proposals (Jain-Neal launched by
    ///   `launch_scans` restricted scans), then `gibbs_sweeps` Gibbs scans;
    /// - `tgmcmc`: `global_moves` TG-SAMS proposals, then `gibbs_sweeps` Gibbs scans, the
    ///   canonical trees built at `initial` (the run's prior with its initial hyperparameters,
    ///   so that a resumed chain builds the trees of the chain that never stopped);
    /// - `tgmcmc-paper`: the reference sweep as one move (`global_moves`, `depth`, default 2),
    ///   with its own hyperparameter update;
    /// - the DPMM.jl samplers: their one move (`subcluster` with `proposals` split/merge
    ///   proposals of `launch_scans` sub-cluster iterations each);
    ///
    /// then, when `resample_hyper`, the hyperparameter move (the paper sampler has its own).
    pub fn schedule<K: ParametricKernel + 'static>(
        &self,
        resample_hyper: bool,
        initial: &Prior,
    ) -> Result<Vec<Scheduled<K, Prior>>> {
        self.schedule_sharing(resample_hyper, initial, None)
    }

    /// [`SamplerSettings::schedule`] for one of the chains of a launch that share, through
    /// `shared`, what their moves build from the data and the model alone: tgmcmc's reference
    /// tree ([`SharedReference`]), built once instead of once per chain. The chain is the
    /// same, bit for bit. Give one `shared` to chains over one kernel object whose
    /// hyperparameters stay as built (no kernel hyperpriors).
    pub fn schedule_sharing<K: ParametricKernel + 'static>(
        &self,
        resample_hyper: bool,
        initial: &Prior,
        shared: Option<&SharedReference>,
    ) -> Result<Vec<Scheduled<K, Prior>>> {
        self.validate()?;
        self.check_prior(initial)?;
        if let Some(moves) = self.collapsed_moves::<K>(resample_hyper, initial, shared)? {
            return Ok(moves);
        }
        let m = &self.moves;
        let once = |mv| Scheduled { mv, repeats: 1 };
        let mut moves: Vec<Scheduled<K, Prior>> = Vec::new();
        match self.kind {
            SamplerKind::TgmcmcPaper => {
                return Ok(tgmcmc_paper_schedule(
                    m.global_moves,
                    m.depth.unwrap_or(2),
                    resample_hyper,
                ))
            }
            SamplerKind::Subcluster => {
                moves.push(once(Box::new(SubCluster::new(SubClusterOptions {
                    launch_iters: m.launch_scans,
                    proposals: m.proposals,
                }))))
            }
            SamplerKind::SubclusterDpmm => {
                moves.push(once(Box::new(SubCluster::dpmm(DpmmOptions::default()))))
            }
            SamplerKind::Direct => moves.push(once(Box::<Direct<K>>::default())),
            SamplerKind::QuasiDirect => moves.push(once(Box::<QuasiDirect<K>>::default())),
            SamplerKind::QuasiCollapsed => moves.push(once(Box::new(QuasiCollapsed::new()))),
            SamplerKind::Gibbs
            | SamplerKind::Tgmcmc
            | SamplerKind::JainNeal
            | SamplerKind::Sams => {
                unreachable!("collapsed samplers are scheduled above")
            }
        }
        if resample_hyper {
            moves.push(once(Box::new(HyperMove)));
        }
        Ok(moves)
    }

    /// Whether the sampler's moves reach the data only through a [`ConjugateKernel`]'s
    /// marginals and predictives (gibbs, jain-neal, sams, tgmcmc), so that they run on a
    /// tempered kernel ([`crate::kernel::Tempered`]) and target the tempered posterior.
    pub fn collapsed(&self) -> bool {
        matches!(
            self.kind,
            SamplerKind::Gibbs | SamplerKind::Tgmcmc | SamplerKind::JainNeal | SamplerKind::Sams
        )
    }

    /// [`SamplerSettings::schedule`] over any conjugate kernel, for the collapsed samplers
    /// ([`SamplerSettings::collapsed`]): the schedule of a tempered replica. Errors, naming
    /// the samplers that take tempering, for a sampler that draws component parameters.
    pub fn collapsed_schedule<K: ConjugateKernel + 'static>(
        &self,
        resample_hyper: bool,
        initial: &Prior,
    ) -> Result<Vec<Scheduled<K, Prior>>> {
        self.validate()?;
        self.check_prior(initial)?;
        self.collapsed_moves::<K>(resample_hyper, initial, None)?
            .ok_or_else(|| self.refuse_tempering())
    }

    /// The error of a sampler that cannot be tempered.
    pub(crate) fn refuse_tempering(&self) -> Error {
        Error::Usage(format!(
            "sampler {}: tempering (`temperatures`) raises the marginal likelihood to a power, \
             which only the collapsed samplers' moves see alone; it is taken by gibbs, \
             jain-neal, sams and tgmcmc",
            self.kind.name()
        ))
    }

    /// The moves of a collapsed sampler (see [`SamplerSettings::schedule`]); `None` for the
    /// others.
    fn collapsed_moves<K: ConjugateKernel + 'static>(
        &self,
        resample_hyper: bool,
        initial: &Prior,
        shared: Option<&SharedReference>,
    ) -> Result<Option<Vec<Scheduled<K, Prior>>>> {
        let m = &self.moves;
        let scan = match m.gibbs_subset {
            Some(k) => GibbsScan::Subset(k),
            None => GibbsScan::Full,
        };
        let gibbs = || -> Result<Box<dyn Move<K, Prior>>> {
            Ok(Box::new(Gibbs::new(scan).map_err(|e| match e {
                Error::InvalidParameter {
                    value, expected, ..
                } => Error::InvalidParameter {
                    name: "gibbs_subset".into(),
                    value,
                    expected,
                },
                other => other,
            })?))
        };
        let once = |mv| Scheduled { mv, repeats: 1 };
        let mut moves: Vec<Scheduled<K, Prior>> = Vec::new();
        match self.kind {
            SamplerKind::Gibbs => moves.push(once(gibbs()?)),
            SamplerKind::Tgmcmc => {
                return tgmcmc_schedule_sharing(
                    initial,
                    m.global_moves,
                    scan,
                    m.gibbs_sweeps,
                    resample_hyper,
                    shared,
                )
                .map(Some)
            }
            SamplerKind::JainNeal | SamplerKind::Sams => {
                let mv: Box<dyn Move<K, Prior>> = match self.kind {
                    SamplerKind::Sams => Box::new(Sams::new()),
                    _ => Box::new(JainNeal::new(m.launch_scans)),
                };
                moves.push(Scheduled {
                    mv,
                    repeats: m.proposals,
                });
                if m.gibbs_sweeps > 0 {
                    moves.push(Scheduled {
                        mv: gibbs()?,
                        repeats: m.gibbs_sweeps,
                    });
                }
            }
            _ => return Ok(None),
        }
        if resample_hyper {
            moves.push(once(Box::new(HyperMove)));
        }
        Ok(Some(moves))
    }
}
