//! Throughput of the marginal samplers on the paper's `toy` and `10k` data sets, under the
//! reference model (DP with α = 1, Normal-Wishart hyperparameters from the data as in the
//! reference code, MATH §2.1), measured at a converged state: the ground-truth partition.
//!
//! Run:
//!
//! ```text
//! cargo run --release --example sampler_speed            # toy and 10k
//! cargo run --release --example sampler_speed -- toy 5   # one data set, 5 s per sampler
//! cargo run --release --example sampler_speed -- 10k 5 gibbs  # one sampler only
//! ```
//!
//! It prints, per data set, collapsed Gibbs sweeps/s, SAMS and Jain-Neal (10 launch scans)
//! proposals/s, and "SM sweeps"/s (one Jain-Neal proposal then one Gibbs sweep, the reference
//! code's split-merge sweep), each with its ratio to the reference code's speed in
//! `../shared/docs/REFERENCE_FIGURES.md` where that figure exists. Rates are per second of
//! this thread's CPU time, as the reference figures are, so that other processes on the
//! machine disturb them less.
//!
//! Data are read from `../shared/data/{toy,10k}/X.txt` (relative to the repository root;
//! the environment variable `NRMM_DATA_DIR` overrides the folder); a missing data set is
//! skipped with a message. The start state is the partition in `gt_labels.txt` next to
//! `X.txt`. Without a label
//! file, the chain is burned in by collapsed Gibbs sweeps from a single cluster until the log
//! joint stops improving, and the timing starts from there. Each sampler runs from a fresh
//! copy of that state with its own seeded stream.

use std::path::{Path, PathBuf};
use std::sync::Arc;
#[path = "support/cpu_clock.rs"]
mod cpu_clock;
use cpu_clock::CpuClock;
use std::time::Duration;

use nrmm::data::load::{load_dense, load_labels};
use nrmm::kernel::{ConjugateKernel, NormalWishart, NwHyper};
use nrmm::partition::Partition;
use nrmm::prior::Dp;
use nrmm::rng::{NrmmRng, SeedPlan};
use nrmm::sampler::{Gibbs, GibbsScan, JainNeal, Move, RngChooser, Sams, State};

/// Reference code's speed on a data set (REFERENCE_FIGURES.md, DP rows).
struct Reference {
    gibbs: Option<f64>,
    sm_sweep: Option<f64>,
}

fn main() -> nrmm::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let which: Vec<&str> = match args.first().map(String::as_str) {
        Some(name) if name == "toy" || name == "10k" => vec![name],
        Some(name) => {
            return Err(nrmm::Error::Usage(format!(
                "data set must be toy or 10k, got {name:?}"
            )))
        }
        None => vec!["toy", "10k"],
    };
    let only = args.get(2).cloned();
    let seconds: f64 = match args.get(1) {
        Some(s) => s.parse().map_err(|_| {
            nrmm::Error::Usage(format!("seconds per sampler must be a number, got {s:?}"))
        })?,
        None => 3.0,
    };
    let budget = Duration::from_secs_f64(seconds);
    for name in which {
        let reference = match name {
            "toy" => Reference {
                gibbs: Some(66.9),
                sm_sweep: Some(51.6),
            },
            _ => Reference {
                gibbs: Some(0.40),
                sm_sweep: None,
            },
        };
        let dir = data_root().join(name);
        let x_path = dir.join("X.txt");
        if !x_path.exists() {
            println!("{name}: {} not found, skipped", x_path.display());
            continue;
        }
        run_data_set(name, &dir, &reference, budget, only.as_deref())?;
    }
    Ok(())
}

fn run_data_set(
    name: &str,
    dir: &Path,
    reference: &Reference,
    budget: Duration,
    only: Option<&str>,
) -> nrmm::Result<()> {
    let data = load_dense(dir.join("X.txt"))?;
    let hyper = NwHyper::from_data(&data)?;
    let kernel = NormalWishart::new(Arc::new(data), hyper)?;
    let prior = Dp::new(1.0)?;
    let plan = SeedPlan::new(20_151_205);
    let labels_path = dir.join("gt_labels.txt");
    let start = if labels_path.exists() {
        let labels = load_labels(&labels_path, kernel.n_points())?;
        State {
            partition: Partition::from_labels(&kernel, &labels)?,
            prior,
        }
    } else {
        burn_in(&kernel, prior, &mut plan.chain(99))?
    };
    println!(
        "{name}: n = {}, d = {}, start K = {}, ln p(X, partition | alpha) = {:.6}",
        start.partition.n(),
        kernel.dim(),
        start.partition.n_clusters(),
        start.ln_joint()
    );
    let gibbs = || -> Box<dyn Move<NormalWishart, Dp>> {
        Box::new(Gibbs::new(GibbsScan::Full).expect("a full scan is valid"))
    };
    let jain_neal = || -> Box<dyn Move<NormalWishart, Dp>> { Box::new(JainNeal::new(10)) };
    let samplers: [(&str, &str, Option<f64>, Moves); 4] = [
        ("gibbs", "Gibbs sweeps/s", reference.gibbs, vec![gibbs()]),
        (
            "sams",
            "SAMS proposals/s",
            None,
            vec![Box::new(Sams::new())],
        ),
        ("jn", "Jain-Neal proposals/s", None, vec![jain_neal()]),
        (
            "sm",
            "SM sweeps/s (1 JN + 1 Gibbs)",
            reference.sm_sweep,
            vec![jain_neal(), gibbs()],
        ),
    ];
    for (stream, (key, what, reference, mut moves)) in samplers.into_iter().enumerate() {
        if only.is_some_and(|o| o != key) {
            continue;
        }
        let r = rate(
            &kernel,
            &start,
            &mut plan.chain(stream as u64),
            budget,
            &mut moves,
        )?;
        report(what, r, reference);
    }
    Ok(())
}

/// The shared data folder: `$NRMM_DATA_DIR` if set, else `../shared/data` from the
/// repository root.
fn data_root() -> PathBuf {
    std::env::var_os("NRMM_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data"))
}

type Moves = Vec<Box<dyn Move<NormalWishart, Dp>>>;

/// Steps per CPU second of `schedule` run in turn from a copy of `start`, over about `budget`
/// of this thread's CPU time (at least 3 steps).
fn rate(
    kernel: &NormalWishart,
    start: &State<NormalWishart, Dp>,
    rng: &mut NrmmRng,
    budget: Duration,
    schedule: &mut Moves,
) -> nrmm::Result<f64> {
    let mut state = start.clone();
    let clock = CpuClock::start();
    let mut steps = 0u64;
    while steps < 3 || clock.elapsed() < budget {
        for mv in schedule.iter_mut() {
            mv.step(kernel, &mut state, &mut RngChooser::new(rng))?;
        }
        steps += 1;
    }
    Ok(steps as f64 / clock.elapsed().as_secs_f64())
}

/// Collapsed Gibbs sweeps from one cluster until 20 sweeps in a row fail to raise the best
/// log joint seen (at most 2000 sweeps).
fn burn_in(
    kernel: &NormalWishart,
    prior: Dp,
    rng: &mut NrmmRng,
) -> nrmm::Result<State<NormalWishart, Dp>> {
    let mut state = State {
        partition: Partition::single(kernel),
        prior,
    };
    let mut gibbs = Gibbs::new(GibbsScan::Full)?;
    let mut best = f64::NEG_INFINITY;
    let mut stale = 0;
    for _ in 0..2000 {
        gibbs.step(kernel, &mut state, &mut RngChooser::new(rng))?;
        let lj = state.ln_joint();
        if lj > best + 1e-9 {
            best = lj;
            stale = 0;
        } else {
            stale += 1;
            if stale == 20 {
                break;
            }
        }
    }
    Ok(state)
}

fn report(what: &str, rate: f64, reference: Option<f64>) {
    match reference {
        Some(r) => println!(
            "  {what:<30} {rate:>12.1}   ({:.0}x the reference {r})",
            rate / r
        ),
        None => println!("  {what:<30} {rate:>12.1}"),
    }
}
