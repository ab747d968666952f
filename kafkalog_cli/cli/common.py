"""Helpers shared by the click commands: output streams, error lines, exit codes."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from kafkalog_cli.versions import Profile

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


def line_writers() -> tuple[Callable[[str], None], Callable[[str], None]]:
    """(stdout, stderr) line writers; undecodable text is replaced, never a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="replace")  # type: ignore[union-attr]
        except (AttributeError, ValueError):
            pass
    out_write = sys.stdout.write
    err_write = sys.stderr.write

    def out(line: str) -> None:
        out_write(line + "\n")

    def err(line: str) -> None:
        sys.stdout.flush()
        err_write(line + "\n")

    return out, err


class StdoutSink:
    """stdout for a command whose output is large (``dump``): lines are encoded once and copied into one reused 1 MiB
    buffer written with one ``write`` to the binary stream, and pre-encoded chunks (the compiled formatter's output)
    join the same buffer without a str round trip; nothing is allocated per write. Measured end to end, the per-line
    ``sys.stdout.write`` (a str concatenation, a TextIOWrapper encode, an 8 KiB buffer) cost about a third of a deep
    dump (bench/HISTORY.md, issue 20).

    ``err`` lines flush the buffer first, so stdout and stderr interleave as with ``line_writers``. ``flush`` must
    be called at the end (the command does it; an interrupt drops the buffer, as main() does with stdout's).
    """

    LIMIT = 1 << 20
    DIRECT = 64 << 10

    def __init__(self) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.reconfigure(errors="replace")  # type: ignore[union-attr]
            except (AttributeError, ValueError):
                pass
        sys.stdout.flush()
        self._raw = getattr(sys.stdout, "buffer", None)
        self._encoding = sys.stdout.encoding or "utf-8"
        self._err_write = sys.stderr.write
        try:
            tty = sys.stdout.isatty()
        except (AttributeError, ValueError):
            tty = False
        self._cap = 1 if tty else self.LIMIT  # a terminal sees each line as it comes
        self._buf = bytearray(max(self._cap, 1 << 12))
        self._view = memoryview(self._buf)
        self._n = 0

    @property
    def utf8(self) -> bool:
        """Whether stdout takes UTF-8 bytes as they are (the compiled formatter's output)."""
        return self._raw is not None and self._encoding.lower().replace("-", "") == "utf8"

    def out(self, line: str) -> None:
        self.out_bytes((line + "\n").encode(self._encoding, "replace"))

    def out_bytes(self, chunk: bytes | bytearray) -> None:
        n = self._n
        k = len(chunk)
        if n + k > self._cap or k >= self.DIRECT:
            if n:
                self.flush()
                n = 0
            if k >= self._cap or k >= self.DIRECT:
                self._write(chunk)  # a big chunk goes out as it is: copying it would cost more than the syscall
                return
        self._view[n:n + k] = chunk
        self._n = n + k

    def err(self, line: str) -> None:
        self.flush()
        self._err_write(line + "\n")

    def _write(self, data: bytes | bytearray | memoryview) -> None:
        if self._raw is None:  # a text-only stdout (some test harnesses): decode back
            sys.stdout.write(bytes(data).decode(self._encoding, "replace"))
            sys.stdout.flush()
        else:
            self._raw.write(data)
            self._raw.flush()

    def flush(self) -> None:
        n, self._n = self._n, 0  # reset first: a failed write (closed pipe) is not retried
        if n:
            self._write(self._view[:n])
        else:
            sys.stdout.flush()


def kafka_version_help(what: str) -> str:
    """The ``--kafka-version`` help: every accepted release, listed (imports nothing heavy)."""
    from kafkalog_cli.versions import KNOWN_VERSIONS

    return (f"{what} of this Kafka release: {', '.join(KNOWN_VERSIONS)} (a patch release or a suffix, 3.9.1 or "
            f"3.9.0-rc3, acts as its minor release; a newer release acts as {KNOWN_VERSIONS[-1]}, with a warning).")


def kafka_version_option(what: str) -> Callable[[Any], Any]:
    """The one ``--kafka-version`` option of every command that models a release (dump, seek, recover, salvage):
    no click default, so that :func:`assumed_kafka_version` applies one precedence everywhere."""
    from kafkalog_cli.versions import DEFAULT_VERSION, ENV_VAR

    return click.option("--kafka-version", default=None, metavar="V", shell_complete=complete_kafka_version,
                        help=f"{kafka_version_help(what)} Default: ${ENV_VAR} when set, else {DEFAULT_VERSION}.")


def assumed_kafka_version(flag: str | None, *, echo: bool = True, paths: list[str] | None = None) -> str:
    """The release a command assumes: ``--kafka-version`` > ``$KAFKALOG_KAFKA_VERSION`` > the broker's files (the
    metadata.version of the KRaft metadata log beside ``paths``, for the commands that model the broker's software:
    recover, salvage) > the default. When the environment or the files chose it, one note on stderr says so
    (``echo``), so an answer never silently depends on the host."""
    from kafkalog_cli.versions import default_version

    if flag:
        return flag
    version, source = default_version()
    if source == "default" and paths:
        from kafkalog_cli.internal_topics.version_hint import metadata_version_hint

        hint = metadata_version_hint(paths)
        if hint is not None and hint.release is not None:
            if echo:
                click.echo(f"kafkalog: note: assuming Kafka {hint.release} (from the {hint.describe()}; the brokers "
                           "run that release or a newer one: --kafka-version says which)", err=True)
            return hint.release
    if echo and source != "default":
        click.echo(f"kafkalog: note: assuming Kafka {version} (from ${source})", err=True)
    return version


def complete_kafka_version(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """TAB candidates for ``--kafka-version``: the known releases, newest first."""
    from click.shell_completion import CompletionItem

    from kafkalog_cli.versions import KNOWN_VERSIONS

    return [CompletionItem(v) for v in reversed(KNOWN_VERSIONS) if v.startswith(incomplete)]


def complete_decoder_class(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """TAB candidates for ``--key-decoder-class``/``--value-decoder-class``: short and fully qualified names."""
    from click.shell_completion import CompletionItem

    from kafkalog_cli.render.parsers import DECODER_PACKAGES, DECODERS

    names = [pkg + n for pkg in DECODER_PACKAGES for n in DECODERS]
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def resolve_profile(kafka_version: str) -> Profile:
    """The version profile for ``--kafka-version``; a warning on stderr for a release newer than known; a usage
    error (exit 2) for an unparsable or too old one."""
    from kafkalog_cli.versions import newer_than_known, profile_for

    try:
        profile = profile_for(kafka_version)
        warning = newer_than_known(kafka_version)
    except ValueError as exc:
        fail(str(exc), "give one of the releases listed by --help, e.g. --kafka-version 3.9")
    if warning:
        click.echo(f"kafkalog: warning: {warning}", err=True)
    return profile


def install_hint(extra: str, what: str, needs: str = "") -> str:
    """Where to get an optional part. kafkalog is not published on PyPI, so never ``pip install kafkalog``: from a
    source checkout, ``pip install '.[extra]'``; in the single-file binary (``sys.frozen``) the part is simply not
    there, and the binary cannot install anything into itself."""
    more = f"; it also needs {needs}" if needs else ""
    if getattr(sys, "frozen", False):
        return (f"{what} is not in the single-file binary; run it from a source checkout of kafkalog instead: "
                f"pip install '.[{extra}]' there{more}")
    return f"in your kafkalog source checkout: pip install '.[{extra}]' (kafkalog is not on PyPI){more}"


def fail(message: str, hint: str | None = None, code: int = EXIT_USAGE) -> None:
    """Print one error line (and a hint) on stderr and exit."""
    click.echo(f"kafkalog: error: {message}", err=True)
    if hint:
        click.echo(f"hint: {hint}", err=True)
    sys.exit(code)


class ByteProgress:
    """A rich progress bar with bytes/s on stderr (transient); yields (advance, set_total) callbacks.

    Callers create it only when stderr is a terminal, so pipes and log files never see it.
    """

    def __init__(self, description: str) -> None:
        self.description = description

    def __enter__(self) -> tuple[Any, Any]:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

        self.p = Progress(
            "[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(),
            TimeRemainingColumn(), console=Console(file=sys.stderr), transient=True,
        )
        self._tty = _no_echoctl()
        self.p.__enter__()
        self.task = self.p.add_task(self.description, total=None)

        def advance(n: int) -> None:
            self.p.advance(self.task, n)

        def set_total(total: int) -> None:
            self.p.update(self.task, total=total)

        return advance, set_total

    def __exit__(self, *exc: object) -> None:
        try:
            self.p.__exit__(*exc)  # type: ignore[arg-type]
        finally:
            _restore_tty(self._tty)


def _no_echoctl() -> tuple[int, list[Any]] | None:
    """While the bar is live, the terminal must not echo Ctrl-C as '^C' into it (a stray '^' stayed behind the
    cleared bar, issue 27): clear ECHOCTL on the controlling terminal; returns what to restore."""
    try:
        import termios

        fd = sys.stdin.fileno()
        if not os.isatty(fd):
            return None
        old = termios.tcgetattr(fd)
        new = list(old)
        new[3] &= ~termios.ECHOCTL
        termios.tcsetattr(fd, termios.TCSANOW, new)
        return fd, old
    except (ImportError, OSError, ValueError, AttributeError):
        return None


def _restore_tty(saved: tuple[int, list[Any]] | None) -> None:
    if saved is None:
        return
    import termios

    try:
        termios.tcsetattr(saved[0], termios.TCSANOW, saved[1])
    except (OSError, termios.error):
        pass


def color_option(f):  # noqa: ANN001, ANN201
    """``--color=auto|always|never`` for a command with a text report (``color_enabled`` decides)."""
    return click.option("--color", "color", type=click.Choice(["auto", "always", "never"]), default="auto",
                        show_default=True,
                        help="Colour severity and verdicts: auto = on a terminal unless NO_COLOR is set.")(f)


def color_enabled(choice: str, stream=None) -> bool:  # noqa: ANN001
    """Whether to colour ``stream`` (stdout): ``always``/``never`` as said; ``auto`` on a terminal, not with a non-empty
    ``NO_COLOR`` or ``TERM=dumb``."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    stream = stream if stream is not None else sys.stdout
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def recover_first_option(verb: str, who: str, done: str):  # noqa: ANN201
    """``--recover-first/--no-recover-first`` of compact and truncate-to-epoch (ops/load_first.py): on by default,
    as a broker always loads (recovers) a partition before its cleaner or truncation runs on it."""
    return click.option("--recover-first/--no-recover-first", default=True, show_default=True,
                        help="Apply the broker's start-up recovery first when the partition needs it (left by a crash: "
                             "no .kafka_cleanshutdown; or .cleaned/.swap leftovers or a missing offset index after a "
                             "clean shutdown): what 'kafkalog recover --execute' does, then "
                             f"{verb}, as Kafka's own {who} runs on the loaded log; the dry run plans on a copy "
                             "with that recovery applied (under $TMPDIR, up to KAFKALOG_DRY_RUN_COPY_MAX_BYTES, 2 GiB). "
                             "A recovery that would drop intact records is refused. --no-recover-first: the files are "
                             f"{done} as they are.")

