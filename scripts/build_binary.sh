#!/usr/bin/env bash
# Build the single-file binary dist/kafkalog with PyInstaller.
#
# Why a dedicated venv under build/: PyInstaller bundles whatever it can import, and a developer environment with
# pyspark drags in pyspark, pandas, pyarrow and numpy (~114 MB). build/venv holds only the runtime dependencies from
# pyproject.toml plus pyinstaller, and is reused across builds (delete it to start over).
#
# Usage: scripts/build_binary.sh            (from anywhere; writes dist/kafkalog at the repository root)
#        PYTHON=python3.11 scripts/build_binary.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
VENV="$ROOT/build/venv"
STAMP="$VENV/.deps-stamp"

start=$(date +%s)
if [[ ! -x "$VENV/bin/python" ]]; then
    echo "==> creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi
pip_quiet() {  # pip's warnings about the local index are noise here; show its log only when it fails
    "$VENV/bin/python" -m pip "$@" >"$ROOT/build/pip.log" 2>&1 || { cat "$ROOT/build/pip.log" >&2; exit 1; }
}
# (Re-)install the runtime dependencies (read from pyproject.toml) + pyinstaller on the first run or when
# pyproject.toml changed.
if [[ ! -f "$STAMP" || pyproject.toml -nt "$STAMP" ]]; then
    echo "==> installing runtime dependencies + pyinstaller into $VENV"
    pip_quiet install "pyinstaller>=6" "$ROOT"
    touch "$STAMP"
fi
# Always re-install kafkalog itself (non-editable): --copy-metadata needs its dist-info with the tree's version.
# The sources bundled come from the tree itself via --paths, not from this copy.
pip_quiet install --force-reinstall --no-deps "$ROOT"
rm -rf "$ROOT/build/lib" "$ROOT/build/bdist."*  # setuptools' in-tree leftovers of the install above

if "$VENV/bin/python" -c "import pyspark" 2>/dev/null; then
    echo "error: pyspark is importable in $VENV; it must not be bundled (rm -rf $VENV and re-run)" >&2
    exit 2
fi

echo "==> pyinstaller"
# --collect-submodules kafkalog_cli: commands are imported by name via importlib (cli/main.py COMMANDS), which
#   PyInstaller's static analysis cannot see.
# --copy-metadata crc32c: crc32c calls importlib.metadata.version("crc32c") at import; without its dist-info the
#   import fails and kafkalog falls back to crcmod (1000x slower in pure Python). KAFKALOG_SELFTEST=1 checks this.
# --copy-metadata kafkalog: main.py passes the version to click explicitly today; this keeps --version working if
#   it ever reads the package metadata instead.
# --exclude-module cffi / zstandard.backend_cffi: zstandard uses its C backend; the cffi one only adds size.
# --strip: about halves the size (debug symbols of the bundled .so files).
"$VENV/bin/pyinstaller" \
    --noconfirm --log-level WARN \
    --onefile --name kafkalog \
    --distpath "$ROOT/dist" --workpath "$ROOT/build/pyinstaller" --specpath "$ROOT/build" \
    --paths "$ROOT" \
    --collect-submodules kafkalog_cli \
    --copy-metadata kafkalog --copy-metadata crc32c \
    --exclude-module pyspark --exclude-module pandas --exclude-module pyarrow --exclude-module numpy \
    --exclude-module cffi --exclude-module _cffi_backend --exclude-module zstandard.backend_cffi \
    --exclude-module tkinter \
    --strip \
    "$ROOT/scripts/pyinstaller_entry.py"

echo "==> self-test of the bundle"
KAFKALOG_SELFTEST=1 "$ROOT/dist/kafkalog"
"$ROOT/dist/kafkalog" --version
echo "==> dist/kafkalog: $(du -h "$ROOT/dist/kafkalog" | cut -f1), built in $(( $(date +%s) - start )) s"
