#!/usr/bin/env bash
# Build the compiled accelerator with AddressSanitizer + UndefinedBehaviorSanitizer and run the fuzz and
# corrupt-input tests that reach every C entry point against it. Any sanitizer report fails the run (exit != 0).
#
# Usage: bash scripts/sanitize.sh [extra pytest args]     (tests/test_sanitize.py runs it under `bash scripts/test.sh`)
#
# Why a copy: the sanitized .so is built into a temporary directory together with a copy of the sources and tests,
# never over the tree's own _accel*.so (a mapped .so replaced in place crashes the processes that have it loaded, and
# other runs use the normal build). pytest runs inside the copy, so `import kafkalog_cli` can only find that build
# (the script checks it did).
# Environment: ASan's runtime must be loaded first, so python runs with LD_PRELOAD=libasan.so; detect_leaks=0 (the
# interpreter keeps its objects alive at exit by design); handle_sigbus=0 so that SIGBUS reaches the SIGBUS guard of
# the accelerator (sigbus_guard.c) instead of ASan's fatal handler, which the failing-disk tests rely on
# (handle_segv stays on: a SEGV is a real bug); UBSan halts on the first report with a stack trace. pytest captures
# with --capture=sys so that a report written to fd 2 by a halting process still reaches the output.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$PWD/.venv/bin/python}
[ -x "$PY" ] || PY=$(command -v python3)
CC=${CC:-gcc}
LIBASAN=$("$CC" -print-file-name=libasan.so)
if [ ! -e "$LIBASAN" ]; then
  echo "sanitize.sh: $CC has no libasan.so (install libasan); nothing run" >&2
  exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kafkalog-sanitize.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/tree"
tar --exclude='__pycache__' --exclude='*.so' -cf - kafkalog_cli tests fixtures scripts bench pyproject.toml | tar -xf - -C "$WORK/tree"
# the tests find the real broker files at <repo>/../shared/realdata: give the copy the same neighbour
if [ -d ../shared ]; then ln -s "$(readlink -f ../shared)" "$WORK/shared"; fi
INC=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
SUFFIX=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
"$CC" -shared -fPIC -O1 -g -pthread -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
  -I"$INC" kafkalog_cli/_accel.c -o "$WORK/tree/kafkalog_cli/_accel$SUFFIX"
export LD_PRELOAD="$LIBASAN"
export ASAN_OPTIONS=detect_leaks=0:handle_sigbus=0:allow_user_segv_handler=1:halt_on_error=1:exitcode=86
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=87
export PYTHONDONTWRITEBYTECODE=1
cd "$WORK/tree"
env -u PYTHONPATH "$PY" - <<'PYEOF'
import os, sys
sys.path.insert(0, os.getcwd())
from kafkalog_cli import _accel
assert os.path.dirname(os.path.dirname(_accel.__file__)) == os.getcwd(), _accel.__file__
print("sanitized build:", _accel.__file__)
PYEOF
# the fuzz/corrupt-input tests that reach dump_batch, json_records, check_records, scan_columns, scan_v2, verify_run,
# metadata_apply, export_ndjson, export_columns, replay_items, replay_count, replay_map_lines, rebuild_index, first_nonzero and the guard (see tests/test_sanitize.py
# for the list's reasoning);
# json_text and the dump's decoder calls (test_schemas_fast.py)
exec env -u PYTHONPATH "$PY" -m pytest -q -p no:cacheprovider --capture=sys -x -m "not slow" \
  tests/test_verify_fuzz.py tests/test_accel.py tests/test_accel_walk.py tests/test_verify_deep_accel.py \
  tests/test_accel_threads.py tests/test_rebuild_index.py tests/test_scan_stream.py tests/test_failing_disk.py \
  tests/test_layouts.py tests/test_record_decoder.py tests/test_metadata_accel.py tests/test_schemas_fast.py \
  tests/test_export_accel.py tests/test_replay_accel.py "$@"
