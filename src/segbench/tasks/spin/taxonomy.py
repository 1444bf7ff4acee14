"""The SPIN subpart taxonomy (seed 001, Sec. 3.1): proposed subparts + people's edits → ``taxonomy.yaml``.

SPIN prompted GPT-4 for the expected subparts of every PartImageNet (object, part), then three
authors excluded non-visible subparts (a skull) and added object-specific ones found by looking at
images (a turtle's shell). Here the proposals come from any language provider (``spin.subparts``
questions; WordNet offline, see ``wordnet.py``) and the edits from ``taxonomy_edits.yaml``. Every
subpart records its provenance: who proposed it, and which rule kept, renamed or added it.

Pure functions only: the flow asks the provider and writes files. Also here: the catalogue of
PartImageNet parts with SPIN's names, the YAML form of the taxonomy and the diff between two builds.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

import yaml

from segbench.core.errors import InputError
from segbench.core.io import read_bytes, sha256_bytes
from segbench.providers.base import Question
from segbench.schemas.spin import (
    SUBPART_NAME,
    RemovedSubpart,
    Subpart,
    SubpartProposal,
    SubpartProvenance,
    Taxonomy,
    TaxonomyEdits,
    TaxonomyEditsRef,
    TaxonomyPart,
    TaxonomyProvider,
    read_yaml_mapping,
    validate_file,
)

QUESTION_KIND = "spin.subparts"
QUESTION_VERSION = "1"
ANIMALS = ("Quadruped", "Biped", "Fish", "Bird", "Snake", "Reptile")
DEFAULT_EDITS = "taxonomy_edits.yaml"
EDITS_HINT = "see the comments at the top of the shipped taxonomy_edits.yaml for the format"

SYSTEM = (
    "You help build a hierarchical segmentation dataset of natural images: objects, their parts, and the "
    "parts of those parts (subparts). Answer with the subparts a person could see and outline in a photo."
)
USER = (
    "Object category: {object} (for example: {examples}).\n"
    "Part: the {part} of the {object}.\n"
    "List the subparts you would expect on the {object}'s {part}, as short singular nouns in Title Case "
    "(e.g. Eye, Ear). Only include subparts visible from outside; leave out internal anatomy and "
    "components hidden inside. Do not list the other parts of the {object} ({others})."
)


# --- the PartImageNet catalogue ------------------------------------------------------------------------

@dataclass(frozen=True)
class CatalogPart:
    id: int
    object: str
    name: str  # PartImageNet's name (Body, Foot, Tier)
    spin_name: str  # SPIN's name (Torso, Legs, Tire)


@dataclass(frozen=True)
class Catalog:
    """PartImageNet's super-categories, parts (with SPIN names) and ImageNet classes."""

    supercategories: tuple[str, ...]
    parts: tuple[CatalogPart, ...]
    classes: tuple[tuple[str, str, str], ...]  # (wnid, name, super-category)

    def part_keys(self) -> list[str]:
        return [f"{p.object}-{p.spin_name}" for p in self.parts]

    def wnids(self, object: str) -> list[str]:
        return [wnid for wnid, _, sup in self.classes if sup == object]

    def class_names(self, object: str) -> list[str]:
        return [name for _, name, sup in self.classes if sup == object]

    def class_key(self, value: str) -> tuple[str, str] | None:
        """The (wnid, super-category) of a class name or wnid (case-insensitive), if known."""
        low = value.strip().lower()
        for wnid, name, sup in self.classes:
            if low in (wnid.lower(), name.lower()):
                return wnid, sup
        return None


@cache
def load_catalog() -> Catalog:
    """The shipped ``resources/spin/partimagenet.json``."""
    text = resources.files("segbench.resources").joinpath("spin", "partimagenet.json").read_text("utf-8")
    data = json.loads(text)
    parts = tuple(CatalogPart(p["id"], p["supercategory"], p["name"], p["spin_name"])
                  for p in sorted(data["parts"], key=lambda p: p["id"]))
    classes = tuple((c["wnid"], c["name"], c["supercategory"]) for c in data["classes"])
    return Catalog(tuple(data["supercategories"]), parts, classes)


# --- questions ------------------------------------------------------------------------------------------

def subpart_questions(catalog: Catalog) -> list[Question]:
    """One ``spin.subparts`` question per PartImageNet part, in part-id order."""
    questions = []
    for part in catalog.parts:
        others = [p.spin_name for p in catalog.parts if p.object == part.object and p.id != part.id]
        examples = catalog.class_names(part.object)
        inputs = {"object": part.object, "part": part.spin_name, "partimagenet_id": part.id,
                  "animal": part.object in ANIMALS, "wnids": catalog.wnids(part.object), "other_parts": others}
        questions.append(Question(
            kind=QUESTION_KIND, version=QUESTION_VERSION, inputs=inputs, system=SYSTEM,
            user=USER.format(object=part.object, part=part.spin_name, examples=", ".join(examples[:6]),
                             others=", ".join(others) or "none")))
    return questions


def normalise_name(name: str) -> str | None:
    """A proposed subpart name in display form (``rear  wheel`` → ``Rear Wheel``), or None if unusable."""
    text = re.sub(r"[\s_]+", " ", str(name)).strip().strip(".")
    if not text:
        return None
    text = " ".join(word[:1].upper() + word[1:] for word in text.split(" "))
    return text if re.match(SUBPART_NAME, text) else None


def proposals_from_answers(catalog: Catalog, answers: Sequence[SubpartProposal]) -> dict[str, list[str]]:
    """``<Super>-<Part>`` → normalised, distinct, sorted proposed names (answers in catalogue order).

    A name the taxonomy cannot hold (punctuation, empty) is dropped here; the edit file cannot fix it.
    """
    out: dict[str, list[str]] = {}
    for key, answer in zip(catalog.part_keys(), answers, strict=True):
        names = {n for n in (normalise_name(s) for s in answer.subparts) if n is not None}
        out[key] = sorted(names, key=str.lower)
    return out


# --- edits ----------------------------------------------------------------------------------------------

def default_edits_path() -> Path:
    return Path(str(resources.files("segbench.resources").joinpath("spin", DEFAULT_EDITS)))


def load_edits(path: str | Path, catalog: Catalog) -> tuple[TaxonomyEdits, str]:
    """Read and check an edit file; return it with its sha256.

    Raises:
        InputError: bad YAML, a field the format does not have, a part pattern that matches no
            PartImageNet part, an object class that is not one of the part's ImageNet classes, or a
            subpart name the taxonomy cannot hold (each names the rule).
    """
    path = Path(path)
    edits = validate_file(TaxonomyEdits, read_yaml_mapping(path, "taxonomy edits", hint=EDITS_HINT), path,
                          hint=EDITS_HINT)
    for rule in edits.rules():
        for pattern in rule.parts:
            if not matching_parts(catalog, pattern):
                raise InputError(f"rule {rule.id!r}: part {pattern!r} matches no PartImageNet part", path=path,
                                 item=rule.id, hint=f"parts are <Super>-<SPIN part>: {', '.join(catalog.part_keys())}")
    for rule in [*edits.add, *edits.rename]:
        names = rule.subparts if hasattr(rule, "subparts") else [rule.to]
        for name in names:
            if normalise_name(name) != name:
                raise InputError(f"rule {rule.id!r}: subpart name {name!r} is not in display form", path=path,
                                 item=rule.id, hint=f"write it as {normalise_name(name)!r} (Title Case, letters, "
                                 "digits, spaces)" if normalise_name(name) else "use letters, digits and spaces")
    for rule in edits.add:
        objects = {p.split("-", 1)[0] for pattern in rule.parts for p in matching_parts(catalog, pattern)}
        for value in rule.objects or []:
            known = catalog.class_key(value)
            if known is None or known[1] not in objects:
                raise InputError(f"rule {rule.id!r}: object class {value!r} is not an ImageNet class of "
                                 f"{', '.join(sorted(objects))}", path=path, item=rule.id,
                                 hint="use a class name (box turtle) or wnid (n01669191) of those super-categories")
    return edits, sha256_bytes(read_bytes(path))


def matching_parts(catalog: Catalog, pattern: str) -> list[str]:
    """The ``<Super>-<Part>`` keys a pattern names (``*`` is a wildcard; case-sensitive)."""
    if pattern == "*":
        return catalog.part_keys()
    if "-" not in pattern:
        return []
    return [key for key in catalog.part_keys() if fnmatch.fnmatchcase(key, pattern)]


@dataclass
class _Entry:
    name: str
    provenance: SubpartProvenance
    objects: list[str] | None = None


@dataclass
class EditOutcome:
    parts: list[TaxonomyPart]
    unused_rules: list[str] = field(default_factory=list)  # rules that changed nothing: stale or misspelt


def apply_edits(catalog: Catalog, proposals: Mapping[str, Sequence[str]], proposed_by: str,
                edits: TaxonomyEdits) -> EditOutcome:
    """Apply ``edits`` to the proposed names of every part: exclude, then rename, then add.

    Exclusions and renames match names case-insensitively. A rename onto a name already present
    merges the two (the renamed one is recorded as removed by the rule); an addition of a name already
    present changes nothing. Subparts are sorted by name.

    Args:
        proposals: ``<Super>-<Part>`` → proposed display names (parts without proposals have none).
        proposed_by: ``<provider>:<model>``.
    """
    used: set[str] = set()
    parts = []
    for cpart in catalog.parts:
        key = f"{cpart.object}-{cpart.spin_name}"
        entries = {n.lower(): _Entry(n, SubpartProvenance(proposed_by=proposed_by, edit="kept", by=None))
                   for n in proposals.get(key, [])}
        removed: list[RemovedSubpart] = []
        for rule in edits.exclude:
            if _applies(catalog, rule.parts, key):
                for name in rule.subparts:
                    gone = entries.pop(name.lower(), None)
                    if gone is not None:
                        removed.append(RemovedSubpart(name=gone.name, by=rule.id))
                        used.add(rule.id)
        for rule in edits.rename:
            source = entries.get(rule.from_.lower())
            if source is None or not _applies(catalog, rule.parts, key):
                continue
            used.add(rule.id)
            del entries[rule.from_.lower()]
            if rule.to.lower() in entries:
                removed.append(RemovedSubpart(name=source.name, by=rule.id))
                continue
            entries[rule.to.lower()] = _Entry(rule.to, SubpartProvenance(
                proposed_by=source.provenance.proposed_by, edit="renamed", by=rule.id, renamed_from=source.name))
        for rule in edits.add:
            if not _applies(catalog, rule.parts, key):
                continue
            for name in rule.subparts:
                if name.lower() not in entries:
                    entries[name.lower()] = _Entry(name, SubpartProvenance(proposed_by=None, edit="added", by=rule.id),
                                                   objects=list(rule.objects) if rule.objects else None)
                    used.add(rule.id)
        subparts = [Subpart(name=e.name, category=f"{key}-{e.name}", objects=e.objects, provenance=e.provenance)
                    for e in sorted(entries.values(), key=lambda e: e.name.lower())]
        parts.append(TaxonomyPart(object=cpart.object, part=cpart.spin_name, partimagenet_id=cpart.id,
                                  subparts=subparts, removed=sorted(removed, key=lambda r: (r.name.lower(), r.by))))
    unused = sorted(rule.id for rule in edits.rules() if rule.id not in used)
    return EditOutcome(parts=parts, unused_rules=unused)


def _applies(catalog: Catalog, patterns: Sequence[str], key: str) -> bool:
    return any(key in matching_parts(catalog, pattern) for pattern in patterns)


def build_taxonomy(parts: list[TaxonomyPart], *, provider: str, model: str, edits_file: str,
                   edits_sha256: str) -> Taxonomy:
    return Taxonomy(provider=TaxonomyProvider(name=provider, model=model, question_version=QUESTION_VERSION),
                    edits=TaxonomyEditsRef(file=edits_file, sha256=edits_sha256), parts=parts)


# --- YAML -------------------------------------------------------------------------------------------

HEADER = ("# SPIN subpart taxonomy, written by `segbench build spin-taxonomy`. Do not edit by hand:\n"
          "# change the edit file (see edits.file) and rebuild; the rebuild shows the diff.\n")


def taxonomy_yaml(taxonomy: Taxonomy) -> str:
    """The YAML text of ``taxonomy``: fixed key order, so the same taxonomy gives the same bytes."""
    body = yaml.safe_dump(taxonomy.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=120)
    return HEADER + body
