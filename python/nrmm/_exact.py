"""``exact_posterior``: the posterior over every partition of a small data set."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _native
from ._data import is_sparse, to_native


@dataclass(frozen=True)
class ExactPosterior:
    """The exact posterior over the set partitions of ``n`` points (``n <= 12``).

    Attributes
    ----------
    n_partitions : int
        Partitions enumerated (the Bell number B_n).
    ln_evidence : float
        Log of the normalising sum: the log marginal likelihood of the data under the model.
    expected_k : float
        Posterior mean number of clusters.
    k_probabilities : ndarray of shape (n + 1,)
        ``k_probabilities[k]`` is P(K = k | X).
    top : list of (ndarray, float)
        The most probable partitions as canonical labels, with their probabilities.
    co_clustering : ndarray of shape (n, n)
        Posterior probability that two points share a cluster.
    """

    n_partitions: int
    ln_evidence: float
    expected_k: float
    k_probabilities: np.ndarray
    top: list
    co_clustering: np.ndarray


def exact_posterior(X, *, top=10, **model):
    """The exact posterior over partitions of the rows of ``X`` (at most 12), by enumerating
    every set partition: what any exact sampler's draws converge to.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features) or sparse count matrix, n_samples <= 12
    top : int, default=10
        How many of the most probable partitions to return.
    **model
        The model's settings, as :class:`nrmm.MixtureModel` takes them: ``kernel``,
        ``prior``, ``alpha``, ``sigma``, ``u``, ``gamma``, ``k_prior``, ``hyperpriors``
        (integrated out exactly where the prior has its integral),
        ``beta``, ``nw_xi``, ``nw_psi``, ``nw_r``, ``nw_nu``, ``nw_defaults``.

    Returns
    -------
    ExactPosterior
    """
    from ._estimator import MixtureModel

    allowed = {
        "kernel", "prior", "alpha", "sigma", "u", "gamma", "k_prior", "hyperpriors",
        "kernel_hyperpriors",
        "beta", "nw_xi", "nw_psi", "nw_r", "nw_nu", "nw_defaults",
    }
    unknown = sorted(set(model) - allowed)
    if unknown:
        raise TypeError(f"exact_posterior() got unknown model settings {unknown}")
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise ValueError(f"invalid top = {top!r}: expected an integer >= 0")
    settings = MixtureModel(**model)
    kernel = settings.kernel if settings.kernel in ("nw", "diag", "md") else "auto"
    data = to_native(X if is_sparse(X) else np.asarray(X, dtype=np.float64), kernel)
    if not isinstance(data, tuple) and data.ndim != 2:
        raise ValueError(f"expected a 2-D array of points, got {data.ndim} dimension(s)")
    out = _native.exact_posterior(data, settings._model_json(), top)
    return ExactPosterior(
        n_partitions=int(out["n_partitions"]),
        ln_evidence=float(out["ln_evidence"]),
        expected_k=float(out["expected_k"]),
        k_probabilities=out["k_probabilities"],
        top=[(labels, float(p)) for labels, p in out["top"]],
        co_clustering=out["co_clustering"],
    )
