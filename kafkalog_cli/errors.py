"""Typed errors raised by the engine.

Every error carries where it happened (file, byte position), what was expected and what was found, so that the
CLI can print one clear line instead of a traceback. The engine never prints.
"""

from __future__ import annotations

from dataclasses import dataclass


class KafkalogError(Exception):
    """Base class of every error the engine raises on purpose.

    ``hint`` is the next step tied to the actual cause, when the raiser knows it (the CLI prints it after the
    error; a command's generic hint is only the fallback)."""

    hint: str | None = None

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        position: int | None = None,
        expected: str | None = None,
        found: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if hint is not None:
            self.hint = hint
        self.file = file
        self.position = position
        self.expected = expected
        self.found = found

    def located(self, file: str | None = None, base_position: int = 0) -> KafkalogError:
        """Attach a file and shift a position that was relative to a batch, returning self."""
        if file is not None and self.file is None:
            self.file = file
        if self.position is not None:
            self.position += base_position
        elif base_position:
            self.position = base_position
        return self

    def describe(self) -> str:
        """One readable line: file, position, message, expected/found."""
        parts = []
        if self.file is not None:
            name = self.file or "''"
            parts.append(name if self.position is None else f"{name} at byte {self.position}")
        elif self.position is not None:
            parts.append(f"at byte {self.position}")
        text = self.message
        if self.expected is not None or self.found is not None:
            text += f" (expected {self.expected or '?'}, found {self.found or '?'})"
        parts.append(text)
        return ": ".join(parts)

    def __str__(self) -> str:
        return self.describe()


class CorruptRecordError(KafkalogError):
    """A batch or record whose bytes do not follow the format (Kafka's CorruptRecordException)."""


class InvalidRecordError(KafkalogError):
    """A structurally invalid record inside a batch (Kafka's InvalidRecordException)."""


class CompressionError(KafkalogError):
    """A payload that cannot be decompressed, or whose codec id is unknown."""


class SizeLimitError(KafkalogError):
    """A declared or decompressed size above the configured cap: reported, never allocated."""


class UnreadableFileError(KafkalogError):
    """A path that cannot be opened or read (missing, a directory, permission denied)."""


def unreadable(exc: OSError, path: str, *, want: str = "file") -> UnreadableFileError:
    """The typed error for an OSError on ``path``, worded for an operator (``want``: "file" or "directory")."""
    if isinstance(exc, FileNotFoundError):
        return FileVanishedError(f"no such {want}", file=path)
    if isinstance(exc, IsADirectoryError):
        return UnreadableFileError("is a directory, expected a file", file=path)
    if isinstance(exc, NotADirectoryError):
        return UnreadableFileError("not a directory, expected a partition directory", file=path)
    if isinstance(exc, PermissionError):
        return UnreadableFileError("permission denied", file=path)
    return UnreadableFileError(f"cannot read: {exc.strerror or exc}", file=path)


def cannot_list(exc: OSError, path: str) -> UnreadableFileError:
    """The one error for a directory that exists but cannot be listed (``storage/paths.py``, every command):
    ``cannot list directory: permission denied``; a directory gone meanwhile stays ``unreadable``'s vanished one."""
    err = unreadable(exc, path, want="directory")
    if not isinstance(exc, FileNotFoundError):
        err.message = f"cannot list directory: {err.message}"
    return err


class CorruptIndexError(KafkalogError):
    """An index file that fails a sanity check."""


class CorruptSnapshotError(KafkalogError):
    """A producer-state snapshot that fails schema or CRC validation."""


class CheckpointError(KafkalogError):
    """A malformed checkpoint-format text file."""


class RepairRefused(KafkalogError):
    """A writing command that refuses to act (broker lock held, unsafe path, ...)."""


class WriteFailedError(KafkalogError):
    """Writing a repair's file failed (ENOSPC, EIO, ...): the half-written file was removed; names that file."""
class FileVanishedError(UnreadableFileError):
    """A file that was listed (or seen) a moment ago and is gone when opened: on a live broker, retention deletes
    segments all the time, so callers that listed the file report it as a ``vanished`` note, not an error."""


# kinds of ReadFinding; the first is a problem (exit 1), the other two are notes
UNREADABLE = "unreadable"
VANISHED = "vanished"
TRUNCATED_DURING_READ = "truncated-during-read"
PAGE = 4096


@dataclass(frozen=True)
class ReadFinding:
    """Something the disk did to a read, located: ``[start, end)`` bytes of ``file``.

    ``unreadable``: the bytes could not be read (EIO, or SIGBUS through a mapping); start and end are rounded out to
    4 KiB pages and clipped to the file size; the bytes were read as zeros. ``truncated-during-read``: the file
    shrank from ``end`` to ``start`` bytes while we read it. ``vanished``: the file was deleted after it was listed
    (or while it was read); ``start``/``end`` are 0. The last two are normal on a live broker and are notes.
    """

    kind: str
    file: str
    start: int
    end: int
    message: str

    @property
    def is_note(self) -> bool:
        return self.kind != UNREADABLE

    def describe(self) -> str:
        return f"{self.file}:{self.start}-{self.end}: {self.kind}: {self.message}"
