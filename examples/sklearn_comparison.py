# %% [markdown]
# # nrmm against scikit-learn's BayesianGaussianMixture on three real data sets
#
# Both fit a Dirichlet process mixture of full-covariance Gaussians without fixing the number
# of clusters: scikit-learn by variational inference on a truncated stick-breaking
# representation (10 components), nrmm by exact MCMC on the collapsed model (4 chains of SAMS
# split-merge moves). We compare the number of clusters found, the agreement with the known
# classes (adjusted Rand index) and the log predictive density of held-out points.
#
# Run from the repository: `python examples/sklearn_comparison.py` (the data sets are read
# from `../shared/data/real` beside the repository, or from `$NRMM_DATA_DIR/real`).

# %%
import os
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import BayesianGaussianMixture
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import nrmm

ROOT = Path(os.environ.get("NRMM_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))


def load(name):
    data, labels = ROOT / "real" / f"{name}.txt", ROOT / "real" / f"{name}.labels.txt"
    if not data.is_file():
        sys.exit(f"{data} is absent: set NRMM_DATA_DIR to the folder holding real/{name}.txt")
    return np.loadtxt(data, ndmin=2), np.loadtxt(labels, dtype=np.int64)


# %% [markdown]
# Each data set is standardised (scikit-learn's priors depend on the data's units; nrmm's
# defaults do not) and split 70/30 into training and held-out points with a fixed seed.

# %%
rows = []
for name in ("iris", "wine", "breast_cancer"):
    X, y = load(name)
    X = StandardScaler().fit_transform(X)
    X_train, X_test, y_train, _ = train_test_split(X, y, test_size=0.3, random_state=0)

    started = time.perf_counter()
    bgm = BayesianGaussianMixture(
        n_components=10,
        weight_concentration_prior_type="dirichlet_process",
        max_iter=1000,
        random_state=0,
    ).fit(X_train)
    bgm_seconds = time.perf_counter() - started
    bgm_labels = bgm.predict(X_train)

    started = time.perf_counter()
    model = nrmm.MixtureModel(sampler="sams", n_chains=4, sweeps=1000, random_state=1).fit(X_train)
    nrmm_seconds = time.perf_counter() - started

    rows.append(
        (name, "BayesianGaussianMixture", len(np.unique(bgm_labels)),
         adjusted_rand_score(y_train, bgm_labels), bgm.score(X_test), bgm_seconds)
    )
    rows.append(
        (name, "nrmm sams", model.n_clusters_, adjusted_rand_score(y_train, model.labels_),
         model.score(X_test), nrmm_seconds)
    )
    rhat = model.summary_["diagnostics"]["n_clusters"]["rhat"]
    print(f"{name}: nrmm P(K) = {model.k_distribution_}, R-hat(K) = {rhat:.3f}")

# %% [markdown]
# Held-out density is nats per point (higher is better); time is wall-clock seconds of the
# fit on this machine.

# %%
print("\n| data | method | K | ARI | held-out log density | seconds |")
print("|---|---|---:|---:|---:|---:|")
for name, method, k, ari, density, seconds in rows:
    print(f"| {name} | {method} | {k} | {ari:.3f} | {density:.3f} | {seconds:.2f} |")
