"""Known-bad pairs for the CAFE verification round (gold items), rendered like every review image.

Two kinds, with answers that are certain (rules in :mod:`segbench.tasks.cafe.gold`):

* unedited: the candidate's *source* image (no edit made) with M outlined, so q- is really present
  and the known answer to ``negative_invalid`` is ``no``; needs the source's images folder;
* mask off the object: the edited image with M's outline moved beside the object, so the known
  answer to ``mask_fits`` is ``no``.

Gold is made from candidates held out of the round (:func:`held_out`): every candidate of photos
drawn at random, so no work item shows a gold item's photo, prompts or edit, and a worker cannot
tell gold from work by finding its twin. Gold items take new ids after the candidates' (never
shown: the round's tasks show opaque task ids), keep the candidate's q+, q- and edit type, and
their review images are made under
``data/rounds/<key>/gold/``; :func:`alike` then puts every review image, gold or not, at
``data/rounds/<key>/review/<task id>.jpg`` (the candidates folder stays as its manifest lists it),
so every task shows the same kind of path.
"""

from __future__ import annotations

import contextlib
import io
import random
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from segbench.annotation_ui.gold import QualityOptions
from segbench.core.errors import InputError
from segbench.core.io import atomic_write_bytes, open_image, read_bytes, source_path
from segbench.core.masks import rle_to_bitmap
from segbench.schemas.cafe import Candidate
from segbench.schemas.rounds import Round, RoundItem
from segbench.tasks.cafe import gold as cafe_gold
from segbench.tasks.cafe import verification


def _photo(candidate: Candidate) -> tuple[str, str]:
    return candidate.target.source, candidate.target.file_name


def held_out(candidates: Sequence[Candidate], quality: QualityOptions,
             sources: Mapping[str, Path]) -> list[Candidate]:
    """The candidates held out of the round to make its ``quality.gold`` known-bad items: photos drawn
    with ``quality.seed``, each with every candidate made from it, until enough gold can be made
    (a candidate makes one: unedited when ``sources`` has its photo, or its outline moved off).

    Raises:
        InputError: the candidates cannot make that much gold, or it would leave no work item.
    """
    if not quality.gold:
        return []
    by_photo: dict[tuple[str, str], list[Candidate]] = {}
    for candidate in sorted(candidates, key=lambda c: c.id):
        by_photo.setdefault(_photo(candidate), []).append(candidate)
    rng = random.Random(f"cafe-gold-photos:{quality.seed}")
    held: list[Candidate] = []
    usable = 0
    for photo in rng.sample(sorted(by_photo), len(by_photo)):
        if usable >= quality.gold:
            break
        held += by_photo[photo]
        usable += sum(c.target.source in sources or _moved_mask(c) is not None for c in by_photo[photo])
    if usable < quality.gold:
        raise InputError(f"--gold {quality.gold}: only {usable} known-bad pairs can be made from "
                         f"{len(candidates)} candidates", item="--gold",
                         hint=f"pass --gold {usable} or less, or --gold-source NAME=IMAGES_DIR")
    if len(held) == len(candidates) and quality.purpose != "qualification":
        raise InputError(f"--gold {quality.gold} holds out all {len(candidates)} candidates (gold is made from "
                         "candidates left out of the round, with every candidate of their photos)", item="--gold",
                         hint="pass a smaller --gold, or build more candidates")
    return held


def _moved_mask(candidate: Candidate) -> np.ndarray | None:
    return cafe_gold.shifted_off(rle_to_bitmap(candidate.target.segmentation))


def known_bad_items(data_root: Path, key: str, candidates_path: Path, held: Sequence[Candidate],
                    quality: QualityOptions, sources: Mapping[str, Path], first_id: int) -> list[RoundItem]:
    """``quality.gold`` known-bad items made from the ``held`` out candidates (:func:`held_out`), drawn
    with ``quality.seed``: half unedited when ``sources`` has the images of their source, the rest
    (or all) with the outline off the object. Their ids count from ``first_id`` (past every candidate's).

    Raises:
        InputError: fewer usable candidates than asked (the message says how many), an unreadable image.
    """
    if not quality.gold:
        return []
    rng = random.Random(f"cafe-gold:{quality.seed}")
    ordered = sorted(held, key=lambda c: c.id)
    unedited_pool = [c for c in ordered if c.target.source in sources]
    unedited = rng.sample(unedited_pool, min(len(unedited_pool), quality.gold // 2)) if sources else []
    moved = {c.id: m for c in ordered if c not in unedited and (m := _moved_mask(c)) is not None}
    need = quality.gold - len(unedited)
    if need > len(moved):
        raise InputError(f"--gold {quality.gold}: only {len(moved) + len(unedited)} known-bad pairs can be made from "
                         f"{len(held)} candidates held out", item="--gold",
                         hint=f"pass --gold {len(moved) + len(unedited)} or less, or --gold-source NAME=IMAGES_DIR")
    off = rng.sample([c for c in ordered if c.id in moved], need)
    out = []
    for number, candidate in enumerate(sorted([*unedited, *off], key=lambda c: c.id), start=first_id):
        mask = rle_to_bitmap(candidate.target.segmentation)
        if candidate.id in moved and candidate not in unedited:
            image = verification.outline(_edited(candidates_path, candidate), moved[candidate.id])
            known = cafe_gold.MASK_OFF
        else:
            image = verification.outline(_source(sources[candidate.target.source], candidate), mask)
            known = cafe_gold.UNEDITED
        relative = f"rounds/{key}/gold/{number}{Path(candidate.review_image).suffix}"
        atomic_write_bytes(Path(data_root) / relative, _jpeg(image))
        item = verification.round_items([candidate], candidates_path.name)[0]
        out.append(item.model_copy(update={"item_id": str(number), "image": relative, "gold": dict(known)}))
    return out


def review_path(key: str, task_id: str, suffix: str) -> str:
    """Where a round with gold shows an item's review image, relative to the data root."""
    return f"rounds/{key}/review/{task_id}{suffix}"


def alike(data_root: Path, round_: Round) -> list[RoundItem]:
    """The items of a round with gold, every review image copied to :func:`review_path` under its task
    id, so that the crowd's task files show one folder and one naming for all (a gold image's place
    or number would give it away). Gold images move there from ``gold/``."""
    out = []
    staged = (Path(data_root) / "rounds" / round_.key / "gold").resolve()
    for item in round_.items:
        relative = review_path(round_.key, round_.task_id(item.item_id), Path(item.image).suffix)
        source = Path(data_root) / item.image
        if not item.gold or source.is_file():  # (a gold image already moved by an earlier try is in place)
            atomic_write_bytes(Path(data_root) / relative, read_bytes(source))
            if source.resolve().is_relative_to(staged):  # made for this round; another round's image stays
                source.unlink()
        out.append(item.model_copy(update={"image": relative}) if item.image != relative else item)
    with contextlib.suppress(OSError):  # the staging folder, empty once every gold image has moved
        (Path(data_root) / "rounds" / round_.key / "gold").rmdir()
    return out


def _edited(candidates_path: Path, candidate: Candidate) -> Image.Image:
    return open_image(candidates_path / candidate.image, mode="RGB", item=f"candidate {candidate.id}")


def _source(images: Path, candidate: Candidate) -> Image.Image:
    target = candidate.target
    path = source_path(images, target.file_name, item=f"candidate {candidate.id} (file_name {target.file_name!r})")
    image = open_image(path, mode="RGB", item=f"candidate {candidate.id}", hint="pass the source's images folder")
    if image.size != (target.width, target.height):
        raise InputError(f"source image is {image.size[0]}x{image.size[1]}, the candidate's target "
                         f"{target.width}x{target.height}", path=path, item=f"candidate {candidate.id}",
                         hint=f"pass the images folder of source {target.source!r} with --gold-source")
    return image


def _jpeg(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.asarray(image)).save(buffer, format="JPEG", quality=95)
    return buffer.getvalue()
