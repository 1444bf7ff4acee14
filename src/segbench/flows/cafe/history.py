"""The rounds behind a CAFE export: a verification round, the rounds of the batches it tops up,
and what people verified in each.

A top-up batch of candidates (``build cafe-candidates --top-up ROUND``) records the round it
tops up (``top_up_of`` in its manifest's params); the round made on it continues that chain. The
export of the last round exports the chain, and a further top-up reads the chain's verdicts to
measure how many edits people verify per source and edit type.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from segbench.core.errors import InputError, RoundStateError
from segbench.core.io import read_json
from segbench.core.manifest import read_manifest
from segbench.core.resume import hash_inputs
from segbench.flows.cafe.verification import candidates_version, check_version, read_candidates, work_candidates
from segbench.schemas.cafe import Candidate
from segbench.schemas.rounds import AnswersFile, Round, RoundStatus
from segbench.tasks.cafe import verification
from segbench.tasks.cafe.quotas import Cell

DRAWN_FILE = "targets.json"


@dataclass
class RoundVerdicts:
    """One ingested round of the chain: its candidates and why each was not verified (none: verified)."""

    round: Round
    candidates_path: Path
    answers_path: Path
    every: list[Candidate]
    asked: list[Candidate]
    reasons: dict[int, list[str]]

    @property
    def verified(self) -> list[Candidate]:
        return [c for c in self.asked if not self.reasons[c.id]]

    def answers_digest(self) -> str:
        """The sha256 of the round's answers file: what a build reading the round depends on."""
        return hash_inputs({"answers": self.answers_path}, hint=f"segbench rounds ingest {self.round.key}")["answers"]

    def outcomes(self) -> Counter[str]:
        """Verified, rejected, tied and unanswered items, and the candidates held out for gold."""
        out = Counter(verification.outcome(r) for r in self.reasons.values())
        out["held_out"] = len(self.every) - len(self.asked)
        return out


@dataclass
class Chain:
    """The verdicts of a chain of rounds, oldest first."""

    rounds: list[RoundVerdicts] = field(default_factory=list)

    @property
    def keys(self) -> list[str]:
        return [r.round.key for r in self.rounds]

    def asked(self) -> Counter[Cell]:
        """Answered items per source × edit type (unanswered ones say nothing about acceptance)."""
        return Counter(cell_of(c) for r in self.rounds for c in r.asked
                       if verification.outcome(r.reasons[c.id]) != "unanswered")

    def verified(self) -> Counter[Cell]:
        return Counter(cell_of(c) for r in self.rounds for c in r.verified)

    def drawn(self) -> set[str]:
        """Every target key an earlier batch drew, made into a candidate or not."""
        out: set[str] = set()
        for r in self.rounds:
            out |= {c.target.key for c in r.every}
            path = r.candidates_path / DRAWN_FILE
            if path.is_file():
                out |= set(read_json(path))
        return out

    def check_files(self) -> None:
        """Raises InputError: a candidate file differs from what its build's manifest lists (every
        file is read: an up-to-date export does not call this)."""
        for r in self.rounds:
            check_version(r.round, r.candidates_path)

    def require_answered(self, *, otherwise: str = "") -> None:
        """Raises RoundStateError: some items of a round of the chain have no answer to every question
        (the hint says to ingest again, ``otherwise`` what else the command offers)."""
        for r in self.rounds:
            unanswered = r.outcomes()["unanswered"]
            if unanswered:
                key = r.round.key
                raise RoundStateError(
                    f"{unanswered} of {len(r.asked)} items of round {key} have no answer to every question yet",
                    item=key, hint=f"ingest the round again once they are answered (segbench rounds ingest {key})"
                                   + (f", or {otherwise}" if otherwise else ""))

    def last_id(self) -> int:
        """The highest id the chain used, its rounds' gold items included (they are numbered after their
        batch), so a top-up's ids are new to every round of the chain."""
        return max([c.id for r in self.rounds for c in r.every]
                   + [int(item.item_id) for r in self.rounds for item in r.round.items if item.item_id.isdigit()],
                   default=0)


def cell_of(candidate: Candidate) -> Cell:
    """The candidate's source and edit type."""
    return candidate.target.source, candidate.plan.edit_type


def ingested(round_: Round) -> Round:
    """``round_``, checked to be an ingested CAFE verification round.

    Raises:
        InputError: another kind of round. RoundStateError: its answers are not ingested yet.
    """
    if round_.kind != verification.KIND:
        raise InputError(f"round {round_.key} is a {round_.kind} round, not {verification.KIND}",
                         hint="pass the key of a CAFE verification round")
    if round_.status not in (RoundStatus.INGESTED, RoundStatus.CLOSED):
        raise RoundStateError(f"status is {round_.status.value}; its answers are not ingested yet",
                              item=f"round {round_.key}", hint=f"segbench rounds ingest {round_.key}")
    return round_


def chain_of(data_root: Path, round_key: str) -> Chain:
    """The verdicts of ``round_key`` and of the rounds its candidates top up, oldest first.

    Raises:
        InputError / RoundStateError: a round of the chain is not an ingested CAFE verification
            round, its candidates changed, or the chain loops.
    """
    from segbench.annotation_ui.followups import final_key, report_round
    from segbench.annotation_ui.rounds import RoundStore

    store = RoundStore(Path(data_root) / "rounds")
    chain: list[RoundVerdicts] = []
    key: str | None = round_key
    while key is not None:
        if key in [r.round.key for r in chain]:
            raise InputError(f"the rounds' candidates top each other up in a loop ({key})", item=key,
                             hint="rebuild the top-up candidates with --top-up of an earlier round")
        round_ = ingested(store.load(key))
        # A follow-up stands for its chain: the root round's items are those asked about.
        verdicts = _verdicts(report_round(store, round_), Path(data_root) / round_.dataset,
                             store.answers_path(final_key(store, key)))
        chain.insert(0, verdicts)
        key = read_manifest(verdicts.candidates_path).params.get("top_up_of")
    return Chain(chain)


def _verdicts(round_: Round, candidates_path: Path, answers_path: Path) -> RoundVerdicts:
    if candidates_version(candidates_path) != round_.dataset_version:  # the files: Chain.check_files
        raise InputError(f"the candidates changed since round {round_.key} was created", path=candidates_path,
                         hint="restore the candidates the round was made on, or create a new round")
    every = read_candidates(candidates_path)
    asked = work_candidates(round_, every)
    answers = AnswersFile.model_validate(read_json(answers_path)).items
    reasons = {a.item_id: verification.verdict(a)[1] for a in answers}
    reasons_of = {c.id: reasons.get(str(c.id), ["unanswered"]) for c in asked}
    return RoundVerdicts(round=round_, candidates_path=candidates_path, answers_path=answers_path, every=every,
                         asked=asked, reasons=reasons_of)
