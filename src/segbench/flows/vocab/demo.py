"""The valid vocabulary in the demo: COCO-CD's categories judged against nouns mined from the shared
demo world's captions."""

from __future__ import annotations

from typing import Any

from segbench.demo.vocab.captions import caption_files, generate_demo_captions
from segbench.flows.demo import DemoContext, DemoStep
from segbench.flows.vocab.build import build_vocab
from segbench.schemas.vocab import VocabDemo, VocabParams

CATEGORIES = "coco_cd"  # the shipped category set of the demo world's cat/dog images


def build(context: DemoContext) -> VocabDemo:
    """Mine the demo captions and judge the candidates with the demo's language provider."""
    out = context.data_root / "vocab" / CATEGORIES
    summary = build_vocab(generate_demo_captions(context.world, seed=context.seed), CATEGORIES, out,
                          context.provider, VocabParams(spacy_model=context.spacy_model),
                          nltk_data=context.work_dir / "nltk_data")
    return VocabDemo(build=summary, paths={"vocabulary": out / f"{CATEGORIES}.json"})


def plan(context: DemoContext) -> dict[str, Any]:
    """The build's ``[vocab]`` table of the demo's rebuild plan."""
    return {"captions": caption_files(context.world), "categories": CATEGORIES,
            "params": {"spacy_model": context.spacy_model}}


DEMO = DemoStep(build=build, plan=plan)
