"""Values verify-crc returns: problems and per-file reports (``to_dict()`` for JSON and the scan tables)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

ERROR, WARNING, INFO = "error", "warning", "info"
DEFAULT_MAX_PROBLEMS = 10_000


# ---------------------------------------------------------------------------------------------------- values
@dataclass
class Problem:
    """One finding. ``position``/``end`` are byte offsets in ``file``; ``severity`` info is not a problem."""

    file: str
    position: int
    end: int
    kind: str
    message: str
    severity: str = ERROR
    offset: int | None = None  # base offset of the batch concerned, when one is known
    last_good_offset: int | None = None
    first_good_offset: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if self.kind not in REGION_KINDS:
            d.pop("last_good_offset")
            d.pop("first_good_offset")
        return d


REGION_KINDS = frozenset(
    {"crc-mismatch", "bad-size", "size-too-large", "bad-magic", "truncated", "zero-filled", "zero-tail",
     "unreadable", "partial-entry"}
)


@dataclass
class FileReport:
    """Result for one file. ``problems`` holds errors and warnings (exit 1); ``notes`` holds info."""

    path: str
    kind: str
    size: int = 0
    bytes_checked: int = 0
    problems: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)
    dropped_problems: int = 0  # beyond max_problems: counted, not kept
    unreadable: bool = False
    seconds: float = 0.0

    def add(self, p: Problem, limit: int = DEFAULT_MAX_PROBLEMS) -> None:
        target = self.notes if p.severity == INFO else self.problems
        if len(target) >= limit:
            self.dropped_problems += 1
        else:
            target.append(p)

    @property
    def problem_count(self) -> int:
        return len(self.problems) + self.dropped_problems

    def to_dict(self) -> dict[str, Any]:
        d = {
            "path": self.path,
            "kind": self.kind,
            "size": self.size,
            "bytes_checked": self.bytes_checked,
            "problems": self.problem_count,
            "notes": len(self.notes),
            "unreadable": self.unreadable,
        }
        return d


@dataclass
class SegmentReport(FileReport):
    """A ``.log`` segment: what the walk found, for the cross-segment checks and ``kafkalog scan``."""

    base_offset: int | None = None
    batches: int = 0  # entries whose CRC verified
    records: int = 0  # sum of v2 recordsCount (+1 per legacy entry, or inner messages with deep)
    first_offset: int | None = None
    last_offset: int | None = None
    first_epoch: int | None = None
    last_epoch: int | None = None
    corrupt_bytes: int = 0
    regions: int = 0
    magics: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d.update(
            base_offset=self.base_offset,
            batches=self.batches,
            records=self.records,
            first_offset=self.first_offset,
            last_offset=self.last_offset,
            corrupt_bytes=self.corrupt_bytes,
            regions=self.regions,
        )
        return d


@dataclass
class VerifyResult:
    files: list[FileReport] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # cross-file problems (file reports hold their own)

    def all_problems(self) -> list[Problem]:
        out = [p for f in self.files for p in f.problems]
        return out + self.problems

    def all_notes(self) -> list[Problem]:
        return [p for f in self.files for p in f.notes]

    @property
    def unreadable(self) -> int:
        """Files unreadable as a whole (exit 2); unreadable byte ranges inside a file are problems (exit 1)."""
        return sum(1 for f in self.files if f.unreadable)

    @property
    def problem_count(self) -> int:
        return sum(f.problem_count for f in self.files) + len(self.problems)

    def exit_code(self) -> int:
        if self.unreadable:
            return 2
        return 1 if self.problem_count else 0


