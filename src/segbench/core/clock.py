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


# --- times other tools write -------------------------------------------------------------------------------

# The zones MTurk's results files name (its time is US Pacific) and the unambiguous ones besides.
_ZONES = {"UTC": 0, "GMT": 0, "Z": 0, "PST": -8, "PDT": -7, "MST": -7, "MDT": -6, "CST": -6, "CDT": -5,
          "EST": -5, "EDT": -4}
_MONTHS = {name: number for number, name in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}


def parse_time(text: str) -> dt.datetime | None:
    """A time as Label Studio (ISO 8601, ``Z``), segbench (ISO 8601) or MTurk (``Wed Nov 26 09:00:37 PST 2025``)
    write it, in UTC; None when it is none of these. A time without a zone is taken as UTC."""
    text = text.strip()
    parsed: dt.datetime | None
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        parsed = _mturk_time(text)
    if parsed is None:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)).astimezone(dt.timezone.utc)


def _mturk_time(text: str) -> dt.datetime | None:
    words = text.split()  # weekday, month, day, h:m:s, zone, year (English names whatever the locale)
    if len(words) != 6 or words[1].title() not in _MONTHS or words[4].upper() not in _ZONES:
        return None
    try:
        hour, minute, second = (int(part) for part in words[3].split(":"))
        local = dt.datetime(int(words[5]), _MONTHS[words[1].title()], int(words[2]), hour, minute, second)
    except ValueError:
        return None
    return local.replace(tzinfo=dt.timezone(dt.timedelta(hours=_ZONES[words[4].upper()])))


def time_order(text: str | None) -> dt.datetime:
    """A key that orders recorded times as times, not as text; a missing or unreadable one comes first."""
    parsed = parse_time(text) if text else None
    return parsed if parsed is not None else dt.datetime.min.replace(tzinfo=dt.timezone.utc)
