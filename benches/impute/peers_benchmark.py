#!/usr/bin/env python3
"""Clustering against known labels on the labelled tables (NAME.csv beside NAME.labels.txt):
nrmm's default run against scikit-learn's GaussianMixture (K by BIC), its
BayesianGaussianMixture, R's mclust and lace (pylace), each scored by the adjusted Rand index
of its clustering against the labels, with its wall-clock time.

A data set given as a matrix of numbers (NAME.txt, as the real data sets are) is fitted as
it is. The Gaussian mixtures take complete numbers, so each table is also given as a complete
numeric matrix: its rows without a missing entry, words coded as numbers (a yes/no column as
1/0; a column of other words is left out, and said so). nrmm and lace also take the whole
table, missing entries and words as they are (nrmm's product kernel, lace's own types).

    VENV/bin/pip install numpy scikit-learn pandas pylace     # pylace optional
    apt-get install r-cran-mclust                              # optional
    VENV/bin/python benches/impute/peers_benchmark.py DIR [--nrmm BINARY] [NAME ...]

Settings: nrmm `run --seed 1` with every default (4 chains, automatic length, the VI point
estimate), on the matrix and on the table; GaussianMixture full covariance, K = 1..10 by
BIC, 5 initialisations, random_state 0; BayesianGaussianMixture Dirichlet process, 10
components, full covariance, 5 initialisations, max_iter 1000, random_state 0; mclust
`Mclust(x, G = 1:9)` (every covariance model, by BIC; its own time, R's start excluded);
lace 8 states of 500 iterations (seed 1), each state's clustering that of its view holding
most columns, the ARI averaged over the states (lace clusters rows per view of columns; no
single partition is its answer). A peer that fails (a singular covariance, a missing
package) is reported as such, never silently dropped.
"""

import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import BayesianGaussianMixture, GaussianMixture

MISSING = {"", "na", "nan", "n/a", "?"}


def read(path):
    """Header and rows of a CSV table, as text."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def numeric_matrix(header, rows):
    """The complete numeric matrix of a table: rows without a missing entry, yes/no (any two
    words) columns as 1/0 (the second word in sorted order is 1), other word columns left out.
    Returns the matrix, the kept rows and a note of what was done."""
    complete = [i for i, r in enumerate(rows) if all(v.strip().lower() not in MISSING for v in r)]
    columns, notes = [], []
    for j, name in enumerate(header):
        values = [rows[i][j] for i in complete]
        if all(number(v) is not None for v in values):
            columns.append([number(v) for v in values])
            continue
        words = sorted(set(values))
        if len(words) == 2:
            columns.append([float(v == words[1]) for v in values])
            notes.append(f"{name} {words[1]}=1")
        else:
            notes.append(f"{name} left out ({len(words)} words)")
    x = np.array(columns).T
    note = f"{len(complete)} of {len(rows)} rows (complete), {x.shape[1]} columns"
    if notes:
        note += "; " + ", ".join(notes)
    return x, complete, note


def timed(f):
    start = time.perf_counter()
    out = f()
    return out, time.perf_counter() - start


def nrmm_run(binary, data, tmp, name):
    out = os.path.join(tmp, name)
    _, seconds = timed(lambda: subprocess.run(
        [binary, "run", "--data", data, "--seed", "1", "--out", out],
        check=True, capture_output=True))
    labels = np.loadtxt(os.path.join(out, "estimate.txt"), dtype=np.int64)
    return labels, seconds


def sklearn_gmm(x):
    def fit():
        best = None
        for k in range(1, 11):
            m = GaussianMixture(k, covariance_type="full", n_init=5, random_state=0).fit(x)
            bic = m.bic(x)
            if best is None or bic < best[0]:
                best = (bic, m)
        return best[1].predict(x)
    return timed(fit)


def sklearn_bgmm(x):
    def fit():
        m = BayesianGaussianMixture(
            n_components=10, weight_concentration_prior_type="dirichlet_process",
            covariance_type="full", n_init=5, max_iter=1000, random_state=0).fit(x)
        return m.predict(x)
    return timed(fit)


MCLUST = """
suppressMessages(library(mclust))
x <- as.matrix(read.table(commandArgs(TRUE)[1]))
t <- system.time(m <- Mclust(x, G = 1:9, verbose = FALSE))[["elapsed"]]
if (is.null(m)) stop("Mclust fitted no model")
cat(t, m$modelName, m$G, "\\n")
cat(m$classification, "\\n")
"""


def mclust(x, tmp):
    """mclust's labels and its own time, or None and why not."""
    if shutil.which("Rscript") is None:
        return None, "R is absent (apt-get install r-cran-mclust)"
    data = os.path.join(tmp, "mclust.txt")
    np.savetxt(data, x)
    script = os.path.join(tmp, "mclust.R")
    with open(script, "w") as f:
        f.write(MCLUST)
    done = subprocess.run(["Rscript", script, data], capture_output=True, text=True)
    if done.returncode != 0:
        return None, "failed: " + done.stderr.strip().splitlines()[-1]
    first, labels = done.stdout.strip().splitlines()
    seconds, model, k = first.split()
    return (np.array(labels.split(), dtype=np.int64), float(seconds)), f"{model}, K={k}"


def lace_ari(header, rows, labels):
    """lace's mean ARI over its states (each state's largest view) and its time, or None and
    why not."""
    try:
        import lace
        import pandas as pd
    except ImportError:
        return None, "pylace is absent (pip install pylace)"
    numeric = [all(number(r[j]) is not None for r in rows if r[j].strip().lower() not in MISSING)
               for j in range(len(header))]
    df = pd.DataFrame(
        [[None if v.strip().lower() in MISSING else (number(v) if numeric[j] else v)
          for j, v in enumerate(r)] for r in rows], columns=header)

    def fit():
        engine = lace.Engine.from_df(df, n_states=8, rng_seed=1)
        engine.update(500, quiet=True)
        aris = []
        for s in range(engine.n_states):
            views = engine.column_assignment(s)
            largest = max(set(views), key=list(views).count)
            aris.append(adjusted_rand_score(labels, engine.row_assignments(s)[largest]))
        return float(np.mean(aris)), float(np.min(aris)), float(np.max(aris))
    (mean, lo, hi), seconds = timed(fit)
    return (mean, seconds), f"states {lo:.3f}..{hi:.3f}"


def bench(d, name, binary):
    table = os.path.join(d, name + ".csv")
    if not os.path.exists(table):
        # A matrix of numbers (NAME.txt): the matrix only.
        x = np.loadtxt(os.path.join(d, name + ".txt"), ndmin=2)
        header = [f"x{j + 1}" for j in range(x.shape[1])]
        rows = [[repr(v) for v in r] for r in x.tolist()]
    else:
        header, rows = read(table)
    labels = np.loadtxt(os.path.join(d, name + ".labels.txt"), dtype=np.int64)
    x, kept, note = numeric_matrix(header, rows)
    y = labels[kept]
    lines = [f"{name}: matrix {note}; labels: {len(set(y))} classes"]
    out = []

    def row(who, data, ari, seconds, extra=""):
        out.append(f"| {name} | {data} | {who} | {ari} | {seconds} | {extra} |")

    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "x.txt")
        np.savetxt(data, x)
        labels_n, s = nrmm_run(binary, data, tmp, "matrix")
        row("nrmm", "matrix", f"{adjusted_rand_score(y, labels_n):.3f}", f"{s:.1f}",
            f"K={labels_n.max() + 1}")
        pred, s = sklearn_gmm(x)
        row("GaussianMixture (BIC)", "matrix", f"{adjusted_rand_score(y, pred):.3f}", f"{s:.1f}",
            f"K={len(set(pred))}")
        pred, s = sklearn_bgmm(x)
        row("BayesianGaussianMixture", "matrix", f"{adjusted_rand_score(y, pred):.3f}",
            f"{s:.1f}", f"K={len(set(pred))}")
        got, why = mclust(x, tmp)
        if got is None:
            row("mclust", "matrix", "-", "-", why)
        else:
            pred, s = got
            row("mclust", "matrix", f"{adjusted_rand_score(y, pred):.3f}", f"{s:.1f}", why)
        got, why = lace_ari(header, [rows[i] for i in kept], y)
        if got is None:
            row("lace", "matrix rows", "-", "-", why)
        else:
            row("lace", "matrix rows", f"{got[0]:.3f}", f"{got[1]:.1f}", why)
        if not os.path.exists(table):
            return lines, out
        # The whole table, as nrmm and lace take it.
        labels_t, s = nrmm_run(binary, table, tmp, "table")
        row("nrmm", f"table ({len(rows)} rows)", f"{adjusted_rand_score(labels, labels_t):.3f}",
            f"{s:.1f}", f"K={labels_t.max() + 1}")
        got, why = lace_ari(header, rows, labels)
        if got is None:
            row("lace", f"table ({len(rows)} rows)", "-", "-", why)
        else:
            row("lace", f"table ({len(rows)} rows)", f"{got[0]:.3f}", f"{got[1]:.1f}", why)
    return lines, out


if __name__ == "__main__":
    args = sys.argv[1:]
    binary = "target/release/nrmm"
    if "--nrmm" in args:
        i = args.index("--nrmm")
        binary = args[i + 1]
        del args[i:i + 2]
    d, names = args[0], args[1:]
    if not names:
        names = sorted(n[:-len(".labels.txt")] for n in os.listdir(d)
                       if n.endswith(".labels.txt") and any(os.path.exists(
                           os.path.join(d, n[:-len(".labels.txt")] + ext))
                           for ext in (".csv", ".txt")))
    notes, table = [], []
    for name in names:
        lines, out = bench(d, name, binary)
        notes += lines
        table += out
        # Progress, as each table is done.
        print("\n".join(lines + out), file=sys.stderr, flush=True)
    print("\n".join(notes))
    print()
    print("| table | data | method | ARI | seconds | notes |")
    print("|---|---|---|---|---|---|")
    print("\n".join(table))
