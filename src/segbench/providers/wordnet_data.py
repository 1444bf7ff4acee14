"""Prepare the WordNet 3.0 data NLTK reads, from the files Debian installs.

Debian's ``wordnet-base`` and ``wordnet-sense-index`` put WordNet 3.0 in ``/usr/share/wordnet``, but
NLTK cannot read that folder as is: it has no ``lexnames`` file, and NLTK only looks inside its data
roots (and does not follow symlinks out of them). So the files are copied into
``<work_dir>/nltk_data/corpora/wordnet/`` together with a generated ``lexnames``, and that root is
put first on ``nltk.data.path`` (no ``NLTK_DATA`` variable needed, nothing written to the home folder).

Only the data preparation lives here; the relation logic lives in ``wordnet_provider.py``.
"""

from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path

from segbench.core.errors import ProviderError
from segbench.core.io import atomic_write_text

log = logging.getLogger(__name__)

DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")
DEBIAN_PACKAGES = ("wordnet-base", "wordnet-sense-index")
INSTALL_COMMAND = "apt-get install -y " + " ".join(DEBIAN_PACKAGES)
# The files NLTK's WordNetCorpusReader opens, besides the generated lexnames.
REQUIRED_FILES = (
    "index.sense",
    "index.noun",
    "index.verb",
    "index.adj",
    "index.adv",
    "data.noun",
    "data.verb",
    "data.adj",
    "data.adv",
    "noun.exc",
    "verb.exc",
    "adj.exc",
    "adv.exc",
)
OPTIONAL_FILES = ("cntlist", "cntlist.rev", "frames.vrb", "sentidx.vrb", "sents.vrb")

# The 45 lexicographer files of WordNet 3.0 (lexnames(5WN)), in file-number order. The data files
# store only the number, so the order is the contract; the last column is the syntactic category
# (1 noun, 2 verb, 3 adjective, 4 adverb).
_LEXNAMES_BY_POS = (
    (3, ("adj.all", "adj.pert")),
    (4, ("adv.all",)),
    (
        1,
        (
            "noun.Tops", "noun.act", "noun.animal", "noun.artifact", "noun.attribute", "noun.body",
            "noun.cognition", "noun.communication", "noun.event", "noun.feeling", "noun.food",
            "noun.group", "noun.location", "noun.motive", "noun.object", "noun.person",
            "noun.phenomenon", "noun.plant", "noun.possession", "noun.process", "noun.quantity",
            "noun.relation", "noun.shape", "noun.state", "noun.substance", "noun.time",
        ),
    ),
    (
        2,
        (
            "verb.body", "verb.change", "verb.cognition", "verb.communication", "verb.competition",
            "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
            "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather",
        ),
    ),
    (3, ("adj.ppl",)),
)  # fmt: skip


def lexnames_text() -> str:
    """The ``lexnames`` file: ``NN<TAB>name<TAB>pos`` for the 45 lexicographer files, in order."""
    rows = [(name, pos) for pos, names in _LEXNAMES_BY_POS for name in names]
    assert len(rows) == 45, "WordNet 3.0 has 45 lexicographer files"
    return "".join(f"{i:02d}\t{name}\t{pos}\n" for i, (name, pos) in enumerate(rows))


def prepare_wordnet_data(nltk_data: str | Path, *, source: str | Path = DEBIAN_WORDNET_DIR) -> Path:
    """Make ``<nltk_data>/corpora/wordnet`` from Debian's WordNet files; idempotent.

    Files already present with the source's size are kept, so a second call copies nothing.

    Args:
        nltk_data: the NLTK data root to fill (normally ``settings.work_dir / "nltk_data"``).
        source: where the Debian packages installed WordNet.

    Returns:
        The NLTK data root (absolute).

    Raises:
        ProviderError: the Debian files are missing (names the packages and the install command).
    """
    source = Path(source)
    missing = [name for name in REQUIRED_FILES if not (source / name).is_file()]
    if missing:
        raise ProviderError(
            f"WordNet data not found in {source} (missing {', '.join(missing)})",
            item="wordnet",
            hint=f"install the Debian packages {' and '.join(DEBIAN_PACKAGES)}: {INSTALL_COMMAND}",
        )
    root = Path(nltk_data).resolve()
    target = root / "corpora" / "wordnet"
    target.mkdir(parents=True, exist_ok=True)
    copied = 0
    for name in REQUIRED_FILES + OPTIONAL_FILES:
        src, dst = source / name, target / name
        if not src.is_file() or (dst.is_file() and dst.stat().st_size == src.stat().st_size):
            continue
        # Copy through a temporary name so a crash never leaves a truncated index that looks usable.
        tmp = dst.with_name(f".{name}.tmp")
        shutil.copyfile(src, tmp)
        tmp.replace(dst)
        copied += 1
    lexnames = lexnames_text()
    lex_path = target / "lexnames"
    if not lex_path.is_file() or lex_path.read_text(encoding="utf-8") != lexnames:
        atomic_write_text(lex_path, lexnames)
        copied += 1
    if copied:
        log.info("prepared WordNet data in %s (%d files written)", target, copied)
    return root


def use_nltk_data(nltk_data: str | Path) -> None:
    """Put ``nltk_data`` first on ``nltk.data.path`` so NLTK finds the prepared WordNet there."""
    import nltk

    path = str(Path(nltk_data).resolve())
    if path in nltk.data.path:
        nltk.data.path.remove(path)
    nltk.data.path.insert(0, path)


# NLTK's WordNet reader is one object per process that seeks and reads shared file handles, so two
# threads looking words up at once read each other's lines. Everything that answers from it in
# threads (the provider's batches run as concurrent Prefect tasks) holds this lock.
WORDNET_LOCK = threading.RLock()


def load_wordnet(nltk_data: str | Path, *, source: str | Path = DEBIAN_WORDNET_DIR):
    """Prepare the data, point NLTK at it and return the loaded ``nltk.corpus.wordnet`` reader.

    Raises:
        ProviderError: the Debian files are missing, or NLTK cannot read the prepared folder.
    """
    root = prepare_wordnet_data(nltk_data, source=source)
    use_nltk_data(root)
    from nltk.corpus import wordnet

    try:
        wordnet.ensure_loaded()
    except (LookupError, OSError, ValueError, AssertionError) as exc:
        raise ProviderError(
            f"NLTK cannot read the WordNet data in {root / 'corpora' / 'wordnet'}: {exc}",
            item="wordnet",
            hint=f"delete that folder to have it prepared again; check {INSTALL_COMMAND}",
        ) from exc
    return wordnet


__all__ = ["DEBIAN_PACKAGES", "INSTALL_COMMAND", "WORDNET_LOCK", "lexnames_text", "load_wordnet",
           "prepare_wordnet_data"]
