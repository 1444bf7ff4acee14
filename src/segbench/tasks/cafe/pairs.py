"""CAFE prompt pairs: validation of (q+, q-), de-duplication, and the prompt-pair table.

A pair is kept only when the misleading prompt can be false while the positive one is true
(seed 000, Eq. 1: v(I, q+) = 1, v(I, q-) = 0). That rules out, checked on WordNet 3.0 nouns:

* ``identical`` — q- is q+ (after normalising case and spaces);
* ``synonym`` — q+ and q- share a WordNet sense (a synonym is valid wherever q+ is);
* ``hypernym`` — q- is q+ or a more general term for it (if a vase is there, a container is
  too); a q+ WordNet does not know ("white vase") is judged by its head noun ("vase");
* ``malformed`` — empty, longer than ``MAX_WORDS`` words, or characters a prompt does not have.

All senses count: WordNet does not know which sense a dataset means, so the checks err towards
rejecting. Rejected plans go to the skip report with the rule and a message.

The table follows the paper's description of CAFE: samples per source and edit type, unique
positive and negative prompts, distinct prompt pairs and the share of pairs that occur once.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from segbench.core.io import atomic_write_bytes, atomic_write_text, write_json
from segbench.core.reports import figure_png, markdown_table
from segbench.schemas.edits import EditType

MAX_WORDS = 6
_PROMPT = re.compile(r"^[a-z0-9][a-z0-9 '\-]*$")


def _senses(wn: Any, phrase: str) -> list[Any]:
    return wn.synsets("_".join(phrase.split()), pos="n")


def _up(synset: Any) -> set[Any]:
    return {synset, *synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms())}


def pair_problem(wn: Any, q_pos: str, q_neg: str) -> tuple[str, str] | None:
    """The first rule (q+, q-) breaks, as ``(rule, message)``; ``None`` for a valid pair.

    Args:
        wn: the NLTK WordNet reader (``segbench.providers.wordnet_data.load_wordnet``).
        q_pos, q_neg: normalised prompts (lower case, single spaces).
    """
    for name, phrase in (("q+", q_pos), ("q-", q_neg)):
        if not phrase or len(phrase.split()) > MAX_WORDS or not _PROMPT.match(phrase):
            return "malformed", f"{name} {phrase!r} must be 1-{MAX_WORDS} lower-case words"
    if q_pos == q_neg:
        return "identical", f"q+ and q- are both {q_pos!r}"
    pos, neg = _senses(wn, q_pos), _senses(wn, q_neg)
    shared = sorted(s.name() for s in set(pos) & set(neg))
    if shared:
        return "synonym", f"{q_pos!r} and {q_neg!r} share the WordNet sense {shared[0]}"
    head = q_pos.split()[-1]
    specific = pos or _senses(wn, head)
    if head == q_neg and not pos:
        return "hypernym", f"q- {q_neg!r} is the head noun of q+ {q_pos!r}, so it is valid wherever q+ is"
    for sense in specific:
        above = _up(sense) & set(neg)
        if above:
            return "hypernym", (f"q- {q_neg!r} ({sorted(s.name() for s in above)[0]}) is a more general term "
                                f"for q+ {q_pos!r} ({sense.name()})")
    return None


def deduplicate(keys: Sequence[str]) -> tuple[list[int], list[int]]:
    """Positions of the first occurrence of each key, and of the repeats (in input order)."""
    seen: set[str] = set()
    kept: list[int] = []
    repeats: list[int] = []
    for position, key in enumerate(keys):
        (repeats if key in seen else kept).append(position)
        seen.add(key)
    return kept, repeats


class PairCount(TypedDict):
    q_pos: str
    q_neg: str
    count: int


class PairStatistics(TypedDict):
    """The prompt pairs of a set of samples (``pairs.json``)."""

    samples: int
    by_source: dict[str, dict[str, int]]  # source → edit type → count, with "total"
    by_edit_type: dict[str, int]
    unique_positive: int
    unique_negative: int
    prompt_pairs: int  # distinct (q+, q-)
    pairs_once: int
    pairs_once_share: float | None  # of the distinct pairs; None without any
    most_frequent_pairs: list[PairCount]  # the ten most frequent
    pair_sizes: list[int]  # samples per distinct pair, largest first (the long tail of Fig. 2)


def pair_statistics(rows: Iterable[Mapping[str, Any]]) -> PairStatistics:
    """The prompt-pair description of a set of samples.

    Args:
        rows: one per sample with ``source``, ``edit_type`` (SM/CC/OC), ``q_pos``, ``q_neg``.
    """
    rows = list(rows)
    abbrs = [t.name for t in EditType]
    by_source: dict[str, dict[str, int]] = {}
    for row in rows:
        counts = by_source.setdefault(row["source"], {a: 0 for a in abbrs} | {"total": 0})
        counts[row["edit_type"]] += 1
        counts["total"] += 1
    pairs = Counter((row["q_pos"], row["q_neg"]) for row in rows)
    once = sum(1 for n in pairs.values() if n == 1)
    return {
        "samples": len(rows),
        "by_source": dict(sorted(by_source.items())),
        "by_edit_type": {a: sum(1 for r in rows if r["edit_type"] == a) for a in abbrs},
        "unique_positive": len({r["q_pos"] for r in rows}),
        "unique_negative": len({r["q_neg"] for r in rows}),
        "prompt_pairs": len(pairs),
        "pairs_once": once,
        "pairs_once_share": once / len(pairs) if pairs else None,
        "most_frequent_pairs": [{"q_pos": p, "q_neg": n, "count": c}
                                for (p, n), c in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[:10]],
        "pair_sizes": sorted(pairs.values(), reverse=True),
    }


FIGURE_NAME = "summary.png"


def write_pair_tables(folder: Path, stats: PairStatistics, *, title: str) -> list[Path]:
    """``prompt_pairs.{json,md}`` and the figure they show, in ``folder``."""
    return [write_json(folder / "prompt_pairs.json", stats, indent=1),
            atomic_write_text(folder / "prompt_pairs.md", pair_markdown(stats, title=title)),
            atomic_write_bytes(folder / FIGURE_NAME, pair_figure(stats))]


def pair_figure(stats: PairStatistics) -> bytes:
    """The paper's Fig. 2 as a PNG: samples per source stacked by edit type, and how many samples each
    distinct prompt pair has (the long tail: most pairs occur once)."""
    from matplotlib.figure import Figure  # here: matplotlib is slow to import and only the figure needs it

    abbrs = [t.name for t in EditType]
    fig = Figure(figsize=(10, 4))
    by_source, by_pair = fig.subplots(1, 2)
    sources = list(stats["by_source"])
    bottom = [0] * len(sources)
    for abbr in abbrs:
        heights = [stats["by_source"][s][abbr] for s in sources]
        bars = by_source.bar(sources, heights, bottom=bottom, label=f"{abbr} ({stats['by_edit_type'][abbr]})")
        by_source.bar_label(bars, labels=[str(h) if h else "" for h in heights], label_type="center", fontsize=8)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    by_source.set(title=f"{stats['samples']} samples per source and edit type", ylabel="samples")
    by_source.legend(fontsize=8)
    sizes = Counter(stats["pair_sizes"])
    shown = sorted(sizes)
    bars = by_pair.bar([str(n) for n in shown], [sizes[n] for n in shown], color="tab:gray")
    by_pair.bar_label(bars, fontsize=8)
    once = stats["pairs_once_share"]
    by_pair.set(title=(f"{stats['prompt_pairs']} prompt pairs ({stats['unique_positive']} q+, "
                       f"{stats['unique_negative']} q-)" + (f": {once:.1%} occur once" if once is not None else "")),
                xlabel="samples with the pair", ylabel="prompt pairs")
    fig.tight_layout()
    return figure_png(fig)


def pair_markdown(stats: PairStatistics, *, title: str) -> str:
    """The statistics as Markdown: samples per source × edit type, then the prompt counts."""
    abbrs = [t.name for t in EditType]
    source_rows = [[source, *(c[a] for a in abbrs), c["total"]] for source, c in stats["by_source"].items()]
    source_rows.append(["total", *(stats["by_edit_type"][a] for a in abbrs), stats["samples"]])
    share = stats["pairs_once_share"]
    summary: list[list[Any]] = [["positive prompts (unique)", stats["unique_positive"]],
               ["negative prompts (unique)", stats["unique_negative"]],
               ["prompt pairs (distinct)", stats["prompt_pairs"]],
               ["pairs that occur once", f"{stats['pairs_once']} ({share:.1%})" if share is not None else "0"]]
    frequent = [[p["q_pos"], p["q_neg"], p["count"]] for p in stats["most_frequent_pairs"]]
    return (f"# {title}\n\n![Samples per source and edit type; samples per prompt pair]({FIGURE_NAME})\n\n"
            "## Samples per source and edit type\n\n"
            + markdown_table(["source", *abbrs, "total"], source_rows)
            + "\n## Prompts\n\n" + markdown_table(["", "count"], summary)
            + "\n## Most frequent pairs\n\n" + markdown_table(["q+", "q-", "samples"], frequent))
