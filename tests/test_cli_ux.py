"""The operator's experience, for every command in ``COMMANDS`` (iterated dynamically, so new commands are held to it):

- ``--help`` shows an example;
- a missing path, a directory where a file is expected, an unreadable file or directory give a one-line error and
  exit 1/2, never a traceback nor the "internal error" last line of defence;
- ANSI escapes only on a terminal (none in a pipe or on TERM=dumb), and no colour with NO_COLOR=1 (run through a
  real pseudo-terminal).

Unreadable inputs as root: root ignores file modes through the CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH capabilities,
so the command runs under ``setpriv`` with both dropped from its bounding set (it stays root and can still read the
Python installation under /root). Without setpriv, or if a probe shows the mode is still ignored, those cases skip.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from shipping_helpers import ROOT, make_partition, python_argv, run_in_pty

from kafkalog_cli.cli.main import COMMANDS, cli

SEGMENT = "0" * 20 + ".log"
PATHLIKE = re.compile(r"PATH|FILE|DIR|SEGMENT|PARTITION|LOG", re.IGNORECASE)
DROP_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]


def load(name: str) -> click.Command:
    module, attr, _ = COMMANDS[name]
    return getattr(importlib.import_module(module), attr)


def path_params(cmd: click.Command) -> list[click.Parameter]:
    return [p for p in cmd.params if isinstance(p.type, click.Path)]


def commands_with_paths() -> list[str]:
    names = []
    for name in sorted(COMMANDS):
        try:
            cmd = load(name)
        except ImportError:
            continue  # reported by test_help_has_example
        if path_params(cmd):
            names.append(name)
    return names


def argv_for(name: str, path: str) -> list[str]:
    """An invocation of ``name`` with ``path`` in every path parameter and a placeholder in other required ones."""
    cmd = load(name)
    args: list[str] = []
    opts: list[str] = []
    for p in cmd.params:
        is_path = isinstance(p.type, click.Path)
        if isinstance(p, click.Argument):
            if is_path:
                args.append(path)
            elif p.required:
                args.append(p.type.choices[0] if isinstance(p.type, click.Choice) else "0")
        elif isinstance(p, click.Option) and p.required:
            value = path if is_path else (p.type.choices[0] if isinstance(p.type, click.Choice) else "0")
            opts += [p.opts[0], value]
    return [name, *opts, *args]


def env_base(tmp_path: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "LANG": "C.UTF-8",
            "PYTHONPATH": str(ROOT)}


# ---------------------------------------------------------------- help


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_has_example(name: str) -> None:
    result = CliRunner().invoke(cli, [name, "--help"], prog_name="kafkalog")
    assert result.exit_code == 0, f"kafkalog {name} --help failed: {result.output}{result.exception!r}"
    assert "Example" in result.output, f"kafkalog {name} --help shows no example (add an epilog with Examples:)"


def test_group_help_lists_every_command() -> None:
    result = CliRunner().invoke(cli, ["--help"], prog_name="kafkalog")
    assert result.exit_code == 0
    for name in COMMANDS:
        assert name in result.output


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_path_like_arguments_use_click_path(name: str) -> None:
    """Shells complete file names only for click.Path parameters; a str-typed FILE argument completes nothing."""
    try:
        cmd = load(name)
    except ImportError as exc:
        pytest.skip(f"{name}: module not importable ({exc}); test_help_has_example reports it")
    wrong = [p.name for p in cmd.params if isinstance(p, click.Argument)
             and PATHLIKE.search(f"{p.name} {p.metavar or ''}") and not isinstance(p.type, click.Path)]
    assert not wrong, f"kafkalog {name}: arguments {wrong} look like paths but are not click.Path"


# ---------------------------------------------------------------- bad paths


def run(argv: list[str], env: dict[str, str], cwd: Path, prefix: list[str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*(prefix or []), *python_argv(), *argv], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120, stdin=subprocess.DEVNULL)


def assert_clean_failure(result: subprocess.CompletedProcess, what: str, *, must_fail: bool = True) -> None:
    text = result.stdout + result.stderr
    assert "Traceback" not in text, f"{what}: traceback\n{text}"
    assert "internal error" not in result.stderr, f"{what}: unhandled exception\n{result.stderr}"
    if must_fail:
        assert result.returncode in (1, 2), f"{what}: exit {result.returncode}\n{text}"
        assert result.stderr.strip(), f"{what}: failed without saying why on stderr"


@pytest.mark.parametrize("name", commands_with_paths())
def test_missing_path(name: str, tmp_path: Path) -> None:
    argv = argv_for(name, str(tmp_path / "no-such-partition-0" / SEGMENT))
    assert_clean_failure(run(argv, env_base(tmp_path), tmp_path), f"kafkalog {' '.join(argv)}")


@pytest.mark.parametrize("name", commands_with_paths())
def test_directory_where_a_file_is_expected(name: str, tmp_path: Path) -> None:
    fake = tmp_path / "orders-0" / SEGMENT  # a directory named like a segment
    fake.mkdir(parents=True)
    argv = argv_for(name, str(fake))
    assert_clean_failure(run(argv, env_base(tmp_path), tmp_path), f"kafkalog {' '.join(argv)}", must_fail=False)


@pytest.fixture(scope="module")
def drop_dac(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The prefix that makes file modes apply to this process (empty when not root)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root and setpriv (util-linux) is missing: root would read a mode-000 file anyway")
    probe = tmp_path_factory.mktemp("probe") / "secret"
    probe.write_text("x")
    probe.chmod(0)
    result = subprocess.run([*DROP_DAC, "cat", str(probe)], capture_output=True)
    if result.returncode == 0:
        pytest.skip("setpriv could not drop CAP_DAC_OVERRIDE here (container without the capability?)")
    return DROP_DAC


@pytest.mark.parametrize("name", commands_with_paths())
def test_unreadable_file(name: str, tmp_path: Path, drop_dac: list[str]) -> None:
    part = make_partition(tmp_path)
    seg = part / SEGMENT
    seg.chmod(0)
    try:
        argv = argv_for(name, str(seg))
        result = run(argv, env_base(tmp_path), tmp_path, drop_dac)
    finally:
        seg.chmod(0o644)
    assert_clean_failure(result, f"kafkalog {' '.join(argv)} (file mode 000)")


@pytest.mark.parametrize("name", commands_with_paths())
def test_unreadable_directory(name: str, tmp_path: Path, drop_dac: list[str]) -> None:
    part = make_partition(tmp_path)
    part.chmod(0)
    try:
        argv = argv_for(name, str(part))
        result = run(argv, env_base(tmp_path), tmp_path, drop_dac)
    finally:
        part.chmod(0o755)
    assert_clean_failure(result, f"kafkalog {' '.join(argv)} (directory mode 000)")


# ---------------------------------------------------------------- colour


def invocations(part: Path) -> list[list[str]]:
    """Every command's help, a usage error, and every path-taking command on a healthy and on a missing partition."""
    argvs = [["--help"], ["no-such-command"]]
    argvs += [[name, "--help"] for name in sorted(COMMANDS)]
    for name in commands_with_paths():
        argvs.append(argv_for(name, str(part)))
        argvs.append(argv_for(name, str(part.parent / "missing-0")))
    return argvs


SGR = re.compile(rb"\x1b\[([0-9;:]*)m")


def colour_codes(data: bytes) -> list[str]:
    """The SGR sequences in ``data`` that set a colour (30-49, 90-107 and their 256/true-colour forms); bold, dim,
    italic and cursor control are not colour (the NO_COLOR convention only forbids colour)."""
    found = []
    for params in SGR.findall(data):
        for code in re.split(rb"[;:]", params):
            if code and (30 <= int(code) <= 49 or 90 <= int(code) <= 107):
                found.append(params.decode())
                break
    return found


def test_ansi_only_on_a_tty_and_no_colour_with_no_color(tmp_path: Path) -> None:
    part = make_partition(tmp_path)
    base = {**env_base(tmp_path), "TERM": "xterm-256color", "COLUMNS": "120"}
    base.pop("NO_COLOR", None)
    problems = []
    styled_with_no_color = []
    for argv in invocations(part):
        shown = "kafkalog " + " ".join(argv)
        piped = subprocess.run([*python_argv(), *argv], capture_output=True, env=base, cwd=tmp_path, timeout=120,
                               stdin=subprocess.DEVNULL)
        if b"\x1b" in piped.stdout + piped.stderr:
            problems.append(f"{shown}: ANSI escapes in a pipe")
        _, no_color = run_in_pty([*python_argv(), *argv], {**base, "NO_COLOR": "1"}, cwd=tmp_path)
        if colour_codes(no_color):
            problems.append(f"{shown}: colour on a terminal with NO_COLOR=1: {sorted(set(colour_codes(no_color)))}")
        elif b"\x1b" in no_color:
            styled_with_no_color.append(shown)
        _, dumb = run_in_pty([*python_argv(), *argv], {**base, "TERM": "dumb"}, cwd=tmp_path)
        if b"\x1b" in dumb:
            problems.append(f"{shown}: ANSI escapes on a TERM=dumb terminal")
    assert not problems, "\n".join(problems)
    # not failures under the NO_COLOR convention (bold/italic/cursor control only), listed for the report
    print("non-colour escapes with NO_COLOR=1:", styled_with_no_color or "none")


def test_colour_code_detection() -> None:
    """The detector above: colour SGRs are found, bold alone is not."""
    assert colour_codes(b"\x1b[1;36mx\x1b[0m\x1b[38;5;197my\x1b[1mz") == ["1;36", "38;5;197"]


def test_pty_harness_sees_colour() -> None:
    """Control for the test above: a program that colours on a TTY is seen doing so through run_in_pty."""
    code = "import sys; sys.stdout.write('\\x1b[31mred\\x1b[0m' if sys.stdout.isatty() else 'plain')"
    _, out = run_in_pty([*python_argv()[:1], "-c", code], {"PATH": os.environ.get("PATH", "")})
    assert b"\x1b[31m" in out
