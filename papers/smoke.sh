#!/usr/bin/env bash
# Runs every paper reproduction in its smoke mode (a few seconds each) into a scratch
# directory, so that the reproductions never rot. The committed results are not touched.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
run() {
    local example="$1"
    shift
    echo "== $example (smoke)"
    cargo run --release --quiet --example "$example" -- --smoke --out "$scratch/$example" "$@"
}
run paper-fast-collapsed-gibbs
run paper-mnist-infinite-mixtures
run paper-sva-nips2013
run paper-dpmm-jl
run paper-tgmcmc-nips2015
run paper-wade-ghahramani-2018
run paper-miller-harrison
