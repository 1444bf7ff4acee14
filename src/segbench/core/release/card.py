"""The dataset card: ``README.md`` with the Hub's YAML header, written from the build record.

Every statement is the plan's (the build record put into words), the maker's (``release.toml``) or
the licences computed once for the release (:mod:`.licences`); the card adds no fact of its own.
"""

from __future__ import annotations

from typing import Any

import yaml

import segbench
from segbench.core.release.licences import CardLicence, ReleaseLicences
from segbench.core.release.parquet import Shard, pyarrow_version
from segbench.core.release.plan import ReleasePlan
from segbench.core.release.rounds import LOW_KAPPA, agreement_rows, low_agreement, round_rows
from segbench.schemas.release import ReleaseInfo


class _NoAliases(yaml.SafeDumper):
    """Writes repeated values out in full: the Hub's card parser expects no YAML anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def size_category(rows: int) -> str:
    for bound, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if rows < bound:
            return name
    return "n>1M"


def default_config(plan: ReleasePlan) -> str:
    configs = list(plan.configs())
    return plan.default_config if plan.default_config in configs else next(iter(configs), "default")


class CardYaml(CardLicence):
    """The YAML header of a dataset card, as the Hub reads it."""

    language: list[str]
    pretty_name: str
    task_categories: list[str]
    size_categories: list[str]
    source_datasets: list[str]
    annotations_creators: list[str]
    configs: list[dict[str, Any]]
    dataset_info: list[dict[str, Any]]


def card_yaml(plan: ReleasePlan, shards: dict[tuple[str, str], list[Shard]], terms: ReleaseLicences) -> CardYaml:
    configs = plan.configs()
    paths = {(t.config, t.split): t.path for t in plan.tables}
    default = default_config(plan)
    return {
        **terms.card_fields(),
        "language": ["en"],
        "pretty_name": plan.pretty_name,
        "task_categories": ["image-segmentation"],
        "size_categories": [size_category(max((sum(s.values()) for s in configs.values()), default=0))],
        "source_datasets": plan.source_datasets,
        "annotations_creators": plan.annotations_creators,
        "configs": [{"config_name": config, **({"default": True} if config == default else {}),
                     "data_files": [{"split": split, "path": paths[(config, split)]} for split in splits]}
                    for config, splits in configs.items()],
        "dataset_info": [{"config_name": config, "features": plan.features_of(config)[0].to_yaml_list(),
                          "splits": [{"name": split, "num_examples": rows,
                                      "num_bytes": sum(s.size for s in shards[(config, split)])}
                                     for split, rows in splits.items()]}
                         for config, splits in configs.items()],
    }


def feature_type(feature: Any) -> str:
    """A feature's type in words: ``int64``, ``image``, ``class label``, ``list of float32``, ``struct``."""
    from segbench.core.release.features import ClassLabel, Image, List, Value

    if isinstance(feature, Image):
        return "image"
    if isinstance(feature, ClassLabel):
        return "class label: " + ", ".join(f"{i} = {name}" for i, name in enumerate(feature.names))
    if isinstance(feature, Value):
        return feature.dtype
    if isinstance(feature, List):
        inner = feature.feature
        return "list of " + ("structs {" + ", ".join(inner) + "}" if isinstance(inner, dict) else feature_type(inner))
    if isinstance(feature, dict):
        return "struct {" + ", ".join(feature) + "}"
    return type(feature).__name__


def table(header: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table; ``|`` and new lines inside a cell are escaped so the table stays one."""
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                      *("| " + " | ".join(cell(v) for v in row) + " |" for row in rows)])


def bullets(items: list[str], empty: str = "none recorded") -> str:
    return "\n".join(f"- {item}" for item in items) if items else f"- {empty}"


def all_findings(plan: ReleasePlan) -> list[str]:
    """The plan's findings, then a warning for each question people agreed on little beyond chance."""
    low = low_agreement(plan.rounds)
    return [*plan.findings, *([f"Low agreement (κ < {LOW_KAPPA}) on {', '.join(low)}: people agreed little beyond "
                               "chance there, so those answers are weak evidence." ] if low else [])]


def fields_section(plan: ReleasePlan) -> str:
    """The fields of the main configs, then of each config of another shape (the people's answers)."""
    sections = [table(["field", "type", "description"],
                      [[f"`{name}`", feature_type(feature), plan.descriptions[name]]
                       for name, feature in plan.features.items()])]
    for config in plan.configs():
        features, descriptions = plan.features_of(config)
        if features is not plan.features:
            sections.append(f"Config `{config}`:\n\n" + table(
                ["field", "type", "description"],
                [[f"`{name}`", feature_type(feature), descriptions[name]] for name, feature in features.items()]))
    return "\n\n".join(sections)


def annotation_section(plan: ReleasePlan) -> str:
    parts = [plan.annotation_protocol]
    if plan.rounds:
        parts += ["Human rounds behind the data:", table(
            ["round", "kind", "platform", "items", "answers per item", "workers", "answers", "gold items",
             "qualification", "aggregation", "dates"], round_rows(plan.rounds))]
        agreement = agreement_rows(plan.rounds)
        if agreement:
            parts += ["Agreement between workers, per question (Fleiss' κ and Krippendorff's α over the answers):",
                      table(["round", "question", "κ", "α", "majority answers", "note"], agreement)]
    else:
        parts.append("No human annotation round is behind this data.")
    parts.append(f"Machine tools: {'; '.join(plan.machine_tools) or 'none'}.")
    return "\n\n".join(parts)


def licence_section(terms: ReleaseLicences) -> str:
    rows = [[c.licence.applies_to, f"`{c.licence.id}`", "yes" if c.shipped else "no"] for c in terms.components]
    return (f"In short: {terms.summary()}.\n\n" + table(["part", "licence", "in this release"], rows)
            + "\n\nEach row's `license_id` names its image's licence. `LICENSES.md` has the names and links, "
              "`licenses.json` the same for a program.")


def card(plan: ReleasePlan, info: ReleaseInfo, shards: dict[tuple[str, str], list[Shard]], gallery: list[str],
         terms: ReleaseLicences) -> str:
    header = yaml.dump(card_yaml(plan, shards, terms), Dumper=_NoAliases, sort_keys=False, allow_unicode=True,
                       width=1000)
    configs = plan.configs()
    split_rows = [[f"`{config}`", split, rows] for config, splits in configs.items() for split, rows in splits.items()]
    first = default_config(plan)
    pictures = "\n".join(f"![{name}](gallery/{name})" for name in gallery[:4])
    more = f"\n\nAll {len(gallery)} sheets are in [`gallery/`](gallery/)." if len(gallery) > 4 else ""
    withheld = (f"\n\n{len(terms.withheld)} images are not in this release (no parquet cell and no file holds them): "
                "their licence forbids redistribution. Their rows keep the source file's name; see `LICENSES.md`."
                if terms.withheld else "")
    native = ("`native/` holds the files the official evaluators read, unmodified (no image: no evaluator reads "
              "one)." if plan.native else "")
    out_of_scope = f"\n\nOut of scope: {info.out_of_scope_uses}" if info.out_of_scope_uses else ""
    findings = bullets(all_findings(plan), "the build recorded no check of the data's quality beyond the counts above")
    return f"""---
{header}---

# {plan.pretty_name}

{plan.summary}

Data version `{plan.version}`, built {plan.created}. Made with segbench {segbench.__version__}; the parquet files
were written by pyarrow {pyarrow_version()} with pinned settings, so a release of this version is byte-identical to
this one.

## Load it

```python
from pathlib import Path

from datasets import load_dataset

path = str(Path.cwd())  # run in this folder; or the Hub repository it was pushed to, "ORG/NAME"
{plan.load_example or f'ds = load_dataset(path, "{first}")'}
```

Offline, or without `datasets`: the files under `data/` are plain parquet (`pyarrow.parquet.read_table`); an image
column holds the encoded bytes (PNG or JPEG), never a path.
`croissant.json` describes every file and column (`mlcroissant.Dataset("croissant.json").records("{first}")`).
{native}{withheld}{(chr(10) + chr(10) + plan.notes) if plan.notes else ""}

## Data fields

{fields_section(plan)}

## Configs and splits

{table(["config", "split", "rows"], split_rows)}

The ids each split holds, with the seed that drew them, are in `splits.json`.

## Gallery

{pictures or "No picture."}{more}

## Sources

{table(["input", "sha256"], [[name, f"`{digest}`"] for name, digest in sorted(plan.sources.items())])}

## Selection

Seed: {plan.seed if plan.seed is not None else "none (no random draw)"}.

{table(["rule", "count"], [[rule.replace("_", " "), count] for rule, count in plan.selection.items()])}

{plan.preprocessing}

## Annotation

{annotation_section(plan)}

## What the build's records show

{findings}

## Biases

{bullets(plan.biases)}

## Known limitations

{bullets(plan.limitations)}

## Uses

Intended uses of this release (its maker's): {info.intended_uses}{out_of_scope}

What the dataset's design measures, on real sources:

{bullets(plan.use_cases)}

## Licence

{licence_section(terms)}

## Maintenance

Maintained by {info.maintainer}. A new data version is a new release with its own version and tag.

## Citation

```bibtex
{chr(10).join([*([info.citation] if info.citation else []), *plan.citations])}
```
"""
