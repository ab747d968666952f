"""The words of ``kafkalog scan``'s input check (scan/inputs.py): notes and errors on stderr, each naming the
cause found and the next step for that cause."""

from __future__ import annotations

from kafkalog_cli.scan.inputs import InputCheck

GIVE = "give a log directory, a partition directory (<topic>-<partition>) or a .log file"

_CAUSES = {
    "missing": ("no such file or directory", "check the path (a typo, or another host's mount?); " + GIVE),
    "no-match": ("the pattern matched no file", "check the pattern, or quote it so that kafkalog expands it: "
                                                "kafkalog scan '/mnt/brokers/*/kafka-logs' ..."),
    "no-segments": ("no segment file (<20 digits>.log) in it or below it",
                    "is it a Kafka log directory? 'ls' it, or give the log.dirs of the broker's server.properties"),
    "unreadable": ("cannot list this directory", "check its permissions and the disk (dmesg); run kafkalog as a user "
                                                 "that can read the log dirs"),
    "remote": ("no segment object under this URI", "check the bucket and prefix, the AWS_* credentials and "
                                                   "--endpoint-url"),
}


def refused_lines(chk: InputCheck) -> tuple[str, str] | None:
    """(message, hint) for a named file that is not a segment, or None."""
    if chk.refused is None:
        return None
    path, kind = chk.refused
    what = {"nodot": "a name without a dot", "unknown": "not a Kafka file name"}.get(kind, f"a {kind} file")
    return f"{path}: not a segment file (scan reads .log segments; this is {what})", GIVE


def note_lines(chk: InputCheck) -> list[str]:
    """Stray names and empty partitions (notes), then every unmatched argument (error + hint)."""
    lines = [f"kafkalog: note: {s.path}: not a segment name: {s.fate}" for s in chk.strays]
    lines += [f"kafkalog: note: {a}: no segment in this partition directory: an empty log (the broker creates "
              "its first segment when it loads the partition)" for a in chk.empty]
    for u in chk.unmatched:
        what, hint = _CAUSES[u.cause]
        if u.cause == "unreadable" and u.detail:
            what = u.detail  # "cannot list directory: permission denied", as every other command says
        lines += [f"kafkalog: error: {u.arg}: {what}", f"hint: {hint}"]
    return lines
