"""``kafkalog completion SHELL``: print the shell completion script.

The script is generated in-process from the live command tree with click's own machinery (the same text as
``_KAFKALOG_COMPLETE=bash_source kafkalog``), so it never drifts from the commands that exist. The scripts only call
back into ``kafkalog`` at TAB time; command names and options are never hard-coded in them.
"""

from __future__ import annotations

import click
from click.shell_completion import (
    CompletionItem,
    FishComplete,
    ZshComplete,
    add_completion_class,
    get_completion_class,
)

SHELLS = ("bash", "zsh", "fish")
PROG_NAME = "kafkalog"
COMPLETE_VAR = "_KAFKALOG_COMPLETE"

# click 8.4.0/8.4.1 generate a fish script that fish cannot parse (pallets/click#3502: an unquoted newline inside
# `string split`), and the fish script changed again in 8.4.2. Our own fish script + matching response format keep
# fish completion working, and the checked-in completions/kafkalog.fish identical, whichever click is installed.
_FISH_SOURCE = """\
function %(complete_func)s;
    set -l response (env %(complete_var)s=fish_complete COMP_WORDS=(commandline -cp) COMP_CWORD=(commandline -t) %(prog_name)s);

    for completion in $response;
        set -l metadata (string split -m 1 "," -- $completion);

        if test "$metadata[1]" = "dir";
            __fish_complete_directories $metadata[2];
        else if test "$metadata[1]" = "file";
            __fish_complete_path $metadata[2];
        else if test "$metadata[1]" = "plain";
            echo $metadata[2];
        end;
    end;
end;

complete --no-files --command %(prog_name)s --arguments "(%(complete_func)s)";
"""


class KafkalogFishComplete(FishComplete):
    """Fish completion with a script and a response format that do not depend on the installed click version.

    Each response line is ``type,value`` or ``type,value<TAB>help``; the script splits on the first comma only (a
    file name may contain commas) and echoes ``value<TAB>help``, which fish shows as a described candidate.
    """

    source_template = _FISH_SOURCE

    def format_completion(self, item: CompletionItem) -> str:
        value = item.value.replace("\n", " ")
        if item.help:
            help_ = " ".join(item.help.split())  # fish reads one candidate per line: no newlines, no tabs
            return f"{item.type},{value}\t{help_}"
        return f"{item.type},{value}"


class KafkalogZshComplete(ZshComplete):
    """Zsh completion whose function is named ``_kafkalog``, like the file it is installed as.

    Installed the zsh way (``_kafkalog`` in a directory of ``$fpath``, autoloaded by compinit), click's script only
    completes on every other TAB: the file body becomes the autoloaded function ``_kafkalog``, whose first run
    defines ``_<prog>_completion`` and completes, but whose second run only re-registers it with compdef. When the
    inner function has the file's name, the first run replaces ``_kafkalog`` by itself and every TAB completes.
    ``source``/``eval`` of the script keeps working (compdef registers the same function).
    """

    @property
    def func_name(self) -> str:
        return "_" + self.prog_name.replace("-", "_")


def register_completion_classes() -> None:
    """Use our fish and zsh classes for the scripts and for answering TAB requests.

    ``main()`` calls this only when ``_KAFKALOG_COMPLETE`` is set, so ordinary runs pay nothing for it.
    """
    add_completion_class(KafkalogFishComplete, "fish")
    add_completion_class(KafkalogZshComplete, "zsh")


def completion_source(shell: str, cli: click.Command, prog_name: str = PROG_NAME) -> str:
    """The completion script for ``shell`` (bash, zsh or fish), ending in exactly one newline.

    Shared with ``scripts/gen_completions.py`` and the tests so the checked-in files and the command agree.
    """
    register_completion_classes()
    comp_cls = get_completion_class(shell)
    if comp_cls is None:  # pragma: no cover - SHELLS only lists shells click knows
        raise ValueError(f"unsupported shell: {shell}")
    source = comp_cls(cli, {}, prog_name, COMPLETE_VAR).source()
    return source.rstrip("\n") + "\n"


@click.command(
    "completion",
    epilog="""\b
Examples:
  kafkalog completion bash > ~/.local/share/bash-completion/completions/kafkalog
  kafkalog completion zsh > "${fpath[1]}/_kafkalog"      # then: autoload -U compinit && compinit
  kafkalog completion fish > ~/.config/fish/completions/kafkalog.fish
  eval "$(kafkalog completion bash)"                     # current shell only

Exit codes: 0 script printed, 2 unknown shell.""",
)
@click.argument("shell", type=click.Choice(SHELLS), metavar="bash|zsh|fish")
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script for SHELL.

    Completion covers commands, options, choices and file/directory arguments; it runs kafkalog at each TAB
    (a fast path that imports no codecs), so kafkalog must be on PATH."""
    root = ctx.find_root()
    click.echo(completion_source(shell, root.command, root.info_name or PROG_NAME), nl=False)
