"""What changed between two SPIN taxonomies: subparts added, removed and renamed per part, and
provenance changes — so that a person reviewing a rebuild reads a short list, not two YAML files.

Pure functions: :func:`taxonomy_diff` compares, :func:`diff_markdown` renders (the build prints it
and writes ``taxonomy.diff.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from segbench.schemas.spin import Subpart, Taxonomy, TaxonomyPart
from segbench.tasks.spin.taxonomy_edits import ProposerScore, total_score


@dataclass
class PartDiff:
    part: str  # <Super>-<Part>
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)  # (old name, new name)
    changed: list[tuple[str, str]] = field(default_factory=list)  # (name, what changed)

    def empty(self) -> bool:
        return not (self.added or self.removed or self.renamed or self.changed)


@dataclass
class TaxonomyDiff:
    header: list[str] = field(default_factory=list)  # "provider: wordnet:wordnet-3.0 → openai:gpt-4o"
    parts_added: list[str] = field(default_factory=list)
    parts_removed: list[str] = field(default_factory=list)
    parts: list[PartDiff] = field(default_factory=list)  # only parts with a change
    first_build: bool = False
    proposer: list[ProposerScore] | None = None  # the proposals against the reference, before the edits
    not_visible: dict[str, list[str]] | None = None  # part → proposals the visibility check dropped

    def empty(self) -> bool:
        return not (self.header or self.parts_added or self.parts_removed or self.parts)

    def counts(self) -> dict[str, int]:
        return {"subparts_added": sum(len(p.added) for p in self.parts),
                "subparts_removed": sum(len(p.removed) for p in self.parts),
                "subparts_renamed": sum(len(p.renamed) for p in self.parts),
                "provenance_changed": sum(len(p.changed) for p in self.parts),
                "parts_added": len(self.parts_added), "parts_removed": len(self.parts_removed)}


def taxonomy_diff(old: Taxonomy | None, new: Taxonomy) -> TaxonomyDiff:
    """Compare ``old`` (None on a first build) with ``new``.

    A subpart counts as renamed when the new one says ``renamed_from`` an old name that is gone.
    """
    if old is None:
        diff = TaxonomyDiff(first_build=True)
        diff.parts_added = [p.key for p in new.parts]
        diff.parts = [PartDiff(p.key, added=[s.name for s in p.subparts]) for p in new.parts if p.subparts]
        return diff
    diff = TaxonomyDiff(header=_header_changes(old, new))
    before = {p.key: p for p in old.parts}
    after = {p.key: p for p in new.parts}
    diff.parts_added = [k for k in after if k not in before]
    diff.parts_removed = [k for k in before if k not in after]
    for key, part in after.items():
        if key in before:
            change = _part_diff(before[key], part)
        else:
            change = PartDiff(key, added=[s.name for s in part.subparts])
        if not change.empty():
            diff.parts.append(change)
    for key in diff.parts_removed:
        diff.parts.append(PartDiff(key, removed=[s.name for s in before[key].subparts]))
    return diff


def _header_changes(old: Taxonomy, new: Taxonomy) -> list[str]:
    out = []
    pairs = [("provider", f"{old.provider.name}:{old.provider.model}", f"{new.provider.name}:{new.provider.model}"),
             ("question version", old.provider.question_version, new.provider.question_version),
             ("edit file", old.edits.file, new.edits.file),
             ("edit file sha256", old.edits.sha256[:12], new.edits.sha256[:12])]
    for what, a, b in pairs:
        if a != b:
            out.append(f"{what}: {a} → {b}")
    return out


def _part_diff(old: TaxonomyPart, new: TaxonomyPart) -> PartDiff:
    before: dict[str, Subpart] = {s.name: s for s in old.subparts}
    after: dict[str, Subpart] = {s.name: s for s in new.subparts}
    gone = [n for n in before if n not in after]
    came = [n for n in after if n not in before]
    diff = PartDiff(new.key)
    for name in list(came):
        source = after[name].provenance.renamed_from
        if source is not None and source in gone:
            diff.renamed.append((source, name))
            gone.remove(source)
            came.remove(name)
    diff.added, diff.removed = came, gone
    for name in (n for n in after if n in before):
        what = _what_changed(before[name], after[name])
        if what:
            diff.changed.append((name, what))
    return diff


def _what_changed(a: Subpart, b: Subpart) -> str:
    changes = []
    pa, pb = a.provenance, b.provenance
    if (pa.edit, pa.by) != (pb.edit, pb.by):
        changes.append(f"{_edit(pa.edit, pa.by)} → {_edit(pb.edit, pb.by)}")
    if pa.proposed_by != pb.proposed_by:
        changes.append(f"proposed by {pa.proposed_by or 'nobody'} → {pb.proposed_by or 'nobody'}")
    if a.objects != b.objects:
        changes.append(f"objects {_objects(a.objects)} → {_objects(b.objects)}")
    return "; ".join(changes)


def _edit(edit: str, by: str | None) -> str:
    return f"{edit} by {by}" if by else edit


def _objects(objects: list[str] | None) -> str:
    return "all" if objects is None else "[" + ", ".join(objects) + "]"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def proposer_markdown(scores: list[ProposerScore]) -> list[str]:
    """The proposer's recall and precision against the reference, pooled and per part."""
    total = total_score(scores)
    lines = ["## Proposer against the reference (before the edits)", "",
             f"Recall {_pct(total.recall)} ({total.matched_reference} of {total.reference} reference subparts "
             f"proposed), precision {_pct(total.precision)} ({total.matched_proposals} of {total.proposed} "
             "proposals in the reference).", "",
             "| part | reference | proposed | recall | precision |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {s.part} | {s.reference} | {s.proposed} | {_pct(s.recall)} | {_pct(s.precision)} |" for s in scores]
    return [*lines, ""]


def not_visible_markdown(not_visible: dict[str, list[str]]) -> list[str]:
    """The proposals the visibility check dropped before anyone saw them, per part."""
    total = sum(len(names) for names in not_visible.values())
    lines = ["## Proposals dropped as not visible (before the edits)", "", f"{total} proposals dropped.", ""]
    lines += [f"- {part}: {', '.join(names)}" for part, names in not_visible.items() if names]
    return [*lines, ""] if total else lines


class ScoreRow(TypedDict):
    part: str
    reference: int
    proposed: int
    matched_reference: int
    matched_proposals: int
    recall: float | None
    precision: float | None


class ProposerJson(TypedDict):
    total: ScoreRow
    parts: list[ScoreRow]


class PartChanges(TypedDict):
    part: str
    added: list[str]
    removed: list[str]
    renamed: list[list[str]]
    changed: list[list[str]]


class DiffJson(TypedDict):
    """The taxonomy diff as the build summary reports it."""

    first_build: bool
    header: list[str]
    proposer: ProposerJson | None
    not_visible: dict[str, list[str]] | None
    parts_added: list[str]
    parts_removed: list[str]
    counts: dict[str, int]
    parts: list[PartChanges]


def _score_row(score: ProposerScore) -> ScoreRow:
    return {"part": score.part, "reference": score.reference, "proposed": score.proposed,
            "matched_reference": score.matched_reference, "matched_proposals": score.matched_proposals,
            "recall": score.recall, "precision": score.precision}


def proposer_json(scores: list[ProposerScore]) -> ProposerJson:
    return {"total": _score_row(total_score(scores)), "parts": [_score_row(s) for s in scores]}


def diff_markdown(diff: TaxonomyDiff, *, title: str = "SPIN taxonomy changes") -> str:
    """The diff as Markdown (also readable as plain text on a terminal)."""
    lines = [f"# {title}", ""]
    if diff.not_visible is not None:
        lines += not_visible_markdown(diff.not_visible)
    if diff.proposer is not None:
        lines += proposer_markdown(diff.proposer)
    if diff.first_build:
        lines += ["First build: no previous taxonomy.", ""]
    elif diff.empty():
        return "\n".join([*lines, "No changes.", ""])
    lines += [f"- {change}" for change in diff.header]
    lines += [f"- part added: {k}" for k in diff.parts_added if not diff.first_build]
    lines += [f"- part removed: {k}" for k in diff.parts_removed]
    if diff.header or (diff.parts_added and not diff.first_build) or diff.parts_removed:
        lines.append("")
    for part in diff.parts:
        lines.append(f"## {part.part}")
        lines += [f"- added: {name}" for name in part.added]
        lines += [f"- removed: {name}" for name in part.removed]
        lines += [f"- renamed: {a} → {b}" for a, b in part.renamed]
        lines += [f"- changed: {name}: {what}" for name, what in part.changed]
        lines.append("")
    return "\n".join(lines)


def diff_json(diff: TaxonomyDiff) -> DiffJson:
    return {"first_build": diff.first_build, "header": diff.header,
            "proposer": proposer_json(diff.proposer) if diff.proposer is not None else None,
            "not_visible": diff.not_visible, "parts_added": diff.parts_added,
            "parts_removed": diff.parts_removed, "counts": diff.counts(),
            "parts": [{"part": p.part, "added": p.added, "removed": p.removed,
                       "renamed": [list(r) for r in p.renamed], "changed": [list(c) for c in p.changed]}
                      for p in diff.parts]}
