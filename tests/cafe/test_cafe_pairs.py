"""CAFE prompt-pair rules (one test per rule), de-duplication and the prompt-pair statistics."""

from __future__ import annotations

import os

import pytest
from PIL import Image

from segbench.providers.wordnet_data import DEBIAN_WORDNET_DIR, load_wordnet
from segbench.tasks.cafe.pairs import (
    deduplicate,
    pair_markdown,
    pair_problem,
    pair_statistics,
    write_pair_tables,
)

if not (DEBIAN_WORDNET_DIR / "index.noun").is_file():
    _msg = "WordNet not installed: apt-get install -y wordnet-base wordnet-sense-index (scripts/install.sh)"
    if os.environ.get("CI"):
        pytest.fail(_msg, pytrace=False)
    pytest.skip(_msg, allow_module_level=True)


@pytest.fixture(scope="module")
def wn(tmp_path_factory):
    return load_wordnet(tmp_path_factory.mktemp("wn") / "nltk_data")


@pytest.mark.parametrize(("q_pos", "q_neg"), [("vase", "watermelon"), ("skateboarder", "snowboarder"),
                                              ("amethyst crystal", "living dove"), ("person", "skier"),
                                              ("vase", "toy vase")])
def test_the_papers_pairs_are_valid(wn, q_pos, q_neg):
    assert pair_problem(wn, q_pos, q_neg) is None


def test_identical(wn):
    assert pair_problem(wn, "dog", "dog")[0] == "identical"


def test_synonym(wn):
    rule, message = pair_problem(wn, "couch", "sofa")
    assert rule == "synonym" and "sofa.n.01" in message


def test_hypernym_of_a_wordnet_phrase(wn):
    rule, message = pair_problem(wn, "dog", "animal")
    assert rule == "hypernym" and "animal" in message
    assert pair_problem(wn, "animal", "dog") is None  # the other way round is fine: a dog need not be there


def test_hypernym_through_the_head_noun_of_an_unknown_phrase(wn):
    assert pair_problem(wn, "white vase", "vase")[0] == "hypernym"
    assert pair_problem(wn, "white vase", "container")[0] == "hypernym"


@pytest.mark.parametrize(("q_pos", "q_neg"), [("", "dog"), ("dog", "a b c d e f g"), ("Dog!", "cat"),
                                              ("dog", "cat\nfish")])
def test_malformed(wn, q_pos, q_neg):
    assert pair_problem(wn, q_pos, q_neg)[0] == "malformed"


def test_deduplicate_keeps_first_occurrences():
    assert deduplicate(["a", "b", "a", "c", "b"]) == ([0, 1, 3], [2, 4])


def test_statistics_by_hand():
    rows = [{"source": "coco", "edit_type": "SM", "q_pos": "vase", "q_neg": "watermelon"},
            {"source": "coco", "edit_type": "SM", "q_pos": "vase", "q_neg": "watermelon"},
            {"source": "coco", "edit_type": "CC", "q_pos": "dog", "q_neg": "wolf"},
            {"source": "lvis", "edit_type": "OC", "q_pos": "gold figurine", "q_neg": "living dog"},
            {"source": "lvis", "edit_type": "SM", "q_pos": "dog", "q_neg": "watermelon"}]
    stats = pair_statistics(rows)
    assert stats["samples"] == 5
    assert stats["by_source"] == {"coco": {"SM": 2, "CC": 1, "OC": 0, "total": 3},
                                  "lvis": {"SM": 1, "CC": 0, "OC": 1, "total": 2}}
    assert stats["by_edit_type"] == {"SM": 3, "CC": 1, "OC": 1}
    assert (stats["unique_positive"], stats["unique_negative"], stats["prompt_pairs"]) == (3, 3, 4)
    assert stats["pairs_once"] == 3 and stats["pairs_once_share"] == 0.75
    assert stats["most_frequent_pairs"][0] == {"q_pos": "vase", "q_neg": "watermelon", "count": 2}
    text = pair_markdown(stats, title="t")
    assert "| total | 3 | 1 | 1 | 5 |" in text and "3 (75.0%)" in text
    assert stats["pair_sizes"] == [2, 1, 1, 1]
    assert pair_statistics([])["pairs_once_share"] is None


def test_the_tables_show_the_figure_they_link(tmp_path):
    rows = [{"source": "coco", "edit_type": "SM", "q_pos": "vase", "q_neg": "watermelon"}] * 2 + [
        {"source": "lvis", "edit_type": "OC", "q_pos": "gold figurine", "q_neg": "living dog"}]
    written = write_pair_tables(tmp_path, pair_statistics(rows), title="t")
    assert [p.name for p in written] == ["prompt_pairs.json", "prompt_pairs.md", "summary.png"]
    assert "](summary.png)" in (tmp_path / "prompt_pairs.md").read_text()
    with Image.open(tmp_path / "summary.png") as figure:
        assert figure.format == "PNG" and figure.size == (1000, 400)
    assert write_pair_tables(tmp_path / "again", pair_statistics(rows), title="t")[2].read_bytes() == \
        (tmp_path / "summary.png").read_bytes(), "the same samples draw the same bytes"
    assert pair_statistics([])["pair_sizes"] == []
