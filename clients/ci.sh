#!/usr/bin/env bash
# Runs the TypeScript and Python client suites against a real `sluice serve`
# built once from this repository. Node packages come from the lockfile
# (npm ci); nothing else is fetched.
set -euo pipefail
cd "$(dirname "$0")"

bin_dir=$(mktemp -d)
trap 'rm -rf "$bin_dir"' EXIT
echo "-- building sluice for the client tests"
(cd .. && go build -o "$bin_dir/sluice" ./cmd/sluice)
export SLUICE_BIN="$bin_dir/sluice"

echo "-- TypeScript client (Node $(node --version))"
(cd typescript && npm ci --no-audit --no-fund --loglevel=error && npm test)

echo "-- Python client ($(python3 --version))"
(cd python && python3 -m unittest discover -s tests -t tests -v)
