#!/usr/bin/env python3
"""Real data against scikit-learn: nrmm's defaults side by side with scikit-learn's mixtures.

Run through `run.sh` (it makes the virtual environment and builds nrmm). See README.md here
for what is measured and how; `--help` for the options.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from sklearn.mixture import BayesianGaussianMixture, GaussianMixture
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DATA = ROOT.parent / "shared" / "data"
SEED = 0
FOLDS = 5
PEERS = ("bgmm-full", "bgmm-diag", "gmm-bic")
METHODS = ("nrmm",) + PEERS
# nrmm's budget where its default (4 chains, 1,000 sweeps doubled until they agree) would not fit
# the benchmark's time on 2 cores: the two sets of 10,000 points (MNIST PCA-50's 50 dimensions
# cost about 25 times the 10k set's 6 per sweep) and the ten per-digit models.
BIG_SWEEPS = {"10k": 1000, "mnist_pca50": 100}
CLASSIFIER_SWEEPS = 200
BEGIN = "<!-- BEGIN real-data -->"
END = "<!-- END real-data -->"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Data


def read_idx(path: Path) -> np.ndarray:
    """An IDX file (big-endian header: magic with the element type and rank, then the sizes)."""
    raw = path.read_bytes()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file (bad magic)")
    rank = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(rank)]
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * rank)
    if body.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {body.size} bytes of data, the header says {dims}")
    return body.reshape(dims)


def standardize(x: np.ndarray) -> tuple[np.ndarray, float]:
    """Z-scores with the whole set's mean and standard deviation, and the log Jacobian.

    A density on the standardized scale converts to the original one by
    `ln p_orig(x) = ln p_std(z) - sum_j ln sd_j`: the returned constant is `sum_j ln sd_j`.
    """
    sd = x.std(axis=0)
    if np.any(sd == 0):
        raise ValueError("a constant column cannot be standardized")
    return (x - x.mean(axis=0)) / sd, float(np.log(sd).sum())


@dataclass
class DataSet:
    name: str
    x: np.ndarray
    y: np.ndarray
    units: str  # "original" or "standardized"
    ln_jacobian: float = 0.0  # sum ln sd of the standardization (0 for original units)
    note: str = ""
    bgmm_components: int | None = None  # None: min(50, n_train // 2)
    bic_grid: tuple[int, ...] = tuple(range(1, 16))
    nrmm_sweeps: int | None = None  # None: nrmm's default budget (sweeps per chain)


def six_clusters_50d() -> tuple[np.ndarray, np.ndarray]:
    """A set with an obvious answer that no real set here has: 1,000 points from 6 spherical
    clusters in 50 dimensions (unit covariance, centres from N(0, 16 I), about 40 apart against a
    spread of 7). The fourth draw of the generator BENCHMARKS.md gives for its 8- to 100-d sets,
    so the figures there and here are of the same data."""
    rng = np.random.default_rng(1)
    for d in (8, 16, 32, 50):
        c = rng.normal(0, 4, (6, d))
        z = rng.integers(0, 6, 1000)
        x = c[z] + rng.normal(0, 1, (1000, d))
    return x, z


def load_sets(names: list[str], big_sweeps: dict[str, int | None] = BIG_SWEEPS) -> tuple[list[DataSet], list[str]]:
    """The requested sets that exist, and a message for each one skipped; nrmm runs
    `big_sweeps[name]` sweeps per chain on the two sets of 10,000 points (None: its default)."""
    sets, skipped = [], []
    for base in ("iris", "wine", "breast_cancer"):
        wanted = [n for n in (base, base + "_std") if n in names]
        if not wanted:
            continue
        xf, yf = DATA / "real" / f"{base}.txt", DATA / "real" / f"{base}.labels.txt"
        if not (xf.exists() and yf.exists()):
            skipped += [f"{n}: {xf} not found (the shared data folder is absent)" for n in wanted]
            continue
        x, y = np.loadtxt(xf, ndmin=2), np.loadtxt(yf, dtype=int)
        if base in wanted:
            sets.append(DataSet(base, x, y, "original"))
        if base + "_std" in wanted:
            z, jac = standardize(x)
            sets.append(DataSet(base + "_std", z, y, "standardized", jac))
    if "gauss6_50d" in names:
        x, y = six_clusters_50d()
        sets.append(DataSet("gauss6_50d", x, y, "original",
                            note="synthetic: 6 separated spherical clusters, d = 50",
                            bgmm_components=30, bic_grid=tuple(range(1, 11))))
    if "mnist_pca50" in names:
        xf = DATA / "mnist10k" / "images-idx3-ubyte"
        yf = DATA / "mnist10k" / "labels-idx1-ubyte"
        if xf.exists() and yf.exists():
            px = read_idx(xf).reshape(-1, 28 * 28) / 255.0
            y = read_idx(yf).astype(int)
            z = PCA(50, svd_solver="full", random_state=SEED).fit_transform(px)
            sets.append(
                DataSet(
                    "mnist_pca50",
                    z,
                    y,
                    "original",
                    note="grey levels in [0, 1], PCA-50 fitted on all 10,000 images",
                    bgmm_components=30,
                    bic_grid=tuple(range(1, 11)),
                    nrmm_sweeps=big_sweeps["mnist_pca50"],
                )
            )
        else:
            skipped.append(f"mnist_pca50: {xf} not found (the shared data folder is absent)")
    if "10k" in names:
        xf, yf = DATA / "10k" / "X.txt", DATA / "10k" / "gt_labels.txt"
        if xf.exists() and yf.exists():
            sets.append(
                DataSet(
                    "10k",
                    np.loadtxt(xf, ndmin=2),
                    np.loadtxt(yf, dtype=int),
                    "original",
                    note="119 true labels: the peers' truncation raised to 150",
                    bgmm_components=150,
                    nrmm_sweeps=big_sweeps["10k"],
                )
            )
        else:
            skipped.append(f"10k: {xf} not found (the shared data folder is absent)")
    return sets, skipped


def write_matrix(path: Path, x: np.ndarray) -> None:
    np.savetxt(path, x, fmt="%.17g")


# ---------------------------------------------------------------------------------------------
# Fits


@dataclass
class Fit:
    """One method fitted to one training set: its time, K, and (when scored) densities."""

    method: str
    wall: float
    cpu: float
    k: int
    labels: np.ndarray | None = None  # hard labels of the training points
    lpd: np.ndarray | None = None  # ln predictive density of each test point
    extra: dict = field(default_factory=dict)
    error: str = ""


def peer_model(method: str, k: int, seed: int):
    if method == "gmm":
        return GaussianMixture(k, covariance_type="full", random_state=seed)
    cov = method.split("-")[1]
    return BayesianGaussianMixture(
        n_components=k,
        covariance_type=cov,
        weight_concentration_prior_type="dirichlet_process",
        random_state=seed,
    )


def fit_peer(method: str, train: np.ndarray, test: np.ndarray | None, ds: DataSet) -> Fit:
    """scikit-learn's fit on `train` (all defaults but the truncation), scored on `test`."""
    w0, c0 = time.perf_counter(), time.process_time()
    extra = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if method == "gmm-bic":
            best, best_bic, bics = None, math.inf, {}
            for k in ds.bic_grid:
                if k > train.shape[0]:
                    break
                m = peer_model("gmm", k, SEED).fit(train)
                bics[k] = m.bic(train)
                if bics[k] < best_bic:
                    best, best_bic = m, bics[k]
            model = best
            extra["bic_k"] = model.n_components
            extra["bic_k_at_edge"] = model.n_components == max(bics)
        else:
            nc = ds.bgmm_components or min(50, train.shape[0] // 2)
            model = peer_model(method, nc, SEED).fit(train)
            extra["n_components"] = nc
            extra["converged"] = bool(model.converged_)
        labels = model.predict(train)
        lpd = model.score_samples(test) if test is not None else None
    return Fit(
        method,
        time.perf_counter() - w0,
        time.process_time() - c0,
        len(np.unique(labels)),
        labels,
        lpd,
        extra,
    )


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_cmd(cmd: list[str], logfile: Path, timeout: float) -> tuple[int, str]:
    """Run a command in its own process group; kill the group after `timeout` seconds."""
    with open(logfile, "a") as lf:
        lf.write("$ " + " ".join(cmd) + "\n")
        lf.flush()
        p = subprocess.Popen(
            cmd, stdout=lf, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        try:
            _, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            lf.write(f"killed after {timeout:.0f} s\n")
            return -1, f"timed out after {timeout:.0f} s"
        lf.write(err)
    return p.returncode, err.strip().splitlines()[-1] if err.strip() else ""


def nrmm_summary(out: Path) -> dict:
    """Sweeps, sampling seconds and chains of a run, from its summary.json."""
    s = json.loads((out / "summary.json").read_text())
    chains = s.get("chains", [])
    sweeps = [c.get("sweeps", 0) for c in chains]
    secs = [c.get("seconds", 0.0) for c in chains]
    return {
        "chains": len(chains),
        "sweeps": min(sweeps) if sweeps else 0,
        "sweep_seconds": (max(secs) / min(sweeps)) if sweeps and min(sweeps) > 0 else math.nan,
        "final_k": [c.get("n_clusters") for c in chains],
    }


def nrmm_run_command(nrmm: str, train_file: Path, out: Path, sweeps: int | None) -> list[str]:
    """`nrmm run --data TRAIN --out DIR`: the defaults, with `--sweeps N` only where the default
    budget would not fit the benchmark's time (a sweep count, so the answer does not depend on
    the machine's load)."""
    cmd = [nrmm, "run", "--data", str(train_file), "--out", str(out)]
    return cmd + (["--sweeps", str(sweeps)] if sweeps is not None else [])


def fit_nrmm(
    nrmm: str,
    train_file: Path,
    test_file: Path | None,
    out: Path,
    sweeps: int | None,
    timeout: float,
) -> Fit:
    """`nrmm run` (defaults but `sweeps`, see `nrmm_run_command`), then `nrmm predict`."""
    if out.exists():
        shutil.rmtree(out)
    logfile = out.with_suffix(".log")
    logfile.unlink(missing_ok=True)
    w0, c0 = time.perf_counter(), child_cpu()
    cmd = nrmm_run_command(nrmm, train_file, out, sweeps)
    rc, err = run_cmd(cmd, logfile, timeout)
    if rc != 0:
        return Fit("nrmm", time.perf_counter() - w0, child_cpu() - c0, 0, error=f"run: {err}")
    extra = nrmm_summary(out)
    labels = np.loadtxt(out / "estimate.txt", dtype=int, ndmin=1)
    lpd = None
    if test_file is not None:
        pred = out.parent / (out.name + ".predict.csv")
        cmd = [nrmm, "predict", "--run", str(out), "--data", str(test_file), "--out", str(pred)]
        rc, err = run_cmd(cmd, logfile, timeout)
        if rc != 0:
            return Fit(
                "nrmm", time.perf_counter() - w0, child_cpu() - c0, 0, error=f"predict: {err}"
            )
        with open(pred) as f:
            lpd = np.array([float(r["ln_predictive_density"]) for r in csv.DictReader(f)])
        pred.unlink()
    # The draws are large and the run directory is not read again: keep the summary only.
    for chain in out.glob("chain-*"):
        shutil.rmtree(chain)
    return Fit(
        "nrmm",
        time.perf_counter() - w0,
        child_cpu() - c0,
        len(np.unique(labels)),
        labels,
        lpd,
        extra,
    )


# ---------------------------------------------------------------------------------------------
# The benchmark parts


@dataclass
class Config:
    nrmm: str
    work: Path
    folds: int
    timeout: float
    max_folds: int | None  # evaluate only the first folds of the split (time); None: all
    classifier_sweeps: int | None  # nrmm's sweeps per chain on each digit (None: the default)


def bench_set(ds: DataSet, cfg: Config) -> list[dict]:
    """5-fold held-out density, and ARI / NMI / K of fits on all the data, for every method."""
    rows = []
    wd = cfg.work / ds.name
    wd.mkdir(parents=True, exist_ok=True)
    n, d = ds.x.shape
    folds = KFold(cfg.folds, shuffle=True, random_state=SEED).split(ds.x)
    for f, (tr, te) in enumerate(folds):
        if cfg.max_folds is not None and f >= cfg.max_folds:
            break
        train_file, test_file = wd / f"fold{f}.train.txt", wd / f"fold{f}.test.txt"
        write_matrix(train_file, ds.x[tr])
        write_matrix(test_file, ds.x[te])
        fits = [fit_peer(m, ds.x[tr], ds.x[te], ds) for m in PEERS]
        fits.append(fit_nrmm(cfg.nrmm, train_file, test_file, wd / f"fold{f}.run", ds.nrmm_sweeps,
                             cfg.timeout))
        for fit in fits:
            rows.append(row(ds, "fold", f, fit, len(tr), len(te)))
        log(f"{ds.name} fold {f}: " + ", ".join(f"{r['method']} {r['lpd']}" for r in rows[-4:]))
        train_file.unlink()
        test_file.unlink()
    all_file = wd / "all.txt"
    write_matrix(all_file, ds.x)
    fits = [fit_peer(m, ds.x, None, ds) for m in PEERS]
    fits.append(fit_nrmm(cfg.nrmm, all_file, None, wd / "all.run", ds.nrmm_sweeps, cfg.timeout))
    for fit in fits:
        r = row(ds, "all", "", fit, n, 0)
        if fit.labels is not None and not fit.error:
            r["ari"] = f"{adjusted_rand_score(ds.y, fit.labels):.4f}"
            r["nmi"] = f"{normalized_mutual_info_score(ds.y, fit.labels):.4f}"
        rows.append(r)
    log(f"{ds.name} all: " + ", ".join(f"{r['method']} K={r['k']} ARI={r['ari']}" for r in rows[-4:]))
    all_file.unlink()
    return rows


def row(ds: DataSet, part: str, fold, fit: Fit, n_train: int, n_test: int) -> dict:
    ok = not fit.error
    lpd = float(np.mean(fit.lpd)) if ok and fit.lpd is not None else math.nan
    if ok and fit.lpd is not None and not np.all(np.isfinite(fit.lpd)):
        fit.error = "non-finite predictive density"
        lpd = math.nan
    return {
        "set": ds.name,
        "units": ds.units,
        "n": ds.x.shape[0],
        "d": ds.x.shape[1],
        "part": part,
        "fold": fold,
        "n_train": n_train,
        "n_test": n_test,
        "method": fit.method,
        "lpd": "" if math.isnan(lpd) else f"{lpd:.5f}",
        "ln_jacobian": f"{ds.ln_jacobian:.6f}",
        "k": fit.k if ok else "",
        "ari": "",
        "nmi": "",
        "wall_s": f"{fit.wall:.3f}",
        "cpu_s": f"{fit.cpu:.3f}",
        "nrmm_sweeps": fit.extra.get("sweeps", "") if fit.method == "nrmm" else "",
        "detail": json.dumps(fit.extra, sort_keys=True) if fit.extra else "",
        "error": fit.error,
    }


def bench_noise(dims: list[int], cfg: Config) -> list[dict]:
    """K on pure N(0, I) noise (n = 600): nrmm's defaults and the peers, all on the same draw."""
    rows = []
    wd = cfg.work / "noise"
    wd.mkdir(parents=True, exist_ok=True)
    for d in dims:
        x = np.random.default_rng(SEED + d).standard_normal((600, d))
        ds = DataSet(f"noise_d{d}", x, np.zeros(600, int), "original", bgmm_components=10,
                     bic_grid=tuple(range(1, 6)))
        f = wd / f"d{d}.txt"
        write_matrix(f, x)
        fits = [fit_peer(m, x, None, ds) for m in PEERS]
        fits.append(fit_nrmm(cfg.nrmm, f, None, wd / f"d{d}.run", None, cfg.timeout))
        for fit in fits:
            rows.append(
                {
                    "d": d,
                    "n": 600,
                    "method": fit.method,
                    "k": fit.k if not fit.error else "",
                    "wall_s": f"{fit.wall:.3f}",
                    "cpu_s": f"{fit.cpu:.3f}",
                    "sweeps": fit.extra.get("sweeps", ""),
                    "sweep_s": f"{fit.extra['sweep_seconds']:.4g}"
                    if "sweep_seconds" in fit.extra
                    else "",
                    "final_k": json.dumps(fit.extra.get("final_k", "")),
                    "detail": json.dumps(fit.extra, sort_keys=True),
                    "error": fit.error,
                }
            )
        log(f"noise d={d}: " + ", ".join(f"{r['method']} K={r['k']} {r['error']}" for r in rows[-4:]))
        f.unlink()
    return rows


def bench_classifier(cfg: Config, quick: bool, example_sweeps: int | None) -> tuple[list[dict], str]:
    """MNIST per-digit generative classifiers on the split first 8,000 / last 2,000 (PCA-50 fitted
    on the training images), and the crate's own example on the same split."""
    xf = DATA / "mnist10k" / "images-idx3-ubyte"
    yf = DATA / "mnist10k" / "labels-idx1-ubyte"
    if not (xf.exists() and yf.exists()):
        return [], f"skipped: {xf} not found (the shared data folder is absent)"
    px = read_idx(xf).reshape(-1, 28 * 28) / 255.0
    y = read_idx(yf).astype(int)
    n_train, n_test = (2000, 500) if quick else (8000, 2000)
    pca = PCA(50, svd_solver="full", random_state=SEED).fit(px[:n_train])
    tr, te = pca.transform(px[:n_train]), pca.transform(px[-n_test:])
    ytr, yte = y[:n_train], y[-n_test:]
    wd = cfg.work / "mnist-classifier"
    wd.mkdir(parents=True, exist_ok=True)
    test_file = wd / "test.txt"
    write_matrix(test_file, te)
    ln_prior = np.log(np.bincount(ytr, minlength=10) / n_train)
    methods = {
        "one Gaussian per digit": DataSet("c", tr, ytr, "original", bic_grid=(1,)),
        "gmm-bic per digit": DataSet("c", tr, ytr, "original", bic_grid=tuple(range(1, 11))),
        "bgmm-full per digit": DataSet("c", tr, ytr, "original", bgmm_components=30),
        "bgmm-diag per digit": DataSet("c", tr, ytr, "original", bgmm_components=30),
    }
    scores = {m: np.zeros((n_test, 10)) for m in list(methods) + ["nrmm per digit"]}
    stats = {m: {"wall": 0.0, "cpu": 0.0, "k": []} for m in scores}
    for c in range(10):
        xc = tr[ytr == c]
        for m, ds in methods.items():
            peer = {"one": "gmm-bic", "gmm": "gmm-bic"}.get(m.split()[0], m.split()[0])
            fit = fit_peer(peer, xc, te, ds)
            scores[m][:, c] = fit.lpd
            stats[m]["wall"] += fit.wall
            stats[m]["cpu"] += fit.cpu
            stats[m]["k"].append(fit.k)
        train_file = wd / f"digit{c}.txt"
        write_matrix(train_file, xc)
        fit = fit_nrmm(cfg.nrmm, train_file, test_file, wd / f"digit{c}.run", cfg.classifier_sweeps,
                       cfg.timeout)
        train_file.unlink()
        m = "nrmm per digit"
        if fit.error:
            log(f"digit {c}: nrmm failed: {fit.error}")
            scores[m][:, c] = -np.inf
            stats[m]["error"] = fit.error
        else:
            scores[m][:, c] = fit.lpd
        stats[m]["wall"] += fit.wall
        stats[m]["cpu"] += fit.cpu
        stats[m]["k"].append(fit.k)
        stats[m]["sweeps"] = fit.extra.get("sweeps", "")
        log(f"digit {c}: " + ", ".join(f"{k} K={v['k'][-1]}" for k, v in stats.items()))
    test_file.unlink()
    rows = []
    for m, s in scores.items():
        pred = np.argmax(s + ln_prior, axis=1)
        rows.append(classifier_row(m, pred, yte, stats[m], n_train, n_test))
    rows.append(run_example(cfg, quick, example_sweeps))
    return rows, ""


def classifier_row(method, pred, yte, st, n_train, n_test) -> dict:
    acc = float(np.mean(pred == yte))
    per_digit = [float(np.mean(pred[yte == c] == c)) for c in range(10)]
    return {
        "method": method,
        "n_train": n_train,
        "n_test": n_test,
        "accuracy": f"{100 * acc:.2f}",
        "per_digit": " ".join(f"{100 * a:.1f}" for a in per_digit),
        "k_per_digit": " ".join(str(k) for k in st.get("k", [])),
        "wall_s": f"{st.get('wall', math.nan):.1f}",
        "cpu_s": f"{st.get('cpu', math.nan):.1f}",
        "detail": json.dumps({k: v for k, v in st.items() if k not in ("wall", "cpu", "k")}),
    }


def run_example(cfg: Config, quick: bool, sweeps: int | None) -> dict:
    """The crate's `paper-mnist-infinite-mixtures` example on its own split (the same one),
    into a scratch folder so that its README is left alone."""
    out = cfg.work / "mnist-example"
    out.mkdir(parents=True, exist_ok=True)
    sweeps = sweeps or (10 if quick else 100)
    exe = ROOT / "target" / "release" / "examples" / "paper-mnist-infinite-mixtures"
    cmd = [str(exe), "--out", str(out), "--sweeps", str(sweeps)]
    if quick:
        cmd.append("--smoke")
    base = {"method": f"crate example, {sweeps} sweeps" + (" (--smoke)" if quick else ""),
            "n_train": "", "n_test": "", "accuracy": "", "per_digit": "", "k_per_digit": "",
            "wall_s": "", "cpu_s": "", "detail": ""}
    if not exe.exists():
        base["detail"] = json.dumps({"error": f"{exe} not built (run.sh builds it)"})
        return base
    w0, c0 = time.perf_counter(), child_cpu()
    rc, err = run_cmd(cmd, cfg.work / "mnist-example.log", cfg.timeout * 4)
    base["wall_s"] = f"{time.perf_counter() - w0:.1f}"
    base["cpu_s"] = f"{child_cpu() - c0:.1f}"
    if rc != 0:
        base["detail"] = json.dumps({"error": err})
        return base
    summary = {}
    with open(out / "results" / "summary.csv") as f:
        for r in csv.reader(f):
            if len(r) >= 2:
                summary[r[0]] = r[1]
    with open(out / "results" / "per_digit.csv") as f:
        per = list(csv.DictReader(f))
    base["detail"] = json.dumps(summary)
    acc_key = next((k for k in summary if "accuracy" in k and "one" not in k and "single" not in k), None)
    if acc_key:
        base["accuracy"] = summary[acc_key].rstrip("%")
    split = next((summary[k] for k in summary if "train" in k and "test" in k), "")
    if "/" in split:
        base["n_train"], base["n_test"] = [s.strip() for s in split.split("/")]
    if per:
        kcol = next((k for k in per[0] if "cluster" in k.lower()), None)
        acol = next((k for k in per[0] if "accuracy" in k.lower() and "1" not in k), None)
        if kcol:
            base["k_per_digit"] = " ".join(r[kcol] for r in per)
        if acol:
            base["per_digit"] = " ".join(r[acol] for r in per)
    return base


# ---------------------------------------------------------------------------------------------
# Tables


def write_csv(path: Path, rows: list[dict]) -> None:
    if not rows:
        return
    keys = list(rows[0])
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def fmt(v: float, p: int = 3) -> str:
    return "—" if v is None or math.isnan(v) else f"{v:.{p}f}"


def k_label(k, detail: str) -> str:
    """K, marked when it is the largest the method could give (BIC's grid edge, the truncation)."""
    info = json.loads(detail) if detail else {}
    if info.get("bic_k_at_edge"):
        return f"{k} (grid edge)"
    if str(k) == str(info.get("n_components")):
        return f"{k} (all)"
    return str(k)


def summarize(rows: list[dict]) -> dict:
    """Per (set, method): mean held-out LPD over folds, mean fold time and K, and the all-data fit."""
    out = {}
    for r in rows:
        key = (r["set"], r["method"])
        s = out.setdefault(key, {"lpd": [], "wall": [], "k_fold": [], "errors": [], "sweeps": []})
        if r["error"]:
            s["errors"].append(r["error"])
        if r["part"] == "fold":
            s["lpd"].append(num(r["lpd"]))
            s["wall"].append(num(r["wall_s"]))
            s["k_fold"].append(num(r["k"]))
            if r.get("nrmm_sweeps"):
                s["sweeps"].append(int(num(r["nrmm_sweeps"])))
        else:
            s.update(all_k=k_label(r["k"], r["detail"]), ari=num(r["ari"]), nmi=num(r["nmi"]),
                     all_wall=num(r["wall_s"]))
        s.update(units=r["units"], jac=num(r["ln_jacobian"]), n=r["n"], d=r["d"])
    for s in out.values():
        lp = np.array(s["lpd"])
        s["mean_lpd"] = float(lp.mean()) if len(lp) and np.all(np.isfinite(lp)) else math.nan
        s["mean_wall"] = float(np.mean(s["wall"])) if s["wall"] else math.nan
        s["mean_k_fold"] = float(np.nanmean(s["k_fold"])) if s["k_fold"] else math.nan
    return out


def set_table(summary: dict, sets: list[str]) -> str:
    lines = [
        "| set | n × d | method | held-out ln p / point | ARI | NMI | K (all data) | K (folds, mean) | wall s / fold (contended) | nrmm sweeps / chain |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in sets:
        for m in METHODS:
            s = summary.get((name, m))
            if not s:
                continue
            err = "; ".join(sorted(set(s["errors"])))
            lines.append(
                f"| {name} | {s['n']} × {s['d']} | {m} | {fmt(s['mean_lpd'])} | {fmt(s.get('ari', math.nan))} "
                f"| {fmt(s.get('nmi', math.nan))} | {s.get('all_k', '') or '—'} | {fmt(s['mean_k_fold'], 1)} "
                f"| {fmt(s['mean_wall'], 1)} | {min(s['sweeps']) if s['sweeps'] else ''}"
                + (f" (error: {err})" if err else "")
                + " |"
            )
    return "\n".join(lines)


def goal_table(summary: dict, sets: list[str]) -> str:
    """The issue's goal, set by set: nrmm's LPD minus the best peer's, ARI gap to the best peer,
    and for the sets in both units, the change of nrmm's answer with the units."""
    lines = [
        "| set | nrmm ln p − best peer's (nats / point) | best peer | nrmm ARI − best peer's | best peer (ARI) | met? |",
        "|---|---|---|---|---|---|",
    ]
    for name in sets:
        nr = summary.get((name, "nrmm"))
        if not nr:
            continue
        peers = [(m, summary[(name, m)]) for m in PEERS if (name, m) in summary]
        lpd_best = max(peers, key=lambda p: -math.inf if math.isnan(p[1]["mean_lpd"]) else p[1]["mean_lpd"])
        ari_best = max(peers, key=lambda p: -math.inf if math.isnan(p[1].get("ari", math.nan)) else p[1]["ari"])
        dl = nr["mean_lpd"] - lpd_best[1]["mean_lpd"]
        da = nr.get("ari", math.nan) - ari_best[1].get("ari", math.nan)
        met = (dl >= 0) and (da >= -0.02)
        lines.append(
            f"| {name} | {fmt(dl)} | {lpd_best[0]} | {fmt(da)} | {ari_best[0]} | {'yes' if met else 'no'} |"
        )
    return "\n".join(lines)


def units_table(summary: dict, sets: list[str]) -> str:
    lines = [
        "| set | method | ln p / point, original units | standardized, converted to original units | difference | ARI original / standardized | K original / standardized |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in sets:
        if name.endswith("_std") or name + "_std" not in sets:
            continue
        for m in METHODS:
            a, b = summary.get((name, m)), summary.get((name + "_std", m))
            if not (a and b):
                continue
            conv = b["mean_lpd"] - b["jac"]
            lines.append(
                f"| {name} | {m} | {fmt(a['mean_lpd'])} | {fmt(conv)} | {fmt(conv - a['mean_lpd'])} "
                f"| {fmt(a.get('ari', math.nan))} / {fmt(b.get('ari', math.nan))} | {a.get('all_k', '—')} / {b.get('all_k', '—')} |"
            )
    return "\n".join(lines)


def noise_table(rows: list[dict]) -> str:
    lines = [
        "| d | nrmm K (Dahl) | nrmm final K | nrmm sweeps | nrmm s / sweep | bgmm-full K | bgmm-diag K | gmm-bic K | nrmm wall s | peers' wall s (full / diag / bic) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    by = {}
    for r in rows:
        by.setdefault(r["d"], {})[r["method"]] = r
    for d, ms in sorted(by.items(), key=lambda kv: int(kv[0])):
        n = ms.get("nrmm", {})
        k = n.get("k") if not n.get("error") else f"— ({n.get('error')})"

        def peer_k(m):
            return k_label(ms[m]["k"], ms[m]["detail"]) if m in ms else ""

        lines.append(
            f"| {d} | {k} | {', '.join(str(v) for v in json.loads(n.get('final_k') or '[]') or [])} | {n.get('sweeps', '')} "
            f"| {n.get('sweep_s', '')} | {peer_k('bgmm-full')} | {peer_k('bgmm-diag')} | {peer_k('gmm-bic')} "
            f"| {n.get('wall_s', '')} "
            f"| {' / '.join(ms.get(p, {}).get('wall_s', '') for p in PEERS)} |"
        )
    return "\n".join(lines)


def classifier_table(rows: list[dict]) -> str:
    lines = [
        "| classifier | train / test | test accuracy % | per digit 0..9 % | K per digit | wall s (all digits) |",
        "|---|---|---|---|---|---|",
        "| published: DP mixture per digit (blog, full MNIST 60k / 10k) | 60000 / 10000 | 98 | 99.8 98.9 98.2 97.8 97.9 96.2 98.7 96.7 97.5 96.7 | | |",
    ]
    for r in rows:
        lines.append(
            f"| {r['method']} | {r['n_train']} / {r['n_test']} | {r['accuracy'] or '—'} | {r['per_digit']} "
            f"| {r['k_per_digit']} | {r['wall_s']} |"
        )
    return "\n".join(lines)


def git(where: Path, *args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# ---------------------------------------------------------------------------------------------


def main() -> int:
    all_sets = ["iris", "iris_std", "wine", "wine_std", "breast_cancer", "breast_cancer_std",
                "gauss6_50d", "mnist_pca50", "10k"]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="a few minutes: the six small sets on 3 folds, noise up to "
                    "d = 100, the classifier on 2,000 / 500 digits")
    ap.add_argument("--nrmm", default=str(ROOT / "target" / "release" / "nrmm"), help="the nrmm binary")
    ap.add_argument("--out", type=Path, help="output folder (default: results/, or results-quick/ with --quick)")
    ap.add_argument("--sets", default=None, help=f"comma-separated subset of {','.join(all_sets)}")
    ap.add_argument("--noise-dims", default=None, help="comma-separated d of the noise check (default 10,50,100,500)")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: sets,noise,classifier,example")
    ap.add_argument("--classifier-sweeps", type=int, default=CLASSIFIER_SWEEPS,
                    help=f"nrmm's sweeps per chain on each digit (default {CLASSIFIER_SWEEPS}; 0: nrmm's own default)")
    ap.add_argument("--big-sweeps", type=int, default=None,
                    help="nrmm's sweeps per chain on MNIST PCA-50 and 10k (default: "
                    + ", ".join(f"{v} on {k}" for k, v in BIG_SWEEPS.items()) + "; 0: nrmm's own default)")
    ap.add_argument("--example-sweeps", type=int, default=None, help="sweeps of the crate's MNIST example (default 100)")
    ap.add_argument("--max-folds", type=int, default=None,
                    help="evaluate only the first N folds of the split (each still trains on "
                         "4/5 of the data; for the big sets when time is short)")
    ap.add_argument("--peer-threads", type=int, default=1,
                    help="BLAS threads of the peers (default 1, as nrmm's one chain; on a shared machine "
                    "OpenBLAS's spinning threads made iris 15x slower with 2)")
    ap.add_argument("--render-only", action="store_true",
                    help="measure nothing: rebuild results.md (and BENCHMARKS.md) from the CSVs in --out")
    ap.add_argument("--write-benchmarks", action="store_true",
                    help="also rewrite the 'Real data against scikit-learn' section of BENCHMARKS.md")
    a = ap.parse_args()
    a.classifier_sweeps = a.classifier_sweeps or None

    quick = a.quick
    out = a.out or HERE / ("results-quick" if quick else "results")
    out.mkdir(parents=True, exist_ok=True)
    cfg = Config(
        nrmm=a.nrmm,
        work=out / "work",
        folds=3 if quick else FOLDS,
        timeout=300.0 if quick else 1800.0,
        classifier_sweeps=a.classifier_sweeps,
        max_folds=a.max_folds,
    )
    if not Path(cfg.nrmm).exists():
        print(f"error: the nrmm binary {cfg.nrmm} does not exist: build it with `cargo build --release`",
              file=sys.stderr)
        return 1
    if not a.render_only:
        if cfg.work.exists():
            shutil.rmtree(cfg.work)
        cfg.work.mkdir(parents=True)
    skip = set(filter(None, a.skip.split(",")))
    names = a.sets.split(",") if a.sets else (all_sets[:6] if quick else all_sets)
    unknown = set(names) - set(all_sets)
    if unknown:
        print(f"error: unknown sets {sorted(unknown)}; known: {all_sets}", file=sys.stderr)
        return 2
    dims = [int(v) for v in a.noise_dims.split(",")] if a.noise_dims else ([10, 50, 100] if quick else [10, 50, 100, 500])
    threadpool_limits(limits=a.peer_threads)
    started = time.perf_counter()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    # The checkout the nrmm binary was built in (--nrmm may point to another one).
    checkout = Path(cfg.nrmm).resolve().parent
    # Its last commit that changed more than this benchmark and its report: the nrmm measured.
    source = ["--", ":(top)", ":(top,exclude)benches/real-data", ":(top,exclude)BENCHMARKS.md"]
    commit = git(checkout, "log", "-1", "--format=%h", *source)
    subject = git(checkout, "log", "-1", "--format=%s", *source)
    branch = git(checkout, "rev-parse", "--abbrev-ref", "HEAD")
    log(f"nrmm at {commit} ({subject}); output in {out}")

    if a.render_only:
        text = render(out)
    else:
        for stale in ("sets.csv", "noise.csv", "mnist_classifier.csv", "meta.json", "results.md"):
            (out / stale).unlink(missing_ok=True)
        import sklearn

        meta = {
            "when": when,
            "commit": commit,
            "branch": branch,
            "subject": subject,
            "minutes": None,  # set at the end: a report without it is of an unfinished run
            "mode": ("--quick" if quick else "full run")
            + (f", the first {a.max_folds} of {cfg.folds} folds" if a.max_folds else ""),
            "versions": f"scikit-learn {sklearn.__version__}, numpy {np.__version__}",
            "sets": names,
            "classifier": "skipped (--skip classifier)" if "classifier" in skip else "not run yet",
            "skipped": [],
        }

        def save_meta():
            (out / "meta.json").write_text(json.dumps(meta, indent=1))

        # Cheap parts first, and the tables rewritable (--render-only) after each: an interrupted
        # run still reports what it measured.
        sets = []
        if "sets" not in skip:
            budget = BIG_SWEEPS if a.big_sweeps is None else dict.fromkeys(BIG_SWEEPS, a.big_sweeps or None)
            sets, meta["skipped"] = load_sets(names, budget)
            for msg in meta["skipped"]:
                log("skipped " + msg)
        save_meta()
        big = {"10k", "mnist_pca50"}
        set_rows = []
        for ds in [s for s in sets if s.name not in big]:
            set_rows += bench_set(ds, cfg)
            write_csv(out / "sets.csv", set_rows)
        if "noise" not in skip:
            write_csv(out / "noise.csv", bench_noise(dims, cfg))
        if "classifier" not in skip:
            clf_rows, meta["classifier"] = bench_classifier(cfg, quick, a.example_sweeps)
            write_csv(out / "mnist_classifier.csv", clf_rows)
            save_meta()
        for ds in [s for s in sets if s.name in big]:
            set_rows += bench_set(ds, cfg)
            write_csv(out / "sets.csv", set_rows)
        meta["minutes"] = round((time.perf_counter() - started) / 60, 1)
        save_meta()
        text = render(out)
        shutil.rmtree(cfg.work, ignore_errors=True) if not os.environ.get("REALBENCH_KEEP") else None
    (out / "results.md").write_text(text)
    log(f"wrote {out / 'results.md'}")
    if a.write_benchmarks:
        write_benchmarks(text)
    print(text)
    return 0


def read_csv(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def render(out: Path) -> str:
    """The markdown report of the CSVs and meta.json in `out`."""
    meta = json.loads((out / "meta.json").read_text())
    set_rows = read_csv(out / "sets.csv")
    noise_rows = read_csv(out / "noise.csv")
    clf_rows = read_csv(out / "mnist_classifier.csv")
    summary = summarize(set_rows)
    present = [n for n in meta["sets"] if any(k[0] == n for k in summary)]
    orig = [n for n in present if not n.endswith("_std")]
    std = [n for n in present if n.endswith("_std")]
    md = [
        f"Measured {meta['when']} with nrmm at `{meta['commit']}` ({meta['subject']}; "
        f"built on branch {meta.get('branch', '?')}), "
        + (f"{meta['minutes']} min wall in all" if meta["minutes"] is not None
         else "**unfinished run** (the parts below are those it completed)")
        + f" ({meta['mode']}; {meta['versions']}).",
        "",
        "#### Held-out density, clustering and time, original units",
        "",
        set_table(summary, orig) if orig else "(no set run)",
        "",
        "#### The same, standardized (z-scores of the whole set; densities in standardized units)",
        "",
        set_table(summary, std) if std else "(no set run)",
        "",
        "#### Does the answer depend on the units?",
        "",
        "Held-out density on the standardized data converted back to the original units "
        "(minus Σ ln sd of the columns): a unit-equivariant method gives the same figure in both columns.",
        "",
        units_table(summary, present) if std else "(no set in both units)",
        "",
        "#### The goal: nrmm's held-out density at least both peers', ARI within 0.02 of the best",
        "",
        goal_table(summary, present) if present else "(no set run)",
        "",
        "#### Noise: N(0, I), n = 600 (truth K = 1)",
        "",
        noise_table(noise_rows) if noise_rows else "(skipped)",
        "",
        "#### MNIST per-digit generative classifiers (first / last images of `mnist10k`, PCA-50 fitted on the training images)",
        "",
        classifier_table(clf_rows) if clf_rows else meta["classifier"],
    ]
    if meta["skipped"]:
        md += ["", "Skipped: " + "; ".join(meta["skipped"])]
    return "\n".join(md) + "\n"


def write_benchmarks(text: str) -> None:
    """Replace the measured part of BENCHMARKS.md's real-data section (between its markers)."""
    path = ROOT / "BENCHMARKS.md"
    doc = path.read_text()
    if BEGIN not in doc or END not in doc:
        print(f"warning: {path} has no {BEGIN} … {END} markers; left alone", file=sys.stderr)
        return
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(head + BEGIN + "\n" + text + END + tail)
    log(f"rewrote the real-data section of {path}")


if __name__ == "__main__":
    sys.exit(main())
