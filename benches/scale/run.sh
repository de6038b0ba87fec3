#!/usr/bin/env bash
# Scale: makes the Python environment (once), builds nrmm, runs the benchmark. Arguments go to
# scalebench.py (--quick, --huge, --sets, --methods, --cap, --render-only, --help).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${SCALEBENCH_VENV:-$here/.venv}"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$here/requirements.txt" "$venv/requirements.txt"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$venv/requirements.txt"
fi
(cd "$root" && cargo build --release --quiet --bin nrmm)
cd "$root"
exec "$venv/bin/python" "$here/scalebench.py" "$@"
