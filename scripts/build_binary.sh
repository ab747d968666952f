#!/usr/bin/env bash
# Build the kafkalog bundle with PyInstaller: dist/kafkalog/ (the executable dist/kafkalog/kafkalog and its
# _internal/ folder) and the one file to ship, dist/kafkalog-<version>-linux-<arch>.tar.gz.
#
# Why a one-folder bundle in a tarball and not PyInstaller's --onefile: a one-file binary unpacks itself into a
# temporary directory at every start (0.43-0.57 s per run, every TAB of shell completion); the folder starts in
# about the time of the pip-installed command, and the tarball is still one file to copy.
#
# Why the C accelerator is built first and checked: PyInstaller bundles kafkalog_cli from this tree (--paths), and a
# fresh clone has no compiled kafkalog_cli/_accel*.so; PyInstaller then only warns ("Hidden import
# 'kafkalog_cli._accel' not found") and the bundle is up to 20x slower on deep dumps. The script compiles the
# extension in place and fails when it is missing from the tree or from the bundle (KAFKALOG_SELFTEST checks it).
#
# Why a dedicated venv under build/: PyInstaller bundles whatever it can import, and a developer environment with
# pyspark drags in pyspark, pandas, pyarrow and numpy (~114 MB). build/venv holds only the runtime dependencies from
# pyproject.toml plus pyinstaller, and is reused across builds (delete it to start over).
#
# Usage: scripts/build_binary.sh            (from anywhere; writes dist/ at the repository root)
#        PYTHON=python3.11 scripts/build_binary.sh
#        KAFKALOG_BUILD_VENV=/path/venv scripts/build_binary.sh   (reuse a build venv, e.g. across clean clones)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
VENV="${KAFKALOG_BUILD_VENV:-$ROOT/build/venv}"
mkdir -p "$ROOT/build"
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
    pip_quiet install "pyinstaller>=6" setuptools wheel "$ROOT"
    touch "$STAMP"
fi
echo "==> compiling the C accelerator (kafkalog_cli._accel)"
# into build/ext-lib first, then copied into the tree: a failed compile (the extension is optional, so setuptools
# only warns) must not leave an older .so of the tree to be bundled
pip_quiet install "setuptools>=77" wheel  # pyproject's build requirement; a venv's bundled setuptools is older
rm -rf "$ROOT/build/ext-lib"
"$VENV/bin/python" "$ROOT/setup.py" -q build_ext --force --build-lib "$ROOT/build/ext-lib" \
    --build-temp "$ROOT/build/ext" >"$ROOT/build/ext.log" 2>&1 || true
so=("$ROOT"/build/ext-lib/kafkalog_cli/_accel*.so)
load_so='import importlib.util as u, sys; s = u.spec_from_file_location("kafkalog_cli._accel", sys.argv[1]); s.loader.exec_module(u.module_from_spec(s))'
if [[ ! -f "${so[0]}" ]] || ! "$VENV/bin/python" -c "$load_so" "${so[0]}" 2>/dev/null; then
    cat "$ROOT/build/ext.log" >&2
    echo "error: the C accelerator kafkalog_cli._accel did not build (a C compiler and Python headers are needed);" \
         "a bundle without it is up to 20x slower, so none is built" >&2
    exit 2
fi
# copy then rename (a new inode): cp over the tree's .so would rewrite, in place, a file that a running Python
# (e.g. the test run that called this script) has mapped, and that process then crashes with SIGSEGV
dest="$ROOT/kafkalog_cli/$(basename "${so[0]}")"
cp "${so[0]}" "$dest.tmp.$$" && mv -f "$dest.tmp.$$" "$dest"
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
rm -rf "$ROOT/dist/kafkalog"  # a file (older one-file builds) or the previous folder
"$VENV/bin/pyinstaller" \
    --noconfirm --log-level WARN \
    --onedir --name kafkalog \
    --distpath "$ROOT/dist" --workpath "$ROOT/build/pyinstaller" --specpath "$ROOT/build" \
    --paths "$ROOT" \
    --collect-submodules kafkalog_cli \
    --copy-metadata kafkalog --copy-metadata crc32c \
    --exclude-module pyspark --exclude-module pandas --exclude-module pyarrow --exclude-module numpy \
    --exclude-module cffi --exclude-module _cffi_backend --exclude-module zstandard.backend_cffi \
    --exclude-module tkinter \
    --strip \
    --hidden-import kafkalog_cli._accel \
    "$ROOT/scripts/pyinstaller_entry.py" 2>&1 | tee "$ROOT/build/pyinstaller.log"
if grep -q "Hidden import 'kafkalog_cli._accel' not found" "$ROOT/build/pyinstaller.log"; then
    echo "error: PyInstaller did not find kafkalog_cli._accel; the bundle would lack the accelerator" >&2
    exit 2
fi

echo "==> self-test of the bundle"
KAFKALOG_SELFTEST=1 "$ROOT/dist/kafkalog/kafkalog"  # fails (exit 1) without the accelerator or a codec
"$ROOT/dist/kafkalog/kafkalog" --version
VERSION="$("$ROOT/dist/kafkalog/kafkalog" --version | cut -d' ' -f2)"
TARBALL="$ROOT/dist/kafkalog-$VERSION-linux-$(uname -m).tar.gz"
tar -C "$ROOT/dist" -czf "$TARBALL" kafkalog
echo "==> $(basename "$TARBALL"): $(du -h "$TARBALL" | cut -f1) (folder $(du -sh "$ROOT/dist/kafkalog" | cut -f1)), built in $(( $(date +%s) - start )) s"
