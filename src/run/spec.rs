//! What to run: the sampler and its moves, the chains, their start and their budget
//! ([`SamplerSpec`]), typed and serialisable, with validation whose errors name the parameter
//! (its field name, as in `chains` or `checkpoint_every`) and say what to change.
//!
//! Front ends map those names to their own spelling (the command line's `--chains`) with
//! [`Error::rename_parameters`]; free-text messages mention parameters between backticks
//! (`` `sweeps` ``) for the same renaming.

use crate::error::{Error, Result};
use crate::tree::IbhcMode;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The samplers (MATH §6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SamplerKind {
    /// Collapsed Gibbs (Neal 2000, Algorithm 3).
    Gibbs,
    /// Jain-Neal split-merge plus Gibbs sweeps.
    JainNeal,
    /// Dahl's sequentially-allocated merge-split plus Gibbs sweeps (the default: Gibbs alone
    /// cannot open a cluster in high dimensions).
    #[default]
    Sams,
    /// Exact tree-guided MCMC: TG-SAMS proposals plus Gibbs sweeps.
    Tgmcmc,
    /// The tree-guided MCMC of the paper's code (approximate: biased).
    TgmcmcPaper,
    /// Exact parallel sub-cluster sampler (Chang-Fisher restricted Gibbs plus split/merge
    /// proposals, each launched by sub-cluster iterations).
    Subcluster,
    /// DPMM.jl's sub-cluster sampler as coded (DP only; approximate: biased).
    SubclusterDpmm,
    /// DPMM.jl's direct parallel Gibbs (DP only; approximate).
    Direct,
    /// DPMM.jl's quasi-direct parallel Gibbs (approximate).
    QuasiDirect,
    /// DPMM.jl's quasi-collapsed parallel Gibbs (approximate).
    QuasiCollapsed,
}

impl SamplerKind {
    /// Every sampler, in the order front ends list them.
    pub const ALL: [SamplerKind; 10] = [
        SamplerKind::Gibbs,
        SamplerKind::JainNeal,
        SamplerKind::Sams,
        SamplerKind::Tgmcmc,
        SamplerKind::TgmcmcPaper,
        SamplerKind::Subcluster,
        SamplerKind::SubclusterDpmm,
        SamplerKind::Direct,
        SamplerKind::QuasiDirect,
        SamplerKind::QuasiCollapsed,
    ];

    /// Whether the sampler takes a Gibbs-type prior whose weights depend on the number of
    /// clusters (Pitman-Yor, MFM): the collapsed samplers whose moves add
    /// `V(n, K±1) / V(n, K)` to their ratios and weights, and the exact sub-cluster sampler,
    /// whose restricted pass draws the weights given the partition (Pitman-Yor's
    /// stick-breaking, the MFM's finite Dirichlet), each checked against enumeration.
    pub fn takes_gibbs_type(self) -> bool {
        matches!(
            self,
            SamplerKind::Gibbs
                | SamplerKind::JainNeal
                | SamplerKind::Sams
                | SamplerKind::Tgmcmc
                | SamplerKind::Subcluster
        )
    }

    /// The names of the samplers that [`SamplerKind::takes_gibbs_type`], comma-separated.
    pub fn taking_gibbs_type() -> String {
        SamplerKind::ALL
            .iter()
            .filter(|k| k.takes_gibbs_type())
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The sampler's name (`jain-neal`), as serialised and parsed.
    pub fn name(self) -> &'static str {
        match self {
            SamplerKind::Gibbs => "gibbs",
            SamplerKind::JainNeal => "jain-neal",
            SamplerKind::Sams => "sams",
            SamplerKind::Tgmcmc => "tgmcmc",
            SamplerKind::TgmcmcPaper => "tgmcmc-paper",
            SamplerKind::Subcluster => "subcluster",
            SamplerKind::SubclusterDpmm => "subcluster-dpmm",
            SamplerKind::Direct => "direct",
            SamplerKind::QuasiDirect => "quasi-direct",
            SamplerKind::QuasiCollapsed => "quasi-collapsed",
        }
    }

    /// One line on what the sampler is, naming the move settings it reads.
    pub fn about(self) -> &'static str {
        match self {
            SamplerKind::Gibbs => "Collapsed Gibbs (Neal 2000, Algorithm 3)",
            SamplerKind::JainNeal => "Jain-Neal split-merge plus one Gibbs sweep",
            SamplerKind::Sams => "Dahl's sequentially-allocated merge-split plus one Gibbs sweep",
            SamplerKind::Tgmcmc => "Exact tree-guided MCMC: TG-SAMS proposals plus Gibbs sweeps",
            SamplerKind::TgmcmcPaper => {
                "The tree-guided MCMC of the paper's code (approximate: biased, see the docs)"
            }
            SamplerKind::Subcluster => {
                "Exact parallel sub-cluster sampler (Chang-Fisher restricted Gibbs plus \
                 split/merge proposals, each launched by sub-cluster iterations)"
            }
            SamplerKind::SubclusterDpmm => {
                "DPMM.jl's sub-cluster sampler as coded (DP only; approximate: biased, see the \
                 docs)"
            }
            SamplerKind::Direct => "DPMM.jl's direct parallel Gibbs (DP only; approximate)",
            SamplerKind::QuasiDirect => "DPMM.jl's quasi-direct parallel Gibbs (approximate)",
            SamplerKind::QuasiCollapsed => "DPMM.jl's quasi-collapsed parallel Gibbs (approximate)",
        }
    }
}

impl SamplerKind {
    /// The fewest points for which [`SamplerKind::for_data`] picks the sub-cluster sampler.
    /// Measured on 3-dimensional data in 8 clusters on two shared cores: a sub-cluster sweep
    /// (320,000 / n proposals) took 0.01 s on 50,000 points at the truth, a SAMS sweep 0.12 s
    /// and a tree-guided one more; from 50,000 points the sub-cluster sampler's sweep, one
    /// pass over the points parallel over them, is the one whose cost stays linear in `n`.
    pub const SUBCLUSTER_FROM: usize = 50_000;

    /// The default sampler for `n` points under any prior: the exact tree-guided sampler
    /// ([`SamplerKind::Tgmcmc`], TG-SAMS proposals and a Gibbs sweep) below
    /// [`SamplerKind::SUBCLUSTER_FROM`], the exact sub-cluster sampler
    /// ([`SamplerKind::Subcluster`], Chang and Fisher 2013) from there. Both take every prior.
    ///
    /// **Why tgmcmc, by measurement** (`benches/mixing`, BENCHMARKS "Mixing per sampler on real
    /// data"): on wine its four chains agree in 4,000 sweeps where SAMS's still disagree on
    /// K after 16,000 (ESS of K 550 against 6); on the 10k set, 2,000 sweeps, R-hat of the
    /// log joint 1.001 against SAMS's 1.35 at 1.17x the CPU; on 20,000 points in 8 clusters
    /// ten times SAMS's effective draws of K per sweep at 1.3x the time; on iris a quarter of
    /// SAMS's sweeps to agree. On breast cancer (569 × 30) neither agrees (the default run:
    /// 19.9 s with tgmcmc, 19 s with SAMS). Depends on `n` only, so a seed gives the same run
    /// anywhere.
    ///
    /// **Why no tempering** (BENCHMARKS, "Parallel tempering"): at an equal CPU budget, four
    /// replicas per chain ([`SamplerSettings::temperatures`] 1, 0.9, 0.8, 0.7) gave breast
    /// cancer 10-80x the default's effective draws per CPU second, but wine 2-4x fewer, and
    /// digits nothing; it stays an option.
    pub fn for_data(n: usize) -> SamplerKind {
        if n >= Self::SUBCLUSTER_FROM {
            SamplerKind::Subcluster
        } else {
            SamplerKind::Tgmcmc
        }
    }
}

impl std::fmt::Display for SamplerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for SamplerKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        SamplerKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = SamplerKind::ALL.iter().map(|k| k.name()).collect();
                Error::param("sampler", s, &format!("one of {}", names.join(", ")))
            })
    }
}

/// Settings of a sampler's moves; each sampler reads the ones it has (see
/// [`SamplerSettings::validate`] for which).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MoveSettings {
    /// Split-merge proposals per sweep (Jain-Neal, SAMS, sub-cluster).
    pub proposals: usize,
    /// Restricted Gibbs launch scans of Jain-Neal; sub-cluster iterations of `subcluster`.
    pub launch_scans: usize,
    /// Gibbs sweeps interleaved with each round of split-merge or tree-guided proposals.
    pub gibbs_sweeps: usize,
    /// Visit only this many random points per Gibbs sweep (`None`: all).
    pub gibbs_subset: Option<usize>,
    /// Tree-guided proposals per sweep (`G`) of tgmcmc and tgmcmc-paper.
    pub global_moves: usize,
    /// Depth `D` of the tree-selected local moves of tgmcmc-paper (`None`: 2).
    pub depth: Option<usize>,
}

impl MoveSettings {
    /// The default number of split-merge proposals per sweep for `n` points: `n / 100`,
    /// between 1 and 100. A proposal touches the points of one or two clusters, about `2n/K`,
    /// while a Gibbs sweep costs `n K` predictives, so with many clusters to find (10,000
    /// points in 119 clusters) a hundred proposals cost less than the sweep and find the
    /// clusters that one proposal per sweep leaves merged for thousands of sweeps; the cap
    /// bounds the cost where there is one cluster (each proposal then splits all `n` points).
    /// Fixed for the run (it depends on the data's size, never on the state), so the chain's
    /// target is unchanged.
    pub fn default_proposals(n: usize) -> usize {
        (n / 100).clamp(1, 100)
    }

    /// The default number of split-merge proposals per sweep of `kind` for `n` points:
    /// [`MoveSettings::default_proposals`], except for the exact sub-cluster sampler,
    /// `320,000 / n` between 8 and 100 (32 at 10,000 points, 8 from 40,000).
    ///
    /// **Why fewer at large `n`.** A sub-cluster proposal's launch scans its whole set `S`
    /// (about `2n/K` points), so at 10⁶ points a hundred of them cost 5 times the sweep's
    /// restricted pass; and made many at a time from a state the restricted pass has not yet
    /// refined, early splits over-split clusters whose fuzzy pieces large-set merges cannot
    /// reunite. Measured from one cluster, 60 sweeps, one chain (10⁶ × 2 points in 6
    /// overlapping clusters, seeds 1-4): 8 proposals reached K = 6, 100-1,400 nats above the
    /// true partition, on every seed, in 4.5 s of CPU; 16 stayed at K = 7-8 on two seeds of
    /// three, 100 at K = 8-9 (22 s). 2 × 10⁵ points (seeds 1-2): 8 at K = 5 (DPMM.jl's
    /// criterion finds 5) on both, 4 and 100 over-split on one. 5 × 10⁴ points in 8 clusters:
    /// 8 at K = 8 within 0.0003 nats per point of the truth by sweep 20. On the 10k set
    /// (10,000 points, 119 clusters, from one cluster) 8 proposals found 112 clusters in 200
    /// sweeps where 32 found the truth's region in 40. Fixed for the run, so the target is
    /// unchanged.
    pub fn default_proposals_for(kind: SamplerKind, n: usize) -> usize {
        match kind {
            SamplerKind::Subcluster => (320_000 / n.max(1)).clamp(8, 100),
            _ => Self::default_proposals(n),
        }
    }
}

impl Default for MoveSettings {
    fn default() -> Self {
        MoveSettings {
            proposals: 1,
            launch_scans: 10,
            gibbs_sweeps: 1,
            gibbs_subset: None,
            global_moves: 10,
            depth: None,
        }
    }
}

/// A sampler and the settings of its moves.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplerSettings {
    /// The sampler.
    #[serde(rename = "sampler")]
    pub kind: SamplerKind,
    /// Its moves.
    #[serde(flatten)]
    pub moves: MoveSettings,
    /// Parallel tempering: the inverse temperatures of each chain's ladder, its own `1`
    /// first, strictly decreasing (MATH §6.6, [`super::ladder`]); empty (the default) for
    /// chains without hot replicas. Collapsed samplers only (gibbs, jain-neal, sams, tgmcmc).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub temperatures: Vec<f64>,
}

impl SamplerSettings {
    /// The settings for `kind` with default moves.
    pub fn new(kind: SamplerKind) -> Self {
        SamplerSettings {
            kind,
            moves: MoveSettings::default(),
            temperatures: Vec::new(),
        }
    }

    /// Checks that the sampler has something to do and reads no setting that belongs to
    /// another: `gibbs_subset ≥ 1`; Jain-Neal and SAMS need `proposals` or `gibbs_sweeps`,
    /// tgmcmc needs `global_moves` or `gibbs_sweeps` and takes no `depth`; tgmcmc-paper takes
    /// no `gibbs_subset`.
    pub fn validate(&self) -> Result<()> {
        let m = &self.moves;
        if m.gibbs_subset == Some(0) {
            return Err(Error::param("gibbs_subset", 0, "at least 1"));
        }
        if !self.temperatures.is_empty() {
            super::ladder::check_betas(&self.temperatures)?;
            if !self.collapsed() {
                return Err(self.refuse_tempering());
            }
        }
        match self.kind {
            SamplerKind::JainNeal | SamplerKind::Sams
                if m.proposals == 0 && m.gibbs_sweeps == 0 =>
            {
                Err(Error::Usage(
                    "`proposals` 0 with `gibbs_sweeps` 0 leaves nothing to do".into(),
                ))
            }
            SamplerKind::Tgmcmc if m.depth.is_some() => Err(Error::Usage(
                "`depth` sets the tree-selected local moves of tgmcmc-paper; the exact tgmcmc \
                 runs Gibbs scans instead (`gibbs_sweeps`, `gibbs_subset`)"
                    .into(),
            )),
            SamplerKind::Tgmcmc if m.global_moves == 0 && m.gibbs_sweeps == 0 => Err(Error::Usage(
                "`global_moves` 0 with `gibbs_sweeps` 0 leaves nothing to do".into(),
            )),
            SamplerKind::TgmcmcPaper if m.gibbs_subset.is_some() => Err(Error::Usage(
                "tgmcmc-paper selects its local moves through the trees (`depth`); \
                 `gibbs_subset` belongs to gibbs, jain-neal, sams and tgmcmc"
                    .into(),
            )),
            _ => Ok(()),
        }
    }
}

/// How each chain starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Start {
    /// All points in one cluster.
    Single,
    /// Every point alone.
    Singletons,
    /// The labels of a file (any integers, one per line), read once before the chains start.
    Labels(PathBuf),
    /// The clusters of an IBHC forest built over the points in an order drawn from the
    /// chain's own stream (tgmcmc-paper also starts from the forest itself).
    Ibhc(IbhcMode),
    /// The components of a one-pass SVA-PM fit over the points in the chain's own random
    /// order.
    Sva,
    /// Whichever of one cluster and the chain's SVA-PM fit has the higher log joint; for the
    /// exact sub-cluster sampler, the best partition of the pilot that set the kernel's scale
    /// carried to every point, or one cluster without a pilot (see [`Start::resolve`]).
    Auto,
}

impl std::str::FromStr for Start {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "single" => Ok(Start::Single),
            "singletons" => Ok(Start::Singletons),
            // The paper's toy start ("points inserted in a random order on top of existing
            // trees") is the reference code's noisy IBHC.
            "noisy-ibhc" | "top-insert" => Ok(Start::Ibhc(IbhcMode::Noisy)),
            "exact-ibhc" => Ok(Start::Ibhc(IbhcMode::Exact)),
            "sva" => Ok(Start::Sva),
            "auto" => Ok(Start::Auto),
            _ => match s.strip_prefix("labels:") {
                Some(p) if !p.is_empty() => Ok(Start::Labels(PathBuf::from(p))),
                _ => Err(Error::Usage(format!(
                    "unknown initialisation '{s}': expected single, singletons or labels:FILE, \
                     an IBHC forest: noisy-ibhc or exact-ibhc (top-insert is noisy-ibhc), \
                     a one-pass SVA-PM fit: sva, or the better of single and sva: auto"
                ))),
            },
        }
    }
}

impl std::fmt::Display for Start {
    /// The start as `init` takes it (`auto`, `labels:FILE`, `exact-ibhc`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Start::Single => f.write_str("single"),
            Start::Singletons => f.write_str("singletons"),
            Start::Labels(p) => write!(f, "labels:{}", p.display()),
            Start::Ibhc(mode) => write!(f, "{}-ibhc", format!("{mode:?}").to_lowercase()),
            Start::Sva => f.write_str("sva"),
            Start::Auto => f.write_str("auto"),
        }
    }
}

impl Start {
    /// The start with a labels file made absolute, so that a resumed run finds it from any
    /// directory.
    pub fn absolute(&self) -> Result<Start> {
        Ok(match self {
            Start::Labels(p) => Start::Labels(super::record::absolute(p)?),
            other => other.clone(),
        })
    }
}

/// A number of sweeps as a front end takes it: a count, or `auto` (until the chains agree).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepCount {
    /// This many sweeps.
    Count(u64),
    /// Rounds of doubling length until the chains agree ([`AutoBudget`]).
    Auto,
}

impl std::str::FromStr for SweepCount {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        if s == "auto" {
            return Ok(SweepCount::Auto);
        }
        s.parse()
            .map(SweepCount::Count)
            .map_err(|_| format!("expected a number of sweeps or auto, got '{s}'"))
    }
}

/// When a chain stops.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Budget {
    /// After this many sweeps (at least 1).
    Sweeps(u64),
    /// After the first sweep that brings the chain's sampling time (observers excluded, see
    /// [`SweepRecord::seconds`](super::SweepRecord::seconds)) to at least this many seconds
    /// (finite, > 0).
    Seconds(f64),
    /// Until the chains agree, in rounds of doubling length ([`AutoBudget`]).
    Auto(AutoBudget),
}

/// A budget that lengthens the chains until they agree: every chain runs `first` sweeps,
/// then the run's chains are diagnosed together after the burn-in the summary would leave out
/// (the run's own, if one is set; else half of each chain, or the chains' hitting time where
/// the chains agree under it, [`super::summary::BurnInRule`]); unless every quantity
/// agrees, every chain doubles its length, up to `max` sweeps. A quantity agrees when it has a rank-normalised split R-hat of
/// at most 1.01 and a bulk effective sample size of at least 400 (Vehtari et al. 2021), or
/// when it held one and the same value in every chain (an R-hat and an ESS of a constant
/// series say nothing; see [`super::summary::agrees`]). The chains also stop lengthening
/// when some of them sit far below the best one in clusters it never visits and no longer
/// rise ([`super::modes::stuck_apart`]): doubling the chains would rarely move them, and
/// the summary says where each chain sits and what would settle it.
///
/// The decision at each round depends only on the chains' traces up to that round, never on
/// time, so a seed gives the same chains and the same length on any machine, on any number
/// of threads, and when the run is interrupted and resumed. Cost: one diagnosis per round,
/// O(S log S) for S traced sweeps, against the rounds' sampling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoBudget {
    /// Sweeps of the first round (at least 1).
    pub first: u64,
    /// Most sweeps per chain (at least `first`).
    pub max: u64,
}

impl AutoBudget {
    /// Sweeps of the first round by default: enough for the small data sets where chains agree
    /// quickly to stop there.
    pub const FIRST: u64 = 1000;

    /// The fewest sweeps of the first round by default, however large the data: the hundred
    /// iterations that sub-cluster samplers are run for on millions of points (Chang and
    /// Fisher 2013; DPMM.jl's default).
    pub const MIN_FIRST: u64 = 100;

    /// Most rounds by default: the chains grow at most 16-fold past the first round.
    const MAX_FACTOR: u64 = 16;

    /// The work `n · d² · sweeps` beyond which no further round is started by default (10⁹:
    /// a Normal-Wishart sweep costs O(n d²) per cluster), so that a data set of 10,000 points
    /// in 6 dimensions stops by 2,777 sweeps, one of 569 in 30 by 1,952 and one of 150 in 4
    /// at 16,000.
    const WORK: f64 = 1e9;

    /// The work `n · d² · sweeps` of the first round by default (10⁸): data with
    /// `n · d²` up to 10⁵ (150 points in 4 dimensions, 178 in 13) have a first round of
    /// [`AutoBudget::FIRST`] sweeps; larger data fewer (555 for 20,000 points in 3
    /// dimensions, 277 for 10,000 in 6), down to [`AutoBudget::MIN_FIRST`] from `n · d²` =
    /// 10⁶ (250,000 points in 2 dimensions, a million in 1), so that the first round's work
    /// stops growing with the data until that floor. Rounds double from there, so data whose
    /// chains need more sweeps reach them within a factor of two, at the same most sweeps.
    const FIRST_WORK: f64 = 1e8;

    /// The default budget for `n` points in `d` dimensions: a first round of
    /// [`AutoBudget::FIRST`] sweeps, fewer where `n · d²` is large (never below
    /// [`AutoBudget::MIN_FIRST`]), then rounds up to 16 times that, fewer where `n · d²` is
    /// large, never below the first round. Depends on the data's shape only, so the run stays
    /// reproducible.
    pub fn for_data(n: usize, d: usize) -> Self {
        let work = (n.max(1) as f64) * (d.max(1) as f64).powi(2);
        let first = ((Self::FIRST_WORK / work).floor() as u64).clamp(Self::MIN_FIRST, Self::FIRST);
        let cap = (Self::WORK / work).floor() as u64;
        AutoBudget {
            first,
            max: cap.clamp(first, Self::FIRST * Self::MAX_FACTOR),
        }
    }

    /// The budget with at most `max` sweeps per chain, its first round shortened to fit.
    pub fn at_most(self, max: u64) -> Self {
        AutoBudget {
            first: self.first.min(max),
            max,
        }
    }

    /// The end of the round that a chain with `done` sweeps (the most of any chain of the
    /// run) is in: the first of `first`, `2 first`, `4 first`, ..., `max` that is at least
    /// `done`.
    pub fn round_end(self, done: u64) -> u64 {
        let mut end = self.first.min(self.max);
        while end < done && end < self.max {
            end = end.saturating_mul(2).min(self.max);
        }
        end
    }
}

impl Budget {
    /// The budget that a front end's `sweeps`, `seconds` and `max_sweeps` give for `n` points
    /// in `d` dimensions, if they give one: a sweep count; `auto`, or `max_sweeps` alone, as
    /// [`AutoBudget::for_data`] bounded by `max_sweeps`; else a time (`sweeps` wins over
    /// `seconds`). Errors when `max_sweeps` comes with a sweep count, which it cannot bound.
    /// Cost: O(1).
    pub fn of_limits(
        sweeps: Option<SweepCount>,
        seconds: Option<f64>,
        max_sweeps: Option<u64>,
        (n, d): (usize, usize),
    ) -> Result<Option<Budget>> {
        let auto = || {
            let budget = AutoBudget::for_data(n, d);
            Budget::Auto(max_sweeps.map_or(budget, |max| budget.at_most(max)))
        };
        Ok(match (sweeps, seconds) {
            (Some(SweepCount::Count(_)), _) if max_sweeps.is_some() => {
                return Err(Error::Usage(
                    "`max_sweeps` bounds `sweeps` auto: give one or the other".into(),
                ))
            }
            (Some(SweepCount::Count(n)), _) => Some(Budget::Sweeps(n)),
            (Some(SweepCount::Auto), _) => Some(auto()),
            (None, Some(s)) => Some(Budget::Seconds(s)),
            (None, None) => max_sweeps.is_some().then(auto),
        })
    }

    /// Whether a chain that has done `sweep` sweeps in `seconds` of sampling has used up its
    /// budget (for [`Budget::Auto`], its most sweeps: the runner ends earlier rounds).
    pub fn reached(self, sweep: u64, seconds: f64) -> bool {
        match self {
            Budget::Seconds(s) => seconds >= s,
            _ => self.max_sweeps().is_some_and(|n| sweep >= n),
        }
    }

    /// The most sweeps a chain runs, if the budget counts sweeps.
    pub fn max_sweeps(self) -> Option<u64> {
        match self {
            Budget::Sweeps(n) => Some(n),
            Budget::Seconds(_) => None,
            Budget::Auto(a) => Some(a.max),
        }
    }

    /// The fewest sweeps every chain runs, if the budget counts sweeps.
    pub fn min_sweeps(self) -> Option<u64> {
        match self {
            Budget::Sweeps(n) => Some(n),
            Budget::Seconds(_) => None,
            Budget::Auto(a) => Some(a.first),
        }
    }

    /// Checks the budget: at least 1 sweep, a finite number of seconds > 0, or rounds of at
    /// least 1 sweep up to at least the first round.
    pub fn validate(self) -> Result<()> {
        match self {
            Budget::Sweeps(0) => Err(Error::param("sweeps", 0, "at least 1")),
            Budget::Seconds(s) if !(s > 0.0 && s.is_finite()) => {
                Err(Error::param("seconds", s, "a finite number of seconds > 0"))
            }
            Budget::Auto(a) if a.first == 0 => Err(Error::param("sweeps", 0, "at least 1")),
            Budget::Auto(a) if a.max < a.first => Err(Error::param(
                "max_sweeps",
                a.max,
                &format!("at least the {} sweeps of the first round", a.first),
            )),
            _ => Ok(()),
        }
    }

    /// Refuses a burn-in that leaves a sweep budget without draws.
    pub fn check_burn_in(self, burn_in: Option<u64>) -> Result<()> {
        if let (Some(b), Some(n)) = (burn_in, self.min_sweeps()) {
            if b >= n {
                return Err(Error::param(
                    "burn_in",
                    b,
                    &format!("fewer sweeps than the {n} of each chain"),
                ));
            }
        }
        Ok(())
    }
}

/// Partition draws kept per chain at the coarsest spacing (see [`super::draws`]): enough for a
/// posterior similarity estimate, small enough that draws × n labels fit in memory.
pub const DRAWS_PER_CHAIN: usize = 256;

/// The fewest partition draws kept per chain by [`draws_per_chain`].
pub const MIN_DRAWS_PER_CHAIN: usize = 16;

/// Labels kept per chain by [`draws_per_chain`] (2²⁴, 128 MiB as read back).
const DRAW_LABELS: usize = 1 << 24;

/// The partition draws to keep per chain for `n` points: [`DRAWS_PER_CHAIN`], fewer for large
/// `n` so that a chain's draws hold at most 2²⁴ labels (65 draws of 256,000 points), never
/// fewer than [`MIN_DRAWS_PER_CHAIN`] (16 draws of a million points: the draws file and the
/// summary, which reads one chain's draws at a time, stay bounded at any `n`). Cost: O(1).
pub fn draws_per_chain(n: usize) -> usize {
    (DRAW_LABELS / n.max(1)).clamp(MIN_DRAWS_PER_CHAIN, DRAWS_PER_CHAIN)
}

/// What to run: a sampler, how many chains from which start, for how long, what is recorded
/// and how often a checkpoint is taken. The model it samples is given separately
/// ([`crate::model::Model`]); together they are a run ([`super::Runner`]).
///
/// Chains are numbered `chain_offset..chain_offset + chains`; chain `c` draws from stream `c`
/// of `seed` ([`crate::rng::SeedPlan::chain`]), so runs with offsets `0, C, 2C, ...` are one
/// run of many chains, and results do not depend on the number of threads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplerSpec {
    /// The sampler and its moves.
    pub sampler: SamplerSettings,
    /// Seed of every random draw.
    pub seed: u64,
    /// Index of the first chain.
    pub chain_offset: u64,
    /// Number of chains (at least 1), run in parallel.
    pub chains: usize,
    /// How each chain starts.
    pub init: Start,
    /// Every `thin`-th sweep is traced and may be kept as a draw (at least 1).
    pub thin: u64,
    /// When each chain stops.
    pub budget: Budget,
    /// Sweeps of each chain left out of the diagnostics and point estimates (`None`: the
    /// first half of each chain, or the sweep by which every chain reached the chains'
    /// typical log joint where the chains agree under it; see
    /// [`super::summary::BurnInRule`]).
    pub burn_in: Option<u64>,
    /// Sweeps between checkpoints (`None`: no checkpoints, so no resume).
    pub checkpoint_every: Option<u64>,
    /// Partition draws kept per chain ([`DRAWS_PER_CHAIN`]).
    pub draws_per_chain: usize,
}

impl Default for SamplerSpec {
    /// SAMS, seed 1, 4 chains from [`Start::Auto`], 1000 sweeps, every sweep
    /// traced, no checkpoints.
    fn default() -> Self {
        SamplerSpec {
            sampler: SamplerSettings::default(),
            seed: 1,
            chain_offset: 0,
            chains: 4,
            init: Start::Auto,
            thin: 1,
            budget: Budget::Sweeps(1000),
            burn_in: None,
            checkpoint_every: None,
            draws_per_chain: DRAWS_PER_CHAIN,
        }
    }
}

impl SamplerSpec {
    /// The spec for `kind` with every other setting at its default.
    pub fn new(kind: SamplerKind) -> Self {
        SamplerSpec {
            sampler: SamplerSettings::new(kind),
            ..SamplerSpec::default()
        }
    }

    /// The chain indices of the run.
    pub fn chain_indices(&self) -> std::ops::Range<u64> {
        self.chain_offset..self.chain_offset + self.chains as u64
    }

    /// Checks every setting, naming the first that is wrong and what it must be.
    pub fn validate(&self) -> Result<()> {
        if self.chains == 0 {
            return Err(Error::param("chains", 0, "at least 1"));
        }
        if self.thin == 0 {
            return Err(Error::param("thin", 0, "at least 1"));
        }
        if self.checkpoint_every == Some(0) {
            return Err(Error::param("checkpoint_every", 0, "at least 1 sweep"));
        }
        if self.chain_offset.checked_add(self.chains as u64).is_none() {
            return Err(Error::param(
                "chain_offset",
                self.chain_offset,
                "an index that leaves room for every chain",
            ));
        }
        if self.draws_per_chain == 0 {
            return Err(Error::param("draws_per_chain", 0, "at least 1"));
        }
        self.budget.validate()?;
        self.budget.check_burn_in(self.burn_in)?;
        if let Some(n) = self.budget.min_sweeps() {
            if self.thin > n {
                return Err(Error::param(
                    "thin",
                    self.thin,
                    &format!("at most the {n} sweeps of each chain, or no sweep is traced"),
                ));
            }
        }
        self.sampler.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subcluster_proposals_fall_with_the_data_size_to_eight() {
        let of = |n| MoveSettings::default_proposals_for(SamplerKind::Subcluster, n);
        assert_eq!(
            [of(0), of(3_200), of(10_000), of(40_000), of(1_000_000)],
            [100, 100, 32, 8, 8]
        );
        assert_eq!(
            MoveSettings::default_proposals_for(SamplerKind::Sams, 10_000),
            100
        );
    }

    #[test]
    fn default_proposals_follow_the_data_size_within_bounds() {
        let got: Vec<usize> = [0, 150, 600, 8_000, 10_000, 1_000_000]
            .into_iter()
            .map(MoveSettings::default_proposals)
            .collect();
        assert_eq!(got, [1, 1, 6, 80, 100, 100]);
    }

    #[test]
    fn names_round_trip() {
        for k in SamplerKind::ALL {
            assert_eq!(k.name().parse::<SamplerKind>().unwrap(), k);
            assert_eq!(serde_json::to_value(k).unwrap(), k.name());
        }
        assert!("gibs".parse::<SamplerKind>().is_err());
        assert_eq!(
            "labels:x".parse::<Start>().unwrap(),
            Start::Labels("x".into())
        );
        assert!("labels:".parse::<Start>().is_err());
    }

    #[test]
    fn budgets_end_at_their_count_or_time() {
        let b = Budget::Sweeps(3);
        assert!(!b.reached(2, 100.0));
        assert!(b.reached(3, 0.0));
        let b = Budget::Seconds(0.5);
        assert!(!b.reached(1000, 0.499));
        assert!(b.reached(1, 0.5));
        let b = Budget::Auto(AutoBudget { first: 10, max: 50 });
        assert!(!b.reached(49, 1e9));
        assert!(b.reached(50, 0.0));
    }

    #[test]
    fn auto_rounds_double_up_to_the_most() {
        let a = AutoBudget {
            first: 1000,
            max: 2777,
        };
        let ends: Vec<u64> = [0, 1, 1000, 1001, 2000, 2001, 2777, 9000]
            .into_iter()
            .map(|d| a.round_end(d))
            .collect();
        assert_eq!(ends, [1000, 1000, 1000, 2000, 2000, 2777, 2777, 2777]);
        assert_eq!(AutoBudget::for_data(10_000, 6).max, 2777);
        assert_eq!(AutoBudget::for_data(569, 30).max, 1952);
        assert_eq!(AutoBudget::for_data(150, 4).max, 16_000);
        assert_eq!(AutoBudget::for_data(600, 500).max, 100);
        assert_eq!(
            a.at_most(500),
            AutoBudget {
                first: 500,
                max: 500
            }
        );
        let bad = Budget::Auto(AutoBudget { first: 10, max: 5 });
        assert!(matches!(
            bad.validate(),
            Err(Error::InvalidParameter { name, .. }) if name == "max_sweeps"
        ));
    }

    #[test]
    fn the_first_round_shrinks_with_the_data_down_to_its_floor() {
        let first = |n, d| AutoBudget::for_data(n, d).first;
        assert_eq!(first(150, 4), 1000);
        assert_eq!(first(178, 13), 1000);
        assert_eq!(first(20_000, 3), 555);
        assert_eq!(first(10_000, 6), 277);
        assert_eq!(first(200_000, 2), 125);
        assert_eq!(first(1_000_000, 2), 100);
        assert_eq!(first(70_000, 50), 100);
        // A million points in 2 dimensions: 100 sweeps, then at most 250.
        assert_eq!(
            AutoBudget::for_data(1_000_000, 2),
            AutoBudget {
                first: 100,
                max: 250
            }
        );
    }

    #[test]
    fn the_default_sampler_follows_the_number_of_points() {
        assert_eq!(SamplerKind::for_data(0), SamplerKind::Tgmcmc);
        assert_eq!(SamplerKind::for_data(49_999), SamplerKind::Tgmcmc);
        assert_eq!(SamplerKind::for_data(50_000), SamplerKind::Subcluster);
        assert_eq!(SamplerKind::for_data(1_000_000), SamplerKind::Subcluster);
    }

    #[test]
    fn draws_per_chain_bound_the_labels_kept() {
        let got: Vec<usize> = [0, 150, 65_536, 100_000, 1_000_000, 100_000_000]
            .into_iter()
            .map(draws_per_chain)
            .collect();
        assert_eq!(got, [256, 256, 256, 167, 16, 16]);
    }

    #[test]
    fn starts_print_as_init_takes_them() {
        for s in [
            "single",
            "singletons",
            "noisy-ibhc",
            "exact-ibhc",
            "sva",
            "auto",
        ] {
            assert_eq!(s.parse::<Start>().unwrap().to_string(), s);
        }
        assert_eq!(Start::Labels("a/b".into()).to_string(), "labels:a/b");
    }

    #[test]
    fn validation_names_the_parameter() {
        let name = |spec: SamplerSpec| match spec.validate() {
            Err(Error::InvalidParameter { name, .. }) => name,
            other => panic!("{other:?}"),
        };
        let ok = SamplerSpec::default();
        ok.validate().unwrap();
        assert_eq!(
            name(SamplerSpec {
                chains: 0,
                ..ok.clone()
            }),
            "chains"
        );
        assert_eq!(
            name(SamplerSpec {
                thin: 2000,
                ..ok.clone()
            }),
            "thin"
        );
        assert_eq!(
            name(SamplerSpec {
                burn_in: Some(1000),
                ..ok.clone()
            }),
            "burn_in"
        );
        assert_eq!(
            name(SamplerSpec {
                budget: Budget::Seconds(f64::NAN),
                ..ok
            }),
            "seconds"
        );
    }
}
