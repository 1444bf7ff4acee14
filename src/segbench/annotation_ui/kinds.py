"""Round kinds: what a kind of annotation round asks and what its ingest writes.

Each dataset defines its kinds in its own subpackage (``flows/<dataset>/rounds.py``) and lists them
in its registry entry (``DatasetSpec.round_kinds``); the generic round code finds them through
:func:`round_kind`, never by naming a dataset. A kind module stays light (no Prefect at import):
its ingest hook is an import path resolved when an ingest runs.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from segbench import registry
from segbench.annotation_ui.label_configs import LabelConfig
from segbench.core.errors import InputError
from segbench.schemas.rounds import ItemAnswer, Round


@dataclass(frozen=True)
class RoundKind:
    """One kind of round (``Round.kind``).

    Attributes:
        name: the kind's name in round records (``Round.kind``).
        label_config: what people see and answer.
        report: the function run after each ingest, called as ``(round, items, data_root)``
            with the aggregated :class:`ItemAnswer` list; it writes the kind's reports and returns
            ``{report name: path}``. ``None``: the kind has no report.
        flags_own_polygons: its importer keeps bad polygons and flags them itself, so ingest must
            not refuse a whole answer for one bad polygon.
        create: the Typer command ``segbench rounds create <name>`` runs: it
            selects the kind's items and writes the round record. ``None``: no command creates it.
        automatic_labels: ``(round, data_root) -> {item id: {control: label}}``: the labels a rule
            gave the items before people answered (``segbench view`` shows where they disagree).
    """

    name: str
    label_config: LabelConfig
    report: registry.Ref[Callable[[Round, list[ItemAnswer], Path], dict[str, Path]]] | None = None
    flags_own_polygons: bool = False
    create: registry.Ref[Callable[..., None]] | None = None
    automatic_labels: registry.Ref[Callable[[Round, Path], dict[str, dict[str, str]]]] | None = None

    def write_reports(self, round_: Round, items: list[ItemAnswer], data_root: Path) -> dict[str, Path]:
        """Run the ingest hook (nothing without one)."""
        if self.report is None:
            return {}
        return self.report.load()(round_, items, data_root)


def round_kind(name: str) -> RoundKind:
    """The registered kind ``name``.

    Raises:
        InputError: no dataset registers that kind (the message lists the known ones).
    """
    kinds = registry.round_kinds()
    if name not in kinds:
        known = ", ".join(sorted(kinds)) or "none"
        raise InputError(f"unknown round kind {name!r} (known kinds: {known})", item=name,
                         hint="see segbench rounds create --help, or register the kind in segbench.registry")
    return kinds[name]


def label_configs() -> dict[str, LabelConfig]:
    """The label configs of every registered kind, by name."""
    return {kind.label_config.name: kind.label_config for kind in registry.round_kinds().values()}


def render_label_config(name: str, **params: Any) -> str:
    """Render the registered label config ``name`` (see :meth:`LabelConfig.render`).

    Raises:
        InputError: unknown name (the message lists the known ones), or bad parameters.
    """
    configs = label_configs()
    if name not in configs:
        raise InputError(f"unknown label config {name!r}", item=name, hint=f"use one of: {', '.join(sorted(configs))}")
    return configs[name].render(**params)


def label_config_instructions(name: str) -> str:
    """The instructions page of the registered label config ``name`` ("" when it has none)."""
    config = label_configs().get(name)
    return config.instructions() if config is not None else ""


def allowed_labels(round_: Round) -> dict[str, set[str]]:
    """Control name → the labels the round's label config offers (answers with others are bad input)."""
    root = ET.fromstring(render_label_config(round_.config.label_config, **round_.config.params))
    allowed: dict[str, set[str]] = {}
    for control in root.iter():
        name = control.get("name")
        if control.tag in ("Choices", "PolygonLabels", "Labels") and name:
            allowed[name] = {value for c in control if c.tag in ("Choice", "Label") and (value := c.get("value")) is not None}
    return allowed


class AnswerChecks(TypedDict):
    """Keyword arguments of ``answers_from_labelstudio`` and ``answers_from_files``."""

    allowed: dict[str, set[str]]
    check_polygons: bool


def answer_checks(round_: Round) -> AnswerChecks:
    """The checks the converters apply to the round's answers: keyword arguments of
    ``answers_from_labelstudio`` and ``answers_from_files``."""
    return {"allowed": allowed_labels(round_), "check_polygons": not round_kind(round_.kind).flags_own_polygons}
