//! The automatic budget ([`Budget::Auto`]): chains lengthened in rounds until they agree. A
//! run that needs more than one round is exactly the fixed-length run of the length it ended
//! at (the rounds never touch a chain's draws); it stops at the first round whose traces pass
//! the R-hat and ESS test and never past its most sweeps; chains that all hold one and the
//! same value of a quantity agree on it; chains that start where the posterior is are judged
//! after their hitting time, not half their draws; and a run stopped at a round's end and resumed with
//! the automatic budget makes the same decisions and the same chains. The command line's
//! default sampler follows the number of points, and its header says so.

use nrmm::data::generate::{gaussian_mixture, partition_equal, NormalWishartSampler};
use nrmm::data::{Dataset, DenseData};
use nrmm::diagnostics::SeriesSummary;
use nrmm::model::{Model, ModelSpec};
use nrmm::rng::SeedPlan;
use nrmm::run::summary::BurnInRule;
use nrmm::run::{
    AutoBudget, Budget, MoveSettings, RunDir, Runner, SamplerKind, SamplerSpec, Start, Summary,
};
use std::path::{Path, PathBuf};

/// `n` points in 2-D from `k` equal components drawn from a Normal-Wishart whose means spread
/// `1/r` times as wide as a component (seeded by `seed`).
fn mixture(n: usize, k: usize, r: f64, seed: u64) -> DenseData {
    let labels = partition_equal(n, k).unwrap();
    let nw = NormalWishartSampler::new(&[0.0, 0.0], &[0.1, 0.0, 0.0, 0.1], r, 5.0).unwrap();
    let mut rng = SeedPlan::new(seed).chain(0);
    gaussian_mixture(&labels, &nw, &mut rng).unwrap().0
}

/// 90 points in 2-D from 3 overlapping components (seeded): chains that need a few hundred
/// sweeps to agree.
fn data() -> DenseData {
    mixture(90, 3, 0.01, 5)
}

/// The default model over [`data`].
fn model() -> Model {
    Model::build(&ModelSpec::default(), Dataset::Dense(data())).unwrap()
}

/// A fresh directory for this file's test `name`.
fn scratch(name: &str) -> PathBuf {
    crate::support::scratch("run_auto", name)
}

fn spec(budget: Budget) -> SamplerSpec {
    SamplerSpec {
        budget,
        chains: 3,
        checkpoint_every: Some(25),
        ..SamplerSpec::new(SamplerKind::Sams)
    }
}

const AUTO: AutoBudget = AutoBudget {
    first: 25,
    max: 6400,
};

/// Every chain's trace without its `seconds` column, and its final labels.
fn chains(dir: &Path) -> Vec<(Vec<String>, String)> {
    (0..3)
        .map(|c| {
            let d = dir.join(format!("chain-{c}"));
            let trace = std::fs::read_to_string(d.join("trace.csv")).unwrap();
            let rows = trace
                .lines()
                .map(|l| {
                    // `seconds` is the second column.
                    let mut f: Vec<&str> = l.split(',').collect();
                    f.remove(1);
                    f.join(",")
                })
                .collect();
            (rows, std::fs::read_to_string(d.join("labels.txt")).unwrap())
        })
        .collect()
}

/// Whether a quantity passes the automatic budget's test.
fn agrees(s: &SeriesSummary) -> bool {
    nrmm::run::summary::agrees(s)
}

/// The sweeps every chain of the run in `dir` ended at.
fn sweeps(dir: &Path) -> u64 {
    let run = RunDir::resolve(&[dir.to_path_buf()]).unwrap();
    let s = Summary::of(&run, None).unwrap();
    let n = s.chains[0].sweeps;
    assert!(s.chains.iter().all(|c| c.sweeps == n));
    n
}

#[test]
fn auto_rounds_stop_where_the_chains_first_agree_and_equal_the_fixed_run() {
    let model = model();
    let auto_dir = scratch("auto");
    Runner::new(&model, spec(Budget::Auto(AUTO)), &auto_dir)
        .run()
        .unwrap();
    let n = sweeps(&auto_dir);
    assert!(
        n > AUTO.first && n < AUTO.max,
        "the test needs a run of several rounds that stops before its most sweeps: {n}"
    );
    assert!(
        (n / AUTO.first).is_power_of_two() && n.is_multiple_of(AUTO.first),
        "{n} is no round's end"
    );
    // Where it stopped the chains agree, and one round earlier they did not.
    let run = RunDir::resolve(std::slice::from_ref(&auto_dir)).unwrap();
    let summary = Summary::of(&run, None).unwrap();
    assert!(summary.diagnostics.values().all(agrees), "{summary:?}");
    let fixed = |sweeps: u64, name: &str| {
        let dir = scratch(name);
        Runner::new(&model, spec(Budget::Sweeps(sweeps)), &dir)
            .run()
            .unwrap();
        dir
    };
    let earlier = fixed(n / 2, "earlier");
    let summary = Summary::of(&RunDir::resolve(&[earlier]).unwrap(), None).unwrap();
    assert!(!summary.diagnostics.values().all(agrees));
    // Chains that disagree are reported after half of each chain, whatever their hitting
    // time: where each sits and whether it still climbs is about their recent sweeps.
    assert_eq!(summary.burn_in_rule, BurnInRule::Half);
    // The rounds leave the chains as a fixed run of the same length makes them.
    assert_eq!(chains(&auto_dir), chains(&fixed(n, "fixed")));
}

#[test]
fn an_auto_run_resumed_at_a_round_end_makes_the_same_decisions() {
    let model = model();
    let straight = scratch("straight");
    Runner::new(&model, spec(Budget::Auto(AUTO)), &straight)
        .run()
        .unwrap();
    let resumed = scratch("resumed");
    Runner::new(&model, spec(Budget::Sweeps(AUTO.first * 2)), &resumed)
        .run()
        .unwrap();
    Runner::resume(&model, &resumed)
        .unwrap()
        .budget(Budget::Auto(AUTO))
        .run()
        .unwrap();
    assert_eq!(chains(&straight), chains(&resumed));
}

#[test]
fn auto_rounds_end_at_the_most_sweeps() {
    let model = model();
    let dir = scratch("capped");
    let capped = AutoBudget { first: 5, max: 12 };
    Runner::new(&model, spec(Budget::Auto(capped)), &dir)
        .run()
        .unwrap();
    assert_eq!(sweeps(&dir), 12);
}

/// `nrmm run` defaults to the automatic budget, says so in its header, records it, and
/// refuses `--max-sweeps` beside a fixed number of sweeps.
#[test]
fn the_command_line_runs_until_the_chains_agree_by_default() {
    let dir = scratch("cli");
    std::fs::create_dir_all(&dir).unwrap();
    let data = dir.join("x.txt");
    nrmm::data::load::write_dense(&data, &self::data()).unwrap();
    let out = dir.join("run");
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_nrmm"))
            .args(["run", "--data"])
            .arg(&data)
            .args(["--chains", "2", "--out"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap()
    };
    let done = run(&["--max-sweeps", "3"]);
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{stderr}");
    assert!(
        stderr.contains("2 chains of 3 sweeps, doubled until the chains agree (at most 3)"),
        "{stderr}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        summary["budget"],
        serde_json::json!({"auto": {"first": 3, "max": 3}})
    );
    let refused = run(&["--sweeps", "10", "--max-sweeps", "20", "--force"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--max-sweeps bounds --sweeps auto"));
}

/// A resume whose rounds would end before the sweep a chain was checkpointed at is refused,
/// naming the setting to raise, rather than stopping the chain where it stands.
#[test]
fn a_resume_below_the_checkpoint_is_refused() {
    let model = model();
    let dir = scratch("below");
    Runner::new(&model, spec(Budget::Sweeps(50)), &dir)
        .run()
        .unwrap();
    let refused = Runner::resume(&model, &dir)
        .unwrap()
        .budget(Budget::Auto(AutoBudget { first: 10, max: 20 }))
        .run()
        .unwrap_err()
        .to_string();
    assert!(refused.contains("`max_sweeps`"), "{refused}");
}

#[test]
fn a_quantity_constant_and_equal_in_every_chain_agrees() {
    let eight = [8.0; 300];
    let nine = [9.0; 300];
    // R-hat and ESS say nothing of a series that never changes; the chains agree on it.
    let same = SeriesSummary::of(&[&eight, &eight, &eight]);
    assert!(agrees(&same), "{same:?}");
    // Chains each constant at another value disagree.
    assert!(!agrees(&SeriesSummary::of(&[&eight, &nine])));
    // So does a quantity with no draws.
    assert!(!agrees(&SeriesSummary::of(&[&[], &[]])));
    // A log joint equal up to rounding agrees; one that moves by a hundredth does not.
    let lj = |off: f64| -> Vec<f64> { (0..300).map(|i| -3000.0 + off * (i % 2) as f64).collect() };
    assert!(agrees(&SeriesSummary::of(&[&lj(1e-12), &lj(0.0)])));
    assert!(!agrees(&SeriesSummary::of(&[&lj(1e-2), &lj(0.0)])));
}

/// Two clusters of 500 points 2,000 apart with unit spread in 1-D, under the default model
/// with its pilot's cluster scale: every chain finds both at its start and never leaves them
/// (no split of a Gaussian cluster, no point alone 100 prior scales from the data's mean), so
/// K and the log joint are constant and equal across chains.
fn two_far_clusters() -> Model {
    let mut rng = SeedPlan::new(3).chain(0);
    let values = (0..1000)
        .map(|i| {
            let z: f64 = rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng);
            z + if i < 500 { -1000.0 } else { 1000.0 }
        })
        .collect();
    let x = DenseData::new(1000, 1, values).unwrap();
    let model = Model::build(&ModelSpec::default(), Dataset::Dense(x)).unwrap();
    nrmm::run::pilot::settled(model, 1).unwrap()
}

#[test]
fn chains_that_all_hold_one_state_stop_at_the_first_round() {
    let model = two_far_clusters();
    assert!(model.spec.pilot.is_some());
    let dir = scratch("constant");
    let budget = AutoBudget {
        first: 50,
        max: 800,
    };
    Runner::new(&model, spec(Budget::Auto(budget)), &dir)
        .run()
        .unwrap();
    let run = RunDir::resolve(std::slice::from_ref(&dir)).unwrap();
    let summary = Summary::of(&run, None).unwrap();
    let k = &summary.diagnostics["n_clusters"];
    assert_eq!((k.mean, k.sd), (2.0, 0.0), "{k:?}");
    // One partition, its log joint equal up to the rounding of each chain's path to it, with
    // fewer than 400 effective draws: R-hat and ESS alone would have doubled the chains.
    let lj = &summary.diagnostics["log_joint"];
    assert!(lj.sd < 1e-9 && lj.ess_bulk < 400.0, "{lj:?}");
    assert_eq!(sweeps(&dir), 50);
}

/// Runs `nrmm run` on `x` (written to `dir`) with `args`, returning its standard error.
fn cli_run(dir: &Path, x: &DenseData, args: &[&str]) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let data = dir.join("x.txt");
    nrmm::data::load::write_dense(&data, x).unwrap();
    let done = std::process::Command::new(env!("CARGO_BIN_EXE_nrmm"))
        .args(["run", "--data"])
        .arg(&data)
        .args(["--chains", "1", "--sweeps", "2", "--nw-defaults", "scaled"])
        .arg("--out")
        .arg(dir.join("run"))
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr).into_owned();
    assert!(done.status.success(), "{stderr}");
    stderr
}

/// Without `--sampler`, `nrmm run` takes tgmcmc below 50,000 points and the sub-cluster sampler
/// from there, and its header says the sampler was chosen by size; an asked-for sampler is
/// not marked so.
#[test]
fn the_command_line_chooses_the_sampler_by_size() {
    let small = cli_run(&scratch("by-size-small"), &data(), &[]);
    assert!(
        small.contains(
            "sampler tgmcmc (chosen for n = 90; 10 tree-guided proposals + 1 Gibbs sweep per sweep)"
        ),
        "{small}"
    );
    let asked = cli_run(&scratch("by-size-asked"), &data(), &["--sampler", "sams"]);
    assert!(
        asked.contains("sampler sams (1 proposal + 1 Gibbs sweep per sweep)"),
        "{asked}"
    );
    let n = SamplerKind::SUBCLUSTER_FROM;
    let mut rng = SeedPlan::new(4).chain(0);
    let values = (0..n)
        .map(|i| {
            let z: f64 = rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng);
            z + 20.0 * (i % 2) as f64
        })
        .collect();
    let large = DenseData::new(n, 1, values).unwrap();
    let large = cli_run(&scratch("by-size-large"), &large, &[]);
    assert!(
        large.contains(&format!(
            "sampler subcluster (chosen for n = {n}; {} proposals per sweep)",
            MoveSettings::default_proposals_for(SamplerKind::Subcluster, n)
        )),
        "{large}"
    );
}

/// 600 points in 2-D from 4 components far apart (seeded), under the default model with its
/// pilot's cluster scale: SAMS chains from the automatic start find the components at once.
fn four_far_clusters() -> Model {
    let x = mixture(600, 4, 3e-4, 1);
    let model = Model::build(&ModelSpec::default(), Dataset::Dense(x)).unwrap();
    nrmm::run::pilot::settled(model, 1).unwrap()
}

/// Chains that start where the posterior is keep their early draws: the summary's burn-in is
/// the chains' hitting time, under which they agree where half of each chain's draws would
/// not, and the automatic budget, judging by the same rule, stops a round sooner.
#[test]
fn chains_started_at_the_posterior_keep_their_early_draws_and_stop_sooner() {
    let model = four_far_clusters();
    let dir = scratch("hitting");
    let budget = AutoBudget {
        first: 50,
        max: 3200,
    };
    let s = SamplerSpec {
        init: Start::Auto,
        ..spec(Budget::Auto(budget))
    };
    Runner::new(&model, s, &dir).run().unwrap();
    let run = RunDir::resolve(std::slice::from_ref(&dir)).unwrap();
    let summary = Summary::of(&run, None).unwrap();
    let n = sweeps(&dir);
    assert_eq!(summary.burn_in_rule, BurnInRule::Hitting);
    let burn = summary.chains[0].burn_in;
    assert!(burn < n / 2, "{burn} of {n}");
    assert!(summary.chains.iter().all(|c| c.burn_in == burn));
    assert!(summary.sources.iter().all(|s| s.after == burn));
    assert!(summary.diagnostics.values().all(agrees), "{summary:?}");
    // Half of each chain left out, the same chains had not agreed: the budget would have
    // doubled them.
    let half = Summary::of(&run, Some(n / 2)).unwrap();
    assert_eq!(half.burn_in_rule, BurnInRule::Given);
    assert!(!half.diagnostics.values().all(agrees), "{half:?}");
}
