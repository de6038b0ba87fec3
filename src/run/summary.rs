//! The summary of a set of chains ([`Summary`]), recomputed from their files: per chain its
//! length, speed, acceptance and effective sample sizes; over chains the bulk and tail ESS and
//! split R-hat of the log joint, K and every hyperparameter (Vehtari et al. 2021), the
//! distribution of K, Dahl's point estimate ([`super::dahl`]), the best state visited, the
//! point estimates by loss with their expected losses and a credible ball
//! ([`super::estimates`]), with warnings of what the reader should know (chains not mixed, stuck or crumbling into
//! tiny clusters, interrupted).

use super::burn_in::{hitting, prefer_hitting, Agreement, Trace};
use super::dahl::dahl;
pub use super::dahl::{DrawSource, Estimate};
use super::estimates::{
    loss_summary, short_name, ByLoss, LossSummary, BALL_LEVEL, MAX_ATOM_CLUSTERS,
};
use super::modes::{far_below_best, mode_advice, stuck_apart, ChainPlace};
use super::record::{chain_dir, RunDir};
use super::resume::{ChainFile, EndState};
use super::spec::{SamplerKind, SamplerSettings};
use super::{load_json, BestDraw, Draw, TraceColumns};
use crate::diagnostics::{common_spacing, effective_sample_size, SeriesSummary};
use crate::error::{Error, Result};
use crate::model::ModelSpec;
use crate::prior::NrmPrior;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// A model as `summary.json` records it: every field of the spec, `kernel_hyperpriors` also
/// when it is off.
pub fn model_record(model: &ModelSpec) -> serde_json::Value {
    let mut value = serde_json::json!(model);
    value["kernel_hyperpriors"] = serde_json::json!(model.kernel_hyperpriors);
    value
}

/// What `summary.json` of a finished run records besides its diagnostics: the commands that
/// made it (the last and all), its seed, chain offset, sampler and settings, `model` (the
/// model as built, its defaults resolved), budget, thinning, burn-in, checkpoint interval and
/// `wall_seconds`, and the data's column names when a header gave them.
pub fn run_record(
    run: &RunDir,
    model: &ModelSpec,
    columns: Option<&[String]>,
    wall_seconds: f64,
) -> serde_json::Value {
    let s = &run.record.spec;
    let mut record = serde_json::json!({
        "command": run.record.commands.last(),
        "commands": run.record.commands,
        "seed": s.seed,
        "chain_offset": s.chain_offset,
        "sampler": s.sampler.kind,
        "sampler_settings": s.sampler,
        "model": model_record(model),
        "budget": s.budget,
        "thin": s.thin,
        "burn_in": s.burn_in,
        "checkpoint_every": s.checkpoint_every,
        "wall_seconds": wall_seconds,
    });
    if let Some(columns) = columns {
        record["columns"] = serde_json::json!(columns);
    }
    record
}

/// Rows of a trace kept in memory per column (evenly spaced over the chain): 128 KiB per
/// column, so that many chains can be merged.
const TRACE_ROWS: usize = 1 << 14;

/// A chain with at least 1/CROWDED_SHARE of the points as clusters (an average cluster of at
/// most 4 points) is reported: the model splits the data into crumbs.
const CROWDED_SHARE: usize = 4;

/// R-hat above which the chains are reported as not mixed (Vehtari et al. 2021).
pub(crate) const RHAT_LIMIT: f64 = 1.01;

/// `value`, known to exceed `limit`, with the fewest decimals (at least 3) that show it above
/// the limit: 1.0104 rather than a rounded 1.010 that reads as "1.010 > 1.01".
fn above(value: f64, limit: f64) -> String {
    (3..=12)
        .map(|p| format!("{value:.p$}"))
        .find(|s| s.parse::<f64>().is_ok_and(|v| v > limit))
        .unwrap_or_else(|| value.to_string())
}

/// The warning for a quantity whose R-hat is above [`RHAT_LIMIT`], with the sweeps per chain
/// to try; an infinite R-hat (each chain kept one value, not all the same) said in words.
fn rhat_warning(name: &str, rhat: f64, try_sweeps: Option<u64>) -> Option<String> {
    let what = match try_sweeps {
        Some(sweeps) => {
            format!("run longer before trusting the estimates (try `sweeps` {sweeps})")
        }
        None => "more sweeps are unlikely to settle it (where the chains sit, below)".into(),
    };
    if rhat == f64::INFINITY {
        Some(format!(
            "R-hat of {name} is infinite: every chain kept one value of it after the burn-in, \
             not all the same one; the chains have not mixed; {what}"
        ))
    } else if rhat > RHAT_LIMIT {
        Some(format!(
            "R-hat of {name} is {} > {RHAT_LIMIT}: the chains have not mixed; {what}",
            above(rhat, RHAT_LIMIT)
        ))
    } else {
        None
    }
}

/// Bulk effective sample size of a series over all chains worth trusting (Vehtari et al.
/// 2021 ask for 400 before reading R-hat).
pub(crate) const ESS_WANTED: f64 = 400.0;

/// The warning for a quantity whose R-hat passes but whose bulk ESS is below [`ESS_WANTED`]
/// (and that is not constant, see [`agrees`]), with the sweeps per chain to try.
///
/// **Why.** An R-hat from fewer effective draws is itself unreliable (Vehtari et al. 2021
/// read it only from 400 on), and the Monte Carlo error of the quantity's mean, `sd/√ESS`,
/// is larger than the summary's other figures suggest. A run that reached its most sweeps
/// with R-hat fine but K's ESS at 321 (airquality, 16,000 sweeps) said nothing of it before.
fn ess_warning(name: &str, s: &SeriesSummary, try_sweeps: u64) -> Option<String> {
    (s.rhat <= RHAT_LIMIT && s.ess_bulk < ESS_WANTED && !agrees(s)).then(|| {
        // Rounded as the summary's table shows it, unless that reads as 400.
        let mut ess = format!("{:.0}", s.ess_bulk);
        if ess.parse::<f64>().is_ok_and(|e| e >= ESS_WANTED) {
            ess = format!("{:.1}", s.ess_bulk.min(ESS_WANTED - 0.05));
        }
        format!(
            "the bulk ESS of {name} is {ess} < {ESS_WANTED}, too few effective draws to trust \
             its R-hat ({:.3}) and its estimates' precision; run longer (try `sweeps` \
             {try_sweeps})",
            s.rhat
        )
    })
}

/// The sweeps per chain to suggest when the chains have not mixed: the longest chain's
/// sweeps times the factor by which the bulk ESS `ess` falls short of [`ESS_WANTED`], at
/// least 2 and at most 10 (the ESS of unmixed chains says little beyond "much longer").
fn longer_run(chains: &[ChainSummary], ess: f64) -> u64 {
    let sweeps = chains.iter().map(|c| c.sweeps).max().unwrap_or(1).max(1);
    let factor = if ess.is_finite() && ess > 0.0 {
        (ESS_WANTED / ess).ceil().clamp(2.0, 10.0)
    } else {
        10.0
    };
    sweeps * factor as u64
}

/// What to try for a chain that never left its start, given the sampler that ran: a Gibbs
/// sampler cannot open a cluster in high dimensions, so a split-merge sampler is the cure;
/// a split-merge sampler that stayed put needs more proposals per sweep (or another start).
fn stuck_hint(sampler: &SamplerSettings) -> String {
    let more = |n: usize| (n * 10).max(10);
    match sampler.kind {
        SamplerKind::Gibbs => "start it elsewhere (`init` sva or singletons), use a \
                               split-merge sampler (`sampler` sams) or run more chains"
            .to_string(),
        SamplerKind::Sams | SamplerKind::JainNeal | SamplerKind::Subcluster => format!(
            "give it more split-merge proposals per sweep (`proposals` {}), start it \
             elsewhere (`init` singletons) or run more chains",
            more(sampler.moves.proposals)
        ),
        SamplerKind::Tgmcmc | SamplerKind::TgmcmcPaper => format!(
            "give it more tree-guided proposals per sweep (`global_moves` {}), start it \
             elsewhere (`init` singletons) or run more chains",
            more(sampler.moves.global_moves)
        ),
        _ => "start it elsewhere (`init` sva or singletons), use an exact split-merge \
              sampler (`sampler` sams) or run more chains"
            .to_string(),
    }
}

/// One chain's report.
#[derive(Clone, Debug, Serialize)]
pub struct ChainSummary {
    /// Its run directory.
    pub run: String,
    /// Its index (stream and directory `chain-<index>`).
    pub chain: u64,
    /// The run's seed.
    pub seed: u64,
    /// The sampler.
    pub sampler: String,
    /// Whether the chain ran to its budget (false for an interrupted chain).
    pub finished: bool,
    /// Sweeps done.
    pub sweeps: u64,
    /// Sampling seconds.
    pub seconds: f64,
    /// Sweeps per second of sampling.
    pub sweeps_per_second: f64,
    /// Clusters after the last sweep.
    pub n_clusters: usize,
    /// Log joint after the last sweep.
    pub log_joint: f64,
    /// Largest log joint visited.
    pub best_log_joint: f64,
    /// Sweeps left out as burn-in.
    pub burn_in: u64,
    /// Trace rows after the burn-in that the diagnostics used.
    pub draws: usize,
    /// Effective sample size of K over those rows (this chain alone).
    pub ess_n_clusters: f64,
    /// The same for the log joint.
    pub ess_log_joint: f64,
    /// Sweeps between those rows.
    pub ess_stride: u64,
    /// Per Metropolis-Hastings move, the fraction of its proposals accepted after burn-in.
    pub acceptance: BTreeMap<String, f64>,
    /// Whether the chain ended in its starting partition with its number of clusters never
    /// changed (see the runner's end state).
    pub never_moved: bool,
}

/// The summary of a set of chains.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// What the log joint is.
    pub joint: String,
    /// Per chain.
    pub chains: Vec<ChainSummary>,
    /// Sweeps between the draws of the multi-chain diagnostics.
    pub spacing: u64,
    /// How the chains' burn-in (each chain's `burn_in`) was set.
    pub burn_in_rule: BurnInRule,
    /// Multi-chain diagnostics per quantity.
    pub diagnostics: BTreeMap<String, SeriesSummary>,
    /// Posterior probability of each number of clusters, after burn-in.
    pub k_distribution: BTreeMap<usize, f64>,
    /// Dahl's least-squares point estimate over the partition draws after burn-in (a draw,
    /// with its hyperparameters, on which prediction and imputation build).
    pub point_estimate: Option<Estimate>,
    /// Which estimate is the default one (`estimate.txt`, the headline of the printed
    /// summary): `vi`, the minimiser of the expected VI, once
    /// [`Summary::add_estimates_by_loss`] has found it, else `dahl` (see
    /// [`super::estimates`] for why).
    pub default_estimate: String,
    /// The best state visited by any chain.
    pub map: Option<Estimate>,
    /// The point estimates minimising the posterior expected VI, Binder's loss and one minus
    /// the ARI, every estimate's expected losses and the credible ball around the VI
    /// estimate, once [`Summary::add_estimates_by_loss`] has found them; none without draws
    /// or beyond [`MAX_ATOM_CLUSTERS`].
    pub by_loss: Option<LossSummary>,
    /// The points the chains partition.
    #[serde(skip)]
    n_points: usize,
    /// The seed of the first run, from which the search draws.
    #[serde(skip)]
    seed: u64,
    /// What the reader should know (chains not mixed, too few draws, interrupted chains).
    pub warnings: Vec<String>,
    /// Where the partition draws after the burn-in are.
    #[serde(skip)]
    pub sources: Vec<DrawSource>,
}

/// The chains of `runs`, checked to be chains of one posterior on distinct streams.
fn check_compatible(runs: &[RunDir]) -> Result<()> {
    let first = &runs[0];
    for r in &runs[1..] {
        let differ = if r.record.fingerprint != first.record.fingerprint {
            Some("on different data")
        } else if r.record.model != first.record.model {
            Some("under different models")
        } else {
            None
        };
        if let Some(how) = differ {
            return Err(Error::Usage(format!(
                "{} and {} were run {how}: their chains sample different posteriors and \
                 cannot be merged",
                first.dir.display(),
                r.dir.display()
            )));
        }
    }
    let mut seen: BTreeMap<String, &Path> = BTreeMap::new();
    for r in runs {
        for c in r.record.spec.chain_indices() {
            let key = r.record.stream_key(c);
            if let Some(other) = seen.insert(key, &r.dir) {
                return Err(Error::Usage(format!(
                    "chain {c} of {} and of {} are the same chain (same seed, sampler and \
                     chain index): give each process its own `chain_offset` or `seed`",
                    other.display(),
                    r.dir.display()
                )));
            }
        }
    }
    Ok(())
}

/// Names of the hyperparameter columns of a trace: those that are neither the fixed columns
/// nor a move's.
fn hyper_columns(header: &[String]) -> Vec<String> {
    header
        .iter()
        .filter(|h| {
            !matches!(h.as_str(), "sweep" | "seconds" | "n_clusters" | "log_joint")
                && !h.ends_with("_proposed")
                && !h.ends_with("_accepted")
                && !h.ends_with("_mean_ln_accept")
        })
        .cloned()
        .collect()
}

/// Per chain, what the multi-chain step needs besides its report.
struct ChainSeries {
    /// Post-burn-in values per quantity.
    series: BTreeMap<String, Vec<f64>>,
    /// Sweeps between them.
    spacing: u64,
}

/// One chain's files as read: its trace's kept rows, its end (or where its trace stops) and
/// the best state it saved.
struct ChainRead {
    chain: u64,
    cols: TraceColumns,
    finished: bool,
    never_moved: bool,
    sweeps: u64,
    seconds: f64,
    n_clusters: usize,
    log_joint: f64,
    best: Option<Draw<u32>>,
    /// The burn-in given to the summary, else the run's own (`None`: chosen from the traces,
    /// [`burn_ins`]).
    given_burn_in: Option<u64>,
    /// Sweeps between kept rows.
    spacing: u64,
}

/// Reads one chain.
fn read_chain(
    run: &RunDir,
    chain: u64,
    burn_in: Option<u64>,
    warnings: &mut Vec<String>,
) -> Result<ChainRead> {
    let dir = chain_dir(&run.dir, chain);
    let trace_path = dir.join("trace.csv");
    if !trace_path.is_file() {
        return Err(Error::Usage(format!(
            "{} has no trace: chain {chain} of {} never started",
            dir.display(),
            run.dir.display()
        )));
    }
    let cols = TraceColumns::read(&trace_path, TRACE_ROWS)?;
    let end_path = dir.join("end.json");
    let end: Option<EndState> = if end_path.is_file() {
        Some(load_json(&end_path)?)
    } else {
        None
    };
    let finished = end.is_some();
    let never_moved = end.as_ref().is_some_and(|e| e.never_moved);
    let (sweeps, seconds, n_clusters, log_joint) = match &end {
        Some(e) => (e.sweeps, e.seconds, e.n_clusters, e.log_joint),
        None => {
            let last = |name| cols.last(name).unwrap_or(f64::NAN);
            warnings.push(format!(
                "chain {chain} of {} did not finish: its trace is read as far as it goes",
                run.dir.display()
            ));
            (
                last("sweep").max(0.0) as u64,
                last("seconds"),
                last("n_clusters").max(0.0) as usize,
                last("log_joint"),
            )
        }
    };
    // A finished chain wrote its best state; an interrupted one saved it with its checkpoint.
    let best_path = dir.join("best.json");
    let checkpoint_path = dir.join("checkpoint.json");
    let best: Option<Draw<u32>> = if best_path.is_file() {
        load_json::<BestDraw>(&best_path)?.draw()
    } else if checkpoint_path.is_file() {
        load_json::<ChainFile>(&checkpoint_path)?.best.draw()
    } else {
        None
    };
    let spacing = run.record.spec.thin * cols.stride();
    Ok(ChainRead {
        chain,
        cols,
        finished,
        never_moved,
        sweeps,
        seconds,
        n_clusters,
        log_joint,
        best,
        given_burn_in: burn_in.or(run.record.spec.burn_in),
        spacing,
    })
}

impl ChainRead {
    /// Its sweeps and log joints, for the choice of a burn-in.
    fn trace(&self) -> Trace<'_> {
        Trace {
            sweeps: self.cols.column("sweep").unwrap_or(&[]),
            log_joint: self.cols.column("log_joint").unwrap_or(&[]),
            length: self.sweeps,
        }
    }

    /// The values after `burn_in` sweeps of the log joint, K and every hyperparameter that
    /// moves.
    fn series(&self, burn_in: u64) -> ChainSeries {
        let first = self.cols.first_after(burn_in);
        let post = |name: &str| -> Vec<f64> {
            self.cols
                .column(name)
                .map(|v| v[first.min(v.len())..].to_vec())
                .unwrap_or_default()
        };
        let mut series = BTreeMap::new();
        for name in ["log_joint", "n_clusters"].into_iter().map(String::from) {
            let values = post(&name);
            series.insert(name, values);
        }
        for name in hyper_columns(self.cols.header()) {
            // A hyperparameter the model holds fixed has nothing to diagnose.
            let all = self.cols.column(&name).unwrap_or(&[]);
            if all.windows(2).any(|w| w[0] != w[1]) {
                let values = post(&name);
                series.insert(name, values);
            }
        }
        ChainSeries {
            series,
            spacing: self.spacing,
        }
    }

    /// Its report after `burn_in` sweeps, whose values are `series`.
    fn report(&self, run: &RunDir, burn_in: u64, series: &ChainSeries) -> ChainSummary {
        let first = self.cols.first_after(burn_in);
        let post = |name: &str| -> &[f64] {
            self.cols
                .column(name)
                .map(|v| &v[first.min(v.len())..])
                .unwrap_or_default()
        };
        let mut acceptance = BTreeMap::new();
        for h in self.cols.header() {
            if let Some(name) = h.strip_suffix("_proposed") {
                let proposed: f64 = post(h).iter().sum();
                let accepted: f64 = post(&format!("{name}_accepted")).iter().sum();
                if proposed > 0.0 {
                    acceptance.insert(name.to_string(), accepted / proposed);
                }
            }
        }
        let traced_best = self.cols.max("log_joint").unwrap_or(f64::NEG_INFINITY);
        let best_log_joint = self
            .best
            .as_ref()
            .map_or(traced_best, |b| b.log_joint.max(traced_best));
        ChainSummary {
            run: run.dir.display().to_string(),
            chain: self.chain,
            seed: run.record.spec.seed,
            sampler: run.record.spec.sampler.kind.name().to_string(),
            finished: self.finished,
            sweeps: self.sweeps,
            seconds: self.seconds,
            sweeps_per_second: if self.seconds > 0.0 {
                self.sweeps as f64 / self.seconds
            } else {
                f64::NAN
            },
            n_clusters: self.n_clusters,
            log_joint: self.log_joint,
            best_log_joint,
            burn_in,
            draws: series.series["n_clusters"].len(),
            ess_n_clusters: effective_sample_size(&series.series["n_clusters"]),
            ess_log_joint: effective_sample_size(&series.series["log_joint"]),
            ess_stride: self.spacing,
            acceptance,
            never_moved: self.never_moved,
        }
    }
}

/// How the summary's burn-in was set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BurnInRule {
    /// Given to the summary or recorded by the run, for every chain.
    Given,
    /// Half of each chain (where none was given).
    Half,
    /// The sweep by which every chain reached the median log joint of the chains' second
    /// halves (where none was given), under which the chains agree, and better than under
    /// half ([`super::burn_in`]).
    Hitting,
}

/// The burn-in of each chain and its post-burn-in values: the given or the run's burn-in
/// where there is one, else half of the chain, or the chains' hitting time where the chains
/// agree under it and better than under half ([`super::burn_in`]). Cost: reading the kept
/// rows (O(R) for R over all chains) and, where the hitting time is a candidate, the
/// diagnostics twice (O(R log R)).
fn burn_ins(chains: &[&ChainRead]) -> (Vec<u64>, Vec<ChainSeries>, BurnInRule) {
    let half: Vec<u64> = chains
        .iter()
        .map(|c| c.given_burn_in.unwrap_or(c.sweeps / 2))
        .collect();
    let of = |burn: &[u64]| -> Vec<ChainSeries> {
        chains.iter().zip(burn).map(|(c, &b)| c.series(b)).collect()
    };
    let open: Vec<usize> = (0..chains.len())
        .filter(|&i| chains[i].given_burn_in.is_none())
        .collect();
    let traces: Vec<Trace> = open.iter().map(|&i| chains[i].trace()).collect();
    let rule = if open.is_empty() {
        BurnInRule::Given
    } else {
        BurnInRule::Half
    };
    let Some(hit) = hitting(&traces) else {
        let series = of(&half);
        return (half, series, rule);
    };
    let mut early = half.clone();
    for (&i, b) in open.iter().zip(hit) {
        early[i] = b;
    }
    let half_series = of(&half);
    let early_series = of(&early);
    if prefer_hitting(agreement(&half_series), agreement(&early_series)) {
        (early, early_series, BurnInRule::Hitting)
    } else {
        (half, half_series, rule)
    }
}

/// How well chains with these post-burn-in values agree ([`Agreement`]).
fn agreement(series: &[ChainSeries]) -> Agreement {
    let (diagnostics, _) = diagnose(series);
    let least_ess = ["log_joint", "n_clusters"]
        .iter()
        .filter_map(|name| diagnostics.get(*name))
        .map(|s| {
            if is_constant(s) {
                f64::INFINITY
            } else if s.ess_bulk.is_nan() {
                0.0
            } else {
                s.ess_bulk
            }
        })
        .fold(f64::INFINITY, f64::min);
    Agreement {
        all_agree: diagnostics.values().all(agrees),
        least_ess,
    }
}

/// The multi-chain diagnostics of every quantity that all chains trace, and the sweeps between
/// their draws.
fn diagnose(series: &[ChainSeries]) -> (BTreeMap<String, SeriesSummary>, u64) {
    let names: Vec<String> = series[0]
        .series
        .keys()
        .filter(|k| series.iter().all(|s| s.series.contains_key(*k)))
        .cloned()
        .collect();
    let mut diagnostics = BTreeMap::new();
    let mut spacing = 1;
    for name in &names {
        let input: Vec<(&[f64], u64)> = series
            .iter()
            .map(|s| (s.series[name].as_slice(), s.spacing))
            .collect();
        let (aligned, common) = common_spacing(&input);
        spacing = common;
        let refs: Vec<&[f64]> = aligned.iter().map(Vec::as_slice).collect();
        diagnostics.insert(name.clone(), SeriesSummary::of(&refs));
    }
    (diagnostics, spacing)
}

/// Relative spread below which a quantity counts as constant ([`agrees`]): its standard
/// deviation over all draws at most this share of its mean's magnitude (at least 1). Chains
/// at one partition compute its log joint along different paths (statistics updated point by
/// point), which differ in the last digits (2·10⁻¹² nats on 1,000 points); a distinct
/// partition moves the log joint by far more.
const CONSTANT_RELATIVE: f64 = 1e-10;

/// Whether a quantity's chains agree: R-hat at most `RHAT_LIMIT` (1.01) and a bulk ESS of
/// at least `ESS_WANTED` (400), or one and the same value, up to rounding
/// (`CONSTANT_RELATIVE`, 10⁻¹⁰ of its magnitude), in every draw of every chain.
///
/// **Why constant agrees.** R-hat and ESS compare variances within and between chains; a
/// series that never changes has neither, so they say nothing about it, and asking for 400
/// effective draws of it doubled chains that all held K = 8 and one log joint on 8
/// well-separated clusters until the most sweeps. Chains from different random starts
/// (each its own SVA order) that all hold the same value have agreed as much as a trace can
/// show. Chains each constant at *different* values have a larger spread and an infinite
/// R-hat, so they still disagree. Cost: O(1).
pub fn agrees(s: &SeriesSummary) -> bool {
    is_constant(s) || (s.rhat <= RHAT_LIMIT && s.ess_bulk >= ESS_WANTED)
}

/// Whether a quantity held one value, up to rounding ([`CONSTANT_RELATIVE`]), in every draw
/// of every chain. Cost: O(1).
fn is_constant(s: &SeriesSummary) -> bool {
    s.draws > 0 && s.sd <= CONSTANT_RELATIVE * s.mean.abs().max(1.0)
}

/// What the chains of a run say at the end of a round of an automatic budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoundVerdict {
    /// Every traced quantity agrees ([`agrees`]).
    Agree,
    /// They disagree, and these chains sit apart from the best one where more sweeps are
    /// unlikely to bring them ([`super::modes::stuck_apart`]).
    StuckApart(Vec<u64>),
    /// They disagree; more sweeps may settle it.
    Disagree,
}

/// What the chains of `run`, as their traces stand (each read to its last row; the burn-in its
/// summary would leave out, [`BurnInRule`], left out), say (see [`super::AutoBudget`]).
/// Cost: reading the traces, O(S log S) for S rows.
pub fn round_verdict(run: &RunDir) -> Result<RoundVerdict> {
    let mut ignored = Vec::new();
    let files = run
        .record
        .spec
        .chain_indices()
        .map(|c| read_chain(run, c, None, &mut ignored))
        .collect::<Result<Vec<_>>>()?;
    let (_, series, _) = burn_ins(&files.iter().collect::<Vec<_>>());
    let mut places = Vec::new();
    for (f, s) in files.iter().zip(&series) {
        if let (Some(k), Some(lj)) = (s.series.get("n_clusters"), s.series.get("log_joint")) {
            places.extend(ChainPlace::of(f.chain, String::new(), k, lj));
        }
    }
    let (diagnostics, _) = diagnose(&series);
    if diagnostics.values().all(agrees) {
        return Ok(RoundVerdict::Agree);
    }
    let stuck = stuck_apart(&places);
    Ok(if stuck.is_empty() {
        RoundVerdict::Disagree
    } else {
        RoundVerdict::StuckApart(stuck)
    })
}

impl Summary {
    /// The report of every chain of `runs` (checked to sample one posterior on distinct
    /// streams), leaving out `burn_in` sweeps per chain (default: each run's own setting,
    /// else half of each chain).
    pub fn of(runs: &[RunDir], burn_in: Option<u64>) -> Result<Self> {
        if runs.is_empty() {
            return Err(Error::Empty("no run to report on".into()));
        }
        let joint = runs[0].record.model.build_prior()?.joint_label();
        check_compatible(runs)?;
        let mut warnings = Vec::new();
        let mut chains = Vec::new();
        let mut series = Vec::new();
        let mut sources = Vec::new();
        let mut bests = Vec::new();
        let mut last_states = Vec::new();
        let mut files = Vec::new();
        for run in runs {
            for c in run.record.spec.chain_indices() {
                files.push((run, read_chain(run, c, burn_in, &mut warnings)?));
            }
        }
        let read: Vec<&ChainRead> = files.iter().map(|(_, f)| f).collect();
        let (burn, chosen, burn_in_rule) = burn_ins(&read);
        for (((run, f), b), s) in files.into_iter().zip(burn).zip(chosen) {
            let c = f.chain;
            let report = f.report(run, b, &s);
            let path = chain_dir(&run.dir, c).join("draws.jsonl");
            if path.is_file() {
                sources.push(DrawSource {
                    run: report.run.clone(),
                    chain: c,
                    path,
                    after: report.burn_in,
                });
            }
            if let Some(b) = f.best {
                bests.push((report.run.clone(), c, b));
            }
            last_states.push(chain_dir(&run.dir, c).join("labels.txt"));
            chains.push(report);
            series.push(s);
        }
        let (diagnostics, spacing) = diagnose(&series);
        let mut k_distribution = BTreeMap::new();
        let input: Vec<(&[f64], u64)> = series
            .iter()
            .map(|s| (s.series["n_clusters"].as_slice(), s.spacing))
            .collect();
        let (aligned, _) = common_spacing(&input);
        let total: usize = aligned.iter().map(Vec::len).sum();
        for &k in aligned.iter().flatten() {
            *k_distribution.entry(k as usize).or_insert(0.0) += 1.0 / total as f64;
        }
        if total == 0 {
            warnings
                .push("no trace rows after the burn-in: lower `burn_in` or run longer".to_string());
        }
        // Chains that all stayed in one and the same state agree, which is no sign of a
        // stuck chain (data without structure from a one-cluster start); a chain that stayed
        // put while another went elsewhere, or a lone chain that never moved, is reported.
        let all_agree = chains.len() > 1
            && chains.iter().all(|c| {
                c.never_moved
                    && c.n_clusters == chains[0].n_clusters
                    && c.log_joint == chains[0].log_joint
            });
        let sampler = &runs[0].record.spec.sampler;
        for c in chains.iter().filter(|c| c.never_moved && !all_agree) {
            warnings.push(format!(
                "chain {} of {} ended in the partition it started from (K = {}) and its \
                 number of clusters never changed in {} sweeps: it may be stuck there; {}",
                c.chain,
                c.run,
                c.n_clusters,
                c.sweeps,
                stuck_hint(sampler)
            ));
        }
        let n_points = runs[0].record.fingerprint.n;
        for c in &chains {
            if n_points >= 8 && c.n_clusters * CROWDED_SHARE >= n_points {
                warnings.push(format!(
                    "chain {} ended with K = {} clusters for {n_points} points: clusters this small \
                     mean the kernel's prior does not fit the data (try `kernel` diag or fewer \
                     dimensions)",
                    c.chain, c.n_clusters
                ));
            }
        }
        let places: Vec<ChainPlace> = chains
            .iter()
            .zip(&series)
            .zip(&last_states)
            .filter_map(|((c, s), last)| {
                ChainPlace::of(
                    c.chain,
                    last.display().to_string(),
                    s.series.get("n_clusters")?,
                    s.series.get("log_joint")?,
                )
            })
            .collect();
        // Where the advice below names stuck chains, more sweeps are not what settles the
        // log joint and K, so their warnings do not suggest them.
        let stuck = !far_below_best(&places).is_empty();
        let mut mixed = true;
        for (name, s) in &diagnostics {
            let modes = matches!(name.as_str(), "log_joint" | "n_clusters");
            let try_sweeps = (!(stuck && modes)).then(|| longer_run(&chains, s.ess_bulk));
            if let Some(w) = rhat_warning(name, s.rhat, try_sweeps) {
                warnings.push(w);
                mixed &= !modes;
            }
            warnings.extend(ess_warning(name, s, longer_run(&chains, s.ess_bulk)));
        }
        if !mixed {
            let command = runs[0].record.commands.first().cloned().unwrap_or_default();
            // The longer run the R-hat warnings suggest, and its time at the slowest chain's
            // speed.
            let ess = ["log_joint", "n_clusters"]
                .iter()
                .filter_map(|q| diagnostics.get(*q).map(|s| s.ess_bulk))
                .fold(f64::INFINITY, f64::min);
            let sweeps = longer_run(&chains, ess);
            let speed = chains
                .iter()
                .map(|c| c.sweeps_per_second)
                .fold(f64::INFINITY, f64::min);
            let longer =
                (speed.is_finite() && speed > 0.0).then(|| (sweeps, sweeps as f64 / speed));
            warnings.extend(mode_advice(&places, &command, longer));
        }
        let seed = runs[0].record.spec.seed;
        let point_estimate = dahl(&sources, seed)?;
        if point_estimate.is_none() {
            warnings.push(
                "no partition draws after the burn-in: no point estimate (lower `burn_in` or \
                 run longer)"
                    .to_string(),
            );
        }
        let map = bests
            .into_iter()
            .filter(|(_, _, b)| !b.log_joint.is_nan())
            .max_by(|a, b| a.2.log_joint.total_cmp(&b.2.log_joint))
            .map(|(run, chain, d)| (run, chain, d.widen()))
            .map(|(run, chain, d)| Estimate {
                method: "best state visited".to_string(),
                run,
                chain,
                sweep: d.sweep,
                log_joint: d.log_joint,
                n_clusters: d.labels.iter().max().map_or(0, |m| m + 1),
                hyper: d.hyper,
                among: 1,
                labels: d.labels,
            });
        Ok(Summary {
            by_loss: None,
            default_estimate: "dahl".to_string(),
            n_points,
            seed,
            joint: joint.to_string(),
            chains,
            burn_in_rule,
            spacing,
            diagnostics,
            k_distribution,
            point_estimate,
            map,
            warnings,
            sources,
        })
    }

    /// Adds the point estimates by loss ([`super::estimates`]): the searches for the
    /// partitions minimising the expected VI, Binder's loss (both with parameter `loss_a`, 1
    /// for the plain losses) and one minus the ARI over the draws, the expected losses of
    /// every estimate and the credible ball, and makes the VI estimate the default one; a
    /// warning instead beyond [`MAX_ATOM_CLUSTERS`] (atoms, groups of points with the same
    /// cluster in every draw, times clusters), where Dahl's estimate stays the default.
    /// Separate from [`Summary::of`] because the searches cost seconds (about 3.7 s each for
    /// 5,000 points and 1,000 draws on two cores), which a summary read only for Dahl's
    /// estimate, as by prediction and plots, need not pay. Errors unless `loss_a` is in
    /// (0, 2).
    pub fn add_estimates_by_loss(&mut self, loss_a: f64) -> Result<()> {
        let found = loss_summary(
            &self.sources,
            self.n_points,
            self.point_estimate.as_ref(),
            self.map.as_ref(),
            self.seed,
            loss_a,
        )?;
        match found {
            ByLoss::Found(summary) => {
                self.by_loss = Some(*summary);
                self.default_estimate = "vi".to_string();
            }
            ByLoss::NoDraws => self.by_loss = None,
            ByLoss::TooManyAtoms(atoms, clusters) => {
                self.by_loss = None;
                self.warnings.push(format!(
                    "no point estimates by loss (VI, Binder, ARI) or credible ball: the draws \
                     part the {} points into {atoms} groups that never separate, in {clusters:.1} \
                     clusters on average, and the search is limited to {MAX_ATOM_CLUSTERS} \
                     groups times clusters, so the point estimate (estimate.txt) is Dahl's \
                     least-squares draw, not the VI estimate",
                    self.n_points
                ));
            }
        }
        Ok(())
    }

    /// The default point estimate's labels ([`Summary::default_estimate`]): the VI estimate's
    /// once found, else Dahl's; none without draws.
    pub fn default_labels(&self) -> Option<&[usize]> {
        let vi = self
            .by_loss
            .as_ref()
            .and_then(|b| b.estimates.first())
            .map(|e| e.labels.as_slice());
        vi.or(self.point_estimate.as_ref().map(|e| e.labels.as_slice()))
    }

    /// Writes `summary.json` (`extra`'s fields, then the report's), `estimate.txt` (the
    /// default point estimate's labels, [`Summary::default_labels`]), `estimate-dahl.txt`
    /// (Dahl's), `map.txt` (the best state's), and with the estimates by loss
    /// `estimate-vi.txt`, `estimate-binder.txt`, `estimate-1-ari.txt` and the credible ball's
    /// bounds `ball-horizontal.txt`, `ball-upper.txt`, `ball-lower.txt` to `dir`.
    pub fn write(&self, dir: &Path, extra: serde_json::Value) -> Result<()> {
        let mut summary = match extra {
            serde_json::Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        if let serde_json::Value::Object(mine) = serde_json::to_value(self)
            .map_err(|e| Error::Usage(format!("cannot write the summary: {e}")))?
        {
            summary.extend(mine);
        }
        let text = serde_json::to_string_pretty(&serde_json::Value::Object(summary))
            .map_err(|e| Error::Usage(format!("cannot write the summary: {e}")))?;
        super::write_atomic(&dir.join("summary.json"), text.as_bytes())?;
        if let Some(labels) = self.default_labels() {
            crate::data::load::write_labels(dir.join("estimate.txt"), labels)?;
        }
        if let Some(e) = &self.point_estimate {
            crate::data::load::write_labels(dir.join("estimate-dahl.txt"), &e.labels)?;
        }
        if let Some(e) = &self.map {
            crate::data::load::write_labels(dir.join("map.txt"), &e.labels)?;
        }
        if let Some(by_loss) = &self.by_loss {
            for e in &by_loss.estimates {
                let name = format!("estimate-{}.txt", short_name(e.loss));
                crate::data::load::write_labels(dir.join(name), &e.labels)?;
            }
            let ball = &by_loss.credible_ball;
            for (name, bound) in [
                ("ball-horizontal.txt", &ball.horizontal),
                ("ball-upper.txt", &ball.vertical_upper),
                ("ball-lower.txt", &ball.vertical_lower),
            ] {
                crate::data::load::write_labels(dir.join(name), &bound.labels)?;
            }
        }
        Ok(())
    }

    /// The human summary: a line per chain, a table of the multi-chain diagnostics, the
    /// distribution of K, the point estimates and any warning.
    pub fn print(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let several_runs = self.chains.windows(2).any(|w| w[0].run != w[1].run);
        for c in &self.chains {
            let run = if several_runs {
                format!("{} ", c.run)
            } else {
                String::new()
            };
            writeln!(
                out,
                "{run}chain {}: {} sweeps in {:.2} s, K = {}, {} = {:.3}, ESS(K) = {:.0}",
                c.chain,
                c.sweeps,
                c.seconds,
                c.n_clusters,
                self.joint,
                c.log_joint,
                c.ess_n_clusters
            )?;
        }
        let burn: Vec<u64> = self.chains.iter().map(|c| c.burn_in).collect();
        let burn = if burn.iter().all(|&b| b == burn[0]) {
            match burn[0] {
                1 => "1 sweep".to_string(),
                b => format!("{b} sweeps"),
            }
        } else {
            format!(
                "{}-{} sweeps",
                burn.iter().min().unwrap_or(&0),
                burn.iter().max().unwrap_or(&0)
            )
        };
        let chains = match self.chains.len() {
            1 => "1 chain".to_string(),
            c => format!("{c} chains"),
        };
        let apart = match self.spacing {
            1 => "a draw from every sweep".to_string(),
            s => format!("draws {s} sweeps apart"),
        };
        let why = match self.burn_in_rule {
            BurnInRule::Hitting => {
                "; by then every chain had reached the median log joint of the chains' second \
                 halves"
            }
            BurnInRule::Given | BurnInRule::Half => "",
        };
        writeln!(
            out,
            "after a burn-in of {burn} per chain ({chains}, {apart}{why}):"
        )?;
        writeln!(
            out,
            "  {:<12} {:>12} {:>10} {:>9} {:>9} {:>7}",
            "quantity", "mean", "sd", "ESS bulk", "ESS tail", "R-hat"
        )?;
        let order = ["log_joint", "n_clusters"];
        let rest = self
            .diagnostics
            .keys()
            .filter(|k| !order.contains(&k.as_str()));
        // Statistics that need more draws than there are print as a dash; an infinite R-hat
        // (chains each constant at its own value) as `inf`.
        let num = |v: f64, digits: usize, width: usize| {
            if v.is_finite() {
                format!("{v:>width$.digits$}")
            } else if v == f64::INFINITY {
                format!("{:>width$}", "inf")
            } else {
                format!("{:>width$}", "-")
            }
        };
        for name in order.iter().map(|s| s.to_string()).chain(rest.cloned()) {
            if let Some(s) = self.diagnostics.get(&name) {
                writeln!(
                    out,
                    "  {:<12} {} {} {} {} {}",
                    name,
                    num(s.mean, 3, 12),
                    num(s.sd, 3, 10),
                    num(s.ess_bulk, 0, 9),
                    num(s.ess_tail, 0, 9),
                    num(s.rhat, 3, 7)
                )?;
            }
        }
        let ks: Vec<String> = self
            .k_distribution
            .iter()
            .map(|(k, p)| format!("{k}: {p:.3}"))
            .collect();
        if !ks.is_empty() {
            writeln!(out, "P(K): {}", ks.join("  "))?;
        }
        let vi = self
            .by_loss
            .as_ref()
            .and_then(|b| Some((b, b.estimates.first()?)));
        if let Some((b, e)) = vi {
            let a = match b.loss_a {
                1.0 => String::new(),
                a => format!(" with a = {a}"),
            };
            writeln!(
                out,
                "point estimate (estimate.txt: the minimiser of the expected VI{a}, among {} \
                 draws): K = {}, expected VI = {:.4}",
                e.among, e.n_clusters, e.expected_loss
            )?;
        }
        if let Some(e) = &self.point_estimate {
            let role = match vi {
                Some(_) => "Dahl's estimate (estimate-dahl.txt",
                None => "point estimate (estimate.txt: Dahl's",
            };
            writeln!(
                out,
                "{role}, among {} draws): K = {}, {} = {:.3} (chain {}, sweep {})",
                e.among, e.n_clusters, self.joint, e.log_joint, e.chain, e.sweep
            )?;
        }
        if let Some(e) = &self.map {
            writeln!(
                out,
                "best state visited: K = {}, {} = {:.3} (chain {}, sweep {})",
                e.n_clusters, self.joint, e.log_joint, e.chain, e.sweep
            )?;
        }
        if let Some(by_loss) = &self.by_loss {
            let mut k: BTreeMap<String, usize> = by_loss
                .estimates
                .iter()
                .map(|e| (short_name(e.loss).to_string(), e.n_clusters))
                .collect();
            k.extend(
                self.point_estimate
                    .as_ref()
                    .map(|e| ("dahl".into(), e.n_clusters)),
            );
            k.extend(self.map.as_ref().map(|e| ("map".into(), e.n_clusters)));
            print_by_loss(by_loss, &k, out)?;
        }
        for w in &self.warnings {
            writeln!(out, "warning: {w}")?;
        }
        Ok(())
    }
}

/// The point estimates by loss as a table of expected losses (rows the estimates with their
/// numbers of clusters `k`, columns the losses), then the credible ball.
fn print_by_loss(
    by_loss: &LossSummary,
    k: &BTreeMap<String, usize>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let a = match by_loss.loss_a {
        1.0 => String::new(),
        a => format!(", VI and Binder with a = {a}"),
    };
    writeln!(
        out,
        "point estimates by loss (expected loss over {} draws, lower is better{a}):",
        by_loss.draws
    )?;
    let losses: Vec<String> = by_loss
        .estimates
        .iter()
        .map(|e| short_name(e.loss).to_string())
        .collect();
    let header: String = losses.iter().map(|l| format!(" {l:>9}")).collect();
    writeln!(out, "  {:<8} {:>5}{header}", "estimate", "K")?;
    for name in ["vi", "binder", "1-ari", "dahl", "map"] {
        let Some(row) = by_loss.expected_losses.get(name) else {
            continue;
        };
        let clusters = k.get(name).map_or("-".to_string(), |k| k.to_string());
        let values: String = losses
            .iter()
            .map(|l| format!(" {:>9.4}", row.get(l).copied().unwrap_or(f64::NAN)))
            .collect();
        writeln!(out, "  {name:<8} {clusters:>5}{values}")?;
    }
    let b = &by_loss.credible_ball;
    // The ball is measured in the same (generalised) VI as the estimate.
    let vi = match by_loss.loss_a {
        1.0 => "VI".to_string(),
        a => format!("VI(a = {a})"),
    };
    writeln!(
        out,
        "{:.0}% credible ball around the VI estimate: {vi} radius {:.3} ({} of {} draws \
         inside); horizontal bound K = {} ({vi} {:.3}), vertical upper K = {} ({vi} {:.3}), \
         vertical lower K = {} ({vi} {:.3})",
        100.0 * BALL_LEVEL,
        b.radius,
        b.inside,
        b.among,
        b.horizontal.n_clusters,
        b.horizontal.distance,
        b.vertical_upper.n_clusters,
        b.vertical_upper.distance,
        b.vertical_lower.n_clusters,
        b.vertical_lower.distance
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_above_a_limit_are_shown_above_it() {
        assert_eq!(above(1.0104, 1.01), "1.0104");
        assert_eq!(above(1.5, 1.01), "1.500");
        assert_eq!(above(1.0100001, 1.01), "1.0100001");
    }

    #[test]
    fn rhat_warnings_name_the_value_and_what_to_try() {
        assert_eq!(rhat_warning("log_joint", 1.005, Some(2000)), None);
        assert_eq!(rhat_warning("log_joint", f64::NAN, Some(2000)), None);
        let w = rhat_warning("log_joint", 1.2, Some(2000)).unwrap();
        assert!(w.starts_with("R-hat of log_joint is 1.200 > 1.01"), "{w}");
        assert!(w.ends_with("(try `sweeps` 2000)"), "{w}");
        let w = rhat_warning("n_clusters", f64::INFINITY, Some(10000)).unwrap();
        assert!(
            w.starts_with("R-hat of n_clusters is infinite: every chain kept one value"),
            "{w}"
        );
        assert!(w.ends_with("(try `sweeps` 10000)"), "{w}");
        let w = rhat_warning("n_clusters", 4.5, None).unwrap();
        assert!(
            w.ends_with("more sweeps are unlikely to settle it (where the chains sit, below)"),
            "{w}"
        );
    }

    #[test]
    fn ess_warnings_come_only_where_r_hat_passes_on_too_few_draws() {
        let series = |rhat: f64, ess_bulk: f64, sd: f64| SeriesSummary {
            chains: 4,
            draws: 4000,
            mean: 8.2,
            sd,
            ess_bulk,
            ess_tail: ess_bulk,
            rhat,
        };
        let w = ess_warning("n_clusters", &series(1.003, 321.4, 0.4), 32000).unwrap();
        assert!(
            w.starts_with("the bulk ESS of n_clusters is 321 < 400, too few effective draws"),
            "{w}"
        );
        assert!(w.contains("its R-hat (1.003)"), "{w}");
        assert!(w.ends_with("(try `sweeps` 32000)"), "{w}");
        let w = ess_warning("n_clusters", &series(1.003, 399.7, 0.4), 10).unwrap();
        assert!(
            w.starts_with("the bulk ESS of n_clusters is 399.7 < 400"),
            "{w}"
        );
        // Enough draws; R-hat's own warning; a constant series; a series too short to judge.
        assert_eq!(
            ess_warning("n_clusters", &series(1.003, 400.0, 0.4), 10),
            None
        );
        assert_eq!(
            ess_warning("n_clusters", &series(1.2, 100.0, 0.4), 10),
            None
        );
        assert_eq!(
            ess_warning("n_clusters", &series(f64::NAN, f64::NAN, 0.0), 10),
            None
        );
        assert_eq!(ess_warning("n_clusters", &series(1.0, 50.0, 0.0), 10), None);
    }
}
