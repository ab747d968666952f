"""The ``kafkalog`` command group.

Commands are registered by name in ``COMMANDS`` and imported only when used, so ``kafkalog --help`` and shell
completion stay fast (rich, codecs and pyspark are never imported for them).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING

import click

from kafkalog_cli import __version__

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

# name -> (module, attribute, one-line help). Add a command by adding a row.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "dump": ("kafkalog_cli.cli.dump", "dump", "Dump segments, indexes and snapshots like kafka-dump-log.sh."),
    "verify-crc": ("kafkalog_cli.cli.verify", "verify_crc", "Map corrupt byte ranges, lost and intact offsets after damage."),
    "rebuild-index": ("kafkalog_cli.cli.rebuild_index", "rebuild_index", "Rebuild .index/.timeindex files by the broker's recovery rule."),
    "seek-offset": ("kafkalog_cli.cli.seek", "seek_offset", "Find the batch (and record) holding an offset, via the indexes."),
    "seek-time": ("kafkalog_cli.cli.seek", "seek_time", "Find the first offset whose timestamp is >= a time (ListOffsets)."),
    "locate-group": ("kafkalog_cli.cli.internal_cmds", "locate_group", "Which __consumer_offsets partition holds a group."),
    "locate-txn": ("kafkalog_cli.cli.internal_cmds", "locate_txn", "Which __transaction_state partition holds a transactional id."),
    "transactions": ("kafkalog_cli.cli.internal_cmds", "transactions", "Find open (hanging) transactions in a partition."),
    "completion": ("kafkalog_cli.cli.completion", "completion", "Print the bash, zsh or fish completion script."),
    "scan": ("kafkalog_cli.cli.scan", "scan", "Scan log dirs into Parquet datasets (batches, problems, records) and report."),
    "compact": ("kafkalog_cli.cli.compact", "compact", "Compact a partition offline by the log cleaner's rules."),
    "recover": ("kafkalog_cli.cli.recover", "recover", "Show (or do offline) what the broker's loader does at restart."),
    "salvage": ("kafkalog_cli.cli.recover", "salvage", "Cut out only the corrupt ranges; keep every intact batch."),
    "explain-cleaner": ("kafkalog_cli.cli.explain", "explain_cleaner", "What the log cleaner would decide about a partition now, and why."),
    "explain-retention": ("kafkalog_cli.cli.explain", "explain_retention", "Which segments retention would delete at time T, and why."),
    "truncate-to-epoch": ("kafkalog_cli.cli.truncate", "truncate_to_epoch", "Truncate a partition to the end of a leader epoch."),
    "compare-replicas": ("kafkalog_cli.cli.replicas", "compare_replicas", "Find where replicas of a partition diverge, and what truncation loses."),
    "report": ("kafkalog_cli.cli.replicas", "report", "Reports over scan datasets: --replicas (divergence across brokers)."),
    "mcp": ("kafkalog_cli.cli.mcp_server", "mcp", "Serve the read-only commands to AI agents as MCP tools (stdio)."),
    "metadata": ("kafkalog_cli.cli.metadata", "metadata", "The KRaft cluster image at any point of __cluster_metadata."),
    "inventory": ("kafkalog_cli.cli.metadata", "inventory", "Check a broker's log dirs against the KRaft metadata."),
    "schemas": ("kafkalog_cli.cli.schemas", "schemas", "Rebuild the Schema Registry from _schemas segments; --audit, --export."),
    "group-history": ("kafkalog_cli.cli.groups", "group_history", "A consumer group's committed offsets through time; --at, --emit-reset."),
    "preflight": ("kafkalog_cli.cli.preflight", "preflight", "Before a restart or restore: will brokers and consumers come back right?"),
    "find-key": ("kafkalog_cli.cli.find_key", "find_key", "Find every copy of a record key, its state and what removes it; --prove-erased."),
    "audit-partitioning": ("kafkalog_cli.cli.find_key", "audit_partitioning", "Check keyed records are where their producer's partitioner puts them."),
    "export": ("kafkalog_cli.cli.export", "export", "Export records (offsets, timestamps, headers) to NDJSON, Parquet or a Kafka dir."),
    "replay": ("kafkalog_cli.cli.replay", "replay", "Produce exported records into a live topic (resumable), with an offset map."),
}

# Commands that plan or write repairs: they must never act on bytes the disk could not deliver (see strict_reads).
WRITING_COMMANDS = frozenset({"rebuild-index", "compact", "truncate-to-epoch", "recover", "salvage"})


class _Interrupted(BaseException):
    """Ctrl-C inside a command, carried past click (which would turn KeyboardInterrupt into "Aborted!", exit 1)."""


class _PipeClosed(BaseException):
    """The reader of stdout went away (``| head``), carried past click (which would exit 1, "problems found")."""


class LazyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        """Run the command; an interrupt or a closed pipe leaves as our own exception types so that ``main()``
        decides their exit codes (130 and 0) instead of click's standalone handler (1 for both)."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise _Interrupted() from None
        except click.Abort as exc:
            if isinstance(exc.__context__, KeyboardInterrupt | EOFError):
                raise _Interrupted() from None
            raise
        except BrokenPipeError:
            raise _PipeClosed() from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        row = COMMANDS.get(name)
        if row is None:
            return None
        module = importlib.import_module(row[0])
        if name in WRITING_COMMANDS:
            from kafkalog_cli.storage.segment import strict_reads

            strict_reads(True)
            ctx.call_on_close(lambda: strict_reads(False))  # one invocation only (tests run many in one process)
        return getattr(module, row[1])

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """Complete command names from the COMMANDS table, so a TAB press imports no command module (and one
        command whose module fails to import cannot break completion of the others)."""
        from click.shell_completion import CompletionItem

        items = [CompletionItem(name, help=COMMANDS[name][2]) for name in sorted(COMMANDS) if name.startswith(incomplete)]
        return items + click.Command.shell_complete(self, ctx, incomplete)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
    epilog="Exit codes: 0 clean, 1 problems found (a dry run: changes pending), 2 usage error or unreadable input, 130 interrupted.",
)
@click.version_option(__version__, "--version", prog_name="kafkalog", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="Show Python tracebacks for unexpected errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """kafkalog: dump, verify and repair Apache Kafka log directories without a JVM.

    \b
    Example:
      kafkalog dump --deep-iteration --print-data-log /var/lib/kafka/orders-0
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug or bool(os.environ.get("KAFKALOG_DEBUG"))


def hoist_debug(args: list[str]) -> list[str]:
    """``--debug`` is a global option, but operators add it where they are typing: after the command
    (``kafkalog dump --debug x``). Move such a ``--debug`` before the command, where click expects it (not after a
    ``--``, where it is an argument)."""
    cmd = next((i for i, a in enumerate(args) if a in COMMANDS), None)
    if cmd is None:
        return args
    end = args.index("--") if "--" in args[cmd:] else len(args)
    tail = [a for a in args[cmd + 1 : end] if a != "--debug"]
    if len(tail) == end - cmd - 1:
        return args
    return ["--debug", *args[:cmd], args[cmd], *tail, *args[end:]]


def main() -> None:
    args = hoist_debug(sys.argv[1:])
    debug = "--debug" in args or bool(os.environ.get("KAFKALOG_DEBUG"))
    if os.environ.get("_KAFKALOG_COMPLETE"):  # a shell's TAB request: answer in the format our scripts parse
        from kafkalog_cli.cli.completion import register_completion_classes

        register_completion_classes()
    try:
        try:
            cli.main(args=args, prog_name="kafkalog", standalone_mode=True)
        except SystemExit:
            sys.stdout.flush()  # here, not at exit: a pipe closed before the last write reaches the handler below
            raise
    except SystemExit:
        raise
    except (_PipeClosed, BrokenPipeError):
        _exit_pipe_closed()
    except (_Interrupted, KeyboardInterrupt):
        _exit_interrupted()
    except Exception as exc:  # the last line of defence: one readable line, never a traceback
        if debug:
            raise
        sys.stderr.write(f"kafkalog: error: internal error: {type(exc).__name__}: {exc}\n")
        sys.stderr.write("hint: re-run with --debug for the traceback, and please report it\n")
        sys.exit(2)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush of a buffer nobody reads cannot fail on exit."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _exit_pipe_closed() -> None:
    """A closed pipe (``| head``) is not an error of ours, nor a problem found: exit 0, silently."""
    _quiet_stdout()
    sys.exit(0)


def _exit_interrupted() -> None:
    """Ctrl-C: exit 130 (128 + SIGINT, the shell convention), never 1 ("problems found"). Output still buffered is
    dropped: flushing it could block forever on a pipe whose reader stopped reading."""
    from kafkalog_cli.cli import say_interrupted

    _quiet_stdout()
    say_interrupted()
    sys.exit(130)
