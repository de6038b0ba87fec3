//! The posterior predictive density checked against enumeration: for a DP mixture of a few
//! points, the posterior expectation of one draw's density at a new point `x`
//! ([`ln_predictive_of_draw`]), taken exactly over every partition, is `p(X ∪ {x}) / p(X)`,
//! the ratio of two evidences that enumeration gives independently; so the densities whose
//! mean and quantiles the plots draw are the right ones. And `nrmm plot` draws the density
//! with its bands, the similarity matrix and P(K) for a run.

use crate::support::cli::{ok, TempDir};
use crate::support::nw_reference;
use nrmm::data::DenseData;
use nrmm::diagnostics::ln_predictive_of_draw;
use nrmm::exact::ExactPosterior;
use nrmm::kernel::{ConjugateKernel, DiagHyper, Diagonal, NormalWishart, PredictiveKernel};
use nrmm::partition::Partition;
use nrmm::prior::Dp;
use std::sync::Arc;

/// Checks `E_post[f_π(x)] = p(X ∪ {x}) / p(X)` at each of `new` under DP(`alpha`), the kernel
/// over `X` and over `X ∪ {x}` built by `over`.
fn check_against_evidences<K>(x: &DenseData, new: &DenseData, over: impl Fn(DenseData) -> K)
where
    K: ConjugateKernel + PredictiveKernel<NewData = DenseData>,
{
    let kernel = over(x.clone());
    let d = x.d();
    for alpha in [0.5, 2.0] {
        let prior = Dp::new(alpha).unwrap();
        let post = ExactPosterior::dp(&kernel, alpha).unwrap();
        let mut mean = vec![0.0; new.n()];
        post.for_each(|view, p| {
            let labels: Vec<usize> = view.labels().iter().map(|&l| l as usize).collect();
            let partition = Partition::from_labels(&kernel, &labels).unwrap();
            let ln_f = ln_predictive_of_draw(&kernel, &partition, &prior, new).unwrap();
            for (m, l) in mean.iter_mut().zip(ln_f) {
                *m += p * l.exp();
            }
        });
        for (j, m) in mean.iter().enumerate() {
            let mut values: Vec<f64> = (0..x.n()).flat_map(|i| x.row(i).to_vec()).collect();
            values.extend_from_slice(new.row(j));
            let with = over(DenseData::new(x.n() + 1, d, values).unwrap());
            let ln_ratio =
                ExactPosterior::dp(&with, alpha).unwrap().ln_normaliser() - post.ln_normaliser();
            assert!(
                (m.ln() - ln_ratio).abs() < 1e-9,
                "alpha {alpha}, new point {j}: E[f(x)] = {m} against p(X, x)/p(X) = {}",
                ln_ratio.exp()
            );
        }
    }
}

#[test]
fn predictive_densities_average_to_the_ratio_of_evidences() {
    let x = DenseData::new(7, 1, vec![-2.1, -1.7, -2.4, 0.9, 1.6, 1.2, 4.0]).unwrap();
    let new = DenseData::new(4, 1, vec![-2.0, 0.0, 1.3, 9.0]).unwrap();
    let hyper = nw_reference(x.clone()).hyper().clone();
    check_against_evidences(&x, &new, |data| {
        NormalWishart::new(Arc::new(data), hyper.clone()).unwrap()
    });
    let x2 = DenseData::new(
        6,
        2,
        vec![0.0, 0.1, 0.3, -0.2, 3.0, 2.9, 3.4, 3.1, -1.0, 2.0, 0.2, 0.0],
    )
    .unwrap();
    let new2 = DenseData::new(3, 2, vec![0.0, 0.0, 3.2, 3.0, 10.0, -4.0]).unwrap();
    let hyper = nw_reference(x2.clone()).hyper().clone();
    check_against_evidences(&x2, &new2, |data| {
        NormalWishart::new(Arc::new(data), hyper.clone()).unwrap()
    });
    let diag = DiagHyper::from_data(&x2, 1.0, 0.5, 2.0).unwrap();
    check_against_evidences(&x2, &new2, |data| {
        Diagonal::new(Arc::new(data), diag.clone()).unwrap()
    });
}

#[test]
fn one_draws_density_integrates_to_one() {
    let x = DenseData::new(5, 1, vec![-2.0, -1.5, 1.0, 1.4, 6.0]).unwrap();
    let kernel = nw_reference(x.clone());
    let partition = Partition::from_labels(&kernel, &[0, 0, 1, 1, 2]).unwrap();
    let (lo, step, m) = (-60.0, 0.01, 12_001);
    let grid: Vec<f64> = (0..m).map(|i| lo + step * i as f64).collect();
    let grid = DenseData::new(m, 1, grid).unwrap();
    let ln_f = ln_predictive_of_draw(&kernel, &partition, &Dp::new(1.0).unwrap(), &grid).unwrap();
    let total: f64 = ln_f.iter().map(|l| l.exp() * step).sum();
    // Student-t tails beyond ±60 hold well under 1% of the mass at these scales.
    assert!((total - 1.0).abs() < 0.01, "{total}");
}

/// A partition's predictive on 2-D data, by the kernel and its margin in coordinate
/// 0: the margin at each of `at` against the 2-D density integrated over the second
/// coordinate by the trapezoid rule on a fine, wide line (to 1e-5 relative: the rule's and
/// the cut tails' error).
fn check_margin_integrates_the_joint<K>(kernel: &K, margin: &K, labels: &[usize])
where
    K: ConjugateKernel + PredictiveKernel<NewData = DenseData>,
{
    let prior = Dp::new(1.3).unwrap();
    let at = [-1.0, 0.4, 2.9, 7.0];
    let line = DenseData::new(at.len(), 1, at.to_vec()).unwrap();
    let partition = Partition::from_labels(margin, labels).unwrap();
    let ln_margin = ln_predictive_of_draw(margin, &partition, &prior, &line).unwrap();
    let joint = Partition::from_labels(kernel, labels).unwrap();
    let (lo, step, m) = (-150.0, 0.004, 75_001);
    for (j, &a) in at.iter().enumerate() {
        let grid: Vec<f64> = (0..m).flat_map(|i| [a, lo + step * i as f64]).collect();
        let grid = DenseData::new(m, 2, grid).unwrap();
        let ln_f = ln_predictive_of_draw(kernel, &joint, &prior, &grid).unwrap();
        let f: Vec<f64> = ln_f.iter().map(|l| l.exp()).collect();
        let integral = step * (f.iter().sum::<f64>() - 0.5 * (f[0] + f[m - 1]));
        let exact = ln_margin[j].exp();
        assert!(
            (integral / exact - 1.0).abs() < 1e-5,
            "x0 = {a}: the margin is {exact}, the joint integrates to {integral}"
        );
    }
}

/// The margins drawn for data of more than two dimensions are exact: the Normal-Wishart
/// margin kernel `(ξ_j, Ψ_jj, r, ν - d + 1)` and the diagonal kernel's coordinate give, for a
/// draw's partition, the joint predictive integrated over the other coordinate; in 1-D the
/// margin is the kernel itself; and a margin of a 3-D draw integrates to 1.
#[test]
fn margins_of_a_draws_density_are_the_joint_integrated() {
    use nrmm::run::density::{diag_margin, nw_margin};
    let x = DenseData::new(
        7,
        2,
        vec![
            0.0, 0.1, 0.3, -0.2, 3.0, 2.9, 3.4, 3.1, -1.0, 2.0, 0.2, 0.0, 2.5, 4.0,
        ],
    )
    .unwrap();
    let labels = [0, 0, 1, 1, 2, 0, 1];
    let nw = nw_reference(x.clone());
    check_margin_integrates_the_joint(&nw, &nw_margin(&nw, 0).unwrap(), &labels);
    let diag = Diagonal::new(
        Arc::new(x.clone()),
        DiagHyper::from_data(&x, 1.0, 0.5, 2.0).unwrap(),
    )
    .unwrap();
    check_margin_integrates_the_joint(&diag, &diag_margin(&diag, 0).unwrap(), &labels);
    // In 1-D the margin is the kernel.
    let x1 = DenseData::new(5, 1, vec![-2.0, -1.5, 1.0, 1.4, 6.0]).unwrap();
    let k1 = nw_reference(x1.clone());
    let m1 = nw_margin(&k1, 0).unwrap();
    let line = DenseData::new(3, 1, vec![-3.0, 0.5, 8.0]).unwrap();
    let prior = Dp::new(1.0).unwrap();
    let labels1 = [0, 0, 1, 1, 2];
    let a = ln_predictive_of_draw(
        &k1,
        &Partition::from_labels(&k1, &labels1).unwrap(),
        &prior,
        &line,
    );
    let b = ln_predictive_of_draw(
        &m1,
        &Partition::from_labels(&m1, &labels1).unwrap(),
        &prior,
        &line,
    );
    for (a, b) in a.unwrap().iter().zip(b.unwrap()) {
        assert!((a - b).abs() < 1e-12, "{a} against {b}");
    }
    // A margin of a 3-D draw is a density.
    let x3 = DenseData::new(
        6,
        3,
        vec![
            0.0, 1.0, 2.0, 0.5, 1.2, 2.2, 4.0, -1.0, 0.0, 4.2, -0.7, 0.4, 1.0, 0.0, 1.0, 3.0, 3.0,
            3.0,
        ],
    )
    .unwrap();
    let k3 = nw_reference(x3);
    let m = nw_margin(&k3, 1).unwrap();
    let partition = Partition::from_labels(&m, &[0, 0, 1, 1, 2, 2]).unwrap();
    let (lo, step, n) = (-200.0, 0.005, 80_001);
    let grid = DenseData::new(n, 1, (0..n).map(|i| lo + step * i as f64).collect()).unwrap();
    let ln_f = ln_predictive_of_draw(&m, &partition, &prior, &grid).unwrap();
    let total: f64 = ln_f.iter().map(|l| l.exp() * step).sum();
    assert!((total - 1.0).abs() < 1e-4, "{total}");
    assert!(nw_margin(&k3, 3).is_err());
}

#[test]
fn plot_draws_the_density_similarity_and_k_of_a_run() {
    let dir = TempDir::new("density");
    let x: String = (0..40)
        .map(|i| format!("{}\n", (i % 2) as f64 * 5.0 + ((i * 37) % 11) as f64 / 11.0))
        .collect();
    let x = dir.write("x.txt", &x);
    let run = dir.arg("run");
    ok(&[
        "run", "--data", &x, "--sweeps", "200", "--seed", "2", "--out", &run,
    ]);
    let printed = ok(&["plot", &run]);
    for name in ["density.svg", "similarity.svg", "k_posterior.svg"] {
        assert!(printed.contains(name), "{printed}");
        let svg = dir.read(&format!("run/{name}"));
        assert!(svg.starts_with("<svg") && svg.contains("</svg>"), "{name}");
    }
    // Data of three dimensions: a panel per coordinate's margin.
    let x3: String = (0..40)
        .map(|i| {
            let g = (i % 2) as f64 * 5.0;
            let (a, b) = (((i * 37) % 11) as f64 / 11.0, ((i * 13) % 7) as f64 / 7.0);
            format!("{} {} {}\n", g + a, g + b, ((i * 7) % 5) as f64)
        })
        .collect();
    let x3 = dir.write("x3.txt", &x3);
    let run3 = dir.arg("run3");
    ok(&[
        "run", "--data", &x3, "--sweeps", "100", "--seed", "2", "--out", &run3,
    ]);
    let printed = ok(&["plot", &run3]);
    assert!(printed.contains("density.svg"), "{printed}");
    let svg = dir.read("run3/density.svg");
    assert!(svg.contains("margins of the posterior predictive density"));
    assert!(svg.contains("(3 coordinates)"));
}
