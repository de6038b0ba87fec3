from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

__version__: str

Dense = NDArray[np.float64]
Counts = tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], int]
Table = tuple[list[tuple[str, list[str | None]]], list[str]]
Data = Dense | Counts | Table
Draw = tuple[NDArray[np.int64], dict[str, float]]

def exact_posterior(data: Data, model_json: str, top: int) -> dict[str, Any]: ...
def predict(
    train: Data, model_json: str, estimate: Draw, draws: list[Draw], new: Data
) -> tuple[NDArray[np.float64], NDArray[np.float64]]: ...
def log_joint(data: Data, model_json: str, labels: NDArray[np.int64]) -> float: ...
def impute(train: Table, model_json: str, estimate: Draw, draws: list[Draw]) -> dict[str, Any]: ...
def impute_new(train: Table, model_json: str, draws: list[Draw], new: Table) -> dict[str, Any]: ...
def fit(
    data: Data,
    model_json: str,
    sampler_json: str | None,
    run_dir: str,
    budget_json: str | None,
    progress: Callable[..., None] | None,
) -> dict[str, Any]: ...
