#!/usr/bin/env bash
# Real data against scikit-learn: makes the Python environment (once), builds nrmm, runs the
# benchmark. Arguments go to realbench.py (--quick, --sets, --skip, --write-benchmarks, --help).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${REALBENCH_VENV:-$here/.venv}"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$here/requirements.txt" "$venv/requirements.txt"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$venv/requirements.txt"
fi
(cd "$root" && cargo build --release --quiet --bin nrmm --example paper-mnist-infinite-mixtures)
cd "$root"
exec "$venv/bin/python" "$here/realbench.py" "$@"
