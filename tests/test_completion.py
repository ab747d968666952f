"""Shell completion, tested in the real shells an operator uses.

- The checked-in scripts under completions/ equal what ``kafkalog completion SHELL`` prints (regenerate with
  ``python scripts/gen_completions.py``).
- bash: the script is sourced, COMP_WORDS/COMP_CWORD are set and the function is called (COMPREPLY is read); file
  arguments are checked in an interactive bash on a pseudo-terminal, since for them the script only asks readline
  for its default filename completion (``compopt -o default``), which no direct call can show.
- zsh: an interactive ``zsh -f`` on a pseudo-terminal with ``compinit -u``: keystrokes (TAB) go in, the edited line
  comes out. A non-interactive harness cannot work: ``compadd``/``_path_files`` only run inside a ZLE widget.
- fish: ``complete -C`` (fish computes the candidates, files included, without a terminal).

A shell that is not installed is skipped with the reason; CI installs bash, zsh and fish.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from shipping_helpers import ROOT, InteractiveShell, have, kafkalog_wrapper, make_partition

from kafkalog_cli.cli.completion import SHELLS, completion_source
from kafkalog_cli.cli.main import COMMANDS, cli

FILES = {"bash": "kafkalog.bash", "zsh": "_kafkalog", "fish": "kafkalog.fish"}
SEGMENT = "0" * 20 + ".log"


@pytest.fixture
def shell_env(tmp_path: Path) -> dict[str, str]:
    """A minimal environment whose PATH starts with a ``kafkalog`` that runs this tree."""
    bin_dir = tmp_path / "bin"
    kafkalog_wrapper(bin_dir)
    return {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TERM": "xterm",
        "LANG": "C.UTF-8",
    }


@pytest.mark.parametrize("shell", SHELLS)
def test_checked_in_scripts_are_current(shell: str) -> None:
    path = ROOT / "completions" / FILES[shell]
    assert path.read_text() == completion_source(shell, cli), (
        f"{path.relative_to(ROOT)} is stale: run python scripts/gen_completions.py and commit the result")


@pytest.mark.parametrize("shell", SHELLS)
def test_completion_command_prints_script(shell: str, shell_env: dict[str, str]) -> None:
    result = subprocess.run(["kafkalog", "completion", shell], capture_output=True, env=shell_env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == (ROOT / "completions" / FILES[shell]).read_text()
    assert b"_KAFKALOG_COMPLETE" in result.stdout


def test_completion_rejects_unknown_shell(shell_env: dict[str, str]) -> None:
    result = subprocess.run(["kafkalog", "completion", "tcsh"], capture_output=True, env=shell_env, timeout=60)
    assert result.returncode == 2
    assert b"Traceback" not in result.stderr


# ---------------------------------------------------------------- bash


def _bash_complete(words: list[str], env: dict[str, str], cwd: Path) -> tuple[list[str], str]:
    """Call the sourced completion function like bash does; (COMPREPLY, the compopt calls it made)."""
    script = ROOT / "completions" / FILES["bash"]
    cword = len(words) - 1
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    program = f"""
source '{script}'
compopt() {{ local IFS=" "; echo "compopt $*" >&2; }}  # records what the function asks readline for (no readline here)
COMP_WORDS=({quoted}); COMP_CWORD={cword}; COMPREPLY=()
_kafkalog_completion kafkalog "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    result = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True, text=True,
                            env=env, cwd=cwd, timeout=60)
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line], result.stderr


@pytest.mark.skipif(not have("bash"), reason="bash is not installed")
def test_bash_completes_commands_and_options(shell_env: dict[str, str], tmp_path: Path) -> None:
    reply, _ = _bash_complete(["kafkalog", ""], shell_env, tmp_path)
    assert reply == sorted(COMMANDS)
    reply, _ = _bash_complete(["kafkalog", "completi"], shell_env, tmp_path)
    assert reply == ["completion"]
    reply, _ = _bash_complete(["kafkalog", "dump", "--deep"], shell_env, tmp_path)
    assert reply == ["--deep-iteration"]
    reply, _ = _bash_complete(["kafkalog", "completion", "z"], shell_env, tmp_path)
    assert reply == ["zsh"]


@pytest.mark.skipif(not have("bash"), reason="bash is not installed")
def test_bash_path_argument_asks_for_file_completion(shell_env: dict[str, str], tmp_path: Path) -> None:
    reply, compopts = _bash_complete(["kafkalog", "dump", "ord"], shell_env, tmp_path)
    assert reply == []
    assert "compopt -o default" in compopts


@pytest.mark.skipif(not have("bash"), reason="bash is not installed")
def test_bash_offers_file_names_interactively(shell_env: dict[str, str], tmp_path: Path) -> None:
    part = make_partition(tmp_path)
    sh = InteractiveShell(["bash", "--norc", "--noprofile", "-i"], {**shell_env, "PS1": "$ "}, tmp_path)
    try:
        sh.run_marked(f"source '{ROOT / 'completions' / FILES['bash']}'")
        assert sh.complete_line("kafkalog completi") == "kafkalog completion"
        assert sh.complete_line("kafkalog dump ord") == "kafkalog dump orders-0/"
        assert sh.complete_line(f"kafkalog dump {part.name}/{SEGMENT[:-2]}") == f"kafkalog dump {part.name}/{SEGMENT}"
    finally:
        sh.close()


# ---------------------------------------------------------------- zsh


@pytest.mark.skipif(not have("zsh"), reason="zsh is not installed (apt-get install -y zsh)")
def test_zsh_completes_commands_and_file_names(shell_env: dict[str, str], tmp_path: Path) -> None:
    part = make_partition(tmp_path)
    fpath_dir = tmp_path / "zfunc"
    fpath_dir.mkdir()
    (fpath_dir / "_kafkalog").write_text((ROOT / "completions" / FILES["zsh"]).read_text())
    env = {**shell_env, "PS1": "%# "}
    sh = InteractiveShell(["zsh", "-f", "-i"], env, tmp_path)
    try:
        # installed the documented way: the file in a directory of $fpath, then compinit (autoloads #compdef files)
        sh.run_marked(f"fpath=('{fpath_dir}' $fpath); autoload -U compinit; compinit -u -D")
        assert sh.complete_line("kafkalog completi") == "kafkalog completion"
        assert sh.complete_line("kafkalog completion f") == "kafkalog completion fish"
        assert sh.complete_line("kafkalog dump --deep") == "kafkalog dump --deep-iteration"
        # zsh adds the directory's "/" as an auto-removable suffix, dropped when the next key is not a path char
        assert sh.complete_line("kafkalog dump ord").rstrip("/") == "kafkalog dump orders-0"
        assert sh.complete_line(f"kafkalog dump {part.name}/{SEGMENT[:-2]}") == f"kafkalog dump {part.name}/{SEGMENT}"
    finally:
        sh.close()


# ---------------------------------------------------------------- fish


def _fish_complete(line: str, env: dict[str, str], cwd: Path) -> list[str]:
    script = ROOT / "completions" / FILES["fish"]
    result = subprocess.run(["fish", "--no-config", "-c", f"source '{script}'; complete -C {_fish_quote(line)}"],
                            capture_output=True, text=True, env=env, cwd=cwd, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", result.stderr  # a broken script shows up as fish parse errors here
    return [row.split("\t", 1)[0] for row in result.stdout.splitlines()]


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@pytest.mark.skipif(not have("fish"), reason="fish is not installed (apt-get install -y fish)")
def test_fish_completes_commands_options_and_files(shell_env: dict[str, str], tmp_path: Path) -> None:
    part = make_partition(tmp_path)
    assert _fish_complete("kafkalog ", shell_env, tmp_path) == sorted(COMMANDS)
    assert _fish_complete("kafkalog completi", shell_env, tmp_path) == ["completion"]
    assert _fish_complete("kafkalog dump --deep", shell_env, tmp_path) == ["--deep-iteration"]
    assert _fish_complete("kafkalog dump ord", shell_env, tmp_path) == ["orders-0/"]
    files = _fish_complete(f"kafkalog dump {part.name}/", shell_env, tmp_path)
    assert f"{part.name}/{SEGMENT}" in files
    assert sorted(files) == sorted(f"{part.name}/{p.name}" for p in part.iterdir())


@pytest.mark.skipif(not have("fish"), reason="fish is not installed (apt-get install -y fish)")
def test_fish_descriptions_shown(shell_env: dict[str, str], tmp_path: Path) -> None:
    script = ROOT / "completions" / FILES["fish"]
    result = subprocess.run(["fish", "--no-config", "-c", f"source '{script}'; complete -C 'kafkalog dum'"],
                            capture_output=True, text=True, env=shell_env, cwd=tmp_path, timeout=60)
    assert result.stdout.startswith("dump\t")


def test_completion_request_never_imports_codecs(shell_env: dict[str, str], tmp_path: Path) -> None:
    """A TAB press must stay fast: completion imports the command modules but no codec or rich."""
    code = ("import os, sys; os.environ.update(_KAFKALOG_COMPLETE='bash_complete', COMP_WORDS='kafkalog dump --', "
            "COMP_CWORD='2'); sys.argv=['kafkalog']\nfrom kafkalog_cli.cli.main import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in ('rich', 'zstandard', 'lz4', 'cramjam', 'crc32c') if m in sys.modules)\n"
            "sys.stderr.write('HEAVY=' + ','.join(heavy))")
    result = subprocess.run([os.environ.get("PYTHON", "python3"), "-c", code], capture_output=True, text=True,
                            cwd=ROOT, timeout=60)
    assert "plain,--deep-iteration" in result.stdout
    assert "HEAVY=" in result.stderr and result.stderr.rsplit("HEAVY=", 1)[1] == "", result.stderr
