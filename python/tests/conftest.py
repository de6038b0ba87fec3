"""Shared fixtures: small seeded data sets, the command-line binary, the real data folder."""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def blobs():
    """Three well-separated 2-D Gaussian groups of 30 points (seeded)."""
    rng = np.random.default_rng(7)
    centres = np.array([[-6.0, 0.0], [0.0, 6.0], [6.0, 0.0]])
    X = np.vstack([rng.normal(c, 1.0, size=(30, 2)) for c in centres])
    y = np.repeat(np.arange(3), 30)
    return X, y


@pytest.fixture
def cli():
    """The `nrmm` command-line binary of this checkout (built by `cargo build --release` or
    `cargo test --release`), or a skip saying how to build it; `NRMM_CLI` overrides."""
    given = os.environ.get("NRMM_CLI")
    if given:
        return given
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    path = target / "release" / "nrmm"
    if path.is_file():
        return str(path)
    found = shutil.which("nrmm")
    if found:
        return found
    pytest.skip(f"the nrmm binary is absent ({path}): run `cargo build --release` first")


def real_data(name):
    """`(X, labels)` of a real data set in `../shared/data/real` beside the repository (or
    `$NRMM_DATA_DIR/real`), or a skip saying where it was looked for."""
    root = Path(os.environ.get("NRMM_DATA_DIR", REPO.parent / "shared" / "data"))
    data = root / "real" / f"{name}.txt"
    labels = root / "real" / f"{name}.labels.txt"
    if not (data.is_file() and labels.is_file()):
        pytest.skip(
            f"real data set {name} is absent (expected {data}; set NRMM_DATA_DIR to the data "
            "folder)"
        )
    return np.loadtxt(data, ndmin=2), np.loadtxt(labels, dtype=np.int64)
