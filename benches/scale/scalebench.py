#!/usr/bin/env python3
"""Scale: nrmm's default run and its sub-cluster sampler against scikit-learn's mixtures on
seeded Gaussian mixtures of 20,000 to 10^6 (10^7 with --huge) points, 2 to 128 dimensions, 6 to
80 clusters, separated and overlapping.

Run through `run.sh` (it makes the virtual environment and builds nrmm). See README.md here for
what is measured and the goals; `--help` for the options.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# Bump when the generator changes, so that cached data sets are made again.
GENERATOR_VERSION = 1
METHODS = ("nrmm", "nrmm-subcluster", "bgmm", "gmm-bic")
# The most K values the BIC grid tries: 1..2K in full up to 2K = 20, else 20 values spread
# evenly over it (a fit per K; 160 fits at K = 80 would not fit any cap).
BIC_GRID_MAX = 20
# Seconds a capped nrmm run gets after Ctrl-C to write its summary before it is killed.
GRACE_S = 20.0
# The memory goal is judged on sets of at least this many MiB: below it a process's own
# footprint (about 20 MB for nrmm) outweighs three copies of the data.
MEMORY_GOAL_MIN_MB = 50.0
FIELDS = ["set", "n", "d", "k_true", "sep", "data_mb", "method", "status", "wall_s", "fit_s",
          "cpu_s",
          "peak_rss_mb", "rss_over_data", "ari", "nmi", "k", "chains_k", "gap_min", "gap_max",
          "gap_pp_min", "gap_pp_max", "gap_best_pp", "truth_log_joint", "rhat_log_joint",
          "rhat_k", "sweeps", "cap_s", "commit", "detail", "error"]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class SetSpec:
    """A seeded Gaussian mixture: `n` points in `d` dimensions from `k` clusters whose closest
    two means are `sep` cluster standard deviations apart."""
    name: str
    n: int
    d: int
    k: int
    sep: float
    seed: int
    goal: str = ""  # which README goal the set serves, if any

    def data_bytes(self) -> int:
        """Bytes of the data as float64, the unit of the memory goal."""
        return self.n * self.d * 8


SEPARATED, OVERLAPPING = 8.0, 2.5

# The sets of a full run, cheapest first. Separation is the distance between the closest two
# means in units of the clusters' standard deviation: at 8 a pair's Bayes error is about 3e-5
# (Phi(-4)), at 2.5 about 0.1 (Phi(-1.25)), in any dimension.
SETS = [
    SetSpec("g20k-d3-k8", 20_000, 3, 8, SEPARATED, 1, "faster-than-bgmm"),
    SetSpec("g1e5-d2-k6-overlap", 100_000, 2, 6, OVERLAPPING, 2),
    SetSpec("g1e5-d8-k12", 100_000, 8, 12, SEPARATED, 3),
    SetSpec("g1e5-d8-k12-overlap", 100_000, 8, 12, OVERLAPPING, 4),
    SetSpec("g1e5-d32-k20", 100_000, 32, 20, SEPARATED, 5),
    SetSpec("g1e5-d128-k80", 100_000, 128, 80, SEPARATED, 6, "embeddings"),
    SetSpec("g1e6-d2-k6", 1_000_000, 2, 6, SEPARATED, 7, "million"),
    SetSpec("g1e6-d8-k12-overlap", 1_000_000, 8, 12, OVERLAPPING, 8),
    SetSpec("g1e6-d32-k20", 1_000_000, 32, 20, SEPARATED, 9),
    SetSpec("g1e6-d128-k40", 1_000_000, 128, 40, SEPARATED, 10),
]
HUGE_SETS = [
    SetSpec("g1e7-d2-k6", 10_000_000, 2, 6, SEPARATED, 11),
    SetSpec("g1e7-d8-k12", 10_000_000, 8, 12, SEPARATED, 12),
]


def quick_sets() -> list[SetSpec]:
    """Smoke-test versions of the goal sets and one overlapping set: a hundredth of the points
    (at least 2,000), at most 8 dimensions and 10 clusters."""
    keep = [s for s in SETS if s.goal] + [SETS[1]]
    return [SetSpec(s.name + "-quick", max(2_000, s.n // 100), min(s.d, 8), min(s.k, 10),
                    s.sep, s.seed, s.goal) for s in keep]


def separate(means: np.ndarray, sep: float) -> np.ndarray:
    """`means` scaled about their centroid so that the closest two are `sep` apart."""
    diff = means[:, None, :] - means[None, :, :]
    dist = np.sqrt((diff ** 2).sum(-1))
    np.fill_diagonal(dist, np.inf)
    closest = dist.min()
    if not np.isfinite(closest) or closest <= 0:
        raise ValueError("need at least two distinct means")
    centre = means.mean(0)
    return centre + (means - centre) * (sep / closest)


def random_rotation(rng: np.random.Generator, d: int) -> np.ndarray:
    """A uniformly random orthogonal matrix (QR of a Gaussian matrix, signs fixed)."""
    q, r = np.linalg.qr(rng.normal(size=(d, d)))
    return q * np.sign(np.diag(r))


def mixture(spec: SetSpec):
    """The mixture's weights (Dirichlet(5): no cluster vanishes), means (separated as the spec
    says) and per cluster a rotation and per-axis standard deviations in [0.7, 1.2]: each
    cluster's spread along any direction is at most 1.2 and at least 0.7, so `sep` is in units
    of about one standard deviation whatever the direction."""
    rng = np.random.default_rng(spec.seed)
    weights = rng.dirichlet(np.full(spec.k, 5.0))
    means = separate(rng.normal(size=(spec.k, spec.d)), spec.sep)
    rotations = [random_rotation(rng, spec.d) for _ in range(spec.k)]
    scales = rng.uniform(0.7, 1.2, size=(spec.k, spec.d))
    return rng, weights, means, rotations, scales


def generate(spec: SetSpec, x_path: Path, y_path: Path, chunk: int = 250_000) -> None:
    """Writes the points to `x_path` (.npy, float64, written in chunks so that 10^7 points
    never sit twice in memory) and the true labels to `y_path` (one per line) and beside it as
    .npy."""
    rng, weights, means, rotations, scales = mixture(spec)
    labels = rng.choice(spec.k, size=spec.n, p=weights)
    x = np.lib.format.open_memmap(x_path, mode="w+", dtype="<f8", shape=(spec.n, spec.d))
    for lo in range(0, spec.n, chunk):
        z = labels[lo:lo + chunk]
        block = rng.normal(size=(len(z), spec.d))
        for c in np.unique(z):
            rows = z == c
            block[rows] = (block[rows] * scales[c]) @ rotations[c].T + means[c]
        x[lo:lo + chunk] = block
    x.flush()
    del x
    np.save(y_path.with_suffix(".npy"), labels.astype(np.int64))
    y_path.write_text("\n".join(map(str, labels.tolist())) + "\n")


def ensure_data(spec: SetSpec, data_dir: Path) -> tuple[Path, Path]:
    """The set's files, generated unless a copy made by this generator version is there."""
    x_path, y_path = data_dir / f"{spec.name}.npy", data_dir / f"{spec.name}.labels.txt"
    meta_path = data_dir / f"{spec.name}.json"
    meta = {"spec": asdict(spec), "generator": GENERATOR_VERSION}
    if x_path.exists() and y_path.exists() and meta_path.exists():
        if json.loads(meta_path.read_text()) == meta:
            return x_path, y_path
    data_dir.mkdir(parents=True, exist_ok=True)
    t = time.monotonic()
    generate(spec, x_path, y_path)
    meta_path.write_text(json.dumps(meta, indent=1))
    log(f"{spec.name}: generated {spec.n} x {spec.d} in {time.monotonic() - t:.1f} s")
    return x_path, y_path


# ---------------------------------------------------------------------------------------------
# Children: each method runs in a process of its own, whose wall time and peak RSS are its own


@dataclass
class Child:
    status: str  # "ok", "capped" (killed at the time cap) or "failed"
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    error: str = ""


def run_child(cmd: list[str], logfile: Path, cap_s: float, interrupt_first: bool) -> Child:
    """Runs `cmd` in its own process group with output to `logfile`; after `cap_s` seconds
    sends it Ctrl-C (`interrupt_first`: nrmm then writes what it has) and, `GRACE_S` later,
    kills the group. Wall and CPU time come from wait4 on the child itself, so nothing else
    running on the machine is counted. Peak memory is the child's VmHWM, polled: wait4's
    ru_maxrss would not do, since Linux carries the forking process's peak (this interpreter
    with NumPy, about 100 MB) into the child's across exec."""
    with open(logfile, "w") as lf:
        lf.write(" ".join(cmd) + "\n")
        lf.flush()
        start = time.monotonic()
        p = subprocess.Popen(cmd, stdout=lf, stderr=lf, start_new_session=True)
        capped, killed_at, peak_mb = False, None, math.nan
        while True:
            # The last reading, not the largest: one taken before the exec is this process's.
            peak_mb = high_water_mb(p.pid, peak_mb)
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            now = time.monotonic() - start
            if not capped and now > cap_s:
                capped = True
                if interrupt_first:
                    os.killpg(p.pid, signal.SIGINT)
                    killed_at = now + GRACE_S
                else:
                    killed_at = now
            if killed_at is not None and now >= killed_at:
                os.killpg(p.pid, signal.SIGKILL)
                killed_at = math.inf
            time.sleep(0.02)
        wall = time.monotonic() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        lf.write(f"\nexit status {p.returncode}, wall {wall:.2f} s\n")
    child = Child("ok", wall, ru.ru_utime + ru.ru_stime, peak_mb)
    if capped:
        child.status, child.wall_s = "capped", min(wall, cap_s)
        child.error = f"time cap of {cap_s:.0f} s reached"
    elif p.returncode != 0:
        child.status = "failed"
        child.error = last_error(logfile) or f"exit status {p.returncode}"
    return child


def high_water_mb(pid: int, previous: float) -> float:
    """The peak resident set of process `pid` so far (VmHWM of /proc/PID/status, in MiB), or
    `previous` when it cannot be read (the process has exited)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return previous


def last_error(logfile: Path) -> str:
    """The last line of a log that says `error`, or the last non-empty line."""
    lines = [l.strip() for l in logfile.read_text(errors="replace").splitlines() if l.strip()]
    lines = [l for l in lines if not l.startswith("exit status")]
    errs = [l for l in lines if "error" in l.lower()]
    return (errs or lines or [""])[-1][:300]


# ---------------------------------------------------------------------------------------------
# nrmm


def nrmm_run_command(nrmm: str, data: Path, out: Path, method: str,
                     sweeps: int | None) -> list[str]:
    """`nrmm run` on its defaults (`--sampler subcluster` for that method), seed 1."""
    cmd = [nrmm, "run", "--data", str(data), "--seed", "1", "--out", str(out)]
    if method == "nrmm-subcluster":
        cmd[2:2] = ["--sampler", "subcluster"]
    if sweeps:
        cmd += ["--sweeps", str(sweeps)]
    return cmd


def read_labels(path: Path) -> np.ndarray:
    return np.loadtxt(path, dtype=np.int64, ndmin=1)


def gap_stats(score: dict, traced: dict[int, float] | None = None) -> dict:
    """From `nrmm loglik --run DIR --labels TRUTH --json`: the chains' final log joints minus
    the truth's, in nats (min and max over chains) and per point, and the best state's per
    point (positive: the chain found a partition the model prefers to the truth). A chain
    stopped at the cap has no final labels: `traced` (chain -> its trace's last log joint)
    stands in, when the run holds its hyperparameters fixed (the trace is then at the same
    model as the scores)."""
    n = score["n"]
    truth = score["log_joint"]
    traced = traced if traced and not score.get("resampled") else {}
    finals = [c["log_joint"] if c.get("log_joint") is not None else traced.get(c.get("chain"))
              for c in score["chains"]]
    finals = [f for f in finals if f is not None]
    bests = [c["best_log_joint"] for c in score["chains"] if c.get("best_log_joint") is not None]
    out = {"truth_log_joint": truth}
    if finals:
        gaps = [f - truth for f in finals]
        out.update(gap_min=min(gaps), gap_max=max(gaps), gap_pp_min=min(gaps) / n,
                   gap_pp_max=max(gaps) / n)
    if bests:
        out["gap_best_pp"] = (max(bests) - truth) / n
    return out


def last_traced(run: Path) -> dict[int, float]:
    """Each chain's last traced log joint (`chain-<i>/trace.csv`), by chain index."""
    out = {}
    for trace in sorted(run.glob("chain-*/trace.csv")):
        lines = trace.read_text().splitlines()
        if len(lines) >= 2:
            col = lines[0].split(",").index("log_joint")
            out[int(trace.parent.name.split("-")[1])] = float(lines[-1].split(",")[col])
    return out


def summary_stats(summary: dict) -> dict:
    """R-hat of the log joint and of K, the chains' final K and their sweeps, from a run's
    summary.json (NaN where absent)."""
    diag = summary.get("diagnostics", {})
    chains = summary.get("chains") or []
    rhat = lambda q: diag.get(q, {}).get("rhat", math.nan)
    return {
        "fit_s": summary.get("wall_seconds", math.nan),
        "rhat_log_joint": rhat("log_joint"),
        "rhat_k": rhat("n_clusters"),
        "chains_k": " ".join(str(c.get("n_clusters")) for c in chains),
        "sweeps": " ".join(str(c.get("sweeps")) for c in chains),
    }


def fit_nrmm(cfg: "Config", spec: SetSpec, x_path: Path, y_path: Path, truth: np.ndarray,
             method: str) -> dict:
    out = cfg.work / f"{spec.name}.{method}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = nrmm_run_command(cfg.nrmm, x_path, out, method, cfg.nrmm_sweeps)
    child = run_child(cmd, cfg.work / f"{spec.name}.{method}.log", cfg.cap_s, True)
    res = child_row(child)
    summary_path, estimate = out / "summary.json", out / "estimate.txt"
    if child.status != "ok" and (out / "run.json").exists() and not summary_path.exists():
        # A capped run: its chains' traces and draws so far, merged as `nrmm diagnose` does.
        merged = out / "diagnosed"
        r = subprocess.run([cfg.nrmm, "diagnose", str(out), "--out", str(merged)],
                           capture_output=True, text=True)
        if r.returncode == 0:
            summary_path, estimate = merged / "summary.json", merged / "estimate.txt"
    if summary_path.exists():
        res.update(summary_stats(json.loads(summary_path.read_text())))
    if estimate.exists():
        res.update(cluster_scores(truth, read_labels(estimate)))
    if (out / "run.json").exists():
        scored = subprocess.run([cfg.nrmm, "loglik", "--run", str(out), "--labels", str(y_path),
                                 "--json"], capture_output=True, text=True)
        if scored.returncode == 0:
            res.update(gap_stats(json.loads(scored.stdout), last_traced(out)))
        elif not res["error"]:
            res["error"] = "loglik: " + scored.stderr.strip()[:300]
    return res


# ---------------------------------------------------------------------------------------------
# scikit-learn peers, each in a child process (`scalebench.py peer ...`)


def bic_grid(k_true: int) -> list[int]:
    """K values of the BIC search: 1..2K, at most BIC_GRID_MAX of them, evenly spread."""
    top = 2 * k_true
    if top <= BIC_GRID_MAX:
        return list(range(1, top + 1))
    return sorted(set(int(round(v)) for v in np.linspace(1, top, BIC_GRID_MAX)))


def peer_main(argv: list[str]) -> int:
    """The child: fits one peer to the data and writes its labels and what it chose."""
    ap = argparse.ArgumentParser(prog="scalebench.py peer")
    ap.add_argument("--method", choices=["bgmm", "gmm-bic"], required=True)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--k-true", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    import warnings
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import BayesianGaussianMixture, GaussianMixture
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    x = np.load(a.data)
    detail: dict = {}
    start = time.perf_counter()
    if a.method == "bgmm":
        m = BayesianGaussianMixture(n_components=2 * a.k_true, covariance_type="full",
                                    weight_concentration_prior_type="dirichlet_process",
                                    random_state=0).fit(x)
        detail = {"n_components": 2 * a.k_true, "converged": bool(m.converged_),
                  "n_iter": int(m.n_iter_)}
    else:
        best = None
        for k in bic_grid(a.k_true):
            g = GaussianMixture(k, covariance_type="full", random_state=0).fit(x)
            bic = g.bic(x)
            if best is None or bic < best[0]:
                best = (bic, k, g)
            # What was tried so far, should the cap stop the search.
            a.out.with_suffix(".progress").write_text(json.dumps({"last_k": k}))
        m = best[2]
        detail = {"bic_k": best[1], "grid": bic_grid(a.k_true),
                  "bic_k_at_edge": best[1] == bic_grid(a.k_true)[-1]}
    labels = m.predict(x).astype(np.int64)
    detail["fit_s"] = time.perf_counter() - start
    np.save(a.out.with_suffix(".npy"), labels)
    a.out.write_text(json.dumps(detail))
    return 0


def fit_peer(cfg: "Config", spec: SetSpec, x_path: Path, truth: np.ndarray, method: str) -> dict:
    out = cfg.work / f"{spec.name}.{method}.json"
    for f in (out, out.with_suffix(".npy"), out.with_suffix(".progress")):
        f.unlink(missing_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "peer", "--method", method,
           "--data", str(x_path), "--k-true", str(spec.k), "--out", str(out)]
    child = run_child(cmd, cfg.work / f"{spec.name}.{method}.log", cfg.cap_s, False)
    res = child_row(child)
    if child.status == "ok" and out.exists():
        res["detail"] = out.read_text()
        res["fit_s"] = json.loads(res["detail"])["fit_s"]
        res.update(cluster_scores(truth, np.load(out.with_suffix(".npy"))))
    elif out.with_suffix(".progress").exists():
        res["detail"] = out.with_suffix(".progress").read_text()
    return res


# ---------------------------------------------------------------------------------------------
# Scores and rows


def cluster_scores(truth: np.ndarray, labels: np.ndarray) -> dict:
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
    return {"ari": adjusted_rand_score(truth, labels),
            "nmi": normalized_mutual_info_score(truth, labels),
            "k": int(len(np.unique(labels)))}


def child_row(child: Child) -> dict:
    return {"status": child.status, "wall_s": child.wall_s, "cpu_s": child.cpu_s,
            "peak_rss_mb": child.peak_rss_mb, "error": child.error}


def set_row(spec: SetSpec, method: str) -> dict:
    row = {f: "" for f in FIELDS}
    row.update(set=spec.name, n=spec.n, d=spec.d, k_true=spec.k, sep=spec.sep,
               data_mb=spec.data_bytes() / 2 ** 20, method=method)
    return row


def finish_row(row: dict) -> dict:
    """Derived columns: peak RSS over the data's size."""
    rss, data = num(row.get("peak_rss_mb")), num(row.get("data_mb"))
    if math.isfinite(rss) and data > 0:
        row["rss_over_data"] = rss / data
    return row


def num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def fmt(v, p: int = 3) -> str:
    x = num(v)
    return "" if not math.isfinite(x) else f"{x:.{p}f}"


# ---------------------------------------------------------------------------------------------
# Goals and tables


def find(rows: list[dict], set_prefix: str, method: str) -> dict | None:
    """The row of `method` on the set whose name starts with `set_prefix` (quick sets carry a
    suffix)."""
    for r in rows:
        if r["set"].startswith(set_prefix) and r["method"] == method:
            return r
    return None


def ok_row(r: dict | None) -> bool:
    return r is not None and r.get("status") == "ok"


def goals(rows: list[dict]) -> list[tuple[str, str, str]]:
    """Each README goal with what was measured and whether it is met ("yes", "no", or "n/a"
    when a row it needs is missing)."""
    out = []
    nr, bg = find(rows, "g20k-d3-k8", "nrmm"), find(rows, "g20k-d3-k8", "bgmm")
    if nr and bg:
        met = ok_row(nr) and ok_row(bg) and num(nr["wall_s"]) < num(bg["wall_s"])
        out.append(("default run on 20,000 points faster than BayesianGaussianMixture",
                    f"{fmt(nr['wall_s'], 1)} s ({nr['status']}) vs {fmt(bg['wall_s'], 1)} s "
                    f"({bg['status']})", "yes" if met else "no"))
    else:
        out.append(("default run on 20,000 points faster than BayesianGaussianMixture", "", "n/a"))
    for method in ("nrmm", "nrmm-subcluster"):
        r = find(rows, "g1e6-d2-k6", method)
        name = f"10^6 x 2 in 6 clusters ({method}): <= 60 s, ARI >= 0.95, every chain within " \
               "0.01 nats/point of the truth's log joint"
        if r is None:
            out.append((name, "", "n/a"))
            continue
        met = (ok_row(r) and num(r["wall_s"]) <= 60 and num(r["ari"]) >= 0.95
               and num(r["gap_pp_min"]) >= -0.01)
        out.append((name, f"{fmt(r['wall_s'], 1)} s ({r['status']}), ARI {fmt(r['ari'])}, "
                    f"worst chain {fmt(r['gap_pp_min'], 4)} nats/point", "yes" if met else "no"))
    nr, bg = find(rows, "g1e5-d128-k80", "nrmm"), find(rows, "g1e5-d128-k80", "bgmm")
    name = "100,000 x 128 in ~80 clusters: NMI above BayesianGaussianMixture's in less of its time"
    if nr and bg:
        met = (ok_row(nr) and ok_row(bg) and num(nr["nmi"]) > num(bg["nmi"])
               and num(nr["wall_s"]) < num(bg["wall_s"]))
        out.append((name, f"NMI {fmt(nr['nmi'])} in {fmt(nr['wall_s'], 1)} s ({nr['status']}) vs "
                    f"{fmt(bg['nmi'])} in {fmt(bg['wall_s'], 1)} s ({bg['status']})",
                    "yes" if met else "no"))
    else:
        out.append((name, "", "n/a"))
    mem = [r for r in rows if r["method"].startswith("nrmm")
           and math.isfinite(num(r["rss_over_data"])) and num(r["data_mb"]) >= MEMORY_GOAL_MIN_MB]
    name = f"nrmm's peak memory within 3x the data's size (sets of {MEMORY_GOAL_MIN_MB:.0f} MB " \
           "or more)"
    if mem:
        worst = max(mem, key=lambda r: num(r["rss_over_data"]))
        out.append((name, f"worst {fmt(worst['rss_over_data'], 2)}x ({worst['set']}, "
                    f"{worst['method']})", "yes" if num(worst["rss_over_data"]) <= 3 else "no"))
    else:
        out.append((name, "", "n/a"))
    return out


def results_table(rows: list[dict]) -> str:
    head = ("| set | n | d | K | sep | method | status | wall s | fit s | peak MB (x data) | ARI "
            "| NMI | K found | chains' gap to truth, nats/point | R-hat lj / K |")
    lines = [head, "|" + "---|" * 6 + "---|" + "---:|" * 8]
    for r in rows:
        peak = fmt(r["peak_rss_mb"], 0)
        if peak and fmt(r["rss_over_data"], 1):
            peak += f" ({fmt(r['rss_over_data'], 1)})"
        gap = ""
        if fmt(r["gap_pp_min"], 4):
            gap = f"{fmt(r['gap_pp_min'], 4)} .. {fmt(r['gap_pp_max'], 4)}"
        rhat = ""
        if fmt(r["rhat_log_joint"]):
            rhat = f"{fmt(r['rhat_log_joint'])} / {fmt(r['rhat_k'])}"
        k = str(r["k"]) if r["k"] != "" else ""
        lines.append(f"| {r['set']} | {r['n']} | {r['d']} | {r['k_true']} | {fmt(r['sep'], 1)} "
                     f"| {r['method']} | {r['status']} | {fmt(r['wall_s'], 1)} | {fmt(r['fit_s'], 1)} "
                     f"| {peak} "
                     f"| {fmt(r['ari'])} | {fmt(r['nmi'])} | {k} | {gap} | {rhat} |")
    return "\n".join(lines)


def goal_table(rows: list[dict]) -> str:
    lines = ["| goal | measured | met |", "|---|---|---|"]
    lines += [f"| {g} | {m} | {ok} |" for g, m, ok in goals(rows)]
    return "\n".join(lines)


def render(rows: list[dict], meta: dict) -> str:
    return "\n".join([
        "### Scale: Gaussian mixtures of 20,000 to 10^6 points",
        "",
        f"Measured {meta['date']} at commit {meta['commit']} on {meta['machine']} "
        f"(last command `{meta['command']}`; each row's cap and commit are in results.csv, "
        "a capped run's wall time is its cap).",
        "",
        goal_table(rows),
        "",
        results_table(rows),
        "",
        "Gap: each chain's final log joint minus the true partition's under the run's own "
        "model (`nrmm loglik --run`), per point, the worst and best chain; positive means the "
        "chain's partition scores above the truth. Wall s: the process, start to exit; fit s: "
        "nrmm's own wall_seconds (summary.json), a peer's fit and predict. Peak MB: the "
        "child's maximum resident set (scikit-learn's includes the interpreter). A capped run "
        "was stopped at the cap.",
    ])


# ---------------------------------------------------------------------------------------------
# Driver


@dataclass
class Config:
    nrmm: str
    work: Path
    cap_s: float
    nrmm_sweeps: int | None
    methods: list[str] = field(default_factory=lambda: list(METHODS))


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 2 ** 20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()} cores ({cpu}){mem}, {platform.system()}"


def git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def available_bytes() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024.0
    except (OSError, ValueError):
        pass
    return math.inf


def write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def select(sets: list[SetSpec], names: list[str]) -> list[SetSpec]:
    """The sets named: each name a set's full name, else a prefix of the names of those it
    stands for; empty names (a trailing comma) stand for none."""
    chosen = set()
    for w in (w.strip() for w in names):
        if not w:
            continue
        exact = [s.name for s in sets if s.name == w]
        chosen.update(exact or [s.name for s in sets if s.name.startswith(w)])
    return [s for s in sets if s.name in chosen]


def merge(earlier: list[dict], new: list[dict]) -> list[dict]:
    """`earlier` rows with those of the same set and method replaced by `new`'s, in the order
    of the sets' list, then of the methods."""
    keyed = {(r["set"], r["method"]): r for r in earlier}
    keyed.update({(r["set"], r["method"]): r for r in new})
    order = {s.name: i for i, s in enumerate(quick_sets() + SETS + HUGE_SETS)}
    return sorted(keyed.values(), key=lambda r: (order.get(r["set"], len(order)), r["set"],
                                                 METHODS.index(r["method"])
                                                 if r["method"] in METHODS else len(METHODS)))


def json_ready(v):
    """NaN and infinities as null: JSON has no spelling for them."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (np.floating, np.integer)):
        return json_ready(v.item())
    return v


def save(out: Path, rows: list[dict]) -> None:
    write_csv(out / "results.csv", rows)
    clean = [{k: json_ready(v) for k, v in r.items()} for r in rows]
    (out / "results.json").write_text(json.dumps(clean, indent=1))


def main(argv: list[str]) -> int:
    if argv[:1] == ["peer"]:
        return peer_main(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="small versions of the goal sets (smoke test; into results-quick/)")
    ap.add_argument("--huge", action="store_true", help="also the sets of 10^7 points")
    ap.add_argument("--sets", help="comma-separated set names (or prefixes) to run")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help=f"comma-separated, of {', '.join(METHODS)}")
    ap.add_argument("--cap", type=float, help="seconds per method and set (default 1800; "
                    "quick 120)")
    ap.add_argument("--nrmm-sweeps", type=int,
                    help="sweeps per chain instead of nrmm's default (quick: 100)")
    ap.add_argument("--nrmm", default=str(ROOT / "target" / "release" / "nrmm"))
    ap.add_argument("--data-dir", type=Path, default=HERE / "data",
                    help="where the generated sets are kept (reused when unchanged)")
    ap.add_argument("--out", type=Path, help="results directory (default results/ or "
                    "results-quick/)")
    ap.add_argument("--list", action="store_true", help="list the sets and exit")
    ap.add_argument("--render-only", action="store_true",
                    help="the Markdown again from the results directory's CSV")
    a = ap.parse_args(argv)

    sets = quick_sets() if a.quick else SETS + (HUGE_SETS if a.huge else [])
    if a.sets:
        sets = select(sets, a.sets.split(","))
        if not sets:
            ap.error(f"no set matches --sets {a.sets} (--list shows them)")
    if a.list:
        for s in sets:
            print(f"{s.name}: {s.n} x {s.d}, K = {s.k}, separation {s.sep}, "
                  f"{s.data_bytes() / 2 ** 20:.0f} MB")
        return 0
    out = a.out or (HERE / ("results-quick" if a.quick else "results"))
    out.mkdir(parents=True, exist_ok=True)
    meta_path = out / "meta.json"
    if a.render_only:
        (out / "results.md").write_text(render(read_csv(out / "results.csv"),
                                               json.loads(meta_path.read_text())) + "\n")
        print((out / "results.md").read_text())
        return 0
    methods = [m for m in a.methods.split(",") if m]
    bad = [m for m in methods if m not in METHODS]
    if bad:
        ap.error(f"unknown method {bad[0]}: expected one of {', '.join(METHODS)}")
    cfg = Config(nrmm=a.nrmm, work=out / "work", cap_s=a.cap or (120.0 if a.quick else 1800.0),
                 nrmm_sweeps=a.nrmm_sweeps or (100 if a.quick else None), methods=methods)
    cfg.work.mkdir(parents=True, exist_ok=True)
    if not Path(cfg.nrmm).exists():
        ap.error(f"{cfg.nrmm} not found: build it with `cargo build --release` (run.sh does)")
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "commit": git("rev-parse", "--short", "HEAD") + ("+" if git("status", "--porcelain",
                                                                      "--untracked-files=no")
                                                             else ""),
            "machine": machine(), "cap_s": cfg.cap_s,
            "command": "bash benches/scale/run.sh " + " ".join(argv),
            "nrmm_sweeps": cfg.nrmm_sweeps}
    meta_path.write_text(json.dumps(meta, indent=1))
    # A run of some sets (--sets) replaces their rows and keeps the others' from earlier runs.
    earlier = read_csv(out / "results.csv") if a.sets and (out / "results.csv").exists() else []
    rows: list[dict] = []
    for spec in sets:
        need = 3 * spec.data_bytes()
        if need > available_bytes():
            log(f"{spec.name}: skipped, {need / 2 ** 30:.1f} GiB would not fit in memory")
            for m in methods:
                row = set_row(spec, m)
                row.update(status="skipped", error="not enough memory for the data three times")
                rows.append(row)
            continue
        x_path, y_path = ensure_data(spec, a.data_dir)
        truth = np.load(y_path.with_suffix(".npy"))
        for m in methods:
            log(f"{spec.name}: {m} ...")
            row = set_row(spec, m)
            row.update(cap_s=cfg.cap_s, commit=meta["commit"])
            if m.startswith("nrmm"):
                row.update(fit_nrmm(cfg, spec, x_path, y_path, truth, m))
            else:
                row.update(fit_peer(cfg, spec, x_path, truth, m))
            rows.append(finish_row(row))
            log(f"{spec.name}: {m}: {row['status']} in {fmt(row['wall_s'], 1)} s, "
                f"ARI {fmt(row['ari'])}, NMI {fmt(row['nmi'])}, K {row['k']}"
                + (f" ({row['error']})" if row["error"] else ""))
            # Results so far, so that an interrupted benchmark keeps them.
            save(out, merge(earlier, rows))
    rows = merge(earlier, rows)
    save(out, rows)
    md = render(rows, meta)
    (out / "results.md").write_text(md + "\n")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
