//! The data-parallel sampler: the same chain, bit for bit, on 1, 2 and 3 ranks (threads) and
//! thread counts; the exact posterior on 7 points; checkpoint, resume and stop.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use rand_distr::{Distribution, StandardNormal};

use super::comm::{Comm, Single, ThreadRanks};
use super::layout::Layout;
use super::run::{run, RunConfig};
use super::sampler::{normal_wishart_shard, DataParallel, Shard};
use crate::data::DenseData;
use crate::exact::{ExactPosterior, Rgs};
use crate::kernel::normal_wishart::{NormalWishart, NwHyper};
use crate::prior::integrated::{PartitionPrior, PartitionPriorSpec};
use crate::prior::{Dp, NrmPrior, Prior};
use crate::rng::SeedPlan;
use crate::sampler::dpmm::engine::CHUNK;
use crate::sampler::dpmm::SubClusterOptions;

/// Three well-separated Gaussian blobs in 2-d.
fn blobs(n: usize, seed: u64) -> DenseData {
    let mut rng = SeedPlan::new(seed).chain(0);
    let centres = [[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]];
    let mut v = Vec::with_capacity(2 * n);
    for i in 0..n {
        let c = centres[(i * 7) % 3];
        for x in c {
            let z: f64 = StandardNormal.sample(&mut rng);
            v.push(x + z);
        }
    }
    DenseData::new(n, 2, v).unwrap()
}

/// Rank `r`'s rows of `data` under `layout`.
fn rows(data: &DenseData, layout: &Layout, r: usize) -> DenseData {
    let range = layout.range(r);
    let d = data.d();
    DenseData::new(
        range.len(),
        d,
        data.values()[range.start * d..range.end * d].to_vec(),
    )
    .unwrap()
}

/// Runs `f(comm)` on `size` thread ranks and returns each rank's result.
fn on_ranks<T: Send>(size: usize, f: impl Fn(&ThreadRanks) -> T + Sync) -> Vec<T> {
    let group = ThreadRanks::group(size).unwrap();
    std::thread::scope(|s| {
        let hs: Vec<_> = group.iter().map(|c| s.spawn(|| f(c))).collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

const OPTIONS: SubClusterOptions = SubClusterOptions {
    launch_iters: 2,
    proposals: 4,
};

/// Per sweep: (sizes, ln joint bits); then the rank's final labels.
type Record = (Vec<(Vec<usize>, u64)>, Vec<u32>);

fn chain_on(comm: &dyn Comm, data: &DenseData, block: usize, sweeps: usize) -> Record {
    let layout = Layout::even(data.n(), block, comm.size()).unwrap();
    let local = rows(data, &layout, comm.rank());
    let shard = normal_wishart_shard(comm, local, layout).unwrap();
    let prior: Prior = Dp::new(1.0).unwrap().into();
    let labels = vec![0u32; shard.n_local()];
    let rng = SeedPlan::new(42).chain(0);
    let mut chain = DataParallel::new(comm, &shard, prior, OPTIONS, labels, rng)
        .unwrap()
        .with_launch_sample(300)
        .unwrap()
        .with_hyper_resampling(true);
    let mut out = Vec::new();
    for _ in 0..sweeps {
        chain.sweep(comm, &shard).unwrap();
        out.push((chain.sizes(), chain.ln_joint(&shard.kernel).to_bits()));
    }
    (out, chain.labels().to_vec())
}

fn joined(records: Vec<Record>) -> Record {
    let trace = records[0].0.clone();
    for r in &records {
        assert_eq!(r.0, trace, "every rank sees the same global state");
    }
    (trace, records.into_iter().flat_map(|r| r.1).collect())
}

#[test]
fn the_chain_is_the_same_on_one_two_and_three_ranks_and_any_thread_count() {
    let data = blobs(5 * CHUNK + 77, 3);
    let (block, sweeps) = (CHUNK, 8);
    let single = chain_on(&Single, &data, block, sweeps);
    let sizes = &single.0.last().unwrap().0;
    assert!(sizes.len() >= 3, "the chain found the blobs: {sizes:?}");
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| chain_on(&Single, &data, block, sweeps));
    assert_eq!(one_thread, single);
    for size in [1, 2, 3] {
        let got = joined(on_ranks(size, |c| chain_on(c, &data, block, sweeps)));
        assert_eq!(got, single, "{size} ranks");
    }
}

#[test]
fn the_chain_leaves_the_exact_posterior_invariant() {
    // Data set A of MATH §5.3 with the reference hyperparameters, DP α = 1: TV of the
    // visited partitions within twice the expected TV of a perfect sampler of the same size.
    let prior: Prior = Dp::new(1.0).unwrap().into();
    exact_posterior_tv(&prior, false, 900);
}

#[test]
fn the_chain_leaves_the_gibbs_type_exact_posteriors_invariant() {
    // The same under Pitman-Yor and the MFM, fixed and with their hyperparameters resampled
    // (integrated out of the exact posterior).
    let py = |theta, sigma, hyper| {
        Prior::from(crate::prior::PitmanYor::new(theta, sigma, hyper).unwrap())
    };
    let mfm = |gamma, k, hyper: bool| {
        let g = hyper.then(|| crate::prior::GammaPrior::new(1.0, 1.0).unwrap());
        Prior::from(crate::prior::Mfm::new(gamma, k, g).unwrap())
    };
    use crate::prior::{KPrior, PyHyperPriors};
    let cases = [
        (py(-0.2, 0.4, PyHyperPriors::fixed()), false),
        (py(1.0, 0.5, PyHyperPriors::reference()), true),
        (mfm(0.5, KPrior::Geometric { p: 0.3 }, false), false),
        (mfm(1.0, KPrior::Poisson { lambda: 2.0 }, true), true),
    ];
    for (c, (prior, hyper)) in cases.iter().enumerate() {
        exact_posterior_tv(prior, *hyper, 910 + c as u64);
    }
}

/// Four chains of the data-parallel sampler on data set A under `prior` (its hyperparameters
/// resampled when `hyper`), half from one cluster, half from singletons: the TV of the
/// visited partitions to the exact posterior within twice the expected TV of a perfect
/// sampler of the same effective size.
fn exact_posterior_tv(prior: &Prior, hyper: bool, seed: u64) {
    let data = crate::data::generate::data_set_a();
    let nw = NwHyper::from_data(&data).unwrap();
    let kernel = NormalWishart::new(Arc::new(data), nw).unwrap();
    let spec = PartitionPriorSpec::from_prior(prior).unwrap();
    let pp = PartitionPrior::new(spec, 7).unwrap();
    let post = ExactPosterior::new(&kernel, |s: &[usize]| pp.ln_weight(s).unwrap()).unwrap();
    let shard = Shard {
        layout: Layout::even(7, CHUNK, 1).unwrap(),
        kernel,
        rank: 0,
    };
    let (sweeps, batches) = (10_000, 20);
    let mut visited = Vec::new();
    for c in 0..4u32 {
        let labels: Vec<u32> = (0..7).map(|i| if c % 2 == 0 { 0 } else { i }).collect();
        let rng = SeedPlan::new(seed).chain(c as u64);
        let mut chain = DataParallel::new(&Single, &shard, prior.clone(), OPTIONS, labels, rng)
            .unwrap()
            .with_hyper_resampling(hyper);
        let mut v = Vec::new();
        for s in 0..sweeps {
            chain.sweep(&Single, &shard).unwrap();
            if s >= sweeps / 10 {
                let rgs = Rgs::from_labels(chain.labels()).unwrap();
                v.push(post.index_of(&rgs).unwrap());
            }
        }
        visited.push(v);
    }
    let m = post.chain_tv(&visited, batches).unwrap();
    println!(
        "{prior:?}, hyper {hyper}: TV {} against E[TV] {}",
        m.tv, m.expected_tv
    );
    assert!(
        m.tv <= 2.0 * m.expected_tv,
        "{:?}, hyper {hyper}: TV {} against E[TV] {}",
        prior.hyperparameters(),
        m.tv,
        m.expected_tv
    );
}

fn config(out: &std::path::Path, sweeps: u64, continue_run: bool) -> RunConfig {
    RunConfig {
        seed: 5,
        sweeps,
        options: OPTIONS,
        launch_sample: 300,
        resample_hyper: false,
        out: out.to_path_buf(),
        checkpoint_every: 2,
        continue_run,
    }
}

fn run_on(
    size: usize,
    data: &DenseData,
    cfg: &RunConfig,
    stop_rank: Option<usize>,
) -> crate::Result<bool> {
    let stopped = on_ranks(size, |c| {
        let layout = Layout::even(data.n(), CHUNK, c.size()).unwrap();
        let shard = normal_wishart_shard(c, rows(data, &layout, c.rank()), layout).unwrap();
        let prior: Prior = Dp::new(1.0).unwrap().into();
        let stop = AtomicBool::new(stop_rank == Some(c.rank()));
        run(c, &shard, prior, cfg, &stop).map(|r| r.stopped)
    });
    let stopped: Vec<bool> = stopped.into_iter().collect::<crate::Result<_>>()?;
    assert!(stopped.iter().all(|&s| s == stopped[0]));
    Ok(stopped[0])
}

#[test]
fn a_stopped_and_resumed_run_ends_as_an_uninterrupted_one() {
    let data = blobs(3 * CHUNK + 5, 8);
    let dir = std::env::temp_dir().join(format!("nrmm-dp-{}", std::process::id()));
    let (straight, parted) = (dir.join("straight"), dir.join("parted"));
    assert!(!run_on(2, &data, &config(&straight, 5, false), None).unwrap());
    // Rank 1 asks to stop: every rank stops after the first sweep, with a checkpoint.
    assert!(run_on(2, &data, &config(&parted, 5, false), Some(1)).unwrap());
    assert!(parted.join("checkpoint/manifest.json").exists());
    assert!(!run_on(2, &data, &config(&parted, 5, true), None).unwrap());
    let read = |p: &std::path::Path, f: &str| std::fs::read_to_string(p.join(f)).unwrap();
    let labels = read(&straight, "labels.txt");
    assert_eq!(labels.lines().count(), data.n());
    assert_eq!(read(&parted, "labels.txt"), labels);
    let joint = |p: &std::path::Path| -> Vec<String> {
        read(p, "trace.tsv")
            .lines()
            .map(|l| l.split('\t').take(3).collect::<Vec<_>>().join(" "))
            .collect()
    };
    assert_eq!(joint(&parted), joint(&straight));
    // Another number of ranks cannot resume this checkpoint.
    let err = run_on(1, &data, &config(&parted, 6, true), None).unwrap_err();
    assert!(err.to_string().contains("made by 2 ranks"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
