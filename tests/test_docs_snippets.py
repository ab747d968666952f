"""Every ``kafkalog`` command and DuckDB query in the README and docs/ runs as written (issue 29), against the
bundled sample: the documented paths are mapped onto copies of the fixtures (a log dir with ``orders-0`` and
``payments-0``, three brokers' log dirs, their scan datasets), then each command is run from the installed package.
A command passes when click takes its options (no usage error), it exits 0 or 1, and no traceback is printed; a
query passes when DuckDB runs it on the datasets the scan wrote. Placeholders (synopsis lines), Spark and s3://
commands are left out: they need a cluster or an object store.

Also: no user-facing doc cites errata numbers, spec sections, source paths or "this round".
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# the user-facing pages that must cite no internals: every page but the contributor ones
CONTRIBUTOR_DOCS = {"hacking", "testing", "design", "licences"}
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs" / "guides").glob("*.md")),
             *sorted(d for d in (ROOT / "docs").glob("*.md") if d.stem not in CONTRIBUTOR_DOCS)]


def _snippets() -> list[tuple[str, str, str]]:
    """(doc, kind, text): kind "cli" for one kafkalog command line, "sql" for a duckdb -c query."""
    out = []
    for doc in DOCS:
        text = doc.read_text()
        name = str(doc.relative_to(ROOT))
        for m in re.finditer(r"```(\w*)\n(.*?)```", text, re.S):
            block = m.group(2)
            for q in re.finditer(r'duckdb -c "(.*?)"', block, re.S):
                out.append((name, "sql", q.group(1)))
            for line in block.replace("\\\n", " ").split("\n"):
                line = line.strip().removeprefix("$ ")
                if line.startswith("kafkalog "):
                    out.append((name, "cli", line))
        for m in re.finditer(r"^\| \[`[\w-]+`\]\([^)]*\) \| `(kafkalog [^`]+)` \|", text, re.M):
            out.append((name, "cli", m.group(1)))
    return out


SNIPPETS = _snippets()
SKIP = re.compile(r"\[--|\.\.\.|--engine spark|s3://|PATH|\bDIR\b|FILE")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("docs")
    logs = tmp / "var-lib-kafka"
    shutil.copytree(ROOT / "fixtures" / "partition" / "orders-0", logs / "orders-0")
    for p in ("payments-0", "payments-1"):
        shutil.copytree(ROOT / "fixtures" / "sample-logdir" / p, logs / p)
    (logs / "__consumer_offsets-12").mkdir()
    for name in ("__consumer_offsets-5", "connect-offsets-0"):  # group-history's sample (orders-app, csv-source)
        shutil.copytree(ROOT / "fixtures" / "groups" / name, logs / name)
    (logs / "events.cfg").write_text("retention.ms=604800000\ncleanup.policy=delete\n")
    fleet = tmp / "mnt"
    for b in (1, 2, 3):
        ld = fleet / f"b{b}" / "kafka-logs"
        shutil.copytree(ROOT / "fixtures" / "partition" / "orders-0", ld / "orders-0")
        (ld / "meta.properties").write_text(f"version=1\nnode.id={b}\ncluster.id=c\n")
    # the Schema Registry's topic beside the data, a KRaft metadata dir, a combined node and a broker's two JBOD dirs
    shutil.copytree(ROOT / "fixtures" / "registry" / "_schemas-0", logs / "_schemas-0")
    meta = ROOT / "fixtures" / "kraft" / "__cluster_metadata-0"
    shutil.copytree(meta, tmp / "meta" / "__cluster_metadata-0")
    shutil.copytree(ROOT / "fixtures" / "sample-logdir", tmp / "combined")
    shutil.copytree(meta, tmp / "combined" / "__cluster_metadata-0")
    for i, p in ((1, "payments-0"), (2, "payments-1")):
        shutil.copytree(ROOT / "fixtures" / "sample-logdir" / p, tmp / f"data-kafka-{i}" / p)
    scan = tmp / "srv-scan"
    for b in (1, 2, 3):
        subprocess.run([sys.executable, "-m", "kafkalog_cli", "scan", "--records", "--out", str(scan / f"b{b}"),
                        str(fleet / f"b{b}" / "kafka-logs")], check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "kafkalog_cli", "scan", "--records", "--out", str(scan),
                    str(logs)], check=True, capture_output=True)
    return {"tmp": tmp, "logs": logs, "fleet": fleet, "scan": scan}


def _map(text: str, w: dict[str, Path]) -> str:
    logs, fleet, scan = str(w["logs"]), str(w["fleet"]), str(w["scan"])
    pairs = [
        ("/var/lib/kafka/orders-0/00000000000000368769.log", f"{logs}/orders-0/00000000000000000000.log"),
        ("00000000000000000000.index,00000000000000000000.timeindex",
         f"{logs}/orders-0/00000000000000000000.index,{logs}/orders-0/00000000000000000000.timeindex"),
        ("/var/lib/kafka/meta", str(w["tmp"] / "meta")), ("ctrl1/meta", str(w["tmp"] / "meta")),
        ("/var/lib/kafka/combined", str(w["tmp"] / "combined")), ("/data/kafka-1", str(w["tmp"] / "data-kafka-1")),
        ("/data/kafka-2", str(w["tmp"] / "data-kafka-2")), ("/tmp/bundle", str(w["tmp"] / "bundle")),
        ("/mnt/broker2/kafka", f"{fleet}/b2/kafka-logs"), ("/mnt/registry-logs", logs),
        ("/var/lib/kafka", logs), ("/etc/bash_completion.d/kafkalog", str(w["tmp"] / "completion")),
        ("'/mnt/brokers/*/kafka-logs'", f"'{fleet}/*/kafka-logs'"), ("/mnt/b*", f"{fleet}/b*"), ("/mnt/b", f"{fleet}/b"),
        ("/srv/scan", scan), ("/tmp/scan", scan), ("OUT/", f"{scan}/"), ("/srv/divergence", str(w["tmp"] / "div")),
        ("/srv/kafkalog-backups", str(w["tmp"] / "backups")), ("/tmp/rescue", str(w["tmp"] / "rescue")),
        (" b1/orders-0 b2/orders-0 b3/orders-0", f" {fleet}/b1/kafka-logs/orders-0 {fleet}/b2/kafka-logs/orders-0 "
                                                f"{fleet}/b3/kafka-logs/orders-0"),
    ]
    fl = f"{fleet}/b{{}}/kafka-logs"
    pairs += [("/data/events-0", f"{logs}/orders-0"), ("/data/users-0", f"{logs}/orders-0"),
              ("/data/broker1", logs), ("fixtures/sample-logdir", str(ROOT / "fixtures" / "sample-logdir")),
              ("4711", "500"),  # the docs' producer id -> the sample's transactional one
              *((f"broker{b}/data", fl.format(b)) for b in (1, 2, 3))]
    table = dict(pairs)
    # one pass, longest first: a replacement is never replaced again (the temporary paths hold "/mnt/b" too)
    pattern = re.compile("|".join(re.escape(a) for a in sorted(table, key=len, reverse=True)))
    return pattern.sub(lambda m: table[m.group(0)], text)


# refusals that come from the sample's data, not from the command as written (checked by their words)
DATA_REFUSALS = {
    "truncate-to-epoch": "has no end offset for epoch 7",  # the sample's leader epochs are 0 and 2
}

CLI = [s for s in SNIPPETS if s[1] == "cli" and not SKIP.search(s[2])]
SQL = [s for s in SNIPPETS if s[1] == "sql"]


def test_the_docs_have_snippets() -> None:
    assert len(CLI) >= 30 and len(SQL) >= 2


@pytest.mark.parametrize("doc, line", [(d, t) for d, _k, t in CLI], ids=[f"{d}:{t[:40]}" for d, _k, t in CLI])
def test_documented_command_runs(world: dict[str, Path], doc: str, line: str) -> None:
    mapped = _map(line, world)
    tokens = shlex.split(mapped, comments=True)
    for i, t in enumerate(tokens):
        if t in ("|", ">", ">>") or t.startswith(("|", ">")):
            tokens = tokens[:i]
            break
    import glob

    argv = [a for t in tokens[1:] for a in ((sorted(glob.glob(t)) or [t]) if "*" in t else [t])]  # as the shell does
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", *argv], capture_output=True, text=True,
                       cwd=world["logs"], timeout=120)
    assert "Traceback" not in r.stderr, r.stderr
    assert "Usage:" not in r.stderr and "No such option" not in r.stderr, f"{doc}: {line}\n{r.stderr}"
    refusal = DATA_REFUSALS.get(argv[0]) if argv else None
    if r.returncode == 2 and refusal and refusal in r.stderr:
        return
    assert r.returncode in (0, 1), f"{doc}: {line} -> {mapped}\nexit {r.returncode}\n{r.stderr}"


@pytest.mark.parametrize("doc, sql", [(d, t) for d, _k, t in SQL], ids=[f"{d}:{i}" for i, (d, _k, _t) in enumerate(SQL)])
def test_documented_query_runs(world: dict[str, Path], doc: str, sql: str) -> None:
    duckdb = pytest.importorskip("duckdb")
    rows = duckdb.sql(_map(sql, world)).fetchall()
    assert rows, f"{doc}: the query returned nothing on the sample:\n{sql}"


CITATION = re.compile(r"errata[- ]?[A-Z]?\d|\bE\d{1,2}\b|§\s?\d|spec (section|§)|this round|\b(kafkalog_cli|tests|scripts)/"
                      r"[\w/]+\.py|\bissue \d+"
                      # a Kafka source line (name the class or method instead) or one of our own modules
                      r"|\b[A-Z]\w*\.(java|scala):\d|`(kafkalog_cli/)?(ops|storage|broker|format|render|scan|cli|"
                      r"internal_topics|accel)/[\w/]*\.(py|c)\b", re.I)


@pytest.mark.parametrize("doc", USER_DOCS, ids=[str(d.relative_to(ROOT)) for d in USER_DOCS])
def test_user_docs_cite_no_internals(doc: Path) -> None:
    bad = [ln for ln in doc.read_text().splitlines() if CITATION.search(ln)]
    assert not bad, "\n".join(bad[:10])
