#!/usr/bin/env bash
# Set up a fresh virtual environment (.venv) with kafkalog and its test dependencies, then ruff, mypy and the whole
# test suite.
# Usage: bash scripts/test.sh [extra pytest args]      (CI runs exactly: bash scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test,spark]'
.venv/bin/python -m ruff check kafkalog_cli tests scripts bench
.venv/bin/python -m mypy  # configured in pyproject.toml ([tool.mypy]: files = kafkalog_cli)
exec .venv/bin/python -m pytest -q "$@"
