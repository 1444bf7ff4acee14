"""How long a model's answer may be, read from its JSON schema.

A small model under a JSON grammar can loop (``{"noun": "frog", …}`` until a cap, or ``"Paw, Tail,
Paw, Tail…"``), and a local server has no cap of its own, so every request carries one: the tokens
the schema's answer needs, estimated field by field with lists at their most items, times a margin.
Lists also get ``maxItems`` in the schema sent, so a grammar-constrained model cannot run past them.
"""

from __future__ import annotations

import copy
import math
from typing import Any

STRING_TOKENS = 10  # a noun or a short phrase; a sentence fits within the margin
SCALAR_TOKENS = 3  # a number, true/false, null
ITEMS_WHEN_UNSAID = 8  # a list whose question states no bound
OVERHEAD_TOKENS = 32  # the reply's framing and whitespace


def with_max_items(schema: dict[str, Any], max_items: int | None) -> dict[str, Any]:
    """A copy of ``schema`` whose arrays allow at most ``max_items`` items (unchanged when ``None``)."""
    if max_items is None:
        return schema
    limited = copy.deepcopy(schema)

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "array":
                node["maxItems"] = min(max_items, node.get("maxItems", max_items))
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(limited)
    return limited


def answer_tokens(schema: dict[str, Any], max_items: int | None = None) -> int:
    """Tokens a full answer to ``schema`` takes, with every list at ``max_items`` items (or its own
    ``maxItems``, or :data:`ITEMS_WHEN_UNSAID`); about 3 characters a token for names and enums."""
    defs = schema.get("$defs", {})

    def tokens(node: dict[str, Any], depth: int = 0) -> int:
        if depth > 20:  # a recursive schema: count no deeper
            return STRING_TOKENS
        if "$ref" in node:
            return tokens(defs.get(str(node["$ref"]).rsplit("/", 1)[-1], {}), depth + 1)
        for key in ("anyOf", "oneOf"):
            if key in node:
                return max(tokens(option, depth + 1) for option in node[key])
        if "enum" in node:
            return max(math.ceil(len(str(value)) / 3) + 2 for value in node["enum"])
        kind = node.get("type")
        if kind == "object":
            fields = node.get("properties", {})
            return 2 + sum(math.ceil(len(name) / 3) + 3 + tokens(field, depth + 1) for name, field in fields.items())
        if kind == "array":
            items = node.get("maxItems", max_items if max_items is not None else ITEMS_WHEN_UNSAID)
            return 2 + items * (1 + tokens(node.get("items", {}), depth + 1))
        if kind == "string":
            return math.ceil(node["maxLength"] / 3) + 2 if "maxLength" in node else STRING_TOKENS
        return SCALAR_TOKENS

    return tokens(schema)


def token_cap(schema: dict[str, Any], max_items: int | None, margin: float) -> int | None:
    """The ``max_tokens`` to send: :func:`answer_tokens` times ``margin`` plus the framing; ``None``
    (send no cap) when ``margin`` is 0."""
    if margin <= 0:
        return None
    return math.ceil(answer_tokens(schema, max_items) * margin) + OVERHEAD_TOKENS
