"""SPIN's category hierarchy as an evaluation reads it: which part a subpart category belongs to, which
super-category a part or whole does, and the subparts the taxonomy restricts to some object classes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from segbench.core.errors import InputError
from segbench.tasks.spin.metrics import LEVELS, Hierarchy


def build_hierarchy(names: Mapping[str, Mapping[int, str]], restricted: Mapping[str, frozenset[str]] | None = None,
                    path: str = "", *, categories: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
                    links: Mapping[str, Mapping[int, set[int]]] | None = None) -> Hierarchy:
    """The category hierarchy; names are for display, the links come first from the annotations.

    The parent of a category is, in this order: the category of its annotations' ``parent_id``
    (``links``: level → child category → parent categories seen); the category's own field
    (a subpart's ``part_category_id``, a part's or whole's ``supercategory``); the name prefix
    (``<Super>-<Part>`` / ``<Super>-<Part>-<Sub>``, or PartImageNet's ``Quadruped Head``). A category
    with none of these is linked to nothing. ``restricted``: subpart name → allowed object classes.

    Raises:
        InputError: annotations of one category have parents of two categories (or super-categories).
    """
    cats = categories or {}
    links = links or {}

    def own(level: str, cid: int, key: str) -> Any:
        return (cats.get(level, {}).get(cid) or {}).get(key)

    def by_prefix(name: str, candidates: Mapping[int, str]) -> int | None:
        ranked = sorted(candidates.items(), key=lambda c: -len(c[1]))
        return next((cid for cid, cname in ranked if name.startswith((cname + "-", cname + " "))), None)

    def single(level: str, cid: int, found: set[Any]) -> Any:
        if len(found) > 1:
            raise InputError(f"{level} category {names[level][cid]!r} (id {cid}) has annotations whose parents are "
                             f"of several categories: {sorted(found)}", path=path,
                             hint="every annotation of a category needs a parent of the same category")
        return next(iter(found), None)

    whole_super = {cid: str(own("wholes", cid, "supercategory") or name) for cid, name in names["wholes"].items()}
    supers = {i: name for i, name in enumerate(sorted(set(whole_super.values())))}
    part_super = {}
    for cid, name in names["parts"].items():
        found = single("parts", cid, {whole_super[w] for w in links.get("parts", {}).get(cid, ()) if w in whole_super})
        field = own("parts", cid, "supercategory")
        prefix = by_prefix(name, supers)
        value = found or (field if field in supers.values() else None) or (supers[prefix] if prefix is not None
                                                                           else None)
        if value is not None:
            part_super[cid] = value
    part_of = {}
    for cid, name in names["subparts"].items():
        found = single("subparts", cid, set(links.get("subparts", {}).get(cid, ())))
        field = own("subparts", cid, "part_category_id")
        value = found if found is not None else field if field in names["parts"] else by_prefix(name, names["parts"])
        if value is not None:
            part_of[cid] = value
    sub_ids = {name: cid for cid, name in names["subparts"].items()}
    return Hierarchy(names={lv: dict(names[lv]) for lv in LEVELS}, part_of=part_of, part_super=part_super,
                     whole_super=whole_super,
                     restricted={sub_ids[n]: classes for n, classes in (restricted or {}).items() if n in sub_ids})


def parse_taxonomy(data: Any, path: str) -> dict[str, frozenset[str]]:
    """Subpart category name → object classes, for the subparts whose ``objects`` is a list."""
    parts = data.get("parts") if isinstance(data, dict) else None
    if not isinstance(parts, list):
        raise InputError("taxonomy needs a 'parts' list", path=path)
    out = {}
    for part in parts:
        for sub in part.get("subparts") or []:
            name = sub.get("category") or f"{part.get('object')}-{part.get('part')}-{sub.get('name')}"
            if sub.get("objects") is not None:
                out[name] = frozenset(str(o) for o in sub["objects"])
    return out
