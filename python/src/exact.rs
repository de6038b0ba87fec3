//! `nrmm.exact_posterior`: the posterior over every set partition of a small data set.

use crate::convert::{model_spec, Input};
use crate::error::IntoPy;
use nrmm::exact::ExactPosterior;
use nrmm::kernel::ConjugateKernel;
use nrmm::model::Model;
use nrmm::prior::{PartitionPrior, PartitionPriorSpec, Prior};
use nrmm::with_kernel;
use nrmm::{Error, Result};
use numpy::{IntoPyArray, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Most points enumerated: 12 points have 4,213,597 partitions (about a second).
const MAX_POINTS: usize = 12;

/// The exact posterior of `kernel`'s data under the partition prior that samplers running
/// `prior` target (hyperparameters fixed, or integrated out under their hyperpriors; MATH §7.1).
fn posterior<K: ConjugateKernel>(kernel: &K, prior: &Prior) -> Result<ExactPosterior> {
    let n = kernel.n_points();
    if n > MAX_POINTS {
        return Err(Error::TooLarge(format!(
            "the exact posterior enumerates all set partitions; {n} points have too many (at \
             most {MAX_POINTS}, whose 4,213,597 partitions take about a second)"
        )));
    }
    let weights = PartitionPrior::new(PartitionPriorSpec::from_prior(prior)?, n)?;
    ExactPosterior::new(kernel, move |sizes: &[usize]| {
        weights.ln_weight(sizes).unwrap_or(f64::NAN)
    })
}

/// What Python receives: the summary's numbers, the co-clustering matrix row-major.
struct Exact {
    n: usize,
    n_partitions: usize,
    ln_evidence: f64,
    expected_k: f64,
    k_probabilities: Vec<f64>,
    top: Vec<(Vec<i64>, f64)>,
    co_clustering: Vec<f64>,
}

/// Enumerates every partition of `data` (at most 12 points) under the model of `model_json`
/// and returns a dict: `n_partitions`, `ln_evidence`, `expected_k`, `k_probabilities`
/// (index k), `top` (the `top` most probable partitions as canonical labels with their
/// probabilities) and `co_clustering` (n × n). Cost: O(B_n · n), the lock released.
#[pyfunction]
pub fn exact_posterior<'py>(
    py: Python<'py>,
    data: Input<'py>,
    model_json: &str,
    top: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let spec = model_spec(model_json)?;
    if spec.kernel_hyperpriors {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "the exact posterior holds the kernel's hyperparameters fixed: set \
             kernel_hyperpriors=False",
        ));
    }
    let data = data.dataset()?;
    let exact = py
        .detach(|| -> Result<Exact> {
            let model = Model::build(&spec, data)?;
            let post = with_kernel!(&model.kernel, |k| posterior(k, &model.prior))?;
            let expected_k = post.expected_k();
            if !expected_k.is_finite() {
                return Err(Error::Numerical(format!(
                    "the exact posterior's E[K] is {expected_k}: rescale the data to moderate \
                     magnitudes"
                )));
            }
            let n = post.n_points();
            let top = post
                .top(top.min(post.n_partitions()))
                .into_iter()
                .map(|(rgs, p)| (rgs.labels().iter().map(|&l| l as i64).collect(), p))
                .collect();
            Ok(Exact {
                n,
                n_partitions: post.n_partitions(),
                ln_evidence: post.ln_normaliser(),
                expected_k,
                k_probabilities: post.k_probabilities(),
                top,
                co_clustering: post.co_clustering().into_iter().flatten().collect(),
            })
        })
        .py_err()?;
    let out = PyDict::new(py);
    out.set_item("n_partitions", exact.n_partitions)?;
    out.set_item("ln_evidence", exact.ln_evidence)?;
    out.set_item("expected_k", exact.expected_k)?;
    out.set_item("k_probabilities", exact.k_probabilities.into_pyarray(py))?;
    let top: Vec<_> = exact
        .top
        .into_iter()
        .map(|(labels, p)| (labels.into_pyarray(py), p))
        .collect();
    out.set_item("top", top)?;
    let co = exact
        .co_clustering
        .into_pyarray(py)
        .reshape([exact.n, exact.n])?;
    out.set_item("co_clustering", co)?;
    Ok(out)
}
