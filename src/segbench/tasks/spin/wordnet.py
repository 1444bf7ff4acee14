"""Offline subpart proposals for the SPIN taxonomy (seed 001, Sec. 3.1) from WordNet 3.0 part meronyms.

SPIN asked GPT-4 for the expected subparts of every PartImageNet (object, part); offline, WordNet's
part-of relation stands in for the language model. :func:`wordnet_subparts` is the pure rule;
:data:`SUBPARTS_ANSWER` (listed in ``segbench.registry``) has the offline
:class:`~segbench.providers.wordnet_provider.WordNetProvider` answer ``spin.subparts`` questions with
it, so the build flow and the answer cache treat it like any other provider.

The rule, per (object, part):

1. *wholes*: the synsets of the object's ImageNet classes, plus their hypernyms that are not too close
   to the root (depth >= 6, as the WordNet provider does: "organism" has "cell" as a part);
2. the part's noun senses that are part meronyms of a whole (up to 3 levels) — this is what picks
   ``wing.n.02`` (aircraft) for an aeroplane and ``wing.n.01`` for a bird; for animals with no such
   sense, the body-part senses (lexicographer file ``noun.body``) are used;
3. a vehicle or bottle ``Body`` (what is left of the object besides its other parts) has no WordNet
   sense of its own: the object's own direct part meronyms stand in for its subparts;
4. the subparts are the direct part meronyms of the chosen senses, as Title Case names.

WordNet lists anatomy nobody can see (skull, veins) and machinery nobody can outline (a brake system,
first gear). :func:`wordnet_visible` answers the ``spin.visibility`` question from WordNet's own
hypernyms (:data:`VISIBILITY_ANSWER`): a proposal is visible when one of its senses is a physical
entity and under none of :data:`HIDDEN`. The people's edit file removes what is left.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from segbench.core.errors import ProviderError
from segbench.providers.base import OfflineAnswer
from segbench.schemas.spin import SubpartProposal, SubpartVisibility
from segbench.tasks.spin.taxonomy import QUESTION_KIND, VISIBILITY_KIND, normalise_name

log = logging.getLogger(__name__)

# Bumped when wordnet_subparts changes what it proposes: SUBPARTS_ANSWER puts it in the cache key of
# every answer.
RULE_VERSION = "1"
MERONYM_DEPTH = 3
MIN_INHERIT_DEPTH = 6
ANIMAL_LEXNAME = "noun.body"
WHOLE_PART = "body"  # the PartImageNet part that is "the rest of the object" for vehicles and bottles
VISIBILITY_RULE_VERSION = "1"  # bumped when wordnet_visible changes its answers (in their cache keys)
PHYSICAL = "physical_entity.n.01"
# What a person cannot see or outline in a photo, as WordNet classes: body systems (the skeleton, the
# diaphragm's muscular structure), internal anatomy, and gears (first gear, reverse: inside the gearbox).
# Abstractions and processes are not physical entities, so they fail the PHYSICAL test already.
HIDDEN = ("system.n.06", "bone.n.01", "blood_vessel.n.01", "nerve.n.01", "muscle.n.01", "neural_structure.n.01",
          "internal_organ.n.01", "gear.n.03")
# Artefact systems of scattered components (brake, cooling, electrical, fuel system) sit under equipment
# or devices in WordNet, not under system.n.01 (which also holds a bicycle's suspension, a visible part),
# so they are recognised by their main WordNet name instead.
SYSTEM_SUFFIX = "_system"


def subpart_name(lemma: str) -> str:
    """``spare_tire`` → ``Spare Tire``: the display form of a WordNet lemma."""
    return " ".join(word[:1].upper() + word[1:] for word in lemma.replace("_", " ").split())


def _hypernyms(synset: Any) -> list[Any]:
    return synset.hypernyms() + synset.instance_hypernyms()


def _wholes(wn: Any, wnids: Sequence[str]) -> set[Any]:
    wholes: set[Any] = set()
    for wnid in wnids:
        try:
            synset = wn.synset_from_pos_and_offset("n", int(wnid[1:]))
        except (ValueError, LookupError):  # not a WordNet 3.0 noun offset: nothing to inherit from
            log.warning("wnid %s is not a WordNet 3.0 noun; ignored", wnid)
            continue
        wholes.add(synset)
        wholes.update(h for h in synset.closure(_hypernyms) if h.min_depth() >= MIN_INHERIT_DEPTH)
    return wholes


def _meronym_closure(wholes: set[Any]) -> set[Any]:
    parts: set[Any] = set()
    frontier = wholes
    for _ in range(MERONYM_DEPTH):
        frontier = {p for whole in frontier for p in whole.part_meronyms()} - parts
        parts |= frontier
    return parts


def wordnet_subparts(wn: Any, *, part: str, wnids: Sequence[str], animal: bool,
                     other_parts: Sequence[str] = ()) -> list[str]:
    """Subpart names WordNet proposes for ``part`` of objects of the classes ``wnids`` (rule above).

    Args:
        wn: an NLTK WordNet reader.
        part: the SPIN part name (``Head``, ``Side Mirror``).
        wnids: ImageNet wnids of the object's classes (``n01669191``).
        animal: the object is an animal (enables the ``noun.body`` fallback).
        other_parts: the object's other part names, never proposed as subparts of ``part``.

    Returns:
        Sorted, distinct Title Case names (possibly empty).
    """
    excluded = {subpart_name(p.replace(" ", "_")) for p in [*other_parts, part]}
    return sorted(set(_proposed_senses(wn, part, wnids, animal)) - excluded)


def _proposed_senses(wn: Any, part: str, wnids: Sequence[str], animal: bool) -> dict[str, set[Any]]:
    """Name → the synsets behind it, for every subpart the rule proposes for ``part`` (steps 1-4)."""
    wholes = _wholes(wn, wnids)
    lemma = part.strip().lower().replace(" ", "_")
    lemma = wn.morphy(lemma, "n") or lemma
    object_parts = _meronym_closure(wholes)
    senses = [s for s in wn.synsets(lemma, pos="n") if s in object_parts]
    if not senses and animal:
        senses = [s for s in wn.synsets(lemma, pos="n") if s.lexname() == ANIMAL_LEXNAME]
    if not senses and not animal and lemma == WHOLE_PART:
        senses = list(wholes)
    out: dict[str, set[Any]] = {}
    for meronym in (m for s in senses for m in s.part_meronyms()):
        out.setdefault(subpart_name(meronym.lemmas()[0].name()), set()).add(meronym)
    return out


def wordnet_visible(wn: Any, *, subpart: str, part: str, wnids: Sequence[str], animal: bool) -> bool:
    """Whether ``subpart`` of ``part`` is something a person can see and outline (rule in the module doc).

    The senses judged are those the proposal rule found for this part; a name it did not propose (another
    proposer's) is judged by all its noun senses; a name WordNet does not know is kept (people decide).
    """
    proposed = _proposed_senses(wn, part, wnids, animal)
    senses = next((v for k, v in proposed.items() if normalise_name(k) == subpart), None)  # the asked form
    if senses is None:
        lemma = subpart.strip().lower().replace(" ", "_")
        senses = set(wn.synsets(lemma, pos="n"))
    if not senses:
        return True
    physical, hidden = wn.synset(PHYSICAL), {wn.synset(name) for name in HIDDEN}
    for sense in senses:
        ancestors = {sense, *sense.closure(_hypernyms)}
        system = sense.lemmas()[0].name().endswith(SYSTEM_SUFFIX)  # its main name: "suspension" is also "suspension system"
        if physical in ancestors and not ancestors & hidden and not system:
            return True
    return False


def answer_subparts(wn: Any, inputs: dict[str, Any]) -> SubpartProposal:
    """Answer a ``spin.subparts`` question from WordNet.

    Raises:
        ProviderError: the inputs lack a field or have one of the wrong type.
    """
    try:
        obj, part, wnids = inputs["object"], inputs["part"], inputs["wnids"]
        animal, other_parts = inputs["animal"], inputs.get("other_parts", [])
    except KeyError as exc:
        raise ProviderError(f"{QUESTION_KIND} inputs lack {exc}", item=QUESTION_KIND,
                            hint="ask with segbench.tasks.spin.taxonomy.subpart_questions") from exc
    if not (isinstance(part, str) and isinstance(wnids, list) and isinstance(other_parts, list)
            and all(isinstance(w, str) for w in wnids)):
        raise ProviderError(f"{QUESTION_KIND} needs inputs {{'object': str, 'part': str, 'wnids': [str, ...], "
                            "'animal': bool, 'other_parts': [str, ...]}", item=QUESTION_KIND)
    names = wordnet_subparts(wn, part=part, wnids=wnids, animal=bool(animal), other_parts=other_parts)
    return SubpartProposal(object=obj, part=part, subparts=names)


# SPIN's answers have been keyed with the provider's own parameters too since the first build;
# keeping them keeps every cached answer replayable.
SUBPARTS_ANSWER = OfflineAnswer(kind=QUESTION_KIND, params={"spin_subparts_rule": RULE_VERSION},
                                answer=answer_subparts, with_provider_params=True)


def answer_visibility(wn: Any, inputs: dict[str, Any]) -> SubpartVisibility:
    """Answer a ``spin.visibility`` question from WordNet.

    Raises:
        ProviderError: the inputs lack a field or have one of the wrong type.
    """
    subpart, part, wnids = inputs.get("subpart"), inputs.get("part"), inputs.get("wnids")
    if not (isinstance(subpart, str) and isinstance(part, str) and isinstance(wnids, list)
            and all(isinstance(w, str) for w in wnids)):
        raise ProviderError(f"{VISIBILITY_KIND} needs inputs {{'subpart': str, 'part': str, 'wnids': [str, ...], "
                            "'animal': bool}", item=VISIBILITY_KIND,
                            hint="ask with segbench.tasks.spin.taxonomy.visibility_questions")
    visible = wordnet_visible(wn, subpart=subpart, part=part, wnids=wnids, animal=bool(inputs.get("animal")))
    return SubpartVisibility(subpart=subpart, visible=visible)


VISIBILITY_ANSWER = OfflineAnswer(kind=VISIBILITY_KIND, params={"spin_visibility_rule": VISIBILITY_RULE_VERSION},
                                  answer=answer_visibility)
