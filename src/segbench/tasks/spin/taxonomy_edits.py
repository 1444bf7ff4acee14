"""The people's edits of the SPIN taxonomy (seed 001, Sec. 3.1): the edit file, its rules applied to the
proposals (exclude, rename, add, then the reference list), and the proposer scored against that reference.

Pure functions; the proposals, the catalogue and the YAML form live in ``taxonomy.py``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from segbench.core.errors import InputError
from segbench.core.io import read_bytes, sha256_bytes
from segbench.schemas.spin import (
    AddRule,
    RemovedSubpart,
    RenameRule,
    RestrictRule,
    Subpart,
    SubpartProvenance,
    TaxonomyEdits,
    TaxonomyPart,
    read_yaml_mapping,
    validate_file,
)
from segbench.tasks.spin.taxonomy import (
    DEFAULT_EDITS,
    EDITS_HINT,
    VISIBILITY_RULE,
    Catalog,
    match_keys,
    normalise_name,
)


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
    named: list[AddRule | RenameRule] = [*edits.add, *edits.rename]
    for rule in named:
        names = rule.subparts if isinstance(rule, AddRule) else [rule.to]
        for name in names:
            if normalise_name(name) != name:
                raise InputError(f"rule {rule.id!r}: subpart name {name!r} is not in display form", path=path,
                                 item=rule.id, hint=f"write it as {normalise_name(name)!r} (Title Case, letters, "
                                 "digits, spaces)" if normalise_name(name) else "use letters, digits and spaces")
    _check_reference(edits.reference, catalog, path)
    for rule in edits.add:
        objects = {p.split("-", 1)[0] for pattern in rule.parts for p in matching_parts(catalog, pattern)}
        for value in rule.objects or []:
            known = catalog.class_key(value)
            if known is None or known[1] not in objects:
                raise InputError(f"rule {rule.id!r}: object class {value!r} is not an ImageNet class of "
                                 f"{', '.join(sorted(objects))}", path=path, item=rule.id,
                                 hint="use a class name (box turtle) or wnid (n01669191) of those super-categories")
    for restricting in edits.restrict:
        objects = {p.split("-", 1)[0] for pattern in restricting.parts for p in matching_parts(catalog, pattern)}
        for value in restricting.objects:
            if not catalog.classes_under(value, objects):
                raise InputError(f"rule {restricting.id!r}: {value!r} names no ImageNet class of "
                                 f"{', '.join(sorted(objects))}", path=path, item=restricting.id,
                                 hint="use a class name (box turtle), a wnid (n01669191) or a WordNet synset with "
                                      "classes of those objects under it (turtle.n.02)")
        for obj in sorted(objects):
            if not any(catalog.classes_under(value, {obj}) for value in restricting.objects):
                raise InputError(f"rule {restricting.id!r}: its objects name no ImageNet class of {obj}, one of "
                                 "its parts' objects", path=path, item=restricting.id,
                                 hint=f"name a class of {obj} (box turtle), its wnid (n01669191) or a WordNet "
                                      "synset with classes under it (turtle.n.02), or narrow the rule's parts")
    return edits, sha256_bytes(read_bytes(path))


def _check_reference(reference: Mapping[str, Sequence[str]] | None, catalog: Catalog, path: Path) -> None:
    """Every reference key is a part and every name is in display form, once per part."""
    keys = catalog.part_keys()
    for key, names in (reference or {}).items():
        if key not in keys:
            raise InputError(f"reference: {key!r} is not a PartImageNet part", path=path, item=key,
                             hint=f"keys are <Super>-<SPIN part>: {', '.join(keys)}")
        for name in names:
            if normalise_name(name) != name:
                raise InputError(f"reference {key}: subpart name {name!r} is not in display form", path=path,
                                 item=key, hint=f"write it as {normalise_name(name)!r}" if normalise_name(name)
                                 else "use letters, digits, spaces and '/' between alternatives")
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InputError(f"reference {key}: {twice[0]!r} is listed twice", path=path, item=key,
                             hint="list each subpart once")


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


@dataclass(frozen=True)
class ProposerScore:
    """How the proposals for one part compare with the reference, before any edit."""

    part: str  # <Super>-<Part>
    proposed: int
    reference: int
    matched_reference: int  # reference subparts some proposal matches (recall's numerator)
    matched_proposals: int  # proposals that match a reference subpart (precision's numerator)

    @property
    def recall(self) -> float | None:
        return self.matched_reference / self.reference if self.reference else None

    @property
    def precision(self) -> float | None:
        return self.matched_proposals / self.proposed if self.proposed else None


def proposer_scores(catalog: Catalog, proposals: Mapping[str, Sequence[str]],
                    reference: Mapping[str, Sequence[str]]) -> list[ProposerScore]:
    """Recall and precision of the proposals against the reference, per part (names matched by :func:`match_keys`)."""
    out = []
    for key in catalog.part_keys():
        proposed = [match_keys(n) for n in proposals.get(key, [])]
        wanted = [match_keys(n) for n in reference.get(key, [])]
        out.append(ProposerScore(
            part=key, proposed=len(proposed), reference=len(wanted),
            matched_reference=sum(1 for w in wanted if any(w & p for p in proposed)),
            matched_proposals=sum(1 for p in proposed if any(w & p for w in wanted))))
    return out


def total_score(scores: Sequence[ProposerScore]) -> ProposerScore:
    """All parts pooled: micro recall and precision."""
    return ProposerScore(part="all", proposed=sum(s.proposed for s in scores),
                         reference=sum(s.reference for s in scores),
                         matched_reference=sum(s.matched_reference for s in scores),
                         matched_proposals=sum(s.matched_proposals for s in scores))


@dataclass
class EditOutcome:
    parts: list[TaxonomyPart]
    unused_rules: list[str] = field(default_factory=list)  # rules that changed nothing: stale or misspelt
    scores: list[ProposerScore] | None = None  # the proposer against the reference (None without one)


def apply_edits(catalog: Catalog, proposals: Mapping[str, Sequence[str]], proposed_by: str,
                edits: TaxonomyEdits, not_visible: Mapping[str, Sequence[str]] | None = None) -> EditOutcome:
    """Apply ``edits`` to the proposed names of every part: exclude, then rename, then add.

    Exclusions and renames match names case-insensitively. A rename onto a name already present
    merges the two (the renamed one is recorded as removed by the rule); an addition of a name already
    present changes nothing. Subparts are sorted by name.

    Args:
        proposals: ``<Super>-<Part>`` → proposed display names (parts without proposals have none).
        proposed_by: ``<provider>:<model>``.
        not_visible: proposals the visibility check dropped before the edits (recorded as removed by it).
    """
    used: set[str] = set()
    parts = []
    for cpart in catalog.parts:
        key = f"{cpart.object}-{cpart.spin_name}"
        entries = {n.lower(): _Entry(n, SubpartProvenance(proposed_by=proposed_by, edit="kept", by=None))
                   for n in proposals.get(key, [])}
        removed = [RemovedSubpart(name=n, by=VISIBILITY_RULE) for n in (not_visible or {}).get(key, [])]
        for rule in edits.exclude:
            if _applies(catalog, rule.parts, key):
                for name in rule.subparts:
                    gone = entries.pop((normalise_name(name) or name).lower(), None)
                    if gone is not None:
                        removed.append(RemovedSubpart(name=gone.name, by=rule.id))
                        used.add(rule.id)
        for renaming in edits.rename:
            source = entries.get((normalise_name(renaming.from_) or renaming.from_).lower())
            if source is None or not _applies(catalog, renaming.parts, key):
                continue
            used.add(renaming.id)
            del entries[source.name.lower()]
            if renaming.to.lower() in entries:
                removed.append(RemovedSubpart(name=source.name, by=renaming.id))
                continue
            entries[renaming.to.lower()] = _Entry(renaming.to, SubpartProvenance(
                proposed_by=source.provenance.proposed_by, edit="renamed", by=renaming.id, renamed_from=source.name))
        for adding in edits.add:
            if not _applies(catalog, adding.parts, key):
                continue
            for name in adding.subparts:
                if name.lower() not in entries:
                    entries[name.lower()] = _Entry(name, SubpartProvenance(proposed_by=None, edit="added", by=adding.id),
                                                   objects=_class_names(catalog, adding.objects, cpart.object))
                    used.add(adding.id)
        if edits.reference is not None:
            entries = _apply_reference(entries, edits.reference.get(key, []), removed)
        for restricting in edits.restrict:
            if _applies(catalog, restricting.parts, key):
                used.update(_restrict(catalog, restricting, cpart.object, entries))
        subparts = [Subpart(name=e.name, category=f"{key}-{e.name}", objects=e.objects, provenance=e.provenance)
                    for e in sorted(entries.values(), key=lambda e: e.name.lower())]
        parts.append(TaxonomyPart(object=cpart.object, part=cpart.spin_name, partimagenet_id=cpart.id,
                                  subparts=subparts, removed=sorted(removed, key=lambda r: (r.name.lower(), r.by))))
    unused = sorted(rule.id for rule in edits.rules() if rule.id not in used)
    scores = proposer_scores(catalog, proposals, edits.reference) if edits.reference is not None else None
    return EditOutcome(parts=parts, unused_rules=unused, scores=scores)


REFERENCE_RULE = "reference"


def _apply_reference(entries: dict[str, _Entry], reference: Sequence[str], removed: list[RemovedSubpart]
                     ) -> dict[str, _Entry]:
    """The part's entries replaced by its reference list (``removed`` gains what is dropped).

    An entry matching a reference name keeps its provenance under that name (renamed by the reference
    when the names differ); a second entry matching the same name, and every entry matching none, is
    removed; reference names nobody matched are added.
    """
    out: dict[str, _Entry] = {}
    for entry in sorted(entries.values(), key=lambda e: e.name.lower()):
        keys = match_keys(entry.name)
        target = next((n for n in reference if n.lower() == entry.name.lower()), None) or next(
            (n for n in reference if match_keys(n) & keys), None)
        if target is None or target.lower() in out:
            removed.append(RemovedSubpart(name=entry.name, by=REFERENCE_RULE))
            continue
        provenance = entry.provenance
        if target != entry.name:
            provenance = SubpartProvenance(proposed_by=provenance.proposed_by, edit="renamed", by=REFERENCE_RULE,
                                           renamed_from=provenance.renamed_from or entry.name)
        out[target.lower()] = _Entry(target, provenance, entry.objects)
    for name in reference:
        if name.lower() not in out:
            out[name.lower()] = _Entry(name, SubpartProvenance(proposed_by=None, edit="added", by=REFERENCE_RULE))
    return out


def _class_names(catalog: Catalog, values: Sequence[str] | None, obj: str) -> list[str] | None:
    """The names, in catalogue order, of the classes of ``obj`` that ``values`` name (None: no restriction)."""
    if values is None:
        return None
    named = {name for value in values for name in catalog.classes_under(value, {obj})}
    return [name for name in catalog.class_names(obj) if name in named]


def _restrict(catalog: Catalog, rule: RestrictRule, obj: str, entries: dict[str, _Entry]) -> list[str]:
    """Restrict the named entries to the classes of ``obj`` the rule's objects name (within any earlier
    restriction); ``[rule.id]`` if one was there to restrict."""
    classes = _class_names(catalog, rule.objects, obj) or []
    found = [entries[name.lower()] for name in rule.subparts if name.lower() in entries]
    for entry in found:
        entry.objects = [c for c in classes if entry.objects is None or c in entry.objects]
        entry.provenance = entry.provenance.model_copy(update={"restricted_by": rule.id})
    return [rule.id] if found else []


def _applies(catalog: Catalog, patterns: Sequence[str], key: str) -> bool:
    return any(key in matching_parts(catalog, pattern) for pattern in patterns)
