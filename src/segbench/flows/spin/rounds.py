"""SPIN's annotation round kind: subpart polygons for one (super-category, part) (seed 001, Sec. 3.2).

The label config (template ``spin_subparts``) asks whether the outlined part is there, then per
subpart whether it is there and where; each subpart gets a ``has_<slug>`` control and a polygon
label. After each ingest :func:`segbench.flows.spin.crowd.ingest_report` validates and resolves
the answers. Bad polygons are flagged by that import rather than refused at ingest. Registered in
:mod:`segbench.registry`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypedDict

from segbench.annotation_ui.kinds import RoundKind
from segbench.annotation_ui.label_configs import LabelConfig, text, texts
from segbench.annotation_ui.rounds import new_round
from segbench.core.errors import InputError
from segbench.registry import Ref
from segbench.schemas.rounds import Round, RoundConfig, RoundItem, slugify
from segbench.schemas.spin import Taxonomy
from segbench.tasks.spin import crowd

# Distinct, readable polygon colours; subparts beyond the palette reuse it in order.
PALETTE = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324")


class _SubpartLabel(TypedDict):
    name: str
    slug: str
    color: str


class _SubpartsPage(TypedDict):
    """The context of the subparts label config."""

    page: int
    pages: int
    object: str
    part: str
    subparts: list[_SubpartLabel]


def prepare_subparts_page(config: str, values: dict[str, Any]) -> _SubpartsPage:
    """The context of a subparts page (this kind's and the review's label configs)."""
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
    page, pages = values["page"], values["pages"]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (page, pages)) or not 1 <= page <= pages:
        raise InputError(f"label config {config!r}: page {page!r} of {pages!r} is not a page number", item=config,
                         hint="pages are numbered 1..pages")
    if len(subparts) > crowd.SUBPARTS_PER_PAGE:
        raise InputError(f"label config {config!r}: {len(subparts)} subparts on one page; at most "
                         f"{crowd.SUBPARTS_PER_PAGE} keep the labels beside the image", item=config,
                         hint="split the part's subparts over pages (spin_rounds does)")
    return {
        "page": page, "pages": pages,
        "object": text(config, "object", values["object"], shown=True),
        "part": text(config, "part", values["part"], shown=True),
        "subparts": [
            {"name": name, "slug": slug, "color": PALETTE[i % len(PALETTE)]}
            for i, (name, slug) in enumerate(zip(subparts, slugs, strict=True))
        ],
    }


SUBPARTS = RoundKind(
    name=crowd.KIND,
    label_config=LabelConfig(crowd.LABEL_CONFIG, required=("object", "part", "subparts"),
                             defaults={"page": 1, "pages": 1}, prepare=prepare_subparts_page),
    report=Ref("segbench.flows.spin.crowd:ingest_report"),
    flags_own_polygons=True,
    create=Ref("segbench.cli.spin.rounds:create_rounds_command"),
)


def spin_rounds(items: Sequence[RoundItem], taxonomy: Taxonomy, *, key_prefix: str, dataset_version: str,
                backend: Literal["labelstudio", "files"], now: str, overlap: int = 3,
                reward_per_subpart: float = crowd.REWARD_PER_SUBPART) -> list[Round]:
    """``spin_subparts`` rounds per (super-category, part) among ``items``, sorted by key.

    A part's subparts are split over pages of at most ``crowd.SUBPARTS_PER_PAGE`` (one round each,
    keyed ``<prefix>-<super>-<part>-p<k>`` when there are several), so that its polygon labels stay
    beside the image. Keys start with the super-category: its rounds form one batch, released before
    the next super-category's (the paper's phased rollout); each item's ``batch`` is its super-category. Each item's ``data`` (``image_id``,
    ``part_ann_id``, ``object``, ``object_class``, ``part``; an optional ``part_rle`` is kept) gains
    ``subparts``: the page's subparts asked for its object class (an item with none on a page is
    not in that page's round), and ``reward``: what its task pays, ``reward_per_subpart`` (USD) per
    subpart the page could ask about (the paper paid 10¢ per possible subpart of the super-category,
    whatever the object's class: $1.10 per Boat image, $2.90 per Car image).

    Raises:
        InputError: an item lacks a data field, names a part the taxonomy does not have, or its part
            has no subpart for that object class.
    """
    groups: dict[tuple[str, str], list[RoundItem]] = {}
    for item in items:
        missing = [f for f in crowd.ITEM_FIELDS if f not in item.data]
        if missing:
            raise InputError(f"round item lacks data field(s) {', '.join(missing)}", item=f"item {item.item_id}",
                             hint=f"SPIN items carry {', '.join(crowd.ITEM_FIELDS)}")
        groups.setdefault((item.data["object"], item.data["part"]), []).append(item)
    rounds = []
    for (obj, part), members in sorted(groups.items()):
        entry = taxonomy.part(obj, part)
        for item in members:
            if not any(s.applies_to(item.data["object_class"]) for s in entry.subparts):
                raise InputError(f"{obj}-{part} has no subpart for class {item.data['object_class']!r}",
                                 item=f"item {item.item_id}", hint="add subparts in taxonomy_edits.yaml, or leave "
                                 "this part out of the round")
        pages = crowd.subpart_pages([s.name for s in entry.subparts])
        for number, page in enumerate(pages, start=1):
            ready = []
            for item in members:
                names = [s.name for s in entry.subparts if s.name in page and s.applies_to(item.data["object_class"])]
                if names:
                    reward = round(reward_per_subpart * len(page), 2)
                    ready.append(item.model_copy(update={"data": {**item.data, "subparts": names, "reward": reward},
                                                         "batch": obj}))
            if not ready:
                continue
            config = RoundConfig(label_config=crowd.LABEL_CONFIG, overlap=overlap,
                                 params={"object": obj, "part": part, "subparts": page} | (
                                     {"page": number, "pages": len(pages)} if len(pages) > 1 else {}))
            key = crowd.round_key(key_prefix, obj, part, page=number if len(pages) > 1 else None)
            rounds.append(new_round(key, crowd.KIND, crowd.DATASET, dataset_version, config, ready, backend, now))
    return sorted(rounds, key=lambda r: r.key)
