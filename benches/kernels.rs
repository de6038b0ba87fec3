//! Criterion benchmarks of the conjugate kernels' hot paths: the Normal-Wishart predictive
//! from a cached factor, rank-1 Cholesky update and downdate, Normal-Wishart and
//! Multinomial-Dirichlet union marginals.
//!
//! Run: `cargo bench --bench kernels -- --warm-up-time 1 --measurement-time 2`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use nrmm::data::{DenseData, SparseCounts};
use nrmm::kernel::cholesky::{cholesky, rank1_downdate, rank1_update};
use nrmm::kernel::{ConjugateKernel, MultinomialDirichlet, NormalWishart, NwHyper};
use nrmm::rng::{NrmmRng, SeedPlan};
use rand::RngExt;
use rand_distr::StandardNormal;

/// `n` points in `d` dimensions around a few separated centres, with the reference
/// hyperparameters fitted to them.
fn nw_kernel(n: usize, d: usize, rng: &mut NrmmRng) -> NormalWishart {
    let values: Vec<f64> = (0..n)
        .flat_map(|i| {
            let centre = (i % 4) as f64 * 3.0;
            (0..d)
                .map(|_| centre + rng.sample::<f64, _>(StandardNormal))
                .collect::<Vec<_>>()
        })
        .collect();
    let data = DenseData::new(n, d, values).unwrap();
    let hyper = NwHyper::from_data(&data).unwrap();
    NormalWishart::new(Arc::new(data), hyper).unwrap()
}

fn nw_predictive(c: &mut Criterion) {
    let mut group = c.benchmark_group("nw_ln_predictive");
    let mut rng = SeedPlan::new(1).chain(0);
    for d in [2, 6, 50] {
        let k = nw_kernel(400, d, &mut rng);
        let members: Vec<usize> = (0..200).collect();
        let s = k.stat_of(&members);
        group.bench_with_input(BenchmarkId::from_parameter(d), &d, |b, _| {
            b.iter(|| k.ln_predictive(black_box(300), black_box(&s)))
        });
    }
    group.finish();
}

/// A factor of a random SPD matrix and a vector to add to (or remove from) it.
fn factor_and_vector(d: usize, rng: &mut NrmmRng) -> (Vec<f64>, Vec<f64>) {
    let b: Vec<f64> = (0..d * d).map(|_| rng.sample(StandardNormal)).collect();
    let x: Vec<f64> = (0..d).map(|_| rng.sample(StandardNormal)).collect();
    let mut a = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..d {
            a[i * d + j] = (0..d).map(|k| b[i * d + k] * b[j * d + k]).sum::<f64>()
                + if i == j { 1.0 } else { 0.0 }
                + x[i] * x[j];
        }
    }
    (cholesky(&a, d, "A").unwrap(), x)
}

fn rank1(c: &mut Criterion) {
    let mut rng = SeedPlan::new(2).chain(0);
    let mut group = c.benchmark_group("chol_rank1_update");
    for d in [2, 6, 50] {
        let (l, x) = factor_and_vector(d, &mut rng);
        group.bench_with_input(BenchmarkId::from_parameter(d), &d, |b, &d| {
            b.iter_batched_ref(
                || (l.clone(), x.clone()),
                |(l, x)| rank1_update(l, d, x),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
    let mut group = c.benchmark_group("chol_rank1_downdate");
    for d in [2, 6, 50] {
        // The factor includes x xᵀ, so removing x succeeds.
        let (l, x) = factor_and_vector(d, &mut rng);
        group.bench_with_input(BenchmarkId::from_parameter(d), &d, |b, &d| {
            b.iter_batched_ref(
                || (l.clone(), x.clone()),
                |(l, x)| rank1_downdate(l, d, x).unwrap(),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

fn nw_pair(c: &mut Criterion) {
    let mut rng = SeedPlan::new(3).chain(0);
    let k = nw_kernel(400, 6, &mut rng);
    let a = k.stat_of(&(0..100).collect::<Vec<_>>());
    let b = k.stat_of(&(100..250).collect::<Vec<_>>());
    c.bench_function("nw_ln_marginal_pair/6", |bench| {
        bench.iter(|| k.ln_marginal_pair(black_box(&a), black_box(&b)))
    });
}

/// Two documents of `m` distinct words each, drawn from `2m` ids of a 50,000-word
/// vocabulary, so about half their words are shared.
fn md_pair(c: &mut Criterion) {
    let mut rng = SeedPlan::new(4).chain(0);
    let vocab = 50_000;
    let mut group = c.benchmark_group("md_ln_marginal_pair");
    for m in [100usize, 10_000] {
        let spread = (vocab / (2 * m)) as u32;
        let docs: Vec<Vec<(u32, u32)>> = (0..2)
            .map(|_| {
                let mut ids: Vec<u32> = rand::seq::index::sample(&mut rng, 2 * m, m)
                    .into_iter()
                    .map(|i| i as u32 * spread)
                    .collect();
                ids.sort_unstable();
                ids.into_iter()
                    .map(|w| (w, rng.random_range(1..6)))
                    .collect()
            })
            .collect();
        let data = Arc::new(SparseCounts::from_rows(vocab, &docs).unwrap());
        let k = MultinomialDirichlet::new(data, 0.1).unwrap();
        let (a, b) = (k.stat_of(&[0]), k.stat_of(&[1]));
        group.bench_with_input(BenchmarkId::from_parameter(m), &m, |bench, _| {
            bench.iter(|| k.ln_marginal_pair(black_box(&a), black_box(&b)))
        });
    }
    group.finish();
}

criterion_group!(kernels, nw_predictive, rank1, nw_pair, md_pair);
criterion_main!(kernels);
