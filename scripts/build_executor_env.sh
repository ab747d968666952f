#!/usr/bin/env bash
# Build a relocatable Python environment for the executors of `kafkalog scan --engine spark` on a cluster.
#
# Why not venv-pack: a venv's bin/python is a symlink to the interpreter it was made from, so the packed env only
# runs where that exact path exists on every node, and an editable install (pip install -e) packs no kafkalog code
# at all (only a .pth file pointing at the source checkout). This script instead packs
#   - a copy of the interpreter (binary, libpython, the standard library) of the Python that runs it,
#   - kafkalog installed from a WHEEL (built here from the checkout unless --wheel is given) and pyarrow,
#   - bin/python: a wrapper that sets PYTHONHOME and LD_LIBRARY_PATH to wherever the archive was unpacked,
# so the archive runs from any directory on any Linux node with a compatible glibc.
#
# Usage: scripts/build_executor_env.sh [-o kafkalog-env.tar.gz] [--wheel dist/kafkalog-*.whl] [--python python3]
# Then:  kafkalog scan /shared/kafka --engine spark --master spark://head:7077 --out /shared/scan \
#          --conf spark.archives=kafkalog-env.tar.gz#kafkalog_env \
#          --conf spark.pyspark.python=./kafkalog_env/bin/python
set -euo pipefail

out="kafkalog-env.tar.gz"
wheel=""
python="${PYTHON:-python3}"
while [ $# -gt 0 ]; do
  case "$1" in
    -o|--out) out="$2"; shift 2 ;;
    --wheel) wheel="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "build_executor_env.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ -z "$wheel" ]; then
  "$python" -m pip wheel -q --no-deps -w "$work/wheel" "$repo"
  wheel="$(ls "$work"/wheel/kafkalog-*.whl)"
fi
case "$wheel" in *.whl) ;; *) echo "build_executor_env.sh: --wheel must be a .whl file (not an editable install)" >&2; exit 2 ;; esac

read -r ver prefix binary <<EOF
$("$python" -c 'import sys, os; print(f"{sys.version_info[0]}.{sys.version_info[1]}", sys.base_prefix, os.path.realpath(sys.executable))')
EOF
env="$work/kafkalog_env"
mkdir -p "$env/bin" "$env/lib"
# the interpreter: the real binary (not a venv symlink), libpython if it is shared, the standard library
cp "$binary" "$env/bin/python$ver.bin"
cp -P "$prefix"/lib/libpython"$ver"*.so* "$env/lib/" 2>/dev/null || true
(cd "$prefix/lib" && tar cf - --exclude="python$ver/site-packages" --exclude="python$ver/test" \
   --exclude="python$ver/idlelib" --exclude="python$ver/tkinter" --exclude="python$ver/turtledemo" \
   --exclude="__pycache__" "python$ver") | (cd "$env/lib" && tar xf -)
mkdir -p "$env/lib/python$ver/site-packages"
cat > "$env/bin/python" <<WRAP
#!/bin/sh
# kafkalog executor environment: run the packed interpreter wherever this directory was unpacked
here=\$(cd "\$(dirname "\$0")/.." && pwd)
LD_LIBRARY_PATH="\$here/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" PYTHONHOME="\$here" PYTHONNOUSERSITE=1 \\
  exec "\$here/bin/python$ver.bin" "\$@"
WRAP
chmod +x "$env/bin/python"
ln -s python "$env/bin/python3"
# kafkalog from the wheel, its dependencies and pyarrow, for this interpreter version
"$python" -m pip install -q --no-compile --target "$env/lib/python$ver/site-packages" "$wheel" "pyarrow>=14"
# the archive holds the directory's CONTENTS: Spark unpacks it into the alias given after '#'
tar czf "$out" -C "$env" .
"$env/bin/python" -c "import kafkalog_cli.scan.work, pyarrow; print('ok')" >/dev/null
echo "wrote $out ($(du -h "$out" | cut -f1)): --conf spark.archives=$out#kafkalog_env --conf spark.pyspark.python=./kafkalog_env/bin/python"
