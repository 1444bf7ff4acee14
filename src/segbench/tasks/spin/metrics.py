"""SPIN metrics: per-level mIoU, abstention, SpCS, SeCS (seed 001, sections 4 and 5) and recognition mACC.

Evaluate one image → accumulate with ``+=`` → summarize. Reading and validating files is
:mod:`segbench.tasks.spin.inputs`' job; the report is :mod:`segbench.tasks.spin.report`'s.

Units. An *entity* is one ground-truth (image, level, category): the union of that category's
annotations in the image (SPIN annotates each (sub)part category once per image) — or, when the
predictions of that category name their annotation (``gt_id``), each annotation on its own (instance
level: two quadrupeds in one image are two entities). A prediction answers the prompt naming one entity, with a ``general`` prompt (super-category: "eyes of the quadruped") or a
``specific`` one (ImageNet class: "eyes of the antelope"); both answer the same entity and category id,
and each prompt kind is scored on its own. A prediction for a category the image does not hold (a model
choosing from a candidate list) is *unprompted*: it only adds false-positive pixels.

Definitions (what the seed leaves open is decided here and marked "choice"):
    mIoU       per level: mean over categories of Σ intersection / Σ union accumulated over the
               category's entities and unprompted predictions (choice: cumulative, as semantic
               segmentation does; the mean of per-entity IoUs is reported beside it). Categories
               with an empty union are left out.
    abstention an entity whose prediction is missing or empty (IoU 0); the rate per level is
               abstained / entities.
    SpCS       Eq. 1: mean of |child ∩ parent| / |child| over pairs (child, parent) of predictions whose
               entities are linked by the ground truth (``parent_id``); S2P = subpart→part,
               P2O = part→whole. Choice: a pair whose child is abstained is skipped (0/0), a pair whose
               parent is abstained is not a prediction pair and is skipped; both are counted.
               ``mean`` = (S2P + P2O) / 2 ("their mean", Table 2); ``pooled`` = Eq. 1 over the pairs of
               both relations (some Table 2 rows match one, some the other).
    SeCS       Eq. 2: per image and level a label map from the predictions (an overlap goes to the
               higher score, then the lower category id; a missing score counts as 1). X = pixels
               foreground at all three levels; M(x) = 1 iff subpart→part AND part→whole are entailed by
               the hierarchy (the ground truth's ``parent_id`` links; a part entails a whole of its
               super-category, whether the whole is the super-category or one of its ImageNet classes). SeCS = Σ M / |X| pooled over the pixels of all images ("mean of M(x) across
               all x ∈ X"). In the specific label space a subpart that the taxonomy restricts to some
               object classes is entailed only on images of those classes.
    mACC       recognition answers: see :mod:`segbench.tasks.spin.recognition`.

Arrays: masks are ``bool`` of shape (H, W) (pycocotools decodes Fortran-ordered; kept so); label maps
are ``int32`` (H, W), -1 = background, else a category id (SPIN's whole and part ids start at 0).
Metrics never mutate their inputs and never print.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple, Self

import numpy as np

from segbench.core.masks import CocoRle, rle_to_bitmap
from segbench.schemas.spin_metrics import (
    CategoryIoU,
    LevelIoU,
    LevelMiou,
    Levels,
    PromptMetrics,
    Relation,
    SeCS,
    SpCS,
    SpinMetrics,
    SupercategoryMetrics,
)
from segbench.tasks.spin.size_vs_iou import size_vs_iou

LEVELS = ("wholes", "parts", "subparts")
PROMPTS = ("general", "specific")
RELATIONS = {"s2p": ("subparts", "parts"), "p2o": ("parts", "wholes")}  # child level, parent level
DEFAULT_SCORE = 1.0

# seg stats: intersection, union, entities, abstained, sum of entity IoUs, unprompted predictions
_SEG, _SPATIAL, _SEMANTIC = 6, 4, 3


@dataclass(frozen=True)
class Hierarchy:
    """Category names per level and which category entails which.

    ``part_of``: subpart category id → its part category id. ``part_super`` / ``whole_super``: part and
    whole category id → its super-category name. Wholes may be super-categories (Quadruped) or
    ImageNet classes (antelope): a part entails a whole when both belong to the same super-category.
    A category missing from these maps is linked to nothing (it entails nothing).
    ``restricted``: subpart id → the object classes it applies to (taxonomy ``objects``), only for
    subparts the taxonomy restricts.
    """

    names: Mapping[str, Mapping[int, str]]
    part_of: Mapping[int, int]
    part_super: Mapping[int, str]
    whole_super: Mapping[int, str]
    restricted: Mapping[int, frozenset[str]] = field(default_factory=dict)

    def supercategory(self, level: str, category_id: int) -> str:
        """The super-category a category belongs to (``unknown`` when it is linked to none)."""
        if level == "subparts":
            category_id, level = self.part_of.get(category_id, -1), "parts"
        table = self.part_super if level == "parts" else self.whole_super
        return table.get(category_id, "unknown")

    @cached_property
    def lookup_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(part_lut, part_super_lut, whole_super_lut): ``part_lut[subpart id]`` = its part id (-1 if none);
        the other two map part and whole ids to a super-category index (-1 and -2 if none, so that two
        unlinked categories never entail each other)."""
        supers = {name: i for i, name in enumerate(sorted({*self.part_super.values(), *self.whole_super.values()}))}
        return (_lut(self.part_of, self.names["subparts"], -1),
                _lut({k: supers[v] for k, v in self.part_super.items()}, self.names["parts"], -1),
                _lut({k: supers[v] for k, v in self.whole_super.items()}, self.names["wholes"], -2))


def _lut(mapping: Mapping[int, int], domain: Iterable[int], missing: int) -> np.ndarray:
    lut = np.full(max([*domain, *mapping], default=0) + 1, missing, dtype=np.int64)
    for key, value in mapping.items():
        lut[key] = value
    return lut


class Prediction(NamedTuple):
    """One validated prediction; ``rle`` is a compressed RLE of the image's size. ``gt_id``: the
    ground-truth annotation it answers (instance level), or None for the category's union."""

    level: str
    category_id: int
    prompt: str
    rle: CocoRle
    score: float
    gt_id: int | None = None


class Instance(NamedTuple):
    """One ground-truth annotation: its category, mask and parent annotation id (None for wholes)."""

    category_id: int
    rle: CocoRle
    parent_id: int | None


class ImageTruth(NamedTuple):
    """The ground truth of one image: ``entities[level][category_id]`` = (RLEs, parent category id or None);
    ``instances[level][annotation id]`` = the annotations one by one."""

    image_id: int
    height: int
    width: int
    supercategory: str
    object_class: str | None
    entities: Mapping[str, Mapping[int, tuple[tuple[dict[str, Any], ...], int | None]]]
    instances: Mapping[str, Mapping[int, Instance]] = {}


def containment(child: np.ndarray, parent: np.ndarray) -> float | None:
    """|child ∩ parent| / |child| for two (H, W) bool masks; ``None`` for an empty child."""
    area = int(np.count_nonzero(child))
    return int(np.count_nonzero(child & parent)) / area if area else None


def label_map(masks: Sequence[tuple[int, float, np.ndarray]], shape: tuple[int, int]) -> np.ndarray:
    """(H, W) int32 label map from ``(category_id, score, mask)``; overlaps go to the higher score,
    then the lower category id; -1 = background."""
    out = np.full(shape, -1, dtype=np.int32, order="F")
    # Paint lowest priority first so that higher-priority masks overwrite it.
    for category_id, _, mask in sorted(masks, key=lambda m: (m[1], -m[0])):
        out[mask] = category_id
    return out


def entailed_pixels(
    subparts: np.ndarray, parts: np.ndarray, wholes: np.ndarray, hierarchy: Hierarchy,
    allowed_subparts: np.ndarray | None = None,
) -> tuple[int, int]:
    """(|X|, Σ M(x)) of Eq. 2 for three (H, W) label maps.

    ``allowed_subparts``: optional bool lookup table over subpart ids, False for subparts the image's
    object class cannot have (specific label space).
    """
    x = (subparts >= 0) & (parts >= 0) & (wholes >= 0)
    if not x.any():
        return 0, 0
    s, p, o = subparts[x], parts[x], wholes[x]
    part_lut, part_super, whole_super = hierarchy.lookup_tables
    ok = (part_lut[s] == p) & (part_super[p] == whole_super[o])
    if allowed_subparts is not None:
        ok &= allowed_subparts[s]
    return int(x.sum()), int(ok.sum())


def add_row(table: dict[Any, list[float]], key: Any, values: Sequence[float], width: int) -> None:
    row = table.setdefault(key, [0.0] * width)
    for i, v in enumerate(values):
        row[i] += v


@dataclass
class SpinAccumulator:
    """Sums that add over images (``+=`` combines shards).

    seg[(prompt, level, category)] = [intersection, union, entities, abstained, Σ entity IoU, unprompted];
    spatial[(prompt, relation, supercategory)] = [Σ containment, pairs, child abstained, parent abstained];
    semantic[(prompt, supercategory)] = [|X|, Σ M, images with X non-empty].
    """

    num_images: int = 0
    prompts: tuple[str, ...] = ()
    seg: dict[tuple[str, str, int], list[float]] = field(default_factory=dict)
    spatial: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)
    semantic: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    # (prompt, level) → (ground-truth pixels, IoU) of each entity, in image order: Table 5's regression
    sizes: dict[tuple[str, str], list[tuple[int, float]]] = field(default_factory=dict)

    def __iadd__(self, other: SpinAccumulator) -> Self:
        self.num_images += other.num_images
        self.prompts = tuple(p for p in PROMPTS if p in self.prompts or p in other.prompts)
        for mine, theirs, width in ((self.seg, other.seg, _SEG), (self.spatial, other.spatial, _SPATIAL),
                                    (self.semantic, other.semantic, _SEMANTIC)):
            for key, values in theirs.items():
                add_row(mine, key, values, width)
        for key, pairs in other.sizes.items():
            self.sizes.setdefault(key, []).extend(pairs)
        return self

    def update(self, image: ImageTruth, predictions: Sequence[Prediction], hierarchy: Hierarchy,
               prompts: Sequence[str]) -> None:
        """Score one image's predictions for each prompt kind in ``prompts``.

        A category some prediction answers by ``gt_id`` is scored per annotation (each one an entity,
        abstained without its own prediction); any other category as the union of its annotations.
        """
        self.num_images += 1
        self.prompts = tuple(p for p in PROMPTS if p in self.prompts or p in prompts)
        shape = (image.height, image.width)
        for prompt in prompts:
            answered = _Answered(image, [p for p in predictions if p.prompt == prompt], shape)
            self._segmentation(prompt, answered)
            self._spatial(prompt, image, answered)
            self._semantic(prompt, image, answered.all_masks(), hierarchy, shape)

    def _segmentation(self, prompt: str, answered: _Answered) -> None:
        for level, cat, gt, pred in answered.entities():
            abstained = pred is None or not pred.any()
            inter = 0 if abstained else int(np.count_nonzero(gt & pred))
            union = int(np.count_nonzero(gt)) if abstained else int(np.count_nonzero(gt | pred))
            if union:
                add_row(self.seg, (prompt, level, cat), [inter, union, 1, abstained, inter / union, 0], _SEG)
            if area := int(np.count_nonzero(gt)):
                self.sizes.setdefault((prompt, level), []).append((area, inter / union))
        for (level, cat), (_, mask) in answered.union.items():
            if cat not in answered.image.entities.get(level, {}):
                add_row(self.seg, (prompt, level, cat), [0, int(np.count_nonzero(mask)), 0, 0, 0, 1], _SEG)

    def _spatial(self, prompt: str, image: ImageTruth, answered: _Answered) -> None:
        for relation, (child_level, parent_level) in RELATIONS.items():
            for child, parent in answered.pairs(child_level, parent_level):
                key = (prompt, relation, image.supercategory)
                if child is None or not child.any():
                    add_row(self.spatial, key, [0, 0, 1, 0], _SPATIAL)
                elif parent is None or not parent.any():
                    add_row(self.spatial, key, [0, 0, 0, 1], _SPATIAL)
                else:  # a non-empty child has a containment
                    add_row(self.spatial, key, [containment(child, parent) or 0.0, 1, 0, 0], _SPATIAL)

    def _semantic(self, prompt: str, image: ImageTruth, masks: Sequence[tuple[str, int, float, np.ndarray]],
                  hierarchy: Hierarchy, shape: tuple[int, int]) -> None:
        subparts, parts, wholes = (label_map([(cat, score, mask) for lv, cat, score, mask in masks if lv == level],
                                             shape) for level in ("subparts", "parts", "wholes"))
        allowed = None
        if prompt == "specific" and hierarchy.restricted:
            allowed = np.ones(len(hierarchy.lookup_tables[0]), dtype=bool)
            for sub, classes in hierarchy.restricted.items():
                allowed[sub] = image.object_class in classes
        pixels, entailed = entailed_pixels(subparts, parts, wholes, hierarchy, allowed)
        if pixels:
            add_row(self.semantic, (prompt, image.supercategory), [pixels, entailed, 1], _SEMANTIC)

    def summarize(self, hierarchy: Hierarchy) -> SpinMetrics:
        """The metrics per prompt kind (see the report); recognition and skips are the evaluation's to add."""
        return SpinMetrics(num_images=self.num_images,
                           prompts={prompt: self._summarize_prompt(prompt, hierarchy) for prompt in self.prompts})

    def _summarize_prompt(self, prompt: str, hierarchy: Hierarchy) -> PromptMetrics:
        levels = Levels(**{level: _level_summary(self._seg_rows(prompt, level), hierarchy.names[level])
                           for level in LEVELS})
        per_super = {
            name: SupercategoryMetrics(
                miou=LevelMiou(**{level: _level_summary(self._seg_rows(prompt, level, hierarchy, name),
                                                        hierarchy.names[level]).miou for level in LEVELS}),
                spcs=self._spcs(prompt, name), secs=self._secs(prompt, name))
            for name in sorted(set(hierarchy.whole_super.values()))}
        return PromptMetrics(levels=levels, spcs=self._spcs(prompt), secs=self._secs(prompt), per_supercategory=per_super,
                             size_vs_iou={level: size_vs_iou(self.sizes.get((prompt, level), [])) for level in LEVELS})

    def _seg_rows(self, prompt: str, level: str, hierarchy: Hierarchy | None = None,
                  supercategory: str | None = None) -> dict[int, list[float]]:
        return {cat: values for (p, lv, cat), values in self.seg.items() if p == prompt and lv == level
                and (supercategory is None or hierarchy is not None
                     and hierarchy.supercategory(level, cat) == supercategory)}

    def _spcs(self, prompt: str, supercategory: str | None = None) -> SpCS:
        totals: dict[str, list[float]] = {}
        for relation in RELATIONS:
            total = [0.0] * _SPATIAL
            for (p, rel, sup), values in self.spatial.items():
                if p == prompt and rel == relation and supercategory in (None, sup):
                    total = [a + b for a, b in zip(total, values, strict=True)]
            totals[relation] = total
        relations = {relation: Relation(score=_ratio(t[0], t[1]), pairs=int(t[1]), child_abstained=int(t[2]),
                                        parent_abstained=int(t[3])) for relation, t in totals.items()}
        scores = [r.score for r in relations.values()]
        mean = None if any(s is None for s in scores) else sum(s for s in scores if s is not None) / len(scores)
        pooled = _ratio(sum(t[0] for t in totals.values()), sum(int(t[1]) for t in totals.values()))
        return SpCS(s2p=relations["s2p"], p2o=relations["p2o"], mean=mean, pooled=pooled)

    def _secs(self, prompt: str, supercategory: str | None = None) -> SeCS:
        pixels = entailed = images = 0.0
        for (p, sup), (x, m, n) in self.semantic.items():
            if p == prompt and supercategory in (None, sup):
                pixels, entailed, images = pixels + x, entailed + m, images + n
        return SeCS(score=_ratio(entailed, pixels), pixels=int(pixels), images=int(images))


class _Answered:
    """One image's predictions of one prompt kind beside its ground truth.

    ``union[(level, category)]`` = (score, mask) of the predictions without ``gt_id``;
    ``by_instance[(level, annotation id)]`` = (score, mask) of those with one.
    """

    def __init__(self, image: ImageTruth, predictions: Sequence[Prediction], shape: tuple[int, int]) -> None:
        self.image, self.shape = image, shape
        self.union = {(p.level, p.category_id): (p.score, rle_to_bitmap(p.rle).view(bool))
                      for p in predictions if p.gt_id is None}
        self.by_instance = {(p.level, p.gt_id): (p.score, rle_to_bitmap(p.rle).view(bool))
                            for p in predictions if p.gt_id is not None}
        self.per_instance = {(p.level, p.category_id) for p in predictions if p.gt_id is not None}

    def entities(self) -> Iterable[tuple[str, int, np.ndarray, np.ndarray | None]]:
        """(level, category, truth mask, predicted mask or None) per entity."""
        for level, cats in self.image.entities.items():
            for cat, (rles, _) in cats.items():
                if (level, cat) in self.per_instance:
                    for ann_id, instance in self._instances(level, cat):
                        yield level, cat, _decode_union([instance.rle], self.shape), self._mask(level, ann_id)
                else:
                    yield level, cat, _decode_union(rles, self.shape), self.category_mask(level, cat)

    def _instances(self, level: str, cat: int) -> list[tuple[int, Instance]]:
        return [(i, inst) for i, inst in sorted(self.image.instances.get(level, {}).items()) if inst.category_id == cat]

    def _mask(self, level: str, ann_id: int) -> np.ndarray | None:
        found = self.by_instance.get((level, ann_id))
        return None if found is None else found[1]

    def category_mask(self, level: str, cat: int) -> np.ndarray | None:
        """The union prediction of a category, or the union of its instance predictions."""
        if (level, cat) in self.union:
            return self.union[(level, cat)][1]
        masks = [m for i, _ in self._instances(level, cat) if (m := self._mask(level, i)) is not None]
        return np.logical_or.reduce(masks) if masks else None

    def pairs(self, child_level: str, parent_level: str) -> Iterable[tuple[np.ndarray | None, np.ndarray | None]]:
        """(child mask, parent mask) per child entity linked by the ground truth."""
        instances = self.image.instances
        for cat, (_, parent_cat) in self.image.entities.get(child_level, {}).items():
            # A part or subpart always has a parent; only wholes have none.
            if (child_level, cat) not in self.per_instance:
                assert parent_cat is not None
                yield self.category_mask(child_level, cat), self.category_mask(parent_level, parent_cat)
                continue
            for ann_id, instance in self._instances(child_level, cat):
                assert instance.parent_id is not None
                parent = instances[parent_level][instance.parent_id]
                parent_mask = (self._mask(parent_level, instance.parent_id)
                               if (parent_level, parent.category_id) in self.per_instance
                               else self.category_mask(parent_level, parent.category_id))
                yield self._mask(child_level, ann_id), parent_mask

    def all_masks(self) -> list[tuple[str, int, float, np.ndarray]]:
        """(level, category, score, mask) of every prediction, for the label maps."""
        out = [(lv, cat, score, mask) for (lv, cat), (score, mask) in self.union.items()]
        for (lv, ann_id), (score, mask) in self.by_instance.items():
            out.append((lv, self.image.instances[lv][ann_id].category_id, score, mask))
        return out


def _decode_union(rles: Sequence[Mapping[str, Any]], shape: tuple[int, int]) -> np.ndarray:
    out = np.zeros(shape, dtype=bool, order="F")
    for rle in rles:
        out |= rle_to_bitmap(rle).view(bool)
    return out


def _ratio(num: float, den: float) -> float | None:
    return float(num) / float(den) if den else None


def _level_summary(rows: Mapping[int, list[float]], names: Mapping[int, str]) -> LevelIoU:
    """mIoU and counts of one level from ``{category: seg stats}``."""
    categories = []
    for cat in sorted(rows):
        inter, union, entities, abstained, iou_sum, unprompted = rows[cat]
        categories.append(CategoryIoU(id=cat, name=names[cat], iou=_ratio(inter, union),
                                      mean_entity_iou=_ratio(iou_sum, entities), entities=int(entities),
                                      abstained=int(abstained), unprompted=int(unprompted)))
    ious = [iou for cat in sorted(rows) if (iou := _ratio(rows[cat][0], rows[cat][1])) is not None]
    entities = sum(row[2] for row in rows.values())
    return LevelIoU(
        miou=sum(ious) / len(ious) if ious else None,
        mean_entity_iou=_ratio(sum(rows[c][4] for c in rows), entities),
        entities=int(entities),
        abstained=int(sum(rows[c][3] for c in rows)),
        abstention_rate=_ratio(sum(rows[c][3] for c in rows), entities),
        unprompted_predictions=int(sum(rows[c][5] for c in rows)),
        categories=categories,
    )
