"""CAFE edit plans: the ``cafe.edit_plan`` question, its offline WordNet answer, and the plan record.

For each target and edit type a language provider answers a :class:`PlanAnswer` (the pattern,
scene or material, the prompt pair q+ / q-, and the edit instruction) which becomes a
:class:`~segbench.schemas.edits.EditPlan`. The prompt pair follows seed 000, Sec. 3:

* SM — another object's surface pattern is painted on the target: q+ = the object, q- = the
  pattern's object (vase / watermelon).
* CC — the surroundings become an implausible environment: q+ = the object, q- = the concept the
  new context suggests (skateboarder / snowboarder).
* OC — the target is re-rendered in another material: q+ = the material rendering, q- = the
  original identity (amethyst crystal / living dove).

Offline, :func:`offline_plan` answers from WordNet with seeded picks among curated lists, each
entry checked against WordNet (a pattern noun must be a fruit or an animal unrelated to the
object; a material must be a WordNet substance; a context row applies to the object's hypernyms).
The offline WordNet provider reaches it through :data:`EDIT_PLAN_ANSWER`, listed in ``segbench.registry``.

What does not belong here: validating the pair (``pairs.py``), calling an image editor.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from segbench.core.errors import ProviderError
from segbench.providers.base import OfflineAnswer, Question
from segbench.schemas.cafe import PlanAnswer, Target
from segbench.schemas.edits import EditPlan, EditType

T = TypeVar("T", bound=BaseModel)

QUESTION_KIND = "cafe.edit_plan"
PROMPT_VERSION = "1"  # bump when SYSTEM_PROMPT, the user prompt or PlanAnswer changes
OFFLINE_RULE_VERSION = "1"  # bump when offline_plan answers differently; part of its cache keys

SYSTEM_PROMPT = """You design counterfactual image edits for CAFE, a benchmark that tests whether \
segmentation models reject prompts that look plausible but are semantically invalid.
Each edit changes one target object (given by its mask) and comes with two short noun phrases:
q_pos, valid in the edited image, and q_neg, a misleading prompt the edit suggests but that is not
true of the edited image. Edit types:
- SM (Superficial Mimicry): paint the surface pattern of another kind of object on the target.
  detail = that object; q_pos = the target object; q_neg = the pattern's object.
  Example: vase painted like a watermelon -> detail "watermelon", q_pos "vase", q_neg "watermelon".
- CC (Context Conflict): replace the surroundings with an environment implausible for the object.
  detail = the new surroundings; q_pos = the object; q_neg = the concept the new context suggests.
  Example: skateboarder placed on a snowy slope -> q_pos "skateboarder", q_neg "snowboarder".
- OC (Ontological Conflict): re-render the object in another material.
  detail = the material; q_pos = the material rendering; q_neg = the original identity.
  Example: dove as an amethyst sculpture -> q_pos "amethyst crystal", q_neg "living dove".
Rules: q_pos and q_neg are lower-case noun phrases of 1-4 words; q_neg is neither q_pos, nor a
synonym of it, nor a more general term for it; instruction is one sentence an image-editing model
can carry out, changing only what the edit type says."""

# SM: surface patterns people recognise at a glance (seed 000 Fig. 1: watermelon).
PATTERN_NOUNS = ("watermelon", "zebra", "leopard", "tiger", "giraffe", "cheetah", "strawberry", "pineapple",
                 "orange", "ladybug", "peacock", "dalmatian", "jaguar", "pumpkin", "cow", "coconut")
PATTERN_ROOTS = ("fruit.n.01", "animal.n.01")
# Two senses this similar (Wu-Palmer) are close kin (horse / zebra, orange / lemon): the pattern
# would not mislead, it would describe.
RELATED_WUP = 0.8

# OC: (material noun checked in WordNet, the rendering used as q+).
MATERIALS = (("amethyst", "amethyst crystal"), ("marble", "marble statue"), ("bronze", "bronze statue"),
             ("glass", "glass sculpture"), ("gold", "gold figurine"), ("jade", "jade carving"),
             ("ice", "ice sculpture"), ("wood", "wooden carving"), ("clay", "clay figure"),
             ("silver", "silver figurine"), ("granite", "granite statue"), ("obsidian", "obsidian carving"),
             ("wax", "wax figure"), ("chocolate", "chocolate sculpture"), ("paper", "paper sculpture"))
MATERIAL_ROOTS = ("material.n.01", "substance.n.01", "matter.n.03")
LIVING_ROOTS = ("animal.n.01", "person.n.01")

# CC: object hypernym → (implausible scene, the concept that scene suggests). The most specific
# matching hypernym wins; the seed picks among its rows.
CONTEXTS: dict[str, tuple[tuple[str, str], ...]] = {
    "skateboarder.n.01": (("a snowy mountain slope", "snowboarder"),),
    "person.n.01": (("a snowy mountain slope", "skier"), ("a breaking ocean wave", "surfer"),
                    ("the surface of the moon", "astronaut"), ("an ice rink", "figure skater")),
    "dog.n.01": (("an arctic tundra", "wolf"), ("an african savanna", "hyena")),
    "cat.n.01": (("an african savanna", "lion"), ("a tropical jungle", "tiger")),
    "bird.n.01": (("a coral reef under water", "fish"),),
    "horse.n.01": (("an arctic tundra", "reindeer"), ("a sandy desert", "camel")),
    "bovid.n.01": (("a rocky mountain cliff", "mountain goat"),),
    "elephant.n.01": (("an arctic ice field", "mammoth"),),
    "bear.n.01": (("a bamboo forest", "giant panda"),),
    "teddy.n.01": (("a pine forest", "bear"),),
    "motor_vehicle.n.01": (("a wide river", "boat"), ("an airport runway", "airplane")),
    "bicycle.n.01": (("a fitness studio", "exercise bike"),),
    "train.n.01": (("the open sea", "ship"),),
    "vessel.n.02": (("a city highway", "truck"),),
    "furniture.n.01": (("the open ocean", "raft"),),
    "surfboard.n.01": (("a snowy mountain slope", "snowboard"),),
    "snowboard.n.01": (("a breaking ocean wave", "surfboard"),),
    "ski.n.01": (("a calm lake", "water ski"),),
    "kite.n.03": (("a coral reef under water", "stingray"),),
}
FALLBACK_CONTEXT = ("a toy store shelf", "toy {object}")


# --- questions and plans ---------------------------------------------------------------------------

def plan_question(target: Target, edit_type: EditType, *, seed: int) -> Question:
    """The ``cafe.edit_plan`` question for one target and edit type.

    The seed is an input so that a different seed asks (and caches) a different question.
    """
    inputs = {"edit_type": edit_type.name, "object_name": target.object_name, "target_key": target.key,
              "area_fraction": round(target.area_fraction, 4), "seed": seed}
    user = (f"Edit type: {edit_type.name} ({edit_type.value})\nTarget object: {target.object_name}\n"
            f"The object covers {target.area_fraction:.0%} of the image.\n"
            "Answer with detail, q_pos, q_neg and instruction.")
    return Question(kind=QUESTION_KIND, version=PROMPT_VERSION, inputs=inputs, system=SYSTEM_PROMPT, user=user)


def clean_phrase(text: str) -> str:
    """A prompt as exported: lower case, single spaces, no surrounding punctuation."""
    return " ".join(text.lower().split()).strip(" .,;:!?\"'")


def plan_from_answer(target: Target, edit_type: EditType, answer: PlanAnswer) -> EditPlan:
    """The :class:`EditPlan` of an answer; the detail goes to the field of the edit type."""
    detail = " ".join(answer.detail.split())
    field = {EditType.SM: "pattern", EditType.CC: "scene", EditType.OC: "material"}[edit_type]
    return EditPlan(target_key=target.key, edit_type=edit_type, object_name=target.object_name,
                    q_pos=clean_phrase(answer.q_pos) or "-", q_neg=clean_phrase(answer.q_neg) or "-",
                    instruction=" ".join(answer.instruction.split()) or "-", **{field: detail or None})


ECHO_WORDS = 6  # this many words in a row taken from the instructions: the model echoed them


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9+-]+", text.lower())


_TOLD = f" {' '.join(_words(SYSTEM_PROMPT))} "  # the system prompt's words, padded for whole-word search


def instruction_problem(plan: EditPlan) -> tuple[str, str] | None:
    """``("instruction", message)`` when the edit instruction is no instruction: empty, or a run of
    :data:`ECHO_WORDS` words copied from the system prompt (a weak model echoes what it was told)."""
    if plan.instruction == "-":
        return "instruction", "the edit instruction is empty"
    words = _words(plan.instruction)
    for start in range(len(words) - ECHO_WORDS + 1):
        run = " ".join(words[start : start + ECHO_WORDS])
        if f" {run} " in _TOLD:
            return "instruction", f"the edit instruction repeats the system prompt ({run!r})"
    return None


# --- the offline answer ------------------------------------------------------------------------------

def _synsets(wn: Any, phrase: str) -> list[Any]:
    return wn.synsets("_".join(phrase.lower().split()), pos="n")


def _closure(synset: Any) -> set[Any]:
    return set(synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms()))


def under(wn: Any, phrase: str, roots: Sequence[str], *, first_sense: bool = False) -> bool:
    """Whether a noun sense of ``phrase`` (or its first, most frequent one) is or is below one of ``roots``."""
    wanted = {wn.synset(name) for name in roots}
    senses = _synsets(wn, phrase)[:1] if first_sense else _synsets(wn, phrase)
    return any(s in wanted or _closure(s) & wanted for s in senses)


def related(wn: Any, a: str, b: str) -> bool:
    """Same sense, one a kind of the other, or close kin (Wu-Palmer ≥ RELATED_WUP), over all senses."""
    if a.lower() == b.lower():
        return True
    for sa in _synsets(wn, a):
        for sb in _synsets(wn, b):
            if sa == sb or sa in _closure(sb) or sb in _closure(sa) or (sa.wup_similarity(sb) or 0) >= RELATED_WUP:
                return True
    return False


def _article(noun: str) -> str:
    return f"an {noun}" if noun[0] in "aeiou" else f"a {noun}"


def _rng(inputs: dict[str, Any]) -> random.Random:
    return random.Random(f"{inputs['seed']}:{inputs['target_key']}:{inputs['edit_type']}")


def offline_plan(wn: Any, inputs: dict[str, Any]) -> PlanAnswer:
    """Answer a ``cafe.edit_plan`` question from WordNet.

    Raises:
        ProviderError: malformed inputs, or no pattern / material passes the WordNet checks.
    """
    try:
        edit_type, obj = EditType[inputs["edit_type"]], str(inputs["object_name"])
        rng = _rng(inputs)
    except (KeyError, TypeError) as exc:
        raise ProviderError(f"{QUESTION_KIND} needs inputs edit_type (SM/CC/OC), object_name, target_key, seed",
                            item=QUESTION_KIND) from exc
    if edit_type is EditType.SM:
        return _superficial_mimicry(wn, obj, rng)
    if edit_type is EditType.CC:
        return _context_conflict(wn, obj, rng)
    return _ontological_conflict(wn, obj, rng)


EDIT_PLAN_ANSWER = OfflineAnswer(kind=QUESTION_KIND, params={"cafe_edit_plan_rule": OFFLINE_RULE_VERSION},
                                answer=offline_plan)


def _superficial_mimicry(wn: Any, obj: str, rng: random.Random) -> PlanAnswer:
    choices = [p for p in PATTERN_NOUNS if under(wn, p, PATTERN_ROOTS) and not related(wn, p, obj)]
    if not choices:
        raise ProviderError(f"no pattern noun unrelated to {obj!r}", item=obj)
    pattern = rng.choice(choices)
    return PlanAnswer(detail=pattern, q_pos=obj, q_neg=pattern,
                      instruction=f"Repaint the surface of the {obj} with the pattern and colours of "
                                  f"{_article(pattern)}; keep the {obj}'s shape and everything outside it unchanged.")


def context_rows(wn: Any, obj: str) -> tuple[tuple[str, str], ...]:
    """The rows of :data:`CONTEXTS` for ``obj``.

    Senses are tried in WordNet's order (most frequent first) and the first sense with a listed
    hypernym decides, so "cat" is the feline, not the slang for a man; within it the most
    specific listed hypernym wins.
    """
    for synset in _synsets(wn, obj):
        listed = [c for c in (synset, *_closure(synset)) if c.name() in CONTEXTS]
        if listed:
            return CONTEXTS[max(listed, key=lambda c: (c.min_depth(), c.name())).name()]
    return ()


def _context_conflict(wn: Any, obj: str, rng: random.Random) -> PlanAnswer:
    # The suggested concept must be a WordNet noun that is not the object or a kind of it upward.
    rows = [(scene, concept) for scene, concept in context_rows(wn, obj)
            if _synsets(wn, concept) and concept != obj and not _is_hypernym(wn, concept, obj)]
    scene, concept = rng.choice(rows) if rows else (FALLBACK_CONTEXT[0], FALLBACK_CONTEXT[1].format(object=obj))
    return PlanAnswer(detail=scene, q_pos=obj, q_neg=concept,
                      instruction=f"Replace everything around the {obj} with {scene}; keep the {obj} itself unchanged.")


def _is_hypernym(wn: Any, general: str, specific: str) -> bool:
    wanted = set(_synsets(wn, general))
    return any(s in wanted or _closure(s) & wanted for s in _synsets(wn, specific))


def _ontological_conflict(wn: Any, obj: str, rng: random.Random) -> PlanAnswer:
    words = set(obj.lower().split())
    choices = [(m, r) for m, r in MATERIALS if under(wn, m, MATERIAL_ROOTS) and m not in words]
    if not choices:
        raise ProviderError(f"no material for {obj!r}", item=obj)
    material, rendering = rng.choice(choices)
    identity = f"living {obj}" if under(wn, obj, LIVING_ROOTS, first_sense=True) else obj
    return PlanAnswer(detail=material, q_pos=rendering, q_neg=identity,
                      instruction=f"Re-render the {obj} as {_article(rendering)}, keeping its shape and pose; "
                                  "keep everything outside it unchanged.")
