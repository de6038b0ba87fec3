#!/usr/bin/env python3
"""The imputation benchmark of impute_benchmark.py (the same masked entries: seed 0, 10 % of
the observed entries; with `--masks N` the masks of seeds 0..N-1, scores averaged over them
with their range in brackets) with lace (pylace) fitted on each masked table: 8 states, 500
iterations, its own column types. Needs pylace and pandas:

    python3 -m venv VENV && VENV/bin/pip install pylace pandas
    VENV/bin/python benches/impute/lace_benchmark.py [--masks N] DIR_OF_TABLES [NAME ...]

Entries are scored as impute_benchmark.py scores them: a masked entry of a column whose
values are not all numbers, or that nrmm reads as binary or categorical, by accuracy (lace's
value equal to the truth, numerically for numbers); the others by RMSE divided by the
column's standard deviation among the entries left, averaged over columns.
"""

import argparse
import csv
import math
import os
import random
import sys
import time

import lace
import pandas as pd

sys.path.insert(0, os.path.dirname(__file__))
from impute_benchmark import MISSING, number, read  # noqa: E402


def bench(path, levels_columns, seed=0, share=0.1):
    header, rows = read(path)
    observed = [(i, j) for i, r in enumerate(rows) for j, v in enumerate(r)
                if v.strip().lower() not in MISSING]
    rng = random.Random(seed)
    masked = sorted(rng.sample(observed, round(share * len(observed))))
    truth = {(i, j): rows[i][j] for i, j in masked}
    holes = [list(r) for r in rows]
    for i, j in masked:
        holes[i][j] = ""
    df = pd.DataFrame(
        [[None if v == "" else (number(v) if all(
            number(x) is not None for x in (r[j] for r in holes) if x != "") else v)
          for j, v in enumerate(r)] for r in holes], columns=header)
    start = time.time()
    engine = lace.Engine.from_df(df, n_states=8, rng_seed=1)
    engine.update(500, quiet=True)
    hits = n_cat = 0
    sq = {}
    for j, name in enumerate(header):
        want = {i: truth[(i, jj)] for (i, jj) in truth if jj == j}
        if not want:
            continue
        imputed = engine.impute(name, rows=list(want), with_uncertainty=False)
        got = {int(k): v for k, v in zip(imputed["index"], imputed[name])}
        left = [number(r[j]) for r in holes if r[j] != ""]
        for i, w in want.items():
            g = got[i]
            if name in levels_columns or number(w) is None:
                n_cat += 1
                hits += str(g) == w or (number(str(g)) is not None and number(str(g)) == number(w))
            else:
                mean = sum(left) / len(left)
                sd = math.sqrt(sum((v - mean) ** 2 for v in left) / (len(left) - 1))
                sq.setdefault(j, []).append(((float(g) - float(w)) ** 2, sd))
    seconds = time.time() - start
    scores = {"seconds": seconds}
    if n_cat:
        scores["accuracy"] = hits / n_cat
    if sq:
        nrmse = [math.sqrt(sum(e for e, _ in v) / len(v)) / v[0][1] for v in sq.values()]
        scores["rmse"] = sum(nrmse) / len(nrmse)
    return scores


def mean_range(scores, key):
    """A score's mean over masks, with its range when there are several."""
    got = [s[key] for s in scores if key in s]
    if not got:
        return "-"
    return f"{sum(got) / len(got):.3f}" + (
        f" [{min(got):.3f}..{max(got):.3f}]" if len(got) > 1 else "")


# The columns nrmm reads as binary or categorical although they hold numbers.
LEVELS = {"zoo": {"legs"}, "airquality": {"Month"}}

if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--masks", type=int, default=1, help="masks per table (seeds 0, 1, ...)")
    p.add_argument("dir")
    p.add_argument("names", nargs="*")
    a = p.parse_args()
    names = a.names or sorted(n[:-4] for n in os.listdir(a.dir) if n.endswith(".csv"))
    print("| table | accuracy | RMSE / sd | seconds |")
    print("|---|---|---|---|")
    for name in names:
        path = os.path.join(a.dir, name + ".csv")
        scores = [bench(path, LEVELS.get(name, set()), seed=m) for m in range(a.masks)]
        seconds = sum(s["seconds"] for s in scores) / len(scores)
        print(f"| {name} (lace) | {mean_range(scores, 'accuracy')} | "
              f"{mean_range(scores, 'rmse')} | {seconds:.1f} |", flush=True)
