"""The vocabulary's round kind: people adjudicate region descriptions (seed 003, "Human Verification";
:mod:`segbench.tasks.vocab.adjudication` says what is asked and reported).

``segbench rounds create vocab_adjudication KEY --report DIR`` asks about the descriptions of an
``evaluate vocab`` report (``--disagreements``: only where Sentence-BERT and the lexical mapping
disagree, the paper's second stage); each task shows the described region tinted and outlined, on the
photo when ``--images`` gives it, else on grey. ``rounds ingest KEY`` writes
``data/vocab/adjudication/KEY.report.{json,md}``. The label config (template ``vocab_adjudication``)
asks which category the description names and how. Registered in :mod:`segbench.registry`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal, TypedDict

import numpy as np
from PIL import Image

from segbench.annotation_ui.kinds import RoundKind
from segbench.annotation_ui.label_configs import LabelConfig, texts
from segbench.annotation_ui.rounds import RoundStore, new_round
from segbench.core import clock
from segbench.core.errors import InputError
from segbench.core.io import (
    atomic_write_bytes,
    atomic_write_text,
    open_image,
    png_bytes,
    read_bytes,
    read_json,
    write_json,
)
from segbench.core.release.gallery import overlay
from segbench.registry import Ref
from segbench.schemas.rounds import ItemAnswer, Round, RoundConfig, RoundItem
from segbench.tasks.vocab import adjudication
from segbench.tasks.vocab import panoptic_quality as pqm
from segbench.tasks.vocab.lac import decode_label_map
from segbench.tasks.vocab.scoring import read_input

DEFAULT_RELATIONS = ("exact", "synonym", "hyponym", "meronym", "none")


class _RelationsContext(TypedDict):
    """The context of the relations label config."""

    categories: list[str]
    relations: list[str]


def _prepare(config: str, values: dict[str, Any]) -> _RelationsContext:
    categories = texts(config, "categories", values["categories"])
    if "none" in categories:
        raise InputError(
            f"label config {config!r}: 'none' is added to the categories; it cannot be one",
            item=config,
            hint="rename that category",
        )
    return {"categories": categories, "relations": texts(config, "relations", values["relations"])}


ADJUDICATION_CONFIG = LabelConfig(
    "vocab_adjudication", required=("categories",), defaults={"relations": DEFAULT_RELATIONS}, prepare=_prepare
)

ADJUDICATION = RoundKind(
    name=adjudication.KIND,
    label_config=ADJUDICATION_CONFIG,
    report=Ref("segbench.flows.vocab.rounds:adjudication_report"),
    create=Ref("segbench.cli.vocab.adjudication:create_adjudication_command"),
    automatic_labels=Ref("segbench.flows.vocab.rounds:mapped_categories"),
)
ADJUDICATION_DIR = "vocab/adjudication"  # under the data root: task images, reports
REGION_COLOUR = (230, 25, 75)
GREY = 128


def create_adjudication_round(data_root: Path, key: str, report_dir: Path, *, repo: Path = Path("."),
                              images: Path | None = None, disagreements: bool = False, sample: int | None = None,
                              seed: int = 0, backend: Literal["labelstudio", "files"] = "labelstudio",
                              overlap: int = 3, overwrite: bool = False) -> Round:
    """Create and save adjudication round ``key`` over the descriptions of the ``evaluate vocab`` report
    ``report_dir`` (its ground truth read from ``repo`` as the evaluation read it).

    Raises:
        InputError: not an ``evaluate vocab`` report, its vocabulary or ground truth unreadable, no
            baseline with ``disagreements``, nothing to ask. RoundStateError: ``key`` exists.
    """
    from segbench.tasks.vocab.evaluation import MAPPINGS_NAME, load_vocabulary

    data_root, report_dir = Path(data_root), Path(report_dir)
    store = RoundStore(data_root / "rounds")
    store.check_free(key, overwrite)  # before its task images replace another round's
    mappings = report_dir / MAPPINGS_NAME
    if not mappings.is_file():
        raise InputError("not a vocabulary evaluation report (no mappings.json)", path=report_dir,
                         hint="give the --out folder of segbench evaluate vocab")
    metrics = read_json(report_dir / "metrics.json")
    evaluated = metrics.get("evaluated") if isinstance(metrics, dict) else None
    if not isinstance(evaluated, dict) or not {"rev", "vocab"} <= set(evaluated) or not isinstance(
            metrics.get("metrics"), dict):
        raise InputError("not a vocabulary evaluation's metrics.json", path=report_dir / "metrics.json",
                         hint="give the --out folder of segbench evaluate vocab, or evaluate again")
    kinds = metrics["metrics"].get("kinds")
    vocabulary = load_vocabulary(str(repo), evaluated["rev"], evaluated["vocab"])
    rows = adjudication.select_rows(adjudication.check_rows(read_json(mappings), source=str(mappings)),
                                    disagreements=disagreements, sample=sample, seed=seed, source=str(mappings))
    stuff = None if kinds is None else set(kinds["stuff"])
    items = []
    for row in rows:
        relative = f"{ADJUDICATION_DIR}/{key}/{adjudication.item_id(row)}.png"
        region = _region(repo, evaluated, row)
        atomic_write_bytes(data_root / relative, png_bytes(overlay(_photo(images, row["image_id"], region), [(region, REGION_COLOUR)],
                                                            alpha=0.4, tile=None)),
                           durable=False)
        data = {"description": row["description"], "image_id": str(row["image_id"]), "segment_id": row["segment_id"],
                "gt_class": row.get("gt_class"), "mapping": row["mapping"],
                "gt_stuff": None if stuff is None else row.get("gt_class") in stuff}
        if "baseline" in row:
            data["baseline"] = row["baseline"]
        items.append(RoundItem(item_id=adjudication.item_id(row), image=relative, width=region.shape[1],
                               height=region.shape[0], data=data))
    config = RoundConfig(label_config=adjudication.LABEL_CONFIG, overlap=overlap,
                         params={"categories": list(vocabulary.classes)})
    version = hashlib.sha256(read_bytes(mappings)).hexdigest()
    round_ = new_round(key, adjudication.KIND, "vocab", version, config, items, backend, clock.timestamp())
    return store.create(round_, overwrite=overwrite)


def _region(repo: Path, evaluated: dict[str, Any], row: dict[str, Any]) -> np.ndarray:
    """The described region of ``row`` as an (H, W) bool mask, from the maps the evaluation read."""
    image_id, segment = row["image_id"], row["segment_id"]
    if evaluated.get("segments"):  # the model's own segments, on disk
        path = Path(evaluated["segments"]) / f"{image_id}.png"
        path = path if path.is_absolute() else Path(repo) / path
        return pqm.decode_segment_ids(read_bytes(path), source=str(path)) == segment
    folder = evaluated.get("panoptic") or evaluated["gt"]
    data, where = read_input(str(repo), evaluated["rev"], f"{str(folder).rstrip('/')}/{image_id}.png")
    if evaluated.get("panoptic"):
        return pqm.decode_segment_ids(data, source=where) == segment
    return decode_label_map(data, source=where) == segment


def _photo(images: Path | None, image_id: str, region: np.ndarray) -> Image.Image:
    """The photo of ``image_id`` from ``images`` (``.jpg``, ``.jpeg`` or ``.png``); a grey canvas without ``images``.

    Raises:
        InputError: ``images`` has no photo of the image, or one of another size than its ground truth.
    """
    height, width = region.shape
    if images is None:
        return Image.new("RGB", (width, height), (GREY, GREY, GREY))
    found = [Path(images) / f"{image_id}{suffix}" for suffix in (".jpg", ".jpeg", ".png")]
    path = next((p for p in found if p.is_file()), None)
    if path is None:
        raise InputError(f"no photo of image {image_id!r}", path=images, item=f"image {image_id}",
                         hint=f"add {image_id}.jpg or .png, or leave out --images to show regions on grey")
    photo = open_image(path, mode="RGB", item=f"image {image_id}", hint="give the evaluated images")
    if photo.size != (width, height):
        raise InputError(f"the photo is {photo.size[0]}x{photo.size[1]}, its ground truth {width}x{height}",
                         path=path, hint="give the images the ground truth was drawn on")
    return photo


def mapped_categories(round_: Round, data_root: Path) -> dict[str, dict[str, str]]:
    """The category the lexical mapping gave each description (meronym level; ``none`` unmapped), so
    ``segbench view`` shows where people named another."""
    return {item.item_id: {"category": item.data["mapping"]["meronyms"] or adjudication.NONE}
            for item in round_.items}


def adjudication_report(round_: Round, items: list[ItemAnswer], data_root: Path) -> dict[str, Path]:
    """The hook ``rounds ingest`` runs after an adjudication round's answers are saved: its report."""
    rows = [item.data for item in round_.items]
    known = all(row["gt_stuff"] is not None for row in rows)
    stuff = {row["gt_class"] for row in rows if row["gt_stuff"]} if known else None
    report = adjudication.summarize(rows, items, stuff)
    folder = Path(data_root) / ADJUDICATION_DIR
    return {"adjudication": write_json(folder / f"{round_.key}.report.json", report, indent=1),
            "adjudication_md": atomic_write_text(folder / f"{round_.key}.report.md",
                                                 adjudication.render_markdown(round_.key, report))}
