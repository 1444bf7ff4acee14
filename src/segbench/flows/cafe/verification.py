"""The CAFE verification round (seed 000): people check each candidate edit.

``create_cafe_verification`` makes a round (kind ``cafe_verification``) with one item per
candidate of ``<data root>/cafe_candidates``; the generic round flows launch and ingest it
(``segbench rounds launch|ingest``), and after each ingest :func:`write_verification_report`
writes ``<data root>/cafe_verification/<key>.{json,md}``. The export of what the round verified
is :mod:`segbench.flows.cafe.export`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from prefect import flow

from segbench.annotation_ui.gold import QualityOptions, with_quality
from segbench.core import clock
from segbench.core.errors import InputError
from segbench.core.io import atomic_write_text, fingerprint, read_text, write_json
from segbench.core.manifest import read_manifest, verify_outputs
from segbench.flows.cafe.gold import alike, held_out, known_bad_items
from segbench.flows.prefect_ui import run_name
from segbench.schemas.cafe import Candidate
from segbench.schemas.rounds import ItemAnswer, Round, RoundConfig
from segbench.tasks.cafe import verification

CANDIDATES_DIR = "cafe_candidates"


def candidates_version(candidates: Path) -> str:
    """A content version of a candidate build: the fingerprint of its outputs' hashes."""
    return fingerprint(read_manifest(candidates).outputs)


def read_candidates(candidates: Path) -> list[Candidate]:
    """The candidates of a build, in id order.

    Raises:
        InputError: no candidate build there, or a malformed line (named by its number).
    """
    path = Path(candidates) / "candidates.jsonl"
    if not path.is_file():
        raise InputError("no CAFE candidates found", path=path, hint="build them first: segbench build cafe-candidates")
    out = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        try:
            out.append(Candidate.model_validate_json(line))
        except ValueError as exc:
            raise InputError(f"line {number} is not a candidate ({type(exc).__name__})", path=path,
                             hint="rebuild the candidates") from exc
    return sorted(out, key=lambda c: c.id)


@flow(name="cafe-verification-create", flow_run_name=run_name("cafe-verification-create", ("key",)))
def create_cafe_verification(data_root: Path, key: str, backend: Literal["labelstudio", "files"] = "labelstudio",
                             overlap: int = 3, overwrite: bool = False,
                             candidates_dir: str = CANDIDATES_DIR, quality: QualityOptions = QualityOptions(),
                             gold_sources: dict[str, Path] | None = None) -> Round:
    """Create a verification round over the candidates (``data/rounds/<key>.json``).

    ``quality.gold`` known-bad pairs (see :func:`segbench.flows.cafe.gold.known_bad_items`; with
    ``gold_sources``, source name → images folder, half are unedited images) are made from candidates
    held out of the round with their photos (:func:`segbench.flows.cafe.gold.held_out`) and mixed in, their
    review images written under ``data/rounds/<key>/review/`` beside copies of the others'; a gold
    file adds more.

    Raises:
        InputError: the candidates are not built, bad gold options. RoundStateError: the key exists
            (unless ``overwrite``).
    """
    from segbench.annotation_ui.rounds import RoundStore, new_round

    candidates_path = Path(data_root) / candidates_dir
    candidates = read_candidates(candidates_path)
    held = held_out(candidates, quality, gold_sources or {})
    round_ = new_round(
        key=key, kind=verification.KIND, dataset=candidates_dir, dataset_version=candidates_version(candidates_path),
        config=RoundConfig(label_config=verification.LABEL_CONFIG, overlap=overlap),
        items=verification.round_items([c for c in candidates if c not in held], candidates_dir), backend=backend,
        now=clock.timestamp())
    store = RoundStore(Path(data_root) / "rounds")
    gold = known_bad_items(Path(data_root), key, candidates_path, held, quality, gold_sources or {},
                           first_id=max((c.id for c in candidates), default=0) + 1)
    round_ = with_quality(round_, gold, quality, store)
    if gold:
        note = f"made from {len(held)} candidates held out of the round with their photos"
        round_ = round_.model_copy(update={"items": alike(Path(data_root), round_),
                                           "gold_selection": "; ".join(filter(None, [round_.gold_selection, note]))})
    store.create(round_, overwrite=overwrite)
    return round_


def check_version(round_: Round, candidates_path: Path) -> None:
    """The candidates are those the round was made on, and their files are those their manifest lists."""
    drift = verify_outputs(candidates_path)
    if any(drift.values()):
        changed = ", ".join(f"{kind}: {', '.join(paths[:3])}" for kind, paths in drift.items() if paths)
        raise InputError(f"the candidates changed since round {round_.key} was created ({changed})",
                         path=candidates_path, hint="rebuild the candidates with the same inputs and seed, "
                         "or create a new round")
    if candidates_version(candidates_path) != round_.dataset_version:
        raise InputError(f"the candidates changed since round {round_.key} was created", path=candidates_path,
                         hint="restore the candidates the round was made on, or create a new round")


def work_candidates(round_: Round, candidates: list[Candidate]) -> list[Candidate]:
    """The candidates the round asks about: all but those held out of it to make its gold."""
    asked = {item.item_id for item in round_.items if not item.gold}
    return [c for c in candidates if str(c.id) in asked]


def write_verification_report(round_: Round, answers: list[ItemAnswer], data_root: Path) -> dict[str, Path]:
    """Verified counts per edit type and the reasons for rejection; JSON and Markdown."""
    candidates_path = Path(data_root) / round_.dataset
    check_version(round_, candidates_path)
    candidates = read_candidates(candidates_path)
    in_round = work_candidates(round_, candidates)
    table = verification.verification_table(in_round, answers)
    out = Path(data_root) / "cafe_verification"
    held = len(candidates) - len(in_round)
    json_path = write_json(out / f"{round_.key}.json", {"round": round_.key, "dataset_version": round_.dataset_version,
                                                       "held_out_for_gold": held, **table.model_dump(mode="json")},
                           indent=1)
    md_path = atomic_write_text(out / f"{round_.key}.md", verification.verification_markdown(
        table, round_key=round_.key, dataset_version=round_.dataset_version, held_out=held))
    return {"verification_json": json_path, "verification_markdown": md_path}
