"""The time segbench records in the data: now, or the moment ``SOURCE_DATE_EPOCH`` names.

Manifests and round records carry a time. Reproducible-build tooling fixes it with
``SOURCE_DATE_EPOCH`` (seconds since 1970, UTC), so two builds of the same inputs are byte-identical;
the demo pins it for its whole run (:func:`pinned`).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from contextlib import contextmanager

from segbench.core.errors import InputError

LATEST_EPOCH = 253_402_300_799  # 9999-12-31T23:59:59Z: the last second an ISO 8601 year of four digits holds


def source_date_epoch() -> int | None:
    """``SOURCE_DATE_EPOCH`` as whole seconds since 1970 (None when unset).

    Raises:
        InputError: it is set to anything else (a date, a float, a negative or far-future number).
    """
    value = os.environ.get("SOURCE_DATE_EPOCH")
    if not value:
        return None
    if not value.strip().isdigit() or int(value) > LATEST_EPOCH:
        raise InputError(f"SOURCE_DATE_EPOCH={value!r} is not whole seconds since 1970 (0 to {LATEST_EPOCH})",
                         item="SOURCE_DATE_EPOCH",
                         hint="set it to an integer, e.g. SOURCE_DATE_EPOCH=$(git log -1 --format=%ct), or unset it")
    return int(value)


def now() -> dt.datetime:
    """Now in UTC, or the time ``SOURCE_DATE_EPOCH`` names (see :func:`source_date_epoch`)."""
    epoch = source_date_epoch()
    if epoch is not None:
        return dt.datetime.fromtimestamp(epoch, dt.timezone.utc)
    return dt.datetime.now(dt.timezone.utc)


def timestamp() -> str:
    """:func:`now` as ISO 8601 to the second, the form records store."""
    return now().replace(microsecond=0).isoformat()


@contextmanager
def pinned(epoch: int) -> Iterator[None]:
    """Record ``epoch`` as the time inside the block, unless the caller already fixed one."""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        yield
        return
    os.environ["SOURCE_DATE_EPOCH"] = str(epoch)
    try:
        yield
    finally:
        del os.environ["SOURCE_DATE_EPOCH"]
