"""The dataset card (``README.md`` with the Hub's YAML header) and ``DATASHEET.md``, from the build record."""

from __future__ import annotations

from typing import Any

import yaml

from segbench.core.release.parquet import Shard, pyarrow_version
from segbench.core.release.plan import ReleasePlan
from segbench.core.release.rounds import describe_rounds
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


def card_yaml(plan: ReleasePlan, info: ReleaseInfo, shards: dict[tuple[str, str], list[Shard]]) -> dict[str, Any]:
    configs = plan.configs()
    features = plan.features._to_yaml_list()
    return {
        "license": info.annotations_license,
        "pretty_name": plan.pretty_name,
        "task_categories": ["image-segmentation"],
        "size_categories": [size_category(max((sum(s.values()) for s in configs.values()), default=0))],
        "source_datasets": plan.source_datasets,
        "annotations_creators": plan.annotations_creators,
        "configs": [{"config_name": config, "default": index == 0,
                     "data_files": [{"split": split, "path": f"data/{config}/{split}-*.parquet"} for split in splits]}
                    for index, (config, splits) in enumerate(configs.items())],
        "dataset_info": [{"config_name": config, "features": features,
                          "splits": [{"name": split, "num_examples": rows,
                                      "num_bytes": sum(s.size for s in shards[(config, split)])}
                                     for split, rows in splits.items()]}
                         for config, splits in configs.items()],
    }


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items) if items else "- none recorded"


def card(plan: ReleasePlan, info: ReleaseInfo, shards: dict[tuple[str, str], list[Shard]], gallery: list[str],
         withheld: int) -> str:
    header = yaml.dump(card_yaml(plan, info, shards), Dumper=_NoAliases, sort_keys=False, allow_unicode=True,
                       width=1000)
    configs = plan.configs()
    split_rows = "\n".join(f"| `{config}` | {split} | {rows} |" for config, splits in configs.items()
                           for split, rows in splits.items())
    sources = "\n".join(f"| {name} | `{digest}` |" for name, digest in sorted(plan.sources.items()))
    selection = "\n".join(f"| {rule.replace('_', ' ')} | {count} |" for rule, count in plan.selection.items())
    first = next(iter(configs), "default")
    pictures = "\n".join(f"![{name}](gallery/{name})" for name in gallery[:4])
    more = f"\n\nAll {len(gallery)} sheets are in [`gallery/`](gallery/)." if len(gallery) > 4 else ""
    withheld_text = (f"\n\n{withheld} images are not embedded: their licence forbids redistribution. Their rows keep "
                     "a reference to the source file (see `LICENSES.md`)." if withheld else "")
    return f"""---
{header}---

# {plan.pretty_name}

{plan.summary}

Data version `{plan.version}`, built {plan.created}. Made with segbench; the parquet files were written by
pyarrow {pyarrow_version()} with pinned settings, so a release of this version is byte-identical to this one.

## Load it

```python
from datasets import load_dataset

path = "."  # this folder, or the Hub repository it was pushed to
{plan.load_example or f'ds = load_dataset(path, "{first}")'}
```

Offline, or without `datasets`: the files under `data/` are plain parquet (`pyarrow.parquet.read_table`), with
the image and mask bytes embedded (PNG or JPEG; no paths). `croissant.json` describes every file and column
(`mlcroissant.Dataset("croissant.json").records("{first}")`). `native/` holds the files the official evaluators
read, unmodified.

## Configs and splits

| config | split | rows |
|---|---|---|
{split_rows}

The ids each split holds, with the seed that drew them, are in `splits.json`.{withheld_text}

## Gallery

{pictures or "No picture."}{more}

## Sources

| input | sha256 |
|---|---|
{sources}

## Selection

Seed: {plan.seed if plan.seed is not None else "none (no random draw)"}.

| rule | count |
|---|---|
{selection}

{plan.preprocessing}

## Annotation

{plan.annotation_protocol}

{describe_rounds(plan.rounds)}

Machine tools: {"; ".join(plan.machine_tools) or "none"}.

## Biases

{_bullets(plan.biases)}

## Known limitations

{_bullets(plan.limitations)}

## Uses

{info.intended_uses}

{_bullets(plan.use_cases)}

Out of scope: {info.out_of_scope_uses or "uses the intended uses above do not cover."}

## Licence

Annotations: `{info.annotations_license}`. Images keep their sources' licences; see `LICENSES.md` and
`licenses.json` (per image where the source records one).

## Maintenance

Maintained by {info.maintainer}. A new data version is a new release with its own version and tag.

## Citation

```bibtex
{chr(10).join(plan.citations)}
```
"""


def datasheet(plan: ReleasePlan, info: ReleaseInfo, withheld: int) -> str:
    """The seven sections of Datasheets for Datasets (Gebru et al.), from the record and the maker's answers."""
    configs = plan.configs()
    total = sum(sum(splits.values()) for splits in configs.values())
    return f"""# Datasheet: {plan.pretty_name}

Data version `{plan.version}`, built {plan.created}.

## 1. Motivation

{plan.summary}

Maintained by {info.maintainer}.

## 2. Composition

{total} rows over {len(configs)} configs ({", ".join(f"`{c}`: " + ", ".join(f"{s} {n}" for s, n in splits.items())
                                          for c, splits in configs.items())}). Features:
{", ".join(f"`{name}`" for name in plan.features)}.

Personal or sensitive information: {info.personal_information}

## 3. Collection process

{plan.collection}

Sources and their sha256: {", ".join(f"{name} `{digest[:12]}`" for name, digest in sorted(plan.sources.items()))}.

## 4. Preprocessing, cleaning and labelling

{plan.preprocessing}

Selection counts: {", ".join(f"{rule} {count}" for rule, count in plan.selection.items())}.

{plan.annotation_protocol} {describe_rounds(plan.rounds)}

Machine tools: {"; ".join(plan.machine_tools) or "none"}.

## 5. Uses

{info.intended_uses}

{_bullets(plan.use_cases)}

Biases to keep in mind:
{_bullets(plan.biases)}

Social impact: {info.social_impact}

## 6. Distribution

Released as parquet with a Hugging Face card and Croissant metadata. Annotations under `{info.annotations_license}`;
images under their sources' licences (`LICENSES.md`). {withheld} images are withheld for their licence.

## 7. Maintenance

Maintained by {info.maintainer}. Each data version is released anew, with its version in the card; errors are
fixed in a new version, never in place.

Known limitations:
{_bullets(plan.limitations)}
"""
