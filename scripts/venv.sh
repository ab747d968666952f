# Sourced by scripts/demo.sh and scripts/test.sh: create .venv and install kafkalog into it, unless the same install
# (same extras, same pyproject.toml/setup.py/C sources, accelerator built or not) was already done there; a second
# run then starts in about a second instead of re-running pip.
_install_state() {  # the extras, a checksum of what the build reads, and whether the accelerator is built
  local so
  so=$(.venv/bin/python -c 'import kafkalog_cli._accel as a; print(a.__file__)' 2>/dev/null || echo none)
  echo "$1 $(cat pyproject.toml setup.py kafkalog_cli/_accel.c kafkalog_cli/accel/* 2>/dev/null | cksum | cut -d' ' -f1) $so"
}

ensure_venv() {
  local spec=$1 stamp=.venv/.kafkalog-install want
  if [ ! -x .venv/bin/python ]; then
    "${PYTHON:-python3}" -m venv .venv
  fi
  want=$(_install_state "$spec")
  if [ -f "$stamp" ] && grep -qxF -- "$want" "$stamp"; then
    return 0
  fi
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e "$spec"
  # the build may have created the accelerator: record the state after it
  _install_state "$spec" >> "$stamp"
}
