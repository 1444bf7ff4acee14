"""A release's column types, written the way Hugging Face ``datasets`` reads them, without importing it.

``datasets`` learns a parquet column's type (an Image, a ClassLabel) from the JSON in the schema's
``huggingface`` metadata, and the Hub from the card's ``dataset_info`` YAML. Both are plain data: this
module writes them from four small types (``Value``, ``ClassLabel``, ``Image``, ``List``; a ``dict`` is a
struct), so a release costs pyarrow's import, not ``datasets``' (about half a second). The test suite
checks the schema, the metadata and the YAML against ``datasets``' own for every shipped release.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

_ARROW = {"bool": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
          "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64(),
          "float16": pa.float16(), "float32": pa.float32(), "float64": pa.float64(), "string": pa.string(),
          "large_string": pa.large_string(), "binary": pa.binary()}


@dataclass(frozen=True)
class Value:
    """A scalar column: ``int64``, ``float32``, ``string``, ``bool``..."""

    dtype: str

    def __post_init__(self) -> None:
        if self.dtype not in _ARROW:
            raise ValueError(f"unknown value type {self.dtype!r}: use one of {', '.join(_ARROW)}")


@dataclass(frozen=True)
class ClassLabel:
    """An integer column whose values index ``names``."""

    names: tuple[str, ...]

    def __init__(self, names: list[str] | tuple[str, ...]) -> None:
        object.__setattr__(self, "names", tuple(names))


@dataclass(frozen=True)
class Image:
    """An image column: a struct of the encoded file's ``bytes`` and its ``path``."""


@dataclass(frozen=True)
class List:
    """A list of one feature (a ``dict`` for a list of structs)."""

    feature: Any


Feature = Value | ClassLabel | Image | List | Mapping[str, Any]


class Features(dict[str, Any]):
    """A release table's columns, in order: name → feature."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``datasets`` stores in the parquet schema (``Features.to_dict``)."""
        return {name: _as_dict(feature) for name, feature in self.items()}

    def to_yaml_list(self) -> list[dict[str, Any]]:
        """The card's ``dataset_info.features`` entry."""
        return [{"name": name, **_as_yaml(feature)} for name, feature in self.items()]

    @property
    def arrow_schema(self) -> pa.Schema:
        """The parquet schema, with the features in its ``huggingface`` metadata."""
        metadata = {"huggingface": json.dumps({"info": {"features": self.to_dict()}})}
        return pa.schema([pa.field(name, arrow_type(feature)) for name, feature in self.items()], metadata=metadata)


def arrow_type(feature: Any) -> pa.DataType:
    if isinstance(feature, Value):
        return _ARROW[feature.dtype]
    if isinstance(feature, ClassLabel):
        return pa.int64()
    if isinstance(feature, Image):
        return pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    if isinstance(feature, List):
        return pa.list_(arrow_type(feature.feature))
    if isinstance(feature, Mapping):
        return pa.struct([(name, arrow_type(inner)) for name, inner in feature.items()])
    raise TypeError(f"not a release feature: {feature!r}")


def _as_dict(feature: Any) -> dict[str, Any]:
    if isinstance(feature, Value):
        return {"dtype": feature.dtype, "_type": "Value"}
    if isinstance(feature, ClassLabel):
        return {"names": list(feature.names), "_type": "ClassLabel"}
    if isinstance(feature, Image):
        return {"_type": "Image"}
    if isinstance(feature, List):
        return {"feature": _as_dict(feature.feature), "_type": "List"}
    if isinstance(feature, Mapping):
        return {name: _as_dict(inner) for name, inner in feature.items()}
    raise TypeError(f"not a release feature: {feature!r}")


def _as_yaml(feature: Any) -> dict[str, Any]:
    """One feature in the card's YAML: ``dtype`` for a leaf, ``list``/``struct`` for nesting."""
    if isinstance(feature, Value):
        return {"dtype": feature.dtype}
    if isinstance(feature, ClassLabel):
        return {"dtype": {"class_label": {"names": {str(i): name for i, name in enumerate(feature.names)}}}}
    if isinstance(feature, Image):
        return {"dtype": "image"}
    if isinstance(feature, List):
        inner = _as_yaml(feature.feature)
        return {"list": inner["dtype"] if set(inner) == {"dtype"} else inner.get("struct", inner)}
    if isinstance(feature, Mapping):
        return {"struct": [{"name": name, **_as_yaml(inner)} for name, inner in feature.items()]}
    raise TypeError(f"not a release feature: {feature!r}")
