"""The SPIN subpart taxonomy (seed 001, Sec. 3.1): proposed subparts + people's edits → ``taxonomy.yaml``.

SPIN prompted GPT-4 for the expected subparts of every PartImageNet (object, part), then three
authors excluded non-visible subparts (a skull) and added object-specific ones found by looking at
images (a turtle's shell). Here the proposals come from any language provider (``spin.subparts``
questions; WordNet offline, see ``wordnet.py``) and the edits from ``taxonomy_edits.yaml``. Every
subpart records its provenance: who proposed it, and which rule kept, renamed or added it.

Pure functions only: the flow asks the provider and writes files. Here: the catalogue of PartImageNet
parts with SPIN's names, the questions (subparts, visibility) and the proposals, and the YAML form of
the taxonomy; the edits live in ``taxonomy_edits.py``, the diff between two builds in ``taxonomy_diff.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import yaml

from segbench.providers.base import Question
from segbench.schemas.spin import (
    SUBPART_NAME,
    SubpartProposal,
    SubpartVisibility,
    Taxonomy,
    TaxonomyEditsRef,
    TaxonomyPart,
    TaxonomyProvider,
)

QUESTION_KIND = "spin.subparts"
MAX_SUBPARTS = 25  # the most subparts one part may be given (§8.2's largest part has 23)
VISIBILITY_KIND = "spin.visibility"
VISIBILITY_VERSION = "1"
VISIBILITY_RULE = "not-visible"  # the ``by`` of a proposal the visibility check dropped
ANIMALS = ("Quadruped", "Biped", "Fish", "Bird", "Snake", "Reptile")
DEFAULT_EDITS = "taxonomy_edits.yaml"
EDITS_HINT = "see the comments at the top of the shipped taxonomy_edits.yaml for the format"

SYSTEM = (
    "You help build a hierarchical segmentation dataset of natural images: objects, their parts, and the "
    "parts of those parts (subparts). Answer with the subparts a person could see and outline in a photo."
)
USER = (
    "Object category: {object} (for example: {examples}).\n"
    "Part: the {part} of the {object}.\n"
    "List the subparts you would expect on the {object}'s {part}, as short singular nouns in Title Case "
    "(e.g. Eye, Ear). Only include subparts visible from outside; leave out internal anatomy and "
    "components hidden inside. Do not list the other parts of the {object} ({others})."
)
# §8.1's question, word for word: the default. The paper gives no system prompt; this one only says
# what the answer is for, and the answer's schema asks for a list of names.
PAPER_SYSTEM = "You list the subparts of an object's part for a segmentation dataset."
PAPER_USER = ("Please list the canonical subparts of a {object}-{part}. Only include subparts that are clearly "
              "visible and recognizable to a layperson.")


@dataclass(frozen=True)
class SubpartPrompt:
    """One way of asking for a part's subparts; its ``version`` is recorded in the taxonomy and keys the cache."""

    version: str
    system: str
    user: str
    example: frozenset[str] = frozenset()  # names the user text gives as an example of an answer


PROMPTS: dict[str, SubpartPrompt] = {
    "paper": SubpartPrompt(version="paper-8.1", system=PAPER_SYSTEM, user=PAPER_USER),
    # segbench's own: example classes of the object, its other parts, singular Title Case names, no
    # internal anatomy (the question of taxonomies built before the paper's became the default).
    "segbench": SubpartPrompt(version="1", system=SYSTEM, user=USER, example=frozenset({"Eye", "Ear"})),
}
DEFAULT_PROMPT = "paper"

VISIBILITY_USER = (
    "Object category: {object} (for example: {examples}).\n"
    "Part: the {part} of the {object}.\n"
    "Proposed subpart of the {part}: {subpart}.\n"
    "Is {subpart} a part of the {object}'s {part} that a person could see and outline in an ordinary photo "
    "of a {object}? Answer visible = false for internal anatomy (bones, organs, vessels, nerves, muscles), "
    "components hidden inside, systems made of many scattered components, and anything that is not a "
    "physical piece of the object (a process, a gear position, a measure)."
)


# --- the PartImageNet catalogue ------------------------------------------------------------------------

@dataclass(frozen=True)
class CatalogPart:
    id: int
    object: str
    name: str  # PartImageNet's name (Body, Foot, Tier)
    spin_name: str  # SPIN's name (Torso, Legs, Tire)


@dataclass(frozen=True)
class Catalog:
    """PartImageNet's super-categories, parts (with SPIN names) and ImageNet classes."""

    supercategories: tuple[str, ...]
    parts: tuple[CatalogPart, ...]
    classes: tuple[tuple[str, str, str], ...]  # (wnid, name, super-category)
    synsets: Mapping[str, frozenset[str]] = field(default_factory=dict, hash=False)  # wnid → its synset, hypernyms

    def part_keys(self) -> list[str]:
        return [f"{p.object}-{p.spin_name}" for p in self.parts]

    def wnids(self, object: str) -> list[str]:
        return [wnid for wnid, _, sup in self.classes if sup == object]

    def class_names(self, object: str) -> list[str]:
        return [name for _, name, sup in self.classes if sup == object]

    def class_key(self, value: str) -> tuple[str, str] | None:
        """The (wnid, super-category) of a class name or wnid (case-insensitive), if known."""
        low = value.strip().lower()
        for wnid, name, sup in self.classes:
            if low in (wnid.lower(), name.lower()):
                return wnid, sup
        return None

    def classes_under(self, value: str, objects: Collection[str]) -> list[str]:
        """The names of the classes of these super-categories that ``value`` names: a class (name or
        wnid), or a WordNet 3.0 synset (``turtle.n.02``) standing for every class under it."""
        low = value.strip().lower()
        return [name for wnid, name, sup in self.classes if sup in objects
                and (low in (wnid.lower(), name.lower()) or low in self.synsets.get(wnid, frozenset()))]


@cache
def load_catalog() -> Catalog:
    """The shipped ``resources/spin/partimagenet.json``."""
    text = resources.files("segbench.resources").joinpath("spin", "partimagenet.json").read_text("utf-8")
    data = json.loads(text)
    parts = tuple(CatalogPart(p["id"], p["supercategory"], p["name"], p["spin_name"])
                  for p in sorted(data["parts"], key=lambda p: p["id"]))
    classes = tuple((c["wnid"], c["name"], c["supercategory"]) for c in data["classes"])
    synsets = {c["wnid"]: frozenset(c["synsets"]) for c in data["classes"]}
    return Catalog(tuple(data["supercategories"]), parts, classes, synsets)


# --- questions ------------------------------------------------------------------------------------------

def subpart_questions(catalog: Catalog, prompt: str = DEFAULT_PROMPT) -> list[Question]:
    """One ``spin.subparts`` question per PartImageNet part, in part-id order, asked with ``PROMPTS[prompt]``."""
    asked = PROMPTS[prompt]
    questions = []
    for part in catalog.parts:
        others = [p.spin_name for p in catalog.parts if p.object == part.object and p.id != part.id]
        examples = catalog.class_names(part.object)
        inputs = {"object": part.object, "part": part.spin_name, "partimagenet_id": part.id,
                  "animal": part.object in ANIMALS, "wnids": catalog.wnids(part.object), "other_parts": others}
        questions.append(Question(
            kind=QUESTION_KIND, version=asked.version, inputs=inputs, system=asked.system, max_items=MAX_SUBPARTS,
            user=asked.user.format(object=part.object, part=part.spin_name, examples=", ".join(examples[:6]),
                                   others=", ".join(others) or "none")))
    return questions


_MINOR_WORDS = frozenset({"a", "an", "and", "as", "at", "of", "on", "or", "the", "to"})


def normalise_name(name: str) -> str | None:
    """A proposed subpart name in display form, or None if unusable.

    Title Case with minor words lower case (``bell or horn`` → ``Bell or Horn``), each ``/`` alternative
    capitalised (``toes/hoof`` → ``Toes/Hoof``), hyphens and underscores as spaces
    (``Internal-combustion engine`` → ``Internal Combustion Engine``).
    """
    text = re.sub(r"[\s_-]+", " ", str(name)).strip().strip(".")
    text = re.sub(r"\s*/\s*", "/", text)
    if not text:
        return None
    words = []
    for index, word in enumerate(text.split(" ")):
        if index and word.lower() in _MINOR_WORDS:
            words.append(word.lower())
        else:
            words.append("/".join(alt[:1].upper() + alt[1:] for alt in word.split("/")))
    text = " ".join(words)
    return text if re.match(SUBPART_NAME, text) else None


@cache
def _stemmer() -> Any:
    from nltk.stem.snowball import SnowballStemmer  # a rule-based stemmer: no corpus to download

    return SnowballStemmer("english")


def match_keys(name: str) -> frozenset[str]:
    """The forms under which two subpart names are the same: each ``/`` or `` or `` alternative,
    lower case, every word stemmed (``Eyes`` ~ ``Eye``, ``Toes/Hoof`` ~ ``Hoof``)."""
    alternatives = re.split(r"/|\s+or\s+", name.lower())
    stem = _stemmer().stem
    return frozenset(" ".join(stem(w) for w in re.split(r"[\s-]+", alt.strip()) if w) for alt in alternatives
                     if alt.strip())


def visibility_questions(catalog: Catalog, proposals: Mapping[str, Sequence[str]]) -> list[Question]:
    """One ``spin.visibility`` question per proposed subpart, in catalogue then proposal order."""
    questions = []
    for part in catalog.parts:
        key = f"{part.object}-{part.spin_name}"
        others = [p.spin_name for p in catalog.parts if p.object == part.object and p.id != part.id]
        examples = ", ".join(catalog.class_names(part.object)[:6])
        for name in proposals.get(key, []):
            inputs = {"object": part.object, "part": part.spin_name, "subpart": name, "animal": part.object in ANIMALS,
                      "wnids": catalog.wnids(part.object), "other_parts": others}
            questions.append(Question(
                kind=VISIBILITY_KIND, version=VISIBILITY_VERSION, inputs=inputs, system=SYSTEM,
                user=VISIBILITY_USER.format(object=part.object, part=part.spin_name, subpart=name, examples=examples)))
    return questions


def split_visible(catalog: Catalog, proposals: Mapping[str, Sequence[str]], answers: Sequence[SubpartVisibility]
                  ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The proposals the visibility check kept, and those it dropped, per part.

    ``answers`` are in the order of :func:`visibility_questions` (their ``subpart`` echo is not trusted).
    """
    kept: dict[str, list[str]] = {}
    dropped: dict[str, list[str]] = {}
    asked = [(key, name) for key in catalog.part_keys() for name in proposals.get(key, [])]
    for (key, name), answer in zip(asked, answers, strict=True):
        (kept if answer.visible else dropped).setdefault(key, []).append(name)
    return kept, dropped


def proposals_from_answers(catalog: Catalog, answers: Sequence[SubpartProposal]) -> dict[str, list[str]]:
    """``<Super>-<Part>`` → normalised, distinct, sorted proposed names (answers in catalogue order).

    A name the taxonomy cannot hold (punctuation, empty) is dropped here; the edit file cannot fix it.
    """
    out: dict[str, list[str]] = {}
    for key, answer in zip(catalog.part_keys(), answers, strict=True):
        names = {n for n in (normalise_name(s) for s in answer.subparts) if n is not None}
        out[key] = sorted(names, key=str.lower)
    return out


SAME_ANSWER_MIN = 10  # visibility answers before "one answer for all" means something


def proposal_suspicions(proposals: Mapping[str, Sequence[str]], visible: Sequence[bool],
                        example: frozenset[str] = frozenset()) -> list[str]:
    """What makes a model's answers as a whole look wrong: one list for every part, the prompt's
    ``example`` (Eye, Ear) given for parts that are no head, where it does not belong (a model that
    echoes it answers no question), one visibility answer for every proposal."""
    answered = {key: frozenset(names) for key, names in proposals.items() if names}
    out = []
    if len(answered) >= 3 and len(set(answered.values())) == 1:
        out.append(f"every one of the {len(answered)} parts got the same subparts "
                   f"({', '.join(sorted(next(iter(answered.values()))))})")
    echoed = [key for key, names in answered.items() if example and example <= names and not key.endswith("-Head")]
    if len(echoed) >= max(2, len(answered) // 2):
        out.append(f"the prompt's example ({', '.join(sorted(example))}) was given for {len(echoed)} of "
                   f"{len(answered)} parts that are no head")
    if len(visible) >= SAME_ANSWER_MIN and len(set(visible)) == 1:
        out.append(f"every one of the {len(visible)} proposals was judged {'' if visible[0] else 'not '}visible")
    return out


def build_taxonomy(parts: list[TaxonomyPart], *, provider: str, model: str, edits_file: str,
                   edits_sha256: str, question_version: str = PROMPTS[DEFAULT_PROMPT].version) -> Taxonomy:
    return Taxonomy(provider=TaxonomyProvider(name=provider, model=model, question_version=question_version),
                    edits=TaxonomyEditsRef(file=edits_file, sha256=edits_sha256), parts=parts)


# --- YAML -------------------------------------------------------------------------------------------

HEADER = ("# SPIN subpart taxonomy, written by `segbench build spin-taxonomy`. Do not edit by hand:\n"
          "# change the edit file (see edits.file) and rebuild; the rebuild shows the diff.\n")


def taxonomy_yaml(taxonomy: Taxonomy) -> str:
    """The YAML text of ``taxonomy``: fixed key order, so the same taxonomy gives the same bytes."""
    body = yaml.safe_dump(taxonomy.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=120)
    return HEADER + body
