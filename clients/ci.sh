#!/usr/bin/env bash
# Runs the TypeScript and Python client suites against a real `sluice serve`
# built once from this repository. Node packages come from the lockfile
# (npm ci); nothing else is fetched. Besides the suites:
# - TypeScript: every ```ts snippet of the Markdown (README.md, docs/,
#   clients/typescript/README.md) compiles against the built package under
#   `strict` with tsc --noEmit (test/snippets.test.mjs);
# - Python: the package installs into fresh virtual environments with
#   PIP_NO_INDEX=1 and no other package source, from the tree, from its
#   sdist and editable (tests/test_install.py).
set -euo pipefail
cd "$(dirname "$0")"

bin_dir=$(mktemp -d)
trap 'rm -rf "$bin_dir"' EXIT
echo "-- building sluice for the client tests"
(cd .. && go build -o "$bin_dir/sluice" ./cmd/sluice)
export SLUICE_BIN="$bin_dir/sluice"
# The suites' servers run on their own temp SQLite store: sluice serve
# would take these variables (set for the Go tests) as its settings.
unset SLUICE_LISTEN SLUICE_GRPC SLUICE_REDIS_URL SLUICE_REDIS_MODE SLUICE_POSTGRES_URL SLUICE_DATA_DIR \
  SLUICE_AMQP_URL SLUICE_LOG_FORMAT SLUICE_LOG_LEVEL SLUICE_METRICS_TOKEN \
  SLUICE_ADMIN_TOKEN SLUICE_API_TOKEN SLUICE_WORKER_TOKEN

echo "-- TypeScript client (Node $(node --version)): suites and the docs' snippets under strict"
(cd typescript && npm ci --no-audit --no-fund --loglevel=error && npm test)

echo "-- Python client ($(python3 --version)): suites and the offline install"
(cd python && python3 -m unittest discover -s tests -t tests -v)
