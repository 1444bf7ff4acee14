"""The release of a valid vocabulary: one row per (class, term, level), with who judged it.

Levels are cumulative in use (the mapping at level *k* accepts every term up to *k*); a row holds
each term at its strongest relation, as the vocabulary file does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from segbench.core.errors import InputError
from segbench.core.release import gallery
from segbench.core.release.plan import ImagePolicy, Licence, ReleasePlan, Table
from segbench.core.versioning import DatasetSource
from segbench.schemas.vocab import LEVELS, RELATION_OF_LEVEL

SPLIT = "vocabulary"
CAPTIONS = Licence("cc-by-4.0", "COCO captions: Creative Commons Attribution 4.0", "https://cocodataset.org/#termsofuse",
                   True, "the terms, nouns mined from the captions (the captions are not in the release)",
                   of_images=False)
CITATIONS = ["@inproceedings{openended2026,\n  title = {Benchmarking Open-ended Segmentation},\n  booktitle = {ICLR},\n"
             "  year = {2026},\n  url = {https://openreview.net/forum?id=QSmwRnw8GP}\n}"]


def _folder(source: DatasetSource, data_dir: str) -> str:
    """``data_dir`` when it holds a vocabulary, else its one subfolder that does (``data/vocab/coco_cd``)."""
    if source.exists(f"{data_dir}/manifest.json"):
        return data_dir
    found = [f"{data_dir}/{name}" for name in source.listdir(data_dir, kind="directory")
             if source.exists(f"{data_dir}/{name}/manifest.json")]
    if len(found) != 1:
        raise InputError("no single vocabulary here" if found else "no vocabulary built here", path=data_dir,
                         hint="pass --path data/vocab/<categories>" if found else "run `segbench build vocab` first")
    return found[0]


def plan(source: DatasetSource, data_dir: str, policy: ImagePolicy) -> ReleasePlan:
    from segbench.core.release.features import ClassLabel, Features, Value

    folder = _folder(source, data_dir)
    manifest = source.read_json(f"{folder}/manifest.json")
    params, counts = manifest["params"], manifest["counts"]
    name = Path(folder).name
    vocabulary = source.read_json(f"{folder}/{name}.json")
    classes = sorted(vocabulary, key=lambda c: vocabulary[c]["id"])
    levels = [RELATION_OF_LEVEL[level] for level in LEVELS]
    entries = [(cls, term, RELATION_OF_LEVEL[level]) for cls in classes for level in LEVELS
               for term in vocabulary[cls].get(level, [])]
    features = Features({"class": ClassLabel(names=classes), "class_id": Value("int32"), "term": Value("string"),
                         "level": ClassLabel(names=levels), "provider": Value("string"), "model": Value("string"),
                         "prompt_version": Value("string")})
    descriptions = {
        "class": "the dataset category the term is related to",
        "class_id": "the category's id in the dataset",
        "term": "a noun mined from the captions (lower case, singular)",
        "level": "the term's strongest relation to the class: exact, synonym, hyponym (a kind of the class) or "
                 "meronym (a part of it); levels are cumulative in use (level k accepts every term up to k)",
        "provider": "the judge of the relation: a language model provider, or WordNet offline",
        "model": "the judge's model",
        "prompt_version": "the version of the prompt the judge was asked with",
    }

    def rows() -> Iterator[dict]:
        for cls, term, level in entries:
            yield {"class": classes.index(cls), "class_id": int(vocabulary[cls]["id"]), "term": term,
                   "level": levels.index(level), "provider": params["provider"], "model": params["provider_model"],
                   "prompt_version": str(params["prompt_version"])}

    def write_gallery(out: Path) -> list[str]:
        written = []
        for level in LEVELS:
            picture = gallery.table_image(f"{name}: {RELATION_OF_LEVEL[level]} terms", ["class", "terms"],
                                          [[cls, ", ".join(vocabulary[cls].get(level, [])) or "–"] for cls in classes],
                                          column_width=360)
            written.append(gallery.save(picture, out, f"{level}.png"))
        return written

    judge = f"{params['provider']} ({params['provider_model']}, prompt version {params['prompt_version']})"
    return ReleasePlan(
        name="vocab", pretty_name=f"Valid vocabulary of {name}",
        summary=(f"Nouns mined from image captions and related to each {name} category at four levels (exact ⊂ "
                 "synonym ⊂ hyponym ⊂ meronym), for mapping open-ended segmentation outputs onto the dataset's "
                 "categories (the lexical mapping and the Lexical Alignment Curve)."),
        features=features, descriptions=descriptions, tables=[Table("default", SPLIT, len(entries), rows)],
        native={f"native/{name}.json": f"{folder}/{name}.json", "native/candidates.jsonl": f"{folder}/candidates.jsonl"},
        version=manifest["build_key"], created=manifest["created_at"], sources=dict(manifest["inputs"]),
        selection={"captions": counts["captions"], "distinct captions": counts["distinct_captions"],
                   "nouns": counts["nouns"], "candidates judged": counts["candidates"],
                   **{f"level {level}": n for level, n in counts["levels"].items()}},
        seed=manifest.get("seed"), chosen_ids={}, rounds=[],
        machine_tools=[f"spaCy {params.get('spacy_model_loaded', params['spacy_model'])} (noun mining)",
                       f"relation judge: {judge}"],
        collection="Nouns are mined from image captions (the caption files named under Sources); no new text was "
                   "collected.",
        preprocessing=(f"Nouns seen at least {params['min_count']} times are kept; "
                       + ("every one is judged for every category." if params["top_k"] is None else
                          f"the top {params['top_k']} candidates per category by WordNet similarity and string "
                          "containment are judged.")),
        annotation_protocol=f"Each candidate's relation to its category is judged by {judge}; a term is kept at its "
                            "strongest relation.",
        biases=["Caption nouns reflect what people mention in English captions of COCO-like photos.",
                f"The judge ({params['provider']}) decides the levels; WordNet misses recent and informal names."],
        limitations=["English only.", "A term belongs to one level per class (its strongest)."],
        use_cases=["Mapping open-vocabulary predictions onto a closed label set.",
                   "Computing the Lexical Alignment Curve."],
        licences=[policy.annotations(CAPTIONS)], maker_covers="the relation levels this release adds", has_images=False,
        datasheet_answers={
            "used": "Its paper (cited in the card) maps open-ended segmentation outputs onto dataset categories "
                    "with such vocabularies and plots the Lexical Alignment Curve.",
            "missing": "No row lacks a value: every term has its class, level and judge.",
            "instances": "One (class, term) pair: a noun from the captions and its relation to the class.",
            "labels": "Yes: the relation level (exact, synonym, hyponym or meronym).",
            "relationships": "Rows of one class share `class`; a term appears once per class, at its "
                             "strongest relation.",
            "splits": "A vocabulary is one table: one split, `vocabulary`."},
        citations=CITATIONS, source_datasets=["coco-captions"],
        annotations_creators=["machine-generated"], gallery=write_gallery,
        load_example=f'ds = load_dataset(path, split="{SPLIT}")\nds.features["level"].int2str(ds[0]["level"])',
    )
