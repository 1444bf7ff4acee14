"""What a dataset hands the release writer: its tables, native files and the facts its card states.

Each dataset's ``tasks/<dataset>/release.py`` reads its build (from the working tree or a DVC
version, through :class:`segbench.core.versioning.DatasetSource`) and returns a
:class:`ReleasePlan`. Rows are produced lazily, one at a time, so a release never holds a split in
memory. Everything else here is the build record put into words: the card, the datasheet and the
Croissant metadata are written from it alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Licence:
    """A licence that applies to part of a release."""

    id: str  # SPDX-style, as the Hub's card expects (cc-by-4.0, apache-2.0, other)
    name: str
    url: str | None
    redistributable: bool
    applies_to: str
    of_images: bool = True  # False for the licence of a source's annotations


@dataclass(frozen=True)
class ImagePolicy:
    """Which licence an image carries and whether its bytes go into the release.

    ``terms`` is the maker's statement of the images' terms (``release.toml``'s ``[images]``), which
    replaces each source's default; ``annotation_terms`` (``[source_annotations]``) does the same for
    masks and labels copied from sources; ``embed_restricted`` embeds images whose licence forbids
    redistribution (the maker then answers for it).
    """

    terms: Licence | None = None
    embed_restricted: bool = False
    annotation_terms: Licence | None = None

    def licence(self, default: Licence) -> Licence:
        return self.terms or default

    def annotations(self, default: Licence) -> Licence:
        """The licence of annotations copied from a source: the maker's statement, else the source's."""
        if self.annotation_terms is None:
            return default
        return Licence(self.annotation_terms.id, self.annotation_terms.name, self.annotation_terms.url,
                       self.annotation_terms.redistributable, default.applies_to, of_images=False)

    def embed(self, licence: Licence) -> bool:
        return licence.redistributable or self.embed_restricted


@dataclass(frozen=True)
class Table:
    """One split of one config: its row count and a function that yields its rows."""

    config: str
    split: str
    count: int
    rows: Callable[[], Iterator[Mapping[str, Any]]]
    features: Any = None  # a config of its own shape (the people's answers); None: the plan's features
    descriptions: Mapping[str, str] | None = None
    folder: str | None = None  # under data/: the config's own by default; tables of one folder and split share files

    @property
    def path(self) -> str:
        """The release path of the split's shards, as the card's ``data_files`` names them."""
        return f"data/{self.folder or self.config}/{self.split}-*.parquet"


@dataclass(frozen=True)
class AnnotationRound:
    """One human round behind the data, as the card and Croissant's RAI fields describe it."""

    key: str
    kind: str
    platform: str
    created: str  # when the round was created and last ingested (its record's timestamps)
    ingested: str
    overlap: int | None
    items: int
    answers: int
    annotators: int
    aggregation: str
    gold: int
    qualification: str
    agreement: Mapping[str, Mapping[str, float | None]]  # control → {kappa, alpha}
    decided: Mapping[str, Mapping[str, int]]  # control → majority answer → items


@dataclass
class ReleasePlan:
    """Everything a release of one dataset writes, from its build record.

    Attributes:
        name: the dataset's registry name (``coco_cd``).
        pretty_name: the card's title.
        summary: one paragraph on what the dataset is.
        features: the Hugging Face features of every config (``datasets.Features``).
        descriptions: feature → what it holds (meaning, units, value set); one per feature (:func:`columns`).
        tables: the splits, in the order the card lists them.
        native: release path → the build's file (relative to the project) for the official evaluators.
        version: the data version the release is made from (the DVC revision, or the build key).
        created: the build's ``created_at``.
        sources: the inputs the build read, with their sha256.
        selection: rule → count, in the order the rules apply.
        seed: the seed of the split draw, if any.
        chosen_ids: config → split → the ids it holds (the card links them; ``splits.json`` lists them).
        rounds: the human rounds behind the data.
        machine_tools: the models and programs that produced or judged parts of the data.
        collection, preprocessing, annotation_protocol: prose for the card, datasheet and Croissant.
        biases, limitations, use_cases: bullet points.
        licences: the licences of the source images (per source, or per image where the source records
            one) and of the annotations copied from sources; rows name theirs in ``license_id``.
        maker_covers: what the maker's ``annotations_license`` covers (what the release adds).
        findings: what the build's records say of the data's quality, for the card and datasheet.
        datasheet_answers: datasheet question id → an answer from the build's records (:mod:`.datasheet`).
        manipulation: how images were altered, if they were (Croissant's data manipulation protocol).
        default_config: the config the card loads first (the papers' headline one).
        citations: BibTeX entries to cite.
        source_datasets, annotations_creators, size_category: the card's YAML.
        gallery: writes the contact sheets into a folder and returns their paths relative to it.
    """

    name: str
    pretty_name: str
    summary: str
    features: Any
    descriptions: dict[str, str]
    tables: list[Table]
    native: dict[str, str]
    version: str
    created: str
    sources: dict[str, str]
    selection: dict[str, Any]
    seed: int | None
    chosen_ids: dict[str, dict[str, list[Any]]]
    rounds: list[AnnotationRound]
    machine_tools: list[str]
    collection: str
    preprocessing: str
    annotation_protocol: str
    biases: list[str]
    limitations: list[str]
    use_cases: list[str]
    licences: list[Licence]
    maker_covers: str
    citations: list[str]
    source_datasets: list[str]
    annotations_creators: list[str]
    gallery: Callable[[Path], list[str]]
    load_example: str = ""
    has_images: bool = True  # False when the build holds no images (a masks-only COCO-CD build)
    notes: str = ""  # what a user must know to load it (withheld images and how to put them back)
    findings: list[str] = field(default_factory=list)
    datasheet_answers: dict[str, str] = field(default_factory=dict)
    manipulation: str | None = None
    default_config: str | None = None
    extra_files: dict[str, bytes] = field(default_factory=dict)  # release path → bytes (a script, a table)

    def __post_init__(self) -> None:
        undescribed = [name for name in self.features if not self.descriptions.get(name)]
        if undescribed:
            raise ValueError(f"release plan {self.name}: no description of {', '.join(undescribed)}")

    def features_of(self, config: str) -> tuple[Any, Mapping[str, str]]:
        """A config's features and their descriptions."""
        table = next((t for t in self.tables if t.config == config and t.features is not None), None)
        return (table.features, table.descriptions or {}) if table else (self.features, self.descriptions)

    def configs(self) -> dict[str, dict[str, int]]:
        """config → split → rows, in table order."""
        out: dict[str, dict[str, int]] = {}
        for table in self.tables:
            out.setdefault(table.config, {})[table.split] = table.count
        return out


def columns(*specs: tuple[str, Any, str]) -> tuple[Any, dict[str, str]]:
    """The features of ``(name, feature, description)`` triples, and their descriptions: the one place
    a release's column is both typed and explained."""
    from segbench.core.release.features import Features

    return Features({name: feature for name, feature, _ in specs}), {name: text for name, _, text in specs}
