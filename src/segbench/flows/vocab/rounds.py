"""The valid-vocabulary adjudication label config (seed 003): which dataset category a mined
description names, and how (exact, synonym, hyponym, meronym; ``none`` when unrelated).

No round kind uses it yet, so it is not registered: the vocabulary build asks a language model,
not people. A vocabulary round kind would be defined here with this config and listed in the
vocabulary's registry entry.
"""

from __future__ import annotations

from typing import Any, TypedDict

from segbench.annotation_ui.label_configs import LabelConfig, texts
from segbench.core.errors import InputError

DEFAULT_RELATIONS = ("exact", "synonym", "hyponym", "meronym", "none")


class _RelationsContext(TypedDict):
    """The context of the relations label config."""

    categories: list[str]
    relations: list[str]


def _prepare(config: str, values: dict[str, Any]) -> _RelationsContext:
    categories = texts(config, "categories", values["categories"])
    if "none" in categories:
        raise InputError(
            f"label config {config!r}: 'none' is added to the categories; it cannot be one",
            item=config,
            hint="rename that category",
        )
    return {"categories": categories, "relations": texts(config, "relations", values["relations"])}


ADJUDICATION_CONFIG = LabelConfig(
    "vocab_adjudication", required=("categories",), defaults={"relations": DEFAULT_RELATIONS}, prepare=_prepare
)
