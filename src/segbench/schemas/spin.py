"""SPIN records (seed 001): the subpart taxonomy, the language answer that proposes it, the people's
edit file, and the resolved crowd subpart masks.

The taxonomy (``data/spin/taxonomy.yaml``) and the resolved answers (``data/spin/crowd/resolved.json``)
are read by other builders, so their field names are a contract: change them only with a version bump.
:func:`load_taxonomy` and :func:`read_resolved` turn every malformed file into an :class:`InputError`
that names the file and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from segbench.core.errors import InputError, OnError
from segbench.core.io import read_text
from segbench.schemas.rebuild import PlanEvaluation, PlanPath, PlanTable

TAXONOMY_VERSION = 1
# Shown in label configs and used in category names '<Super>-<Part>-<Subpart>': no hyphen, so the
# name splits back; "/" joins alternatives kept as one category (Toes/Hoof).
SUBPART_NAME = r"^[A-Za-z0-9][A-Za-z0-9 '&/]*$"



# --- the language answer ---------------------------------------------------------------------------

class SubpartProposal(BaseModel):
    """What a language provider answers to a ``spin.subparts`` question: the visible subparts of one part."""

    model_config = ConfigDict(extra="forbid")

    object: str = Field(description="the super-category asked about, e.g. Quadruped")
    part: str = Field(description="the part asked about, e.g. Head")
    subparts: list[str] = Field(description="visible subparts of that part, singular nouns, e.g. Eye, Ear")


class SubpartVisibility(BaseModel):
    """What a language provider answers to a ``spin.visibility`` question: is a proposed subpart a part a
    person can see and outline in a photo of the object (not internal anatomy, a hidden component, a
    system or an abstract notion)?"""

    model_config = ConfigDict(extra="forbid")

    subpart: str = Field(description="the proposed subpart asked about, e.g. Skull")
    visible: bool = Field(description="true if a person could see and outline it in an ordinary photo")


# --- the people's edits ---------------------------------------------------------------------------

RULE_ID = r"^[a-z0-9][a-z0-9_.-]*$"


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str = Field(pattern=RULE_ID, description="named in the taxonomy's provenance")
    parts: list[str] = Field(default_factory=lambda: ["*"], min_length=1,
                             description="'<Super>-<Part>' patterns; '*' matches any super-category or part")
    note: str | None = Field(None, description="why the rule exists (kept for people, not used)")


class ExcludeRule(_Rule):
    subparts: list[str] = Field(min_length=1, description="proposed names to drop (case-insensitive)")


class AddRule(_Rule):
    subparts: list[str] = Field(min_length=1)
    objects: list[str] | None = Field(None, min_length=1,
                                      description="ImageNet class names or wnids; omitted = every class")


class RestrictRule(_Rule):
    subparts: list[str] = Field(min_length=1, description="subpart names of the final taxonomy (case-insensitive)")
    objects: list[str] = Field(min_length=1, description="ImageNet class names or wnids, or WordNet 3.0 synsets "
                                                         "(turtle.n.02) standing for every class under them")


class RenameRule(_Rule):
    from_: str = Field(alias="from")
    to: str


class TaxonomyEdits(BaseModel):
    """The people-edited file applied to the proposed subparts: exclude, then rename, then add."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    exclude: list[ExcludeRule] = Field(default_factory=list)
    rename: list[RenameRule] = Field(default_factory=list)
    add: list[AddRule] = Field(default_factory=list)
    reference: dict[str, list[str]] | None = Field(
        None, description="'<Super>-<Part>' → its final subparts, applied after the rules; exhaustive (a part "
                          "left out has none). Proposals matching a name are kept under it, the others removed")
    restrict: list[RestrictRule] = Field(default_factory=list, description="applied last: subparts asked "
                                         "only of some object classes")

    @model_validator(mode="after")
    def _unique_ids(self) -> TaxonomyEdits:
        ids = [rule.id for rule in self.rules()]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"rule id {repeated[0]!r} is used twice; provenance names rules by id")
        return self

    def rules(self) -> list[_Rule]:
        return [*self.exclude, *self.rename, *self.add, *self.restrict]


# --- the taxonomy ----------------------------------------------------------------------------------

class SubpartProvenance(BaseModel):
    model_config = ConfigDict(extra="forbid")

    proposed_by: str | None = Field(description="'<provider>:<model>' that proposed it; None if added by an edit")
    edit: Literal["kept", "added", "renamed"]
    by: str | None = Field(description="id of the edit rule that added or renamed it; None when kept as proposed")
    renamed_from: str | None = None
    restricted_by: str | None = Field(None, description="id of the rule that restricted it to some object classes")


class Subpart(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=SUBPART_NAME)
    category: str = Field(description="'<Super>-<Part>-<Subpart>', spin-api's category naming")
    objects: list[str] | None = Field(
        description="ImageNet class names or wnids this subpart is restricted to; None = every class")
    provenance: SubpartProvenance

    def applies_to(self, object_class: str | None, wnid: str | None = None) -> bool:
        """Whether the subpart is asked about for an object of class ``object_class`` (name or wnid)."""
        if self.objects is None:
            return True
        wanted = {o.lower() for o in self.objects}
        return any(v is not None and v.lower() in wanted for v in (object_class, wnid))


class RemovedSubpart(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    by: str = Field(description="id of the exclusion rule")


class TaxonomyPart(BaseModel):
    model_config = ConfigDict(extra="forbid")

    object: str
    part: str = Field(description="SPIN part name (Torso, Legs, Arm, Tire renamed from PartImageNet)")
    partimagenet_id: int = Field(ge=0)
    subparts: list[Subpart]
    removed: list[RemovedSubpart] = Field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.object}-{self.part}"


class TaxonomyProvider(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    model: str
    question_version: str


class TaxonomyEditsRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str
    sha256: str


class Taxonomy(BaseModel):
    """The SPIN subpart taxonomy: for every PartImageNet (super-category, part), its subparts."""

    model_config = ConfigDict(extra="forbid")

    version: int = TAXONOMY_VERSION
    provider: TaxonomyProvider
    edits: TaxonomyEditsRef
    parts: list[TaxonomyPart]

    @field_validator("parts")
    @classmethod
    def _unique_parts(cls, parts: list[TaxonomyPart]) -> list[TaxonomyPart]:
        keys = [p.key for p in parts]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            raise ValueError(f"part {repeated[0]} is listed twice")
        for part in parts:
            names = [s.name for s in part.subparts]
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise ValueError(f"{part.key} lists subpart {twice[0]} twice")
        return parts

    def part(self, object: str, part: str) -> TaxonomyPart:
        """The entry of (``object``, ``part``).

        Raises:
            InputError: no such pair (the message lists the parts of ``object``).
        """
        for entry in self.parts:
            if entry.object == object and entry.part == part:
                return entry
        known = ", ".join(p.part for p in self.parts if p.object == object) or "none"
        raise InputError(f"the taxonomy has no part {object}-{part}", item=f"{object}-{part}",
                         hint=f"parts of {object}: {known}")

    def subparts_for(self, object: str, part: str, object_class: str | None = None,
                     wnid: str | None = None) -> list[Subpart]:
        """The subparts asked about for one object of class ``object_class`` (all, if it is None)."""
        entry = self.part(object, part)
        if object_class is None and wnid is None:
            return list(entry.subparts)
        return [s for s in entry.subparts if s.applies_to(object_class, wnid)]


def load_taxonomy(path: str | Path) -> Taxonomy:
    """Read and validate ``taxonomy.yaml``.

    Raises:
        InputError: the file is missing, not YAML, or breaks the schema (the message names the field).
    """
    hint = "rebuild it with `segbench build spin-taxonomy`"
    return validate_file(Taxonomy, read_yaml_mapping(path, "taxonomy", hint=hint), path, hint=hint)


def read_yaml_mapping(path: str | Path, what: str, *, hint: str) -> dict[str, Any]:
    """The parsed YAML of ``path``, checked to be a mapping.

    Raises:
        InputError: missing file, a YAML syntax error (with its line) or a top level that is no mapping.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{what} file not found", path=path, hint=hint)
    try:
        data = yaml.safe_load(read_text(path, hint=hint))  # a directory, unreadable or non-UTF-8 file: InputError
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise InputError(f"not valid YAML{where}: {getattr(exc, 'problem', None) or exc}", path=path,
                         hint="fix the syntax (indentation, quotes, colons)") from exc
    if not isinstance(data, dict):
        raise InputError(f"a {what} file must be a YAML mapping, got {type(data).__name__}", path=path, hint=hint)
    return data


M = TypeVar("M", bound=BaseModel)


def validate_file(model: type[M], data: Any, path: str | Path | None, *, hint: str) -> M:
    """``model`` validated from ``data`` read from ``path``; a schema error names the file and field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(f"{first_error(exc)} ({exc.error_count()} problem(s))", path=path, hint=hint) from exc


def first_error(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]


# --- crowd answers -------------------------------------------------------------------------------------

class Rle(BaseModel):
    model_config = ConfigDict(extra="forbid")

    size: tuple[int, int]
    counts: str


class PartContext(BaseModel):
    """What the crowd import needs to know about the part one task shows: where it is and what it is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    image_id: int
    part_ann_id: int
    height: int = Field(gt=0)
    width: int = Field(gt=0)
    part_rle: Rle = Field(description="the PartImageNet part mask, compressed COCO RLE")
    object: str
    object_class: str
    part: str


class ResolvedSubpart(BaseModel):
    """One resolved subpart mask: the answer the dataset builder reads (``data/spin/crowd/resolved.json``)."""

    model_config = ConfigDict(extra="forbid")

    image_id: int
    part_ann_id: int
    object: str
    object_class: str
    part: str
    subpart: str
    category: str = Field(description="'<Super>-<Part>-<Subpart>'")
    segmentation: Rle
    area: int = Field(gt=0)
    polygons: int = Field(ge=1, description="polygons the chosen annotator drew for this subpart (medoid rule), or "
                                            "the separate regions of the crowd-kit aggregate mask")
    workers: list[str] = Field(description="annotators who said the part is visible (the voters)")
    agreement: float = Field(ge=0, le=1, description="share of voters who said the subpart is there")
    rule: str = Field(description="the resolution rule and its version")


def read_resolved(path: str | Path) -> list[ResolvedSubpart]:
    """Read ``resolved.json``.

    Raises:
        InputError: missing or malformed file, or a record breaking the schema (named by index).
    """
    from segbench.core.io import read_json

    data = read_json(path)
    if not isinstance(data, list):
        raise InputError("resolved subparts must be a JSON list", path=path,
                         hint="re-run `segbench spin import`")
    out = []
    for index, record in enumerate(data):
        try:
            out.append(ResolvedSubpart.model_validate(record))
        except ValidationError as exc:
            raise InputError(f"record {index}: {first_error(exc)}", path=path,
                             hint="re-run `segbench spin import`") from exc
    return out


# --- dataset build parameters ------------------------------------------------------------------------

class ReviewDecision(BaseModel):
    """What a review round decided about one subpart of one part (``data/spin/crowd/reviews.json``).

    It applies while ``resolved.json``'s record for the subpart is still the one the reviewer was shown
    (``shown``: its digest, ``None`` when nothing was outlined): a newer crowd answer needs its own review.
    """

    model_config = ConfigDict(extra="forbid")

    review: str = Field(description="the review round's key")
    image_id: int
    part_ann_id: int
    subpart: str
    verdict: Literal["redrawn", "absent", "again"] = Field(
        description="redrawn: the reviewer's outline replaces it; absent: it is not there; again: the whole part "
                    "goes back to be annotated again")
    shown: str | None = Field(description="digest of the outline the reviewer saw (None: none was shown)")
    reviewers: list[str]
    record: ResolvedSubpart | None = Field(None, description="the redrawn subpart (redrawn only)")


def read_reviews(path: str | Path) -> list[ReviewDecision]:
    """Read ``reviews.json`` (an empty list when there is none yet).

    Raises:
        InputError: a malformed file, or a record breaking the schema (named by index).
    """
    from segbench.core.io import read_json

    if not Path(path).is_file():
        return []
    data = read_json(path)
    if not isinstance(data, list):
        raise InputError("review decisions must be a JSON list", path=path,
                         hint="ingest the review rounds again: segbench rounds ingest KEY")
    out = []
    for index, record in enumerate(data):
        try:
            out.append(ReviewDecision.model_validate(record))
        except ValidationError as exc:
            raise InputError(f"record {index}: {first_error(exc)}", path=path,
                             hint="ingest the review rounds again: segbench rounds ingest KEY") from exc
    return out


class SpinBuildParams(BaseModel):
    """Everything that decides the content of a SPIN build (recorded in the manifest)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cap_per_supercategory: int = Field(
        1200, ge=1, description="images kept per super-category (SPIN's annotation budget, seed Sec. 3.1)")
    seed: int = Field(0, description="seeds the tie-break among images with equally many parts under the cap")
    on_error: OnError = Field(OnError.FAIL, description="fail on a bad source or crowd record, or skip and report it")


# --- the [spin] table of a rebuild plan ----------------------------------------------------------------------------

class SpinStep(PlanTable):
    """``[spin]``: the arguments of ``segbench build spin`` (taxonomy and crowd answers from the data root)."""

    partimagenet_root: PlanPath
    taxonomy: PlanPath | None = Field(None, description="default: <data root>/spin/taxonomy.yaml")
    resolved: PlanPath | None = Field(None, description="default: <data root>/spin/crowd/resolved.json")
    out: PlanPath | None = Field(None, description="default: <data root>/spin/dataset")
    params: SpinBuildParams = Field(default_factory=SpinBuildParams)


class SpinEvaluation(PlanEvaluation):
    """SPIN: predictions is a folder of ``spin_<split>_{wholes,parts,subparts}.json`` results."""

    dataset: Literal["spin"]
    split: Literal["train", "val", "test"] = "test"
    answers: PlanPath | None = None
    yes_rule: Literal["substring", "word"] = "substring"
    on_error: OnError = OnError.FAIL
