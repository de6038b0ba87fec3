"""Which point estimate by default: the ARI against the labels and the expected losses of each
estimate of a default `nrmm run` (VI, Binder and 1 - ARI minimisers, Dahl's, the best state)
on the labelled real sets.

    python3 benches/estimates/which_default.py [--sets iris,wine,...] [--out DIR]

Needs numpy (PCA of the MNIST subsample, the ARI) and the release binary
(`cargo build --release`). Each set's run is `nrmm run --data FILE --seed 1 --out DIR`, with
`--sweeps N` on the two sets of thousands of points (see BIG_SWEEPS); a run directory that
already holds a summary.json is read, not rerun (`--rerun` to run again). Prints a Markdown
table and writes it with the figures as JSON into the output folder.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"

# The estimates' files in a run directory, by the name the summary gives them (estimate.txt is
# the default one, a copy of one of these).
ESTIMATES = {
    "vi": "estimate-vi.txt",
    "binder": "estimate-binder.txt",
    "1-ari": "estimate-1-ari.txt",
    "dahl": "estimate-dahl.txt",
    "map": "map.txt",
}

# The sets of thousands of points run a fixed budget (the default doubles 1,000 sweeps up to
# 16,000 until the chains agree: hours on 2 cores).
BIG_SWEEPS = {"10k": 1000, "mnist_pca50": 200}

# Images of the MNIST subsample (the first of the shuffled 10,000) and PCA components.
MNIST_N = 2000
MNIST_DIMS = 50


def ari(a: np.ndarray, b: np.ndarray) -> float:
    """Adjusted Rand index (Hubert & Arabie 1985) of two labellings."""
    _, a = np.unique(a, return_inverse=True)
    _, b = np.unique(b, return_inverse=True)
    table = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(table, (a, b), 1)

    def pairs(x):
        return (x * (x - 1) / 2).sum()

    s, ra, rb = pairs(table), pairs(table.sum(1)), pairs(table.sum(0))
    expected = ra * rb / pairs(np.array([len(a)]))
    top = 0.5 * (ra + rb)
    return 1.0 if top == expected else float((s - expected) / (top - expected))


def read_idx(path: Path) -> np.ndarray:
    """An IDX file (big-endian header: magic, then one size per dimension) as an array."""
    raw = path.read_bytes()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def mnist_pca(work: Path) -> tuple[Path, Path] | None:
    """The first MNIST_N images of the shared 10,000 (grey levels in [0, 1]) projected on their
    first MNIST_DIMS principal components, written with their labels into `work`."""
    folder = DATA / "mnist10k"
    images, labels = folder / "images-idx3-ubyte", folder / "labels-idx1-ubyte"
    if not images.exists():
        return None
    x = read_idx(images)[:MNIST_N].reshape(MNIST_N, -1).astype(float) / 255.0
    y = read_idx(labels)[:MNIST_N]
    centred = x - x.mean(0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    z = centred @ vt[:MNIST_DIMS].T
    work.mkdir(parents=True, exist_ok=True)
    xf, yf = work / "mnist_pca50.txt", work / "mnist_pca50.labels.txt"
    np.savetxt(xf, z, fmt="%.6g")
    np.savetxt(yf, y, fmt="%d")
    return xf, yf


def data_sets(names: list[str], work: Path) -> list[tuple[str, Path, Path]]:
    """(name, data file, labels file) of each named set present; a message for each absent."""
    found = []
    for name in names:
        if name in ("iris", "wine", "breast_cancer"):
            pair = DATA / "real" / f"{name}.txt", DATA / "real" / f"{name}.labels.txt"
        elif name == "10k":
            pair = DATA / "10k" / "X.txt", DATA / "10k" / "gt_labels.txt"
        elif name == "mnist_pca50":
            pair = mnist_pca(work) or (DATA / "mnist10k" / "images-idx3-ubyte",) * 2
        else:
            sys.exit(f"unknown set {name!r}: iris, wine, breast_cancer, mnist_pca50 or 10k")
        if pair[0].exists() and pair[1].exists():
            found.append((name, *pair))
        else:
            print(f"skipped {name}: {pair[0]} not found (the shared data folder is absent)")
    return found


def measure(name: str, xf: Path, yf: Path, out: Path, nrmm: Path, rerun: bool) -> dict:
    """Runs (or reads) the set's default run and returns its estimates' K, ARI, expected losses."""
    run_dir = out / name
    command = [str(nrmm), "run", "--data", str(xf), "--seed", "1", "--out", str(run_dir), "--force"]
    if name in BIG_SWEEPS:
        command += ["--sweeps", str(BIG_SWEEPS[name])]
    seconds = None
    if rerun or not (run_dir / "summary.json").exists():
        start = time.time()
        with open(out / f"{name}.log", "w") as log:
            subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT)
        seconds = time.time() - start
    summary = json.loads((run_dir / "summary.json").read_text())
    truth = np.loadtxt(yf, dtype=int)
    by_loss = summary.get("by_loss") or {}
    losses = by_loss.get("expected_losses", {})
    rows = {}
    for est, file in ESTIMATES.items():
        path = run_dir / file
        if not path.exists():
            continue
        labels = np.loadtxt(path, dtype=int)
        rows[est] = {
            "k": int(len(np.unique(labels))),
            "ari": ari(labels, truth),
            "expected_losses": losses.get(est, {}),
        }
    return {
        "set": name,
        "n": int(len(truth)),
        "command": " ".join(command[1:]).replace(str(ROOT) + "/", ""),
        "wall_seconds": seconds,
        "draws": by_loss.get("draws"),
        "warnings": len(summary.get("warnings", [])),
        "estimates": rows,
    }


def table(results: list[dict]) -> str:
    """One row per set and estimate: K, ARI, expected VI, Binder and 1 - ARI."""
    lines = [
        "| set | estimate | K | ARI | E[VI] | E[Binder] | E[1 − ARI] |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        for est, row in r["estimates"].items():
            e = row["expected_losses"]
            cells = [f"{e[l]:.4f}" if l in e else "—" for l in ("vi", "binder", "1-ari")]
            lines.append(f"| {r['set']} | {est} | {row['k']} | {row['ari']:.3f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="iris,wine,breast_cancer,mnist_pca50,10k")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "which-default")
    parser.add_argument("--nrmm", type=Path, default=ROOT / "target" / "release" / "nrmm")
    parser.add_argument("--rerun", action="store_true", help="run again where a summary exists")
    args = parser.parse_args()
    if not args.nrmm.exists():
        sys.exit(f"{args.nrmm} not found: build it with `cargo build --release`")
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for name, xf, yf in data_sets(args.sets.split(","), args.out / "data"):
        print(f"{name}: {xf.name}", flush=True)
        results.append(measure(name, xf, yf, args.out, args.nrmm, args.rerun))
    text = table(results)
    print(text)
    (args.out / "which-default.md").write_text(text + "\n")
    (args.out / "which-default.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
