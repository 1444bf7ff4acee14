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


def now() -> dt.datetime:
    """Now in UTC, or the time ``SOURCE_DATE_EPOCH`` names."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc)
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
