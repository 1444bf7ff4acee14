"""``croissant.json``: Croissant 1.1 metadata with the Responsible-AI fields, made and validated by mlcroissant.

One FileObject with its sha256 per file of the release (the parquet shards, the native files, the
card, the gallery...), one FileSet per config and one RecordSet per config whose fields read the
parquet columns and carry the card's field descriptions. The RAI fields are the build record put
into words.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from segbench.core.errors import OutputError
from segbench.core.io import atomic_write_text
from segbench.core.release.licences import ReleaseLicences
from segbench.core.release.parquet import Shard
from segbench.core.release.plan import ReleasePlan
from segbench.core.release.rounds import describe_rounds
from segbench.schemas.release import ReleaseInfo

_FORMATS = {".json": "application/json", ".jsonl": "application/jsonlines", ".md": "text/markdown",
            ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".py": "text/x-python",
            ".yaml": "application/yaml", ".csv": "text/csv", ".parquet": "application/x-parquet"}
CONFORMS_TO = ["http://mlcommons.org/croissant/1.1", "http://mlcommons.org/croissant/RAI/1.0"]


def semver(release_version: str, data_version: str) -> str:
    """The release's MAJOR.MINOR.PATCH with the data version as SemVer build metadata (``1.0.0+dvc-md5-3f…``)."""
    metadata = re.sub(r"[^0-9A-Za-z.-]+", "-", data_version).strip("-.") or "unversioned"
    return f"{release_version}+{metadata}"


def _data_type(feature: Any) -> Any:
    """The Croissant data type of a Hugging Face feature (nested ones are read as JSON text)."""
    import mlcroissant as mlc
    from datasets import ClassLabel, Image, Value

    if isinstance(feature, Image):
        return mlc.DataType.IMAGE_OBJECT
    if isinstance(feature, ClassLabel):
        return mlc.DataType.INTEGER
    if isinstance(feature, Value):
        dtype = feature.dtype
        if dtype.startswith(("int", "uint")):
            return mlc.DataType.INTEGER
        if dtype.startswith("float"):
            return mlc.DataType.FLOAT
        if dtype == "bool":
            return mlc.DataType.BOOL
    return mlc.DataType.TEXT


def _fields(mlc: Any, field_id: str, file_set: str, name: str, feature: Any, column: str | None = None,
            path: str | None = None, description: str | None = None) -> list[Any]:
    """The Croissant fields of one feature: leaves read their column (a JSON path into it when nested),
    lists are arrays, a struct has one sub-field per key. mlcroissant reads one level of sub-fields,
    so a struct inside a struct is flattened into leaves named ``<struct>_<key>``."""
    from datasets import ClassLabel, Image, List

    def source(json_path: str | None) -> Any:
        transforms = [mlc.Transform(json_path=json_path)] if json_path else []
        return mlc.Source(file_set=file_set, extract=mlc.Extract(column=column or name), transforms=transforms)

    is_array = isinstance(feature, List)
    inner = feature.feature if is_array else feature
    array = {"is_array": True, "array_shape": "-1"} if is_array else {}
    if isinstance(inner, dict):
        if path is not None and not is_array:
            return [field for key, value in inner.items()
                    for field in _fields(mlc, f"{field_id}_{key}", file_set, f"{name}_{key}", value,
                                         column=column, path=f"{path}.{key}")]
        sub_fields = [field for key, value in inner.items()
                      for field in _fields(mlc, f"{field_id}/{key}", file_set, key, value, column=column or name,
                                           path=key)]
        return [mlc.Field(id=field_id, name=name, description=description, data_types=[], sub_fields=sub_fields,
                          **array)]
    json_path = (f"{path}.bytes" if path else "bytes") if isinstance(inner, Image) else path
    if isinstance(inner, ClassLabel):
        classes = f"class index: {', '.join(f'{i} {n}' for i, n in enumerate(inner.names))}"
        description = f"{description} ({classes})" if description else classes
    return [mlc.Field(id=field_id, name=name, description=description, data_types=[_data_type(inner)],
                      source=source(json_path), **array)]


def croissant(plan: ReleasePlan, info: ReleaseInfo, shards: dict[tuple[str, str], list[Shard]],
              terms: ReleaseLicences, files: list[tuple[str, int, str]], *, url: str | None = None) -> dict[str, Any]:
    """The Croissant document: every file with its sha256, a record set per config, the RAI fields.

    Args:
        files: ``(path, bytes, sha256)`` of every file of the release but the parquet shards and itself.
        url: where the release is published (the pushed Hub repository); absent when it is not.
    """
    import mlcroissant as mlc

    distribution: list[Any] = []
    record_sets: list[Any] = []
    for config, splits in plan.configs().items():
        file_set = f"parquet-{config}"
        includes = list(dict.fromkeys(t.path for t in plan.tables if t.config == config))
        distribution.append(mlc.FileSet(id=file_set, name=file_set, encoding_formats=["application/x-parquet"],
                                        includes=includes,
                                        description=f"the parquet shards of config {config} ({', '.join(splits)})"))
        features, descriptions = plan.features_of(config)
        fields = [field for name, feature in features.items()
                  for field in _fields(mlc, f"{config}/{name}", file_set, name, feature,
                                       description=descriptions[name])]
        fields.append(mlc.Field(id=f"{config}/split", name="split", data_types=[mlc.DataType.TEXT],
                                description="the split a row belongs to (from its file name)",
                                source=mlc.Source(file_set=file_set, extract=mlc.Extract(file_property="filename"),
                                                  transforms=[mlc.Transform(regex=r"^(\w+)-\d{5}-of-\d{5}\.parquet$")])))
        record_sets.append(mlc.RecordSet(id=config, name=config, fields=fields,
                                         description=f"one row per example of config {config}"))
    described: set[str] = set()
    for (_config, split), parts in shards.items():
        for shard in parts:
            if shard.path in described:
                continue  # a split that configs share: one file, one FileObject
            described.add(shard.path)
            users = [c for (c, s), others in shards.items() if s == split and shard in others]
            distribution.append(mlc.FileObject(id=shard.path, name=shard.path, content_url=shard.path,
                                               content_size=f"{shard.size} B", sha256=shard.sha256,
                                               encoding_formats=["application/x-parquet"],
                                               description=f"{split} of {', '.join(users)}: {shard.rows} rows"))
    for path, size, digest in files:
        distribution.append(mlc.FileObject(id=path, name=path, content_url=path, content_size=f"{size} B",
                                           sha256=digest, encoding_formats=[_FORMATS.get(Path(path).suffix,
                                                                                         "application/octet-stream")]))
    rounds = describe_rounds(plan.rounds)
    overlaps = sorted({r.overlap or 1 for r in plan.rounds})
    # From the first human round to the build (or the build's day alone when no person took part).
    dates = {day[:10] for day in (plan.created, *(r.created for r in plan.rounds), *(r.ingested for r in plan.rounds))
             if day}
    metadata = mlc.Metadata(
        name=plan.name, description=plan.summary, version=semver(info.version, plan.version),
        license=terms.croissant(), url=url, cite_as="\n\n".join([*([info.citation] if info.citation else []),
                                                                 *plan.citations]) or None,
        in_language=["en"], date_created=plan.created[:10], date_published=plan.created[:10],
        conforms_to=CONFORMS_TO, creators=[mlc.Person(name=info.creators or info.maintainer)],
        keywords=["image segmentation", "evaluation", plan.name], distribution=distribution, record_sets=record_sets,
        data_collection=plan.collection, data_collection_type=["Secondary Data Analysis"],
        data_collection_timeframe=sorted({min(dates), max(dates)}),
        data_preprocessing_protocol=[plan.preprocessing, "Selection counts: " + ", ".join(
            f"{rule} {count}" for rule, count in plan.selection.items())],
        data_manipulation_protocol=plan.manipulation,
        data_annotation_protocol=[plan.annotation_protocol, rounds],
        data_annotation_platform=sorted({r.platform for r in plan.rounds}) or ["none"],
        data_annotation_analysis=[rounds, *plan.findings],
        annotations_per_item=", ".join(str(o) for o in overlaps) if overlaps else "1 (derived labels)",
        annotator_demographics=(["not collected: the round records hold no worker's demographics"] if plan.rounds
                                else None),
        machine_annotation_tools=plan.machine_tools or ["none"],
        data_biases=plan.biases, data_limitations=plan.limitations,
        data_use_cases=[info.intended_uses or "", *plan.use_cases], data_social_impact=info.social_impact,
        personal_sensitive_information=[info.personal_information or ""],
        data_release_maintenance_plan=[f"Maintained by {info.maintainer}. Each data version is released anew "
                                       f"with its version ({plan.version}) in the card; fixes make a new version."],
    )
    return metadata.to_json()


def write_and_validate(folder: Path, document: dict[str, Any]) -> Path:
    """Write ``croissant.json`` and load it back with mlcroissant; any error it reports fails the release."""
    import mlcroissant as mlc

    path = atomic_write_text(folder / "croissant.json",
                             json.dumps(document, indent=1, ensure_ascii=False, default=str) + "\n")
    try:
        mlc.Dataset(jsonld=path)
    except Exception as exc:  # mlcroissant raises ValidationError and plain ValueErrors alike
        raise OutputError(f"the Croissant metadata does not validate ({exc})", path=path,
                          hint="report this as a segbench bug, with the message") from exc
    return path


def files_not_released(folder: Path) -> list[str] | None:
    """The files in ``folder`` that the release whose ``croissant.json`` is there did not write
    (its Croissant lists every file but itself); ``None`` when there is no readable ``croissant.json``."""
    try:
        document = json.loads((folder / "croissant.json").read_text("utf-8"))
        listed = {entry["contentUrl"] for entry in document.get("distribution", [])
                  if entry.get("@type") == "cr:FileObject"}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    present = {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file() or path.is_symlink()}
    return sorted(present - listed - {"croissant.json"})
