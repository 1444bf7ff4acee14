"""``croissant.json``: Croissant 1.1 metadata with the Responsible-AI fields.

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


# The JSON-LD context of Croissant 1.1 with the RAI vocabulary, as mlcroissant writes it.
CONTEXT: dict[str, Any] = {
    "@language": "en", "@vocab": "https://schema.org/", "citeAs": "cr:citeAs", "column": "cr:column",
    "conformsTo": "dct:conformsTo", "cr": "http://mlcommons.org/croissant/", "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"}, "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/", "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"}, "extract": "cr:extract", "field": "cr:field",
    "fileProperty": "cr:fileProperty", "fileObject": "cr:fileObject", "fileSet": "cr:fileSet", "format": "cr:format",
    "includes": "cr:includes", "isLiveDataset": "cr:isLiveDataset", "jsonPath": "cr:jsonPath", "key": "cr:key",
    "md5": "cr:md5", "parentField": "cr:parentField", "path": "cr:path", "recordSet": "cr:recordSet",
    "references": "cr:references", "regex": "cr:regex", "repeated": "cr:repeated", "replace": "cr:replace",
    "samplingRate": "cr:samplingRate", "sc": "https://schema.org/", "separator": "cr:separator", "source": "cr:source",
    "subField": "cr:subField", "transform": "cr:transform",
}
_FIRST = ("@context", "@type", "@id", "name", "description", "conformsTo")
_LAST = ("distribution", "field", "data", "recordSet", "subField", "extract", "transform")
_ALWAYS_LISTS = {"distribution", "field", "recordSet"}


def _canonical(node: dict[str, Any]) -> dict[str, Any]:
    """A node the way mlcroissant serialises one, so loading and saving the document again changes no
    byte: empty values dropped, one-element lists unboxed (but the three lists that are always lists),
    keys ordered with the identity first and the long lists last, nested nodes likewise."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(value, list):
            value = [_canonical(v) if isinstance(v, dict) else v for v in value]
            if len(value) == 1 and key not in _ALWAYS_LISTS:
                value = value[0]
        elif isinstance(value, dict) and key != "@context":
            value = _canonical(value)
        if value or isinstance(value, bool):
            out[key] = value
    middle = sorted(key for key in out if key not in _FIRST and key not in _LAST)
    return {key: out[key] for key in (*(k for k in _FIRST if k in out), *middle, *(k for k in _LAST if k in out))}


def _data_type(feature: Any) -> str:
    """The Croissant data type of a release feature (nested ones are read as JSON text)."""
    from segbench.core.release.features import ClassLabel, Image, Value

    if isinstance(feature, Image):
        return "sc:ImageObject"
    if isinstance(feature, ClassLabel):
        return "sc:Integer"
    if isinstance(feature, Value):
        dtype = feature.dtype
        if dtype.startswith(("int", "uint")):
            return "sc:Integer"
        if dtype.startswith("float"):
            return "sc:Float"
        if dtype == "bool":
            return "sc:Boolean"
    return "sc:Text"


def _fields(field_id: str, file_set: str, name: str, feature: Any, column: str | None = None,
            path: str | None = None, description: str | None = None) -> list[dict[str, Any]]:
    """The Croissant fields of one feature: leaves read their column (a JSON path into it when nested),
    lists are arrays, a struct has one sub-field per key. mlcroissant reads one level of sub-fields,
    so a struct inside a struct is flattened into leaves named ``<struct>_<key>``."""
    from segbench.core.release.features import ClassLabel, Image, List

    is_array = isinstance(feature, List)
    inner = feature.feature if is_array else feature
    array = {"cr:arrayShape": "-1", "cr:isArray": True} if is_array else {}
    if isinstance(inner, dict):
        if path is not None and not is_array:
            return [field for key, value in inner.items()
                    for field in _fields(f"{field_id}_{key}", file_set, f"{name}_{key}", value,
                                         column=column, path=f"{path}.{key}")]
        sub_fields = [field for key, value in inner.items()
                      for field in _fields(f"{field_id}/{key}", file_set, key, value, column=column or name,
                                           path=key)]
        return [{"@type": "cr:Field", "@id": field_id, "name": name, "description": description, **array,
                 "subField": sub_fields}]
    json_path = (f"{path}.bytes" if path else "bytes") if isinstance(inner, Image) else path
    if isinstance(inner, ClassLabel):
        classes = f"class index: {', '.join(f'{i} {n}' for i, n in enumerate(inner.names))}"
        description = f"{description} ({classes})" if description else classes
    source = {"fileSet": {"@id": file_set}, "extract": {"column": column or name},
              "transform": {"jsonPath": json_path} if json_path else None}
    return [{"@type": "cr:Field", "@id": field_id, "name": name, "description": description, **array,
             "dataType": _data_type(inner), "source": source}]


def _file_object(path: str, size: int, sha256: str, encoding: str, description: str | None = None) -> dict[str, Any]:
    return {"@type": "cr:FileObject", "@id": path, "name": path, "description": description,
            "contentSize": f"{size} B", "contentUrl": path, "encodingFormat": encoding, "sha256": sha256}


def croissant(plan: ReleasePlan, info: ReleaseInfo, shards: dict[tuple[str, str], list[Shard]],
              terms: ReleaseLicences, files: list[tuple[str, int, str]], *, url: str | None = None) -> dict[str, Any]:
    """The Croissant document: every file with its sha256, a record set per config, the RAI fields.

    Written as mlcroissant would write it (the tests load it with mlcroissant, check it raises no issue
    and that saving it again gives the same document), without importing mlcroissant at release time.

    Args:
        files: ``(path, bytes, sha256)`` of every file of the release but the parquet shards and itself.
        url: where the release is published (the pushed Hub repository); absent when it is not.
    """
    distribution: list[dict[str, Any]] = []
    record_sets: list[dict[str, Any]] = []
    for config, splits in plan.configs().items():
        file_set = f"parquet-{config}"
        includes = list(dict.fromkeys(t.path for t in plan.tables if t.config == config))
        distribution.append({"@type": "cr:FileSet", "@id": file_set, "name": file_set,
                             "description": f"the parquet shards of config {config} ({', '.join(splits)})",
                             "encodingFormat": "application/x-parquet", "includes": includes})
        features, descriptions = plan.features_of(config)
        fields = [field for name, feature in features.items()
                  for field in _fields(f"{config}/{name}", file_set, name, feature, description=descriptions[name])]
        fields.append({"@type": "cr:Field", "@id": f"{config}/split", "name": "split",
                       "description": "the split a row belongs to (from its file name)", "dataType": "sc:Text",
                       "source": {"fileSet": {"@id": file_set}, "extract": {"fileProperty": "filename"},
                                  "transform": {"regex": r"^(\w+)-\d{5}-of-\d{5}\.parquet$"}}})
        record_sets.append({"@type": "cr:RecordSet", "@id": config, "name": config,
                            "description": f"one row per example of config {config}", "field": fields})
    described: set[str] = set()
    for (_config, split), parts in shards.items():
        for shard in parts:
            if shard.path in described:
                continue  # a split that configs share: one file, one FileObject
            described.add(shard.path)
            users = [c for (c, s), others in shards.items() if s == split and shard in others]
            distribution.append(_file_object(shard.path, shard.size, shard.sha256, "application/x-parquet",
                                             f"{split} of {', '.join(users)}: {shard.rows} rows"))
    for path, size, digest in files:
        distribution.append(_file_object(path, size, digest,
                                         _FORMATS.get(Path(path).suffix, "application/octet-stream")))
    rounds = describe_rounds(plan.rounds)
    overlaps = sorted({r.overlap or 1 for r in plan.rounds})
    # From the first human round to the build (or the build's day alone when no person took part).
    dates = {day[:10] for day in (plan.created, *(r.created for r in plan.rounds), *(r.ingested for r in plan.rounds))
             if day}
    return _canonical({
        "@context": CONTEXT, "@type": "sc:Dataset", "name": plan.name, "description": plan.summary,
        "conformsTo": CONFORMS_TO, "version": semver(info.version, plan.version), "license": terms.croissant(),
        "url": url, "citeAs": "\n\n".join([*([info.citation] if info.citation else []), *plan.citations]),
        "inLanguage": ["en"], "dateCreated": plan.created[:10], "datePublished": plan.created[:10],
        "creator": {"@type": "sc:Person", "name": info.creators or info.maintainer},
        "keywords": ["image segmentation", "evaluation", plan.name],
        "rai:dataCollection": plan.collection, "rai:dataCollectionType": ["Secondary Data Analysis"],
        "rai:dataCollectionTimeFrame": sorted({min(dates), max(dates)}),
        "rai:dataPreprocessingProtocol": [plan.preprocessing, "Selection counts: " + ", ".join(
            f"{rule} {count}" for rule, count in plan.selection.items())],
        # The RAI vocabulary names it dataManipulationProtocol; mlcroissant reads and writes
        # dataDataManipulationProtocol. Both, so either kind of reader finds it.
        "rai:dataManipulationProtocol": plan.manipulation, "rai:dataDataManipulationProtocol": plan.manipulation,
        "rai:dataAnnotationProtocol": [plan.annotation_protocol, rounds],
        "rai:dataAnnotationPlatform": sorted({r.platform for r in plan.rounds}) or ["none"],
        "rai:dataAnnotationAnalysis": [rounds, *plan.findings],
        "rai:annotationsPerItem": ", ".join(str(o) for o in overlaps) if overlaps else "1 (derived labels)",
        "rai:annotatorDemographics": (["not collected: the round records hold no worker's demographics"]
                                      if plan.rounds else None),
        "rai:machineAnnotationTools": plan.machine_tools or ["none"],
        "rai:dataBiases": plan.biases, "rai:dataLimitations": plan.limitations,
        "rai:dataUseCases": [info.intended_uses or "", *plan.use_cases], "rai:dataSocialImpact": info.social_impact,
        "rai:personalSensitiveInformation": [info.personal_information or ""],
        "rai:dataReleaseMaintenancePlan": [f"Maintained by {info.maintainer}. Each data version is released anew "
                                           f"with its version ({plan.version}) in the card; fixes make a new version."],
        "distribution": distribution, "recordSet": record_sets,
    })


def write(folder: Path, document: dict[str, Any]) -> Path:
    """Write ``croissant.json``."""
    return atomic_write_text(folder / "croissant.json",
                             json.dumps(document, indent=1, ensure_ascii=False, default=str) + "\n")


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
