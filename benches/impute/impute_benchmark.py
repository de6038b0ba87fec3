#!/usr/bin/env python3
"""Imputation benchmark on tables with mixed column types and missing values.

For each table (CSV with a header, a missing value as an empty field), 10 % of the observed
entries are masked with a fixed seed; `nrmm run` with its defaults (no option but the seed)
and `nrmm impute` fill them, and the filled values are compared with the masked truth:
accuracy on binary and categorical columns, RMSE on real and count columns (also divided by
the column's standard deviation, so that columns of different units can be averaged), against
the baseline of the column's mode or mean among the entries left. Where NAME.labels.txt
exists, the ARI of the run's point estimate against those labels is reported too. Only the
Python standard library is used.

    python3 benches/impute/impute_benchmark.py --nrmm target/release/nrmm DIR_OF_TABLES

prints one Markdown row per table.
"""

import argparse
import csv
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter

MISSING = {"", "na", "nan", "n/a", "?"}


def read(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def write(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def ari(a, b):
    """Adjusted Rand index of two labelings (Hubert and Arabie 1985)."""
    n = len(a)
    pairs = lambda m: m * (m - 1) / 2
    table = Counter(zip(a, b))
    sum_ij = sum(pairs(v) for v in table.values())
    sum_a = sum(pairs(v) for v in Counter(a).values())
    sum_b = sum(pairs(v) for v in Counter(b).values())
    expected = sum_a * sum_b / pairs(n)
    top = (sum_a + sum_b) / 2
    return 1.0 if top == expected else (sum_ij - expected) / (top - expected)


def bench(nrmm, path, seed, share):
    header, rows = read(path)
    observed = [(i, j) for i, r in enumerate(rows) for j, v in enumerate(r)
                if v.strip().lower() not in MISSING]
    rng = random.Random(seed)
    masked = sorted(rng.sample(observed, round(share * len(observed))))
    truth = {(i, j): rows[i][j] for i, j in masked}
    work = tempfile.mkdtemp(prefix="nrmm-impute-")
    holes = [list(r) for r in rows]
    for i, j in masked:
        holes[i][j] = ""
    data = os.path.join(work, "masked.csv")
    write(data, header, holes)
    start = time.time()
    subprocess.run([nrmm, "run", "--data", data, "--out", os.path.join(work, "run"),
                    "--seed", "1"], check=True, capture_output=True)
    out = os.path.join(work, "filled.csv")
    subprocess.run([nrmm, "impute", "--run", os.path.join(work, "run"), "--out", out],
                   check=True, capture_output=True)
    seconds = time.time() - start
    # Which filled entries are levels (a probability) and which numbers (a mean).
    with open(os.path.join(work, "filled.filled.csv"), newline="") as f:
        filled = {(int(r["row"]) - 1, header.index(r["column"])): r for r in csv.DictReader(f)}
    hits = base_hits = n_cat = 0
    sq = {}
    for (i, j), want in truth.items():
        got = filled[(i, j)]
        left = [holes[k][j] for k in range(len(rows)) if holes[k][j].strip().lower() not in MISSING]
        if got["probability"]:
            n_cat += 1
            hits += got["value"] == want or number(got["value"]) == number(want) != None
            mode = Counter(left).most_common(1)[0][0]
            base_hits += mode == want
        else:
            values = [number(v) for v in left]
            mean = sum(values) / len(values)
            sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) or 1.0
            e, b = float(got["value"]) - float(want), mean - float(want)
            sq.setdefault(j, []).append((e * e, b * b, sd))
    acc = f"{hits / n_cat:.3f} ({base_hits / n_cat:.3f})" if n_cat else "-"
    if sq:
        nrmse = [math.sqrt(sum(e for e, _, _ in v) / len(v)) / v[0][2] for v in sq.values()]
        brmse = [math.sqrt(sum(b for _, b, _ in v) / len(v)) / v[0][2] for v in sq.values()]
        rmse = f"{sum(nrmse) / len(nrmse):.3f} ({sum(brmse) / len(brmse):.3f})"
    else:
        rmse = "-"
    labels = path[:-4] + ".labels.txt"
    score = "-"
    if os.path.exists(labels):
        with open(labels) as f:
            truth_labels = [l.strip() for l in f if l.strip()]
        with open(os.path.join(work, "run", "estimate.txt")) as f:
            est = [l.strip() for l in f if l.strip()]
        score = f"{ari(truth_labels, est):.3f}"
    name = os.path.basename(path)[:-4]
    return (f"| {name} | {len(rows)} x {len(header)} | {len(masked)} ({n_cat} cat.) | {acc} "
            f"| {rmse} | {score} | {seconds:.1f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nrmm", default="target/release/nrmm")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--share", type=float, default=0.1)
    p.add_argument("dir")
    a = p.parse_args()
    print("| table | size | masked | accuracy (mode) | RMSE / sd (mean) | ARI | seconds |")
    print("|---|---|---|---|---|---|---|")
    for name in sorted(os.listdir(a.dir)):
        if name.endswith(".csv"):
            print(bench(a.nrmm, os.path.join(a.dir, name), a.seed, a.share), flush=True)


if __name__ == "__main__":
    sys.exit(main())
