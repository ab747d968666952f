#!/usr/bin/env bash
# Set up a fresh virtual environment (.venv) with kafkalog and its test dependencies, then ruff, mypy and the whole
# test suite.
# Usage: bash scripts/test.sh [extra pytest args]      (CI runs exactly: bash scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
ensure_venv '.[test,spark]'
.venv/bin/python -m ruff check kafkalog_cli tests scripts bench
.venv/bin/python -m mypy  # configured in pyproject.toml ([tool.mypy]: files = kafkalog_cli)
exec .venv/bin/python -m pytest -q -rs "$@"  # -rs: the reason of every skipped test
