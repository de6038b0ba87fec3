"""Parallel tempering against the default run at an equal CPU budget (issue 31, item 2).

For one data set, each configuration (the default run, and `--temperatures LADDER` for each
ladder given) runs `nrmm run --data FILE --seed S --sweeps N` with N chosen so that the run's
sampling CPU time is about the same: the default's `--sweeps` over each ladder's relative cost
per sweep (`--costs`, measured by an earlier run of this script), so that the chains are a
function of the seed alone; or, without them, a short calibration run of each configuration
(and one of a single sweep, the pilot and starts) measures its CPU seconds per sweep, and N
is the `--cpu` budget over that. CPU time (user + system of the process, from `os.wait4`) rather than wall
time, because this shared machine's other jobs take an uneven share of its two cores; the
wall time and the load average are printed beside it.

From each run: sweeps per chain, CPU and wall seconds, R-hat and bulk ESS of the log joint and
K (`summary.json`), the effective draws of the slower of the two per CPU second, each chain's
mean K and mean log joint over its second half, and each adjacent pair's swap acceptance.

    python3 benches/mixing/tempering.py --nrmm target/release/nrmm \
        --data ../shared/data/real/breast_cancer.txt --name breast-cancer --cpu 120 \
        --ladders 1,0.9 1,0.9,0.8 1,0.9,0.8,0.7 --out benches/mixing/results/tempering

Prints one JSON line per run and a Markdown table. Only the standard library.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def run(cmd: list[str]) -> tuple[float, float, float]:
    """Runs `cmd`; returns (CPU seconds, wall seconds, 1-minute load average at the start)."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed: {err[-400:]}")
    return usage.ru_utime + usage.ru_stime, wall, load


def chains_of(run_dir: Path) -> tuple[list[str], list[str]]:
    """Each chain's `K=mean lj=mean` over its second half, and each swap pair's acceptance
    over all chains' second halves."""
    chains, swaps = [], {}
    for f in sorted(run_dir.glob("chain-*/trace.csv")):
        rows = list(csv.DictReader(f.open()))
        half = rows[len(rows) // 2:]
        k = statistics.mean(int(r["n_clusters"]) for r in half)
        lj = statistics.mean(float(r["log_joint"]) for r in half)
        chains.append(f"{k:.1f}/{lj:.0f}")
        for key in rows[0]:
            if key.startswith("swap_") and key.endswith("_proposed"):
                pair = key[: -len("_proposed")]
                p = sum(int(r[key]) for r in half)
                a = sum(int(r[pair + "_accepted"]) for r in half)
                tp, ta = swaps.get(pair, (0, 0))
                swaps[pair] = (tp + p, ta + a)
    rates = [f"{pair[5:]}: {a / p:.2f}" for pair, (p, a) in swaps.items() if p]
    return chains, rates


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nrmm", default="target/release/nrmm")
    p.add_argument("--data", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--cpu", type=float, default=120.0, help="CPU seconds of sampling per run")
    p.add_argument("--ladders", nargs="*", default=["1,0.9", "1,0.9,0.8", "1,0.9,0.8,0.7"])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--calibrate", type=int, default=200, help="sweeps of each calibration run")
    p.add_argument("--sweeps", type=int, help="sweeps of the default run; with --costs, no calibration")
    p.add_argument("--costs", help="each ladder's CPU per sweep over the default's, comma-separated")
    p.add_argument("--extra", default="", help="more flags for every run")
    p.add_argument("--out", default="benches/mixing/results/tempering")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    base = [a.nrmm, "run", "--data", a.data, "--seed", str(a.seed), "--force"] + a.extra.split()
    configs = [("default", [])] + [(f"β {l}", ["--temperatures", l]) for l in a.ladders]
    fixed, _, _ = run(base + ["--sweeps", "1", "--out", str(out / "cal-fixed")])
    rows = []
    costs = [1.0] + [float(c) for c in a.costs.split(",")] if a.costs else None
    for i, (label, flags) in enumerate(configs):
        if costs and a.sweeps:
            sweeps = int(round(a.sweeps / costs[i], -1))
        else:
            cal, _, _ = run(base + flags + ["--sweeps", str(a.calibrate), "--out", str(out / f"cal-{i}")])
            per_sweep = max(cal - fixed, 1e-3) / a.calibrate
            sweeps = max(int(a.cpu / per_sweep), 100)
        run_dir = out / f"{a.name}-{i}"
        cpu, wall, load = run(base + flags + ["--sweeps", str(sweeps), "--out", str(run_dir)])
        summary = json.loads((run_dir / "summary.json").read_text())
        diag = summary["diagnostics"]
        lj, k = diag["log_joint"], diag["n_clusters"]
        ess = min(lj["ess_bulk"], k["ess_bulk"])
        chains, swaps = chains_of(run_dir)
        row = {
            "set": a.name,
            "run": label,
            "sweeps": sweeps,
            "cpu_s": round(cpu - fixed, 1),
            "wall_s": round(wall, 1),
            "load": round(load, 1),
            "rhat_lj": round(lj["rhat"], 3),
            "rhat_k": round(k["rhat"], 3),
            "ess_lj": round(lj["ess_bulk"]),
            "ess_k": round(k["ess_bulk"]),
            "ess_per_cpu_s": round(ess / max(cpu - fixed, 1e-3), 2),
            "chains_k_lj": " ".join(chains),
            "swaps": ", ".join(swaps),
        }
        rows.append(row)
        print(json.dumps(row, ensure_ascii=False), flush=True)
        for chain in run_dir.glob("chain-*"):
            (chain / "draws.jsonl").unlink(missing_ok=True)
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
