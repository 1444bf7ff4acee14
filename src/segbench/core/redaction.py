"""Credentials masked in text people see: URL user-info and query strings (signed tokens).

Kept free of heavy imports: the command line masks its last error message with it, also after Ctrl-C
interrupted an import halfway (a module imported then may be half-initialised).
"""

from __future__ import annotations

import re

_USERINFO_RE = re.compile(r"(\b[a-zA-Z][\w+.-]*://)[^/\s@]+@")
_QUERY_RE = re.compile(r"(\b[a-zA-Z][\w+.-]*://[^\s?]*)\?\S*")


def redact(text: str) -> str:
    """``text`` with URL user-info (``user:password@``) and query strings (signed tokens) masked."""
    return _QUERY_RE.sub(r"\1?***", _USERINFO_RE.sub(r"\1***@", text))
