"""Typed errors and the import policy.

Every error a user can cause names the file, the item and the rule that was broken, and says what
to do. Importers take an :class:`ImportPolicy`: fail on the first bad item, or skip it and record it
in a :class:`SkipReport` that is written next to the output. Nothing is dropped silently.

Only error types and the skip bookkeeping live here; validation rules live with the code that owns
the data they check.
"""

from __future__ import annotations

import enum
import errno
from dataclasses import dataclass, field
from pathlib import Path
from typing import NotRequired, TypedDict


class SkipRecord(TypedDict):
    """One skipped item in a skip report: the error's type, file, item and message (a CAFE candidate
    left out of the export adds its id and round; a rejected prompt pair, the rule and the pair)."""

    error: str
    path: str | None
    item: str | None
    message: str
    id: NotRequired[int]
    round: NotRequired[str]
    rule: NotRequired[str]
    q_pos: NotRequired[str]
    q_neg: NotRequired[str]


class SkipReportJson(TypedDict):
    """``skipped.json``: how many items were skipped, per error type, and each of them."""

    count: int
    by_error: dict[str, int]
    items: list[SkipRecord]


class SegbenchError(Exception):
    """Base class of every error segbench raises on purpose.

    Args:
        message: what is wrong, in one sentence.
        path: the file the problem was found in, if any.
        item: the item inside that file (image id, annotation id, category, ...), if any.
        hint: what the user can do about it.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        item: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.item = item
        self.hint = hint
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = ": ".join(part for part in (self.path, self.item) if part)
        text = f"{where}: {self.message}" if where else self.message
        return f"{text}\n  fix: {self.hint}" if self.hint else text

    def as_record(self) -> SkipRecord:
        """The error as a JSON-ready record (used by skip reports)."""
        return {
            "error": type(self).__name__,
            "path": self.path,
            "item": self.item,
            "message": self.message,
        }


class InputError(SegbenchError):
    """An input file or directory is missing, unreadable or malformed."""


class AnnotationError(InputError):
    """One annotation (or image record) inside an input file breaks a rule."""


class OutputError(SegbenchError):
    """An output cannot be written (no space left on the disk, no permission, ...)."""


_FILE_SYSTEM_HINTS = {
    errno.EROFS: "give a folder on a writable disk (--data-root, --work-dir, --out), or remount it read-write",
    errno.EACCES: "check the file's and its folder's permissions, or give a folder you may write in",
    errno.EPERM: "check the file's and its folder's permissions, or give a folder you may write in",
    errno.ENOSPC: "free space on that disk (or give a folder on another one) and run the same command again",
    errno.EDQUOT: "free space within your quota (or give a folder on another disk) and run the same command again",
    errno.ENAMETOOLONG: "give a shorter path (--data-root, --work-dir, --out) or shorter names",
    errno.EMFILE: "raise the limit of open files (ulimit -n) and run the same command again",
    errno.EIO: "the disk failed to read or write: check it, then run the same command again",
    # Writing where no file can be made (a path under /proc, a folder removed meanwhile).
    errno.ENOENT: "check the path: its folder must exist or be one segbench can create, on a disk that takes files",
}


def file_system_error(exc: OSError) -> OutputError | None:
    """A file system failure no step turned into a typed error (a read-only mount, a full disk, a
    name too long), as one naming the file and what to do; None for the other ``OSError`` kinds."""
    hint = _FILE_SYSTEM_HINTS.get(exc.errno or 0)
    if hint is None:
        return None
    return OutputError(exc.strerror or str(exc), path=exc.filename, hint=hint)


class InsufficientDataError(SegbenchError):
    """The inputs are valid but cannot support the requested sizes (splits, ρ, quotas)."""


class ProviderError(SegbenchError):
    """A language or image-editing provider failed or answered outside its contract."""


class AnswerRejected(ProviderError):
    """The model answered, but gave no usable answer even when asked again (cut off at its token
    cap, off the schema): the question, not the server, failed, so a build may skip it."""


class ServiceError(SegbenchError):
    """An external service (the Label Studio server, ...) is unreachable or refused the request."""


class VersioningError(SegbenchError):
    """A git or DVC operation failed."""


class RoundStateError(SegbenchError):
    """An annotation round was asked to do something its status does not allow."""


class BusyError(SegbenchError):
    """Another segbench command holds the lock on the data root this command writes to."""


class OnError(str, enum.Enum):
    """What an importer does with a bad item."""

    FAIL = "fail"
    SKIP = "skip"


@dataclass
class SkipReport:
    """Items skipped under :attr:`OnError.SKIP`, in the order they were met."""

    skipped: list[SkipRecord] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.skipped)

    def counts(self) -> dict[str, int]:
        """Number of skipped items per error type."""
        out: dict[str, int] = {}
        for record in self.skipped:
            out[record["error"]] = out.get(record["error"], 0) + 1
        return dict(sorted(out.items()))

    def to_json(self) -> SkipReportJson:
        return {"count": len(self.skipped), "by_error": self.counts(), "items": self.skipped}


@dataclass
class ImportPolicy:
    """Fail fast on the first bad item, or skip it and record it.

    Usage: ``policy.handle(error)`` either raises ``error`` (fail) or records it and returns
    (skip); the caller then leaves the item out.
    """

    on_error: OnError = OnError.FAIL
    report: SkipReport = field(default_factory=SkipReport)

    def handle(self, error: AnnotationError) -> None:
        if self.on_error is OnError.FAIL:
            raise error
        self.report.skipped.append(error.as_record())
