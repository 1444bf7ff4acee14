"""SPIN's annotation round kind: subpart polygons for one (super-category, part) (seed 001, Sec. 3.2).

The label config (template ``spin_subparts``) asks whether the outlined part is there, then per
subpart whether it is there and where; each subpart gets a ``has_<slug>`` control and a polygon
label. After each ingest :func:`segbench.flows.spin.crowd.ingest_report` validates and resolves
the answers. Bad polygons are flagged by that import rather than refused at ingest. Registered in
:mod:`segbench.registry`.
"""

from __future__ import annotations

from typing import Any

from segbench.annotation_ui.kinds import RoundKind
from segbench.annotation_ui.label_configs import LabelConfig, slugify, text, texts
from segbench.core.errors import InputError
from segbench.tasks.spin import crowd

# Distinct, readable polygon colours; subparts beyond the palette reuse it in order.
PALETTE = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324")


def _prepare(config: str, values: dict[str, Any]) -> dict[str, Any]:
    subparts = texts(config, "subparts", values["subparts"], shown=True)
    slugs = [slugify(name) for name in subparts]
    clashes = sorted({slug for slug in slugs if slugs.count(slug) > 1})
    if clashes:
        # Control names must be unique; `has_<slug>` is how converters find each subpart's answer.
        raise InputError(
            f"label config {config!r}: subparts {subparts} give the same control name has_{clashes[0]}",
            item=config,
            hint="rename the subparts so they differ in letters or digits",
        )
    return {
        "object": text(config, "object", values["object"], shown=True),
        "part": text(config, "part", values["part"], shown=True),
        "subparts": [
            {"name": name, "slug": slug, "color": PALETTE[i % len(PALETTE)]}
            for i, (name, slug) in enumerate(zip(subparts, slugs))
        ],
    }


SUBPARTS = RoundKind(
    name=crowd.KIND,
    label_config=LabelConfig(crowd.LABEL_CONFIG, required=("object", "part", "subparts"), prepare=_prepare),
    report="segbench.flows.spin.crowd:ingest_report",
    flags_own_polygons=True,
)
