"""Noun mining: what counts as a noun, the input formats, and equality with the full pipeline."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from segbench.core.errors import InputError
from segbench.demo.vocab.captions import scene_captions
from segbench.demo.world import build_scenes
from segbench.tasks.vocab import nouns

MODEL = "en_core_web_sm"


@pytest.fixture(scope="module")
def nlp():
    return nouns.load_pipeline(MODEL)


def _mine(nlp, captions: list[str]) -> Counter:
    return nouns.mine_shard(nlp, list(Counter(captions).items()))


def test_head_nouns_are_lemmatised_and_lowercased(nlp):
    counts = _mine(nlp, ["Two kittens chase the BALLS.", "The kitten is sleeping on the Sofa."])
    assert counts["kitten"] == 2
    assert counts["ball"] == 1 and counts["sofa"] == 1
    assert "kittens" not in counts and "balls" not in counts and "Sofa" not in counts


def test_compounds_keep_their_head_too(nlp):
    counts = _mine(nlp, ["A dog sits next to two fire hydrants.", "A red t-shirt on a chair."])
    assert counts["fire hydrant"] == 1 and counts["hydrant"] == 1
    assert counts["t-shirt"] == 1 and counts["shirt"] == 1


def test_pronoun_chunks_are_not_nouns(nlp):
    assert set(_mine(nlp, ["It is sleeping."])) == set()


def test_duplicates_are_weighted_not_dropped(nlp):
    counts = nouns.mine_shard(nlp, [("A cat on a sofa.", 3)])
    assert counts["cat"] == 3 and counts["sofa"] == 3


def test_min_count_and_order():
    out = nouns.finalize(Counter({"dog": 3, "cat": 3, "tail": 1, "ear": 2}), min_count=2)
    assert list(out.items()) == [("cat", 3), ("dog", 3), ("ear", 2)]


def _write_formats(tmp_path, captions):
    (tmp_path / "c.txt").write_text("\n".join(captions) + "\n\n")
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"text": c, "id": i}) + "\n" for i, c in enumerate(captions)))
    (tmp_path / "c.tsv").write_text("id\ttext\n" + "".join(f"{i}\t{c}\n" for i, c in enumerate(captions)))
    (tmp_path / "c.json").write_text(json.dumps({"images": [], "annotations": [
        {"id": i, "image_id": 1, "caption": f"  {c} "} for i, c in enumerate(captions)]}))


def test_each_format_reads_the_same_captions(tmp_path):
    captions = ['A "quoted" cat.', "A dog, a ball."]
    _write_formats(tmp_path, captions)
    assert list(nouns.iter_captions(tmp_path / "c.json")) == captions
    for name in ("c.txt", "c.jsonl", "c.tsv"):
        assert list(nouns.iter_captions(tmp_path / name, field="text")) == captions, name


def test_parquet(tmp_path):
    path = tmp_path / "c.parquet"
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        path.write_bytes(b"PAR1")
        with pytest.raises(InputError, match="pyarrow") as err:
            list(nouns.iter_captions(path))
        assert str(path) in str(err.value)
        return
    pq.write_table(pa.table({"caption": ["A cat.", "A dog."]}), path)
    assert list(nouns.iter_captions(path)) == ["A cat.", "A dog."]


@pytest.mark.parametrize(("name", "content", "rule"), [
    ("bad.json", '{"images": []}', "no 'annotations'"),
    ("bad.json", "{not json", "not valid JSON"),
    ("bad.jsonl", '{"caption": "a"}\n{"other": 1}\n', "no field 'caption'"),
    ("bad.tsv", "id\tother\n1\tx\n", "no column 'caption'"),
    ("bad.csv", "caption\n", "unknown captions format"),
])
def test_bad_file_names_the_file(tmp_path, name, content, rule):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError, match=rule) as err:
        list(nouns.iter_captions(path))
    assert err.value.path == str(path)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="not found"):
        list(nouns.iter_captions(tmp_path / "none.txt"))


def test_missing_model():
    with pytest.raises(InputError, match="not installed"):
        nouns.load_pipeline("xx_no_such_model")


def test_counts_equal_the_full_pipeline(nlp):
    rng = random.Random(7)
    captions = [c for scene in build_scenes(seed=1)[:15] for c in scene_captions(scene, rng, n=4)][:50]
    captions += ["Traffic lights and stop signs near the bus stop.", "Two kittens playing with the dog's toys."]
    full = nouns.load_pipeline(MODEL, full=True)
    assert "ner" in full.pipe_names and "ner" not in nlp.pipe_names
    expected: Counter = Counter()
    for doc in full.pipe(captions):
        expected.update(nouns.doc_nouns(doc))
    assert _mine(nlp, captions) == expected


def test_worker_processes_give_the_same_counts(tmp_path):
    captions = ["A cat on a mat.", "A dog near a fire hydrant.", "A cat on a mat.", "Puppies in the snow."] * 3
    (tmp_path / "c.txt").write_text("\n".join(captions))
    one = nouns.mine_nouns([tmp_path / "c.txt"], model=MODEL, workers=1, shard_size=2)
    two = nouns.mine_nouns([tmp_path / "c.txt"], model=MODEL, workers=2, shard_size=2)
    assert one == two and one["cat"] == 6 and one["fire hydrant"] == 3 and one["puppy"] == 3
