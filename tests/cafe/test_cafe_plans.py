"""CAFE edit plans: the question, the plan record, and the offline WordNet answers per edit type."""

from __future__ import annotations

import os

import pytest

from segbench.core.errors import ProviderError
from segbench.providers.wordnet_data import DEBIAN_WORDNET_DIR
from segbench.providers.wordnet_provider import WordNetProvider
from segbench.registry import offline_answers
from segbench.schemas.cafe import PlanAnswer, Target
from segbench.schemas.edits import EditType
from segbench.tasks.cafe import plans
from segbench.tasks.cafe.pairs import pair_problem

if not (DEBIAN_WORDNET_DIR / "index.noun").is_file():
    _msg = "WordNet not installed: apt-get install -y wordnet-base wordnet-sense-index (scripts/install.sh)"
    if os.environ.get("CI"):
        pytest.fail(_msg, pytrace=False)
    pytest.skip(_msg, allow_module_level=True)


def _target(name: str, key: str = "coco:1:2") -> Target:
    return Target(key=key, source="coco", image_id=1, annotation_id=2, category_id=3, object_name=name,
                  file_name="1.jpg", width=10, height=10, area=20, area_fraction=0.2, bbox=(0, 0, 4, 5),
                  segmentation={"size": [10, 10], "counts": "x"})


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    return WordNetProvider(tmp_path_factory.mktemp("wn") / "nltk_data", answers=offline_answers())


def _plan(provider, name: str, edit_type: EditType, seed: int = 0, key: str = "coco:1:2"):
    target = _target(name, key)
    answer = provider.answer(plans.plan_question(target, edit_type, seed=seed), PlanAnswer)
    return plans.plan_from_answer(target, edit_type, answer)


def test_question_carries_kind_version_and_the_seed():
    question = plans.plan_question(_target("vase"), EditType.SM, seed=7)
    assert question.kind == "cafe.edit_plan" and question.version == plans.PROMPT_VERSION
    assert question.inputs["seed"] == 7 and question.inputs["edit_type"] == "SM"
    assert "Target object: vase" in question.user


def test_superficial_mimicry_paints_an_unrelated_fruit_or_animal(provider):
    wn = provider.wordnet
    for key in ("coco:1:2", "coco:3:4", "coco:5:6"):
        plan = _plan(provider, "dog", EditType.SM, key=key)
        assert plan.q_pos == "dog" and plan.q_neg == plan.pattern and plan.pattern in plans.PATTERN_NOUNS
        assert plan.pattern != "dalmatian" and not plans.related(wn, plan.pattern, "dog")  # a dalmatian IS a dog
        assert pair_problem(wn, plan.q_pos, plan.q_neg) is None


def test_context_conflict_uses_the_most_specific_row(provider):
    plan = _plan(provider, "skateboarder", EditType.CC)
    assert (plan.q_pos, plan.q_neg, plan.scene) == ("skateboarder", "snowboarder", "a snowy mountain slope")
    assert _plan(provider, "cat", EditType.CC).q_neg in {"lion", "tiger"}  # the feline sense, not "guy"
    fallback = _plan(provider, "fire hydrant", EditType.CC)
    assert fallback.q_neg == "toy fire hydrant" and fallback.scene == "a toy store shelf"


def test_ontological_conflict_renders_a_wordnet_material(provider):
    dove = _plan(provider, "dove", EditType.OC)
    assert dove.q_neg == "living dove" and dove.material in dict(plans.MATERIALS)
    assert dove.q_pos == dict(plans.MATERIALS)[dove.material]
    assert _plan(provider, "car", EditType.OC).q_neg == "car"  # not alive: the identity itself


def test_offline_plans_are_seeded(provider):
    picks = {_plan(provider, "vase", EditType.SM, seed=s).pattern for s in range(12)}
    assert len(picks) > 1
    assert _plan(provider, "vase", EditType.SM, seed=3) == _plan(provider, "vase", EditType.SM, seed=3)


def test_malformed_inputs_are_a_provider_error(provider):
    question = plans.plan_question(_target("vase"), EditType.SM, seed=0).model_copy(update={"inputs": {"x": 1}})
    with pytest.raises(ProviderError, match="needs inputs"):
        provider.answer(question, PlanAnswer)


def test_plan_rule_keys_leave_other_kinds_alone(provider, tmp_path):
    from segbench.providers.base import Question
    from segbench.schemas.vocab import RelationAnswer

    question = Question(kind="vocab.relations", version="1", inputs={"category": "dog", "candidates": ["puppy"]},
                        system="-", user="-")
    assert provider.answer(question, RelationAnswer).judgements[0].relation == "hyponym"
    assert provider.params_for("vocab.relations") == provider.params  # the plan rule is not in vocab keys
    assert provider.params_for("cafe.edit_plan") == {"cafe_edit_plan_rule": plans.OFFLINE_RULE_VERSION}


def test_plan_from_answer_normalises_the_prompts():
    answer = PlanAnswer(detail="Watermelon", q_pos="  Vase.", q_neg="WATERMELON ", instruction="Paint  it.")
    plan = plans.plan_from_answer(_target("vase"), EditType.SM, answer)
    assert (plan.q_pos, plan.q_neg, plan.pattern, plan.instruction) == ("vase", "watermelon", "Watermelon", "Paint it.")
    assert plan.scene is None and plan.material is None


def test_an_instruction_that_echoes_the_system_prompt_or_is_empty_is_refused(provider):
    def plan(instruction: str):
        answer = PlanAnswer(detail="watermelon", q_pos="vase", q_neg="watermelon", instruction=instruction)
        return plans.plan_from_answer(_target("vase"), EditType.SM, answer)

    echoed = plan("You design counterfactual image edits for CAFE, a benchmark that tests whether models cope")
    assert plans.instruction_problem(echoed) == (
        "instruction", "the edit instruction repeats the system prompt ('you design counterfactual image edits for')")
    assert plans.instruction_problem(plan("   ")) == ("instruction", "the edit instruction is empty")
    assert plans.instruction_problem(plan("Paint the vase with a watermelon's stripes and colours.")) is None
    for edit_type in EditType:  # the offline plans' own instructions pass
        for name in ("vase", "dog", "skateboarder"):
            assert plans.instruction_problem(_plan(provider, name, edit_type)) is None
