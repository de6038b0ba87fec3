//! The leave-one-out predictive fit checked against enumeration: for a DP mixture of a few
//! points, the posterior expectation of `1 / p(x_i | X_{-i}, c_{-i})` (each draw's
//! [`ln_loo_predictives`]), taken exactly over every partition, is `p(X_{-i}) / p(X)`, the
//! ratio of two evidences that enumeration gives independently. So the pointwise terms that
//! CPO, LPML and PSIS-LOO average are the right ones; and `nrmm diagnose --predictive` reports
//! them for a run.

use crate::support::cli::{ok, TempDir};
use crate::support::nw_reference;
use nrmm::data::DenseData;
use nrmm::diagnostics::ln_loo_predictives;
use nrmm::exact::ExactPosterior;
use nrmm::kernel::NormalWishart;
use nrmm::partition::Partition;
use nrmm::prior::Dp;
use std::sync::Arc;

#[test]
fn loo_predictives_average_to_the_ratio_of_evidences() {
    let x = [-2.1, -1.7, -2.4, 0.9, 1.6, 1.2, 4.0];
    let data = DenseData::new(x.len(), 1, x.to_vec()).unwrap();
    let kernel = nw_reference(data.clone());
    let hyper = kernel.hyper().clone();
    for alpha in [0.5, 2.0] {
        let prior = Dp::new(alpha).unwrap();
        let post = ExactPosterior::dp(&kernel, alpha).unwrap();
        let mut inverse_cpo = vec![0.0; x.len()];
        post.for_each(|view, p| {
            let labels: Vec<usize> = view.labels().iter().map(|&l| l as usize).collect();
            let partition = Partition::from_labels(&kernel, &labels).unwrap();
            for (i, l) in ln_loo_predictives(&kernel, &partition, &prior)
                .iter()
                .enumerate()
            {
                inverse_cpo[i] += p * (-l).exp();
            }
        });
        for (i, inverse) in inverse_cpo.iter().enumerate() {
            let rest: Vec<f64> = (0..x.len()).filter(|&j| j != i).map(|j| x[j]).collect();
            let rest = DenseData::new(rest.len(), 1, rest).unwrap();
            let without = NormalWishart::new(Arc::new(rest), hyper.clone()).unwrap();
            let ln_ratio =
                ExactPosterior::dp(&without, alpha).unwrap().ln_normaliser() - post.ln_normaliser();
            assert!(
                (inverse.ln() - ln_ratio).abs() < 1e-9,
                "alpha {alpha}, point {i}: E[1/p] = {} against p(X_-i)/p(X) = {}",
                inverse,
                ln_ratio.exp()
            );
        }
    }
}

#[test]
fn diagnose_reports_the_predictive_fit_of_a_run() {
    let dir = TempDir::new("loo");
    let x: String = (0..40)
        .map(|i| format!("{}\n", (i % 2) as f64 * 5.0 + ((i * 37) % 11) as f64 / 11.0))
        .collect();
    let x = dir.write("x.txt", &x);
    let run = dir.arg("run");
    ok(&[
        "run", "--data", &x, "--sweeps", "200", "--seed", "2", "--out", &run,
    ]);
    let printed = ok(&["diagnose", &run, "--predictive"]);
    assert!(printed.contains("predictive fit over"), "{printed}");
    assert!(printed.contains("Pareto k: max"), "{printed}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["diagnose", &run, "--predictive", "--json"])).unwrap();
    let fit = &json["predictive"];
    assert_eq!(fit["points"], 40);
    let (lpml, elpd) = (
        fit["lpml"].as_f64().unwrap(),
        fit["elpd_loo"].as_f64().unwrap(),
    );
    let (lppd, waic) = (fit["lppd"].as_f64().unwrap(), fit["waic"].as_f64().unwrap());
    // Each leave-one-out estimate is below the fit to the data themselves, and WAIC's
    // effective parameters are its gap.
    assert!(lpml.is_finite() && lpml <= lppd && elpd <= lppd, "{fit}");
    let p_waic = fit["p_waic"].as_f64().unwrap();
    assert!((waic + 2.0 * (lppd - p_waic)).abs() < 1e-9, "{fit}");
    assert_eq!(fit["pareto_k"].as_array().unwrap().len(), 40);
}
