"""The fleet report on a screen (issue 29): readable in tmux at 80x50, parseable in a pipe, every finding naming its
broker, colour on a terminal only (``--color``, ``NO_COLOR``). tmux tests skip when tmux is absent (.ci/run
installs it)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_output_ux import _in_pty

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _fleet(tmp: Path) -> tuple[Path, Path]:
    """Two brokers' log dirs (meta.properties node.id 1 and 2), one with a corrupt partition; long topic names."""
    dirs = []
    for broker, src in ((1, "sample-logdir/payments-0"), (2, "corrupt/bad-0")):
        logdir = tmp / f"broker{broker}" / "kafka-logs"
        logdir.mkdir(parents=True)
        (logdir / "meta.properties").write_text(f"#\nversion=1\nnode.id={broker}\ncluster.id=abc\n")
        for name in ("payments.settlements.eu-west-0", "payments.settlements.eu-west-1"):
            shutil.copytree(ROOT / "fixtures" / src, logdir / name)
        dirs.append(logdir)
    return dirs[0], dirs[1]


@pytest.fixture(scope="module")
def dataset() -> Iterator[Path]:
    tmp = Path(tempfile.mkdtemp(prefix="kl", dir="/tmp"))  # a short path, as /var/lib/kafka: the report's
    b1, b2 = _fleet(tmp)  # lines hold the log dir path, which is never cut
    out = tmp / "scan"
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "scan", str(b1), str(b2), "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr  # the corrupt partitions
    yield out
    shutil.rmtree(tmp, ignore_errors=True)


def _tmux_screen(cmd: list[str], tmp: Path) -> str:
    """Run ``cmd`` in a detached tmux session of 80x50 and return the screen's lines, each wrapped line joined
    (capture-pane -J), so a line longer than 80 columns shows as one long line."""
    sock = str(tmp / "tmux.sock")
    done = tmp / "done"
    script = " ".join(f"'{c}'" for c in cmd) + f" > /dev/tty; touch '{done}'; sleep 30"
    subprocess.run(["tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "50",
                    "env", "TERM=xterm", "sh", "-c", script], check=True)
    try:
        for _ in range(300):
            if done.exists():
                break
            time.sleep(0.1)
        assert done.exists(), "the command did not finish in tmux"
        return subprocess.run(["tmux", "-S", sock, "capture-pane", "-p", "-J", "-S", "-", "-E", "-"],
                              capture_output=True, text=True, check=True).stdout
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")
def test_report_fits_80_columns_in_tmux(dataset: Path, tmp_path: Path) -> None:
    screen = _tmux_screen([sys.executable, "-m", "kafkalog_cli", "report", str(dataset)], tmp_path)
    lines = [ANSI.sub("", ln).rstrip() for ln in screen.splitlines() if ln.strip()]
    assert any("payments.settlements.eu-west-0" in ln for ln in lines), screen
    too_long = [ln for ln in lines if len(ln) > 80]
    assert not too_long, "\n".join(too_long)
    # one line per partition: its name, segments, batches, offsets, size, verdict
    rows = [ln for ln in lines if ln.startswith("  payments.settlements")]
    assert len(rows) == 4 and sum(ln.endswith(" ok") for ln in rows) == 2
    assert any(ln.startswith("broker 1 ") for ln in lines) and any(ln.startswith("broker 2 ") for ln in lines)


def test_piped_report_is_parseable_and_names_brokers(dataset: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "report", str(dataset)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "\x1b[" not in r.stdout  # never colour in a pipe by default
    lines = r.stdout.splitlines()
    rows = [ln.split() for ln in lines if ln.startswith("  payments.settlements")]
    assert len(rows) == 4 and all(len(row) == 6 for row in rows)  # name segments batches offsets size verdict
    assert max(len(ln) for ln in lines if ln.startswith("  payments.settlements")) <= 80
    # every listed finding is under the line of its broker and log dir
    start = lines.index("problems:")
    broker = partition = None
    findings = 0
    for ln in lines[start + 1:]:
        if not ln.strip():
            break
        if ln.startswith("  broker "):
            broker = ln
            assert re.match(r"  broker 2 \S+/broker2/kafka-logs$", ln), ln
        elif ln.startswith("    payments"):
            partition = ln
        else:
            assert broker is not None and partition is not None and ln.startswith("      0000"), ln
            findings += 1
    assert findings >= 4


@pytest.mark.parametrize("args, env, coloured", [
    ([], {}, True),
    ([], {"NO_COLOR": "1"}, False),
    (["--color=never"], {}, False),
    (["--color=always"], {"NO_COLOR": "1"}, True),
])
def test_colour_on_a_terminal(dataset: Path, args: list[str], env: dict[str, str], coloured: bool) -> None:
    env = {"TERM": "xterm", **env}
    if "NO_COLOR" not in env:
        env["NO_COLOR"] = ""
    text = _in_pty(["report", *args, str(dataset)], 80, env)
    assert ("\x1b[31m" in text) == coloured, text[:2000]
    assert "broker 2 " in ANSI.sub("", text)


def test_color_always_in_a_pipe(dataset: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "report", "--color=always", str(dataset)],
                       capture_output=True, text=True)
    assert "\x1b[31m" in r.stdout and "\x1b[32mok\x1b[0m" in r.stdout
