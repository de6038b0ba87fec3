"""nrmm: Bayesian nonparametric mixture models (Dirichlet process and normalized generalized
gamma process priors, conjugate kernels) with exact MCMC samplers, from NumPy.

>>> import nrmm
>>> model = nrmm.MixtureModel(sampler="sams", sweeps=200, random_state=1).fit(X)
>>> model.labels_, model.n_clusters_, model.summary_["diagnostics"]["n_clusters"]

``MixtureModel`` follows scikit-learn's estimator conventions (``fit``, ``fit_predict``,
``predict``, ``predict_proba``, ``score_samples``, ``get_params``, ``set_params``);
``exact_posterior`` enumerates every partition of a small data set.
"""

from ._estimator import MixtureModel
from ._exact import ExactPosterior, exact_posterior
from ._native import __version__

__all__ = ["MixtureModel", "ExactPosterior", "exact_posterior", "__version__"]
