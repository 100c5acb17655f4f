#!/usr/bin/env bash
# make toolkit-check: minikafka's wheel in a fresh virtualenv, used by the sample suite.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
python="${PYTHON:-python3}"
build="$root/build/toolkit"
rm -rf "$build"
mkdir -p "$build"
"$python" -m pip wheel "$root" --no-deps -q -w "$build/wheels"
"$python" -m venv "$build/venv"
"$build/venv/bin/pip" install -q "$build"/wheels/minikafka-*.whl pytest \
    'kafka-python>=3.0,<3.1' 'confluent-kafka>=2.6' 'aiokafka>=0.12'
cd "$root/examples/pytest-suite"
started=$(date +%s.%N)
# -p no:cacheprovider: leave no .pytest_cache in the repository.
"$build/venv/bin/python" -m pytest -q -p no:cacheprovider --minikafka-report="$build/report.json"
finished=$(date +%s.%N)
echo "sample suite: $("$python" -c "print(round($finished - $started, 1))") s wall time; brokers' start-to-ready (ms):"
cat "$build/report.json"
