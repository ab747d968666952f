#!/usr/bin/env bash
# Set up .venv with kafkalog and run the main job on the bundled sample log directory (fixtures/sample-logdir).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
ensure_venv .
if .venv/bin/kafkalog scan --help >/dev/null 2>&1; then
  exec .venv/bin/kafkalog scan fixtures/sample-logdir --out "${TMPDIR:-/tmp}/kafkalog-sample-scan"
else
  .venv/bin/kafkalog verify-crc fixtures/sample-logdir 2>/dev/null || true
  exec .venv/bin/kafkalog dump --deep-iteration --print-data-log fixtures/sample-logdir/payments-0
fi
