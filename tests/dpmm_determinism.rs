//! Determinism of DPMM.jl's samplers: bit-identical chains on 1, 2 and 4 rayon threads (the
//! engine's chunk streams and ordered reductions), and a checkpointed DPMM.jl-faithful
//! sub-cluster chain (whose sub-labels are its own state) resuming exactly.

use std::sync::Arc;

use nrmm::data::DenseData;
use nrmm::kernel::{NormalWishart, NwHyper};
use nrmm::partition::Partition;
use nrmm::prior::{Dp, Prior};
use nrmm::rng::{uniform_open01, SeedPlan};
use nrmm::run::{Chain, Scheduled};
use nrmm::sampler::{
    Direct, DpmmOptions, Move, QuasiCollapsed, QuasiDirect, Splittable, State, SubCluster,
    SubClusterOptions,
};

/// Six uniform blobs of half-width `spread` in 2-D: `n` points, enough for several label
/// chunks and (above 65,536) several reduction chunks.
fn blobs(n: usize, spread: f64) -> NormalWishart {
    let mut rng = SeedPlan::new(77).chain(0);
    let centres = [
        (0.0, 0.0),
        (6.0, 0.0),
        (0.0, 6.0),
        (6.0, 6.0),
        (12.0, 3.0),
        (3.0, 12.0),
    ];
    let mut values = Vec::with_capacity(2 * n);
    for i in 0..n {
        let (cx, cy) = centres[i % centres.len()];
        values.push(cx + spread * (2.0 * uniform_open01(&mut rng) - 1.0));
        values.push(cy + spread * (2.0 * uniform_open01(&mut rng) - 1.0));
    }
    let data = DenseData::new(n, 2, values).unwrap();
    let hyper = NwHyper::from_data(&data).unwrap();
    NormalWishart::new(Arc::new(data), hyper).unwrap()
}

fn moves(which: usize) -> Box<dyn Move<NormalWishart, Prior>> {
    match which {
        0 => Box::new(SubCluster::new(SubClusterOptions {
            launch_iters: 2,
            proposals: 3,
        })),
        1 => Box::new(SubCluster::dpmm(DpmmOptions {
            merge_factor: 0.01,
            splittable: Splittable::Off,
        })),
        2 => Box::new(Direct::new()),
        3 => Box::new(QuasiDirect::new()),
        _ => Box::new(QuasiCollapsed::new()),
    }
}

/// Eight clusters assigned by point index modulo 8.
fn start(kernel: &NormalWishart) -> Partition<NormalWishart> {
    let labels: Vec<usize> = (0..kernel.data().n())
        .map(|i| (i * 7 + i / 3) % 8)
        .collect();
    Partition::from_labels(kernel, &labels).unwrap()
}

/// The labels and log joint after each of `sweeps` sweeps of move `which` from [`start`].
fn trajectory(kernel: &NormalWishart, which: usize, sweeps: usize) -> Vec<(Vec<usize>, u64)> {
    let initial = start(kernel).canonical_labels();
    let state = State {
        partition: start(kernel),
        prior: Prior::from(Dp::new(1.0).unwrap()),
    };
    let mut chain = Chain::new(
        kernel,
        state,
        SeedPlan::new(5).chain(0),
        vec![Scheduled {
            mv: moves(which),
            repeats: 1,
        }],
    );
    (0..sweeps)
        .map(|_| {
            chain.sweep().unwrap();
            assert_ne!(chain.state().partition.canonical_labels(), initial);
            let s = chain.state();
            (s.partition.canonical_labels(), s.ln_joint().to_bits())
        })
        .collect()
}

/// Every sampler gives the same chain, bit for bit, on 1, 2 and 4 threads.
#[test]
fn chains_do_not_depend_on_the_thread_count() {
    let kernel = blobs(70_000, 1.0);
    for which in 0..5 {
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| trajectory(&kernel, which, 4))
        };
        let one = run(1);
        assert!(one == run(2), "sampler {which}: 1 vs 2 threads");
        assert!(one == run(4), "sampler {which}: 1 vs 4 threads");
    }
}

/// A DPMM.jl-faithful sub-cluster chain checkpointed after 5 sweeps and resumed continues
/// exactly as the original does (its sub-labels travel through `save_aux`/`restore_aux`),
/// while a resume that drops them differs.
#[test]
fn faithful_subcluster_resumes_exactly() {
    let kernel = blobs(600, 4.0);
    let schedule = || {
        vec![Scheduled {
            mv: moves(1),
            repeats: 1,
        }]
    };
    let state = State {
        partition: start(&kernel),
        prior: Prior::from(Dp::new(1.0).unwrap()),
    };
    let mut chain = Chain::new(&kernel, state, SeedPlan::new(9).chain(0), schedule());
    for _ in 0..5 {
        chain.sweep().unwrap();
    }
    let checkpoint = chain.checkpoint().unwrap();
    assert!(checkpoint.aux.iter().any(Option::is_some));
    let mut stripped = checkpoint.clone();
    stripped.aux.clear();
    let mut resumed = Chain::resume(&kernel, checkpoint, schedule()).unwrap();
    let mut fresh = Chain::resume(&kernel, stripped, schedule()).unwrap();
    let mut differs = false;
    for _ in 0..5 {
        chain.sweep().unwrap();
        resumed.sweep().unwrap();
        fresh.sweep().unwrap();
        let a = chain.state().partition.canonical_labels();
        assert_eq!(a, resumed.state().partition.canonical_labels());
        assert_eq!(
            chain.state().ln_joint().to_bits(),
            resumed.state().ln_joint().to_bits()
        );
        differs |= a != fresh.state().partition.canonical_labels()
            || chain.state().ln_joint() != fresh.state().ln_joint();
    }
    assert!(
        differs,
        "dropping the sub-labels changed nothing: the test has no power"
    );
}
