"""Mixing per sampler on real data: how long each exact sampler's chains take to agree.

For every set and sampler, one `nrmm run` with the defaults and `--sweeps auto` (chains run
until every traced quantity has R-hat at most 1.01 and a bulk ESS of at least 400, doubling
their length, up to `--max-sweeps`), then from its `summary.json`: whether the chains agreed,
the sweeps per chain, the sampling CPU seconds (the chains' own clocks, summed), the wall time,
R-hat and bulk ESS of the log joint and of K, and the effective draws per CPU second of the
slower of the two. Standardized sets are z-scored columns (the whole set's mean and sd).

    python3 benches/mixing/mixbench.py --nrmm target/release/nrmm --data ../shared/data \
        --out benches/mixing/results [--sets iris,wine] [--samplers sams,gibbs] [--max-sweeps N]

Writes `results/mixing.csv` and prints a Markdown table. Only the standard library.
"""
import argparse
import csv
import json
import math
import subprocess
import sys
import time
from pathlib import Path

SAMPLERS = ["gibbs", "jain-neal", "sams", "tgmcmc", "subcluster"]
SETS = {
    # name: (file under the data folder, standardize)
    "iris": ("real/iris.txt", False),
    "iris-std": ("real/iris.txt", True),
    "wine": ("real/wine.txt", False),
    "wine-std": ("real/wine.txt", True),
    "breast-cancer": ("real/breast_cancer.txt", False),
    "breast-cancer-std": ("real/breast_cancer.txt", True),
    "10k": ("10k/X.txt", False),
}
RHAT, ESS = 1.01, 400.0


def read_rows(path: Path) -> list[list[float]]:
    """The numeric rows of a whitespace or comma separated file (a header line skipped)."""
    rows = []
    for line in path.read_text().splitlines():
        fields = line.replace(",", " ").split()
        if not fields:
            continue
        try:
            rows.append([float(f) for f in fields])
        except ValueError:
            if rows:
                raise
    return rows


def standardized(rows: list[list[float]]) -> list[list[float]]:
    """Each column minus its mean, over its standard deviation (population); a constant
    column is an error."""
    n, d = len(rows), len(rows[0])
    means = [sum(r[j] for r in rows) / n for j in range(d)]
    sds = [math.sqrt(sum((r[j] - means[j]) ** 2 for r in rows) / n) for j in range(d)]
    if any(s == 0 for s in sds):
        raise ValueError("a constant column cannot be standardized")
    return [[(r[j] - means[j]) / sds[j] for j in range(d)] for r in rows]


def data_file(data: Path, out: Path, name: str) -> Path:
    rel, std = SETS[name]
    src = data / rel
    if not std:
        return src
    dst = out / f"{name}.txt"
    if not dst.exists():
        dst.write_text("\n".join(" ".join(repr(v) for v in r) for r in standardized(read_rows(src))) + "\n")
    return dst


def row_of(summary: dict, set_name: str, sampler: str, wall: float) -> dict:
    """The table's row from a run's summary.json."""
    diag = summary["diagnostics"]
    chains = summary["chains"]
    cpu = sum(c["seconds"] for c in chains)
    lj, k = diag["log_joint"], diag["n_clusters"]
    ess = min(lj["ess_bulk"], k["ess_bulk"])
    agreed = lj["rhat"] <= RHAT and k["rhat"] <= RHAT and ess >= ESS
    return {
        "set": set_name,
        "sampler": sampler,
        "agreed": agreed,
        "sweeps": max(c["sweeps"] for c in chains),
        "cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
        "rhat_log_joint": round(lj["rhat"], 3),
        "rhat_k": round(k["rhat"], 3),
        "ess_log_joint": round(lj["ess_bulk"]),
        "ess_k": round(k["ess_bulk"]),
        "ess_per_cpu_s": round(ess / cpu, 1) if cpu > 0 else "",
        "k_mean": round(k["mean"], 2),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nrmm", default="target/release/nrmm")
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--out", default="benches/mixing/results")
    p.add_argument("--sets", default=",".join(SETS))
    p.add_argument("--samplers", default=",".join(SAMPLERS))
    p.add_argument("--max-sweeps", type=int, default=8000)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    data, out = Path(a.data), Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for set_name in a.sets.split(","):
        if set_name not in SETS:
            sys.exit(f"unknown set {set_name!r}: one of {', '.join(SETS)}")
        src = data / SETS[set_name][0]
        if not src.exists():
            print(f"skipping {set_name}: {src} is absent", file=sys.stderr)
            continue
        x = data_file(data, out, set_name)
        for sampler in a.samplers.split(","):
            run_dir = out / f"run-{set_name}-{sampler}"
            cmd = [a.nrmm, "run", "--data", str(x), "--sampler", sampler, "--seed", str(a.seed),
                   "--max-sweeps", str(a.max_sweeps), "--out", str(run_dir), "--force"]
            start = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True)
            wall = time.perf_counter() - start
            if done.returncode != 0:
                print(f"{set_name} {sampler}: failed: {done.stderr.strip()[-300:]}", file=sys.stderr)
                continue
            summary = json.loads((run_dir / "summary.json").read_text())
            row = row_of(summary, set_name, sampler, wall)
            rows.append(row)
            print(json.dumps(row), flush=True)
            for chain in run_dir.glob("chain-*"):
                for f in ("draws.jsonl",):
                    (chain / f).unlink(missing_ok=True)
    if not rows:
        return 1
    with open(out / "mixing.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
