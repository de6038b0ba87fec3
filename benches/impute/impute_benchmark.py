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

prints one Markdown row per table. One mask is a noisy measure on small tables (a tenth of
survey's categorical entries is 178, so one entry is 0.006 of accuracy): `--masks 5` scores
five masks (seeds 0-4) and prints each score's mean with its range over the masks.
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
    scores = {"seconds": seconds, "masked": len(masked), "n_cat": n_cat}
    if n_cat:
        scores["accuracy"], scores["mode"] = hits / n_cat, base_hits / n_cat
    if sq:
        nrmse = [math.sqrt(sum(e for e, _, _ in v) / len(v)) / v[0][2] for v in sq.values()]
        brmse = [math.sqrt(sum(b for _, b, _ in v) / len(v)) / v[0][2] for v in sq.values()]
        scores["rmse"], scores["mean"] = sum(nrmse) / len(nrmse), sum(brmse) / len(brmse)
    labels = path[:-4] + ".labels.txt"
    if os.path.exists(labels):
        with open(labels) as f:
            truth_labels = [l.strip() for l in f if l.strip()]
        with open(os.path.join(work, "run", "estimate.txt")) as f:
            est = [l.strip() for l in f if l.strip()]
        scores["ari"] = ari(truth_labels, est)
    return scores


def pair(scores, key, base):
    """`value (baseline)` of a score averaged over masks, with its range over them."""
    got = [s[key] for s in scores if key in s]
    if not got:
        return "-"
    text = f"{sum(got) / len(got):.3f} ({sum(s[base] for s in scores) / len(got):.3f})"
    return text + (f" [{min(got):.3f}..{max(got):.3f}]" if len(got) > 1 else "")


def row(path, n_rows, n_cols, scores):
    """One Markdown row of a table's scores, averaged over its masks."""
    name = os.path.basename(path)[:-4]
    masked = scores[0]["masked"]
    cats = sorted({s["n_cat"] for s in scores})
    n_cat = f"{cats[0]}" if len(cats) == 1 else f"{cats[0]}-{cats[-1]}"
    aris = [s["ari"] for s in scores if "ari" in s]
    score = f"{sum(aris) / len(aris):.3f}" if aris else "-"
    seconds = sum(s["seconds"] for s in scores) / len(scores)
    return (f"| {name} | {n_rows} x {n_cols} | {masked} ({n_cat} cat.) "
            f"| {pair(scores, 'accuracy', 'mode')} | {pair(scores, 'rmse', 'mean')} | {score} "
            f"| {seconds:.1f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nrmm", default="target/release/nrmm")
    p.add_argument("--seed", type=int, default=0, help="the first mask's seed")
    p.add_argument("--masks", type=int, default=1,
                   help="masks per table (seeds --seed, --seed + 1, ...); scores are averaged "
                        "over them, with their range in brackets")
    p.add_argument("--share", type=float, default=0.1)
    p.add_argument("dir")
    a = p.parse_args()
    print("| table | size | masked | accuracy (mode) | RMSE / sd (mean) | ARI | seconds |")
    print("|---|---|---|---|---|---|---|")
    for name in sorted(os.listdir(a.dir)):
        if name.endswith(".csv"):
            path = os.path.join(a.dir, name)
            header, rows = read(path)
            scores = [bench(a.nrmm, path, a.seed + m, a.share) for m in range(a.masks)]
            print(row(path, len(rows), len(header), scores), flush=True)


if __name__ == "__main__":
    sys.exit(main())
