"""``segbench vocab map``: map descriptions onto a valid vocabulary (``evaluate vocab`` is in :mod:`cli_vocab_eval`).

:data:`app` is registered by :mod:`segbench.cli` as ``vocab``. Errors are segbench errors;
``segbench.cli.main`` turns them into a message and exit code 2. spaCy is imported inside the command.
"""

from __future__ import annotations

from pathlib import Path

import typer

from segbench import console
from segbench.core.errors import InputError

app = typer.Typer(help="Valid vocabularies: map descriptions onto them.", no_args_is_help=True)


@app.callback()
def _vocab_group() -> None:
    """Valid vocabularies: map descriptions onto them."""  # a callback keeps a one-command app a group


@app.command("map")
def map_command(
    vocab: Path = typer.Option(..., "--vocab", help="Vocabulary JSON ({class: {exact, synonyms, hyponyms, "
                                                    "meronyms, id}})."),
    descriptions: Path = typer.Option(..., "--descriptions", help="JSON list of {description, gt_class?}."),
    out: Path = typer.Option(..., "--out", help="Output JSON: the items plus nouns, hits and mapping."),
    spacy_model: str = typer.Option("en_core_web_sm", "--spacy-model", help="spaCy pipeline to parse with."),
) -> None:
    """Map each description to a class per lexical level (exact, +synonyms, +hyponyms, +meronyms)."""
    from segbench.schemas.vocab import LEVELS
    from segbench.core.io import read_json, write_json
    from segbench.tasks.vocab.lexical_mapping import load_nlp, map_descriptions, read_vocabulary

    vocabulary = read_vocabulary(vocab)
    items = read_json(descriptions)
    if not isinstance(items, list):
        raise InputError("descriptions must be a JSON list of objects", path=descriptions)
    rows = map_descriptions(vocabulary, items, load_nlp(spacy_model), source=descriptions)
    write_json(out, rows, indent=1)
    matched = {name: sum(r["mapping"][name] is not None for r in rows) for name in LEVELS}
    console.out.print(console.key_values("Lexical mapping", {
        "descriptions": len(rows),
        **{f"matched at {name}": f"{n} / {len(rows)}" for name, n in matched.items()},
        "output": str(out),
    }))
