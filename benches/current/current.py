#!/usr/bin/env python3
"""The current figures of BENCHMARKS.md, all from one run of one commit.

    python3 benches/current/current.py                      # about 15 min on 2 idle cores
    python3 benches/current/current.py --write-benchmarks   # and rewrite BENCHMARKS.md's section
    python3 benches/current/current.py --only tgmcmc_toy,sva --out DIR   # a few steps, elsewhere

Builds the release benchmarks and examples, then runs, one after the other: the criterion
benchmarks of the samplers and of the tree engine (their medians read from criterion's
`estimates.json`), the examples that measure the samplers against the reference code
(`sampler_speed`, `tgmcmc_speed` on toy and 10k, `sva_speed`, `dpmm_speed`'s headline run), and
the `gibbs-limit` anchor beside the repository when the CPU can run it (AVX-512). Each step's
output is kept verbatim in `--out` (default `benches/current/results/`) with its wall time and
peak resident memory (`wait4`), and `results.md` is rendered from them, stamped with the date,
the commit (`+changes` when the working tree differs from it) and the machine's load before each
step. Standard library only: no virtual environment needed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LIMIT = ROOT.parent / "shared" / "bench" / "gibbs-limit"
BEGIN = "<!-- BEGIN current -->"
END = "<!-- END current -->"


@dataclass
class Step:
    key: str
    title: str
    cmd: list[str]
    kind: str  # "criterion": a table of the medians it wrote; "text": its standard output
    cwd: Path = ROOT
    env: dict | None = None


def examples(name: str, *args: str) -> list[str]:
    return [str(ROOT / "target" / "release" / "examples" / name), *args]


STEPS = [
    Step("samplers", "Criterion: one Gibbs sweep, one SAMS and one Jain-Neal proposal, DPMM.jl-style "
         "sweeps and an SVA pass (median, thread CPU time)",
         ["cargo", "bench", "--quiet", "--bench", "samplers"], "criterion"),
    Step("tree", "Criterion: the tree engine (median, thread CPU time)",
         ["cargo", "bench", "--quiet", "--bench", "tree"], "criterion"),
    Step("sampler_speed", "The marginal samplers on toy and 10k, rates against the reference code "
         "(CPU time, from the true partition)", examples("sampler_speed"), "text"),
    Step("tgmcmc_toy", "tgMCMC on toy: the published sampler's sweeps/s and the exact one's time to "
         "the optimum", examples("tgmcmc_speed", "toy"), "text"),
    Step("tgmcmc_10k", "tgMCMC on 10k: sweeps/s and the log joint reached in 30 s (3 seeds, DP and "
         "NGGP)", examples("tgmcmc_speed", "10k", "--seconds", "30", "--seeds", "3"), "text"),
    Step("sva", "One SVA / SVA-PM pass (Lin 2013), median of 7", examples("sva_speed"), "text"),
    Step("dpmm", "DPMM.jl's headline run: the sub-cluster samplers, N = 1,000,000, d = 2, K = 6, "
         "100 iterations", examples("dpmm_speed"), "text"),
    Step("gibbs_limit", "gibbs-limit, the hand-vectorised sweep this CPU allows (5 rounds)",
         ["cargo", "run", "--quiet", "--release", "--", "5"], "text", cwd=LIMIT,
         env={"CARGO_TARGET_DIR": str(ROOT / "target" / "gibbs-limit")}),
]


def git(*args: str) -> str:
    r = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else ""


def this_run() -> dict:
    """Date, commit and whether the working tree differs from it (the benchmark scripts' folders
    and BENCHMARKS.md aside: they are the reports, not the code measured)."""
    commit = git("rev-parse", "--short", "HEAD") or "commit unknown"
    dirty = git("status", "--porcelain", "--", ".", ":(exclude)benches/current",
                ":(exclude)benches/real-data", ":(exclude)BENCHMARKS.md")
    return {
        "when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit + ("+changes" if dirty else ""),
        "subject": git("log", "-1", "--format=%s"),
        "cpu": cpu_name(),
    }


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() + f", {os.cpu_count()} logical CPUs"
    except OSError:
        pass
    return f"{os.cpu_count()} logical CPUs"


def has_avx512() -> bool:
    try:
        return " avx512f" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def run_step(step: Step, out: Path) -> dict:
    """Runs one step, keeping its output; wall seconds and the peak resident memory of its
    process tree's largest process (`wait4`, kibibytes on Linux)."""
    env = dict(os.environ, **(step.env or {}))
    started = time.time()
    before = f"{os.getloadavg()[0]:.1f}"
    log_path = out / f"{step.key}.txt"
    with open(log_path, "w") as f:
        p = subprocess.Popen(step.cmd, cwd=step.cwd, env=env, stdout=f, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(p.pid, 0)
    # Reaped here (for its resource usage): tell the Popen, so it never waits for it again.
    p.returncode = os.waitstatus_to_exitcode(status)
    return {
        "key": step.key,
        "rc": p.returncode,
        "wall_s": round(time.time() - started, 1),
        "peak_mib": round(usage.ru_maxrss / 1024, 1),
        "load_before": before,
        "started": datetime.datetime.fromtimestamp(started, datetime.timezone.utc).strftime("%H:%M"),
    }


def criterion_medians(since: float) -> list[tuple[str, float]]:
    """(benchmark id, median in ns) of every criterion benchmark written after `since`."""
    rows = []
    for est in (ROOT / "target" / "criterion").glob("**/new/estimates.json"):
        if est.stat().st_mtime < since:
            continue
        bench = json.loads((est.parent / "benchmark.json").read_text())
        median = json.loads(est.read_text())["median"]["point_estimate"]
        rows.append((bench["full_id"], median))
    return sorted(rows)


def human(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}".replace(".0 ", " ")
    return f"{ns:.3g} ns"


def render(out: Path, steps: list[Step]) -> str:
    meta = json.loads((out / "meta.json").read_text())
    done = {r["key"]: r for r in meta["steps"]}
    md = [
        f"Measured {meta['when']} at `{meta['commit']}` ({meta['subject']}) on {meta['cpu']}, "
        + (f"{meta['minutes']} min wall in all" if meta.get("minutes") is not None
           else "**unfinished run** (the steps below are those it completed)")
        + ", by `python3 benches/current/current.py --write-benchmarks`. Each step ran alone, one "
        "after the other; \"load\" is the machine's one-minute load average as the step started "
        "(2 cores: above 1 means something else was running); peak memory is that of the step's "
        "largest process.",
        "",
    ]
    for step in steps:
        r = done.get(step.key)
        cmd = " ".join(Path(c).name if c.startswith(str(ROOT)) else c for c in step.cmd)
        if step.key == "gibbs_limit":
            cmd = f"(in gibbs-limit) {cmd}"
        md.append(f"#### {step.title}")
        md.append("")
        if r is None:
            md += [meta.get("skipped", {}).get(step.key, "not run"), ""]
            continue
        md.append(f"`{cmd}`: {r['wall_s']} s wall, peak {r['peak_mib']} MiB, load {r['load_before']}, "
                  f"started {r['started']} UTC" + ("" if r["rc"] == 0 else f", **exit code {r['rc']}**") + ".")
        md.append("")
        if step.kind == "criterion":
            rows = [tuple(x) for x in r.get("medians", [])]
            md += ["| benchmark | median |", "|---|---|"] + [f"| `{k}` | {human(v)} |" for k, v in rows]
        else:
            text = (out / f"{step.key}.txt").read_text().rstrip()
            text = re.sub(r"\x1b\[[0-9;]*m", "", text)
            md += ["```text", text, "```"]
        md.append("")
    return "\n".join(md)


def write_benchmarks(text: str) -> None:
    path = ROOT / "BENCHMARKS.md"
    doc = path.read_text()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"error: {path} has no {BEGIN} … {END} markers: add them where the section belongs")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(head + BEGIN + "\n" + text + END + tail)
    print(f"rewrote the current figures in {path}", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE / "results", help="output folder (default: results/ here)")
    ap.add_argument("--only", default=None, help="comma-separated steps: " + ",".join(s.key for s in STEPS))
    ap.add_argument("--render-only", action="store_true", help="measure nothing: re-render from --out")
    ap.add_argument("--write-benchmarks", action="store_true",
                    help="also rewrite the current figures of BENCHMARKS.md (between its markers)")
    a = ap.parse_args()
    keys = [s.key for s in STEPS]
    wanted = a.only.split(",") if a.only else keys
    unknown = sorted(set(wanted) - set(keys))
    if unknown:
        print(f"error: unknown steps {unknown}; known: {keys}", file=sys.stderr)
        return 2
    steps = [s for s in STEPS if s.key in wanted]
    out: Path = a.out
    if not a.render_only:
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        meta = this_run() | {"minutes": None, "steps": [], "skipped": {}}
        started = time.time()
        build = subprocess.run(["cargo", "build", "--release", "--quiet", "--examples", "--benches"], cwd=ROOT)
        if build.returncode != 0:
            print("error: the release build failed", file=sys.stderr)
            return 1
        for step in steps:
            if step.key == "gibbs_limit" and not (LIMIT / "Cargo.toml").exists():
                meta["skipped"][step.key] = f"Skipped: `gibbs-limit` is not beside the repository ({LIMIT.name} absent)."
                continue
            if step.key == "gibbs_limit" and not has_avx512():
                meta["skipped"][step.key] = ("Skipped: `gibbs-limit` runs its AVX-512 variants unconditionally and "
                                             "this CPU has no AVX-512; the ratios to it are in the history below, "
                                             "measured with those variants left out.")
                continue
            print(f"[{time.strftime('%H:%M:%S')}] {step.key}: {' '.join(step.cmd)}", file=sys.stderr)
            t0 = time.time()
            r = run_step(step, out)
            if step.kind == "criterion":
                r["medians"] = criterion_medians(t0)
            meta["steps"].append(r)
            (out / "meta.json").write_text(json.dumps(meta, indent=1))
        meta["minutes"] = round((time.time() - started) / 60, 1)
        (out / "meta.json").write_text(json.dumps(meta, indent=1))
    text = render(out, steps)
    (out / "results.md").write_text(text)
    if a.write_benchmarks:
        write_benchmarks(text)
    print(text)
    meta = json.loads((out / "meta.json").read_text())
    return 0 if all(r["rc"] == 0 for r in meta["steps"]) else 1


if __name__ == "__main__":
    sys.exit(main())
