from dataclasses import dataclass
from os import PathLike
from typing import Any, Literal, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClusterMixin, DensityMixin

__version__: str

Kernel = Literal["auto", "nw", "diag", "md", "mixed"]
Prior = Literal["dp", "nggp"]
Sampler = Literal[
    "gibbs",
    "jain-neal",
    "sams",
    "tgmcmc",
    "tgmcmc-paper",
    "subcluster",
    "subcluster-dpmm",
    "direct",
    "quasi-direct",
    "quasi-collapsed",
]

class MixtureModel(ClusterMixin, DensityMixin, BaseEstimator):
    kernel: Kernel
    prior: Prior
    sampler: Sampler | None
    n_chains: int
    sweeps: int | Literal["auto"] | None
    max_sweeps: int | None
    seconds: float | None
    burn_in: int | None
    init: str
    alpha: float | None
    sigma: float | None
    u: float | None
    hyperpriors: bool
    kernel_hyperpriors: bool
    types: Mapping[str, str] | Sequence[str] | None
    beta: float | None
    nw_xi: ArrayLike | None
    nw_psi: ArrayLike | None
    nw_r: float | None
    nw_nu: float | None
    nw_defaults: Literal["pooled", "scaled", "reference"]
    sampler_options: Mapping[str, int | None] | None
    temperatures: Sequence[float] | None
    thin: int
    draws_per_chain: int
    run_dir: str | PathLike[str] | None
    checkpoint_every: int | None
    random_state: int | np.random.RandomState | None
    progress: bool

    labels_: NDArray[np.int64]
    n_clusters_: int
    map_labels_: NDArray[np.int64]
    map_hyper_: dict[str, float]
    posterior_similarity_: NDArray[np.float64] | None
    k_distribution_: dict[int, float]
    draws_: NDArray[np.int64]
    hyper_: dict[str, float]
    summary_: dict[str, Any]
    traces_: list[Any]
    kernel_: Literal["nw", "diag", "md", "mixed"]
    column_types_: dict[str, Literal["real", "binary", "cat", "count"]] | None
    n_features_in_: int
    n_iter_: int

    def __init__(
        self,
        kernel: Kernel = "auto",
        prior: Prior = "dp",
        sampler: Sampler | None = None,
        *,
        n_chains: int = 4,
        sweeps: int | Literal["auto"] | None = None,
        max_sweeps: int | None = None,
        seconds: float | None = None,
        burn_in: int | None = None,
        init: str = "auto",
        alpha: float | None = None,
        sigma: float | None = None,
        u: float | None = None,
        hyperpriors: bool = False,
        kernel_hyperpriors: bool = False,
        types: Mapping[str, str] | Sequence[str] | None = None,
        beta: float | None = None,
        nw_xi: ArrayLike | None = None,
        nw_psi: ArrayLike | None = None,
        nw_r: float | None = None,
        nw_nu: float | None = None,
        nw_defaults: Literal["pooled", "scaled", "reference"] = "pooled",
        sampler_options: Mapping[str, int | None] | None = None,
        temperatures: Sequence[float] | None = None,
        thin: int = 1,
        draws_per_chain: int = 256,
        run_dir: str | PathLike[str] | None = None,
        checkpoint_every: int | None = None,
        random_state: int | np.random.RandomState | None = None,
        progress: bool = False,
    ) -> None: ...
    def fit(self, X: Any, y: Any = None) -> MixtureModel: ...
    def resume(
        self,
        X: Any,
        sweeps: int | Literal["auto"] | None = None,
        seconds: float | None = None,
        max_sweeps: int | None = None,
    ) -> MixtureModel: ...
    def fit_predict(self, X: Any, y: Any = None, **kwargs: Any) -> NDArray[np.int64]: ...
    def predict(self, X: Any) -> NDArray[np.int64]: ...
    def predict_proba(self, X: Any) -> NDArray[np.float64]: ...
    def score_samples(self, X: Any) -> NDArray[np.float64]: ...
    def score(self, X: Any, y: Any = None) -> float: ...
    def log_joint(self, X: Any, labels: ArrayLike) -> float: ...
    def impute(self, X: Any = None) -> tuple[Any, Any]: ...
    def cluster_profiles(self) -> list[dict[str, Any]]: ...

@dataclass(frozen=True)
class ExactPosterior:
    n_partitions: int
    ln_evidence: float
    expected_k: float
    k_probabilities: NDArray[np.float64]
    top: list[tuple[NDArray[np.int64], float]]
    co_clustering: NDArray[np.float64]

def exact_posterior(
    X: Any,
    *,
    top: int = 10,
    kernel: Kernel = ...,
    prior: Prior = ...,
    alpha: float | None = ...,
    sigma: float | None = ...,
    u: float | None = ...,
    hyperpriors: bool = ...,
    beta: float | None = ...,
    nw_xi: ArrayLike | None = ...,
    nw_psi: ArrayLike | None = ...,
    nw_r: float | None = ...,
    nw_nu: float | None = ...,
    nw_defaults: Literal["pooled", "scaled", "reference"] = ...,
) -> ExactPosterior: ...

__all__: Sequence[str]
