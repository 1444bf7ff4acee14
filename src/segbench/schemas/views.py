"""What ``segbench view`` hands to FiftyOne: samples (an image, its fields, masks and labels), the
mask targets, and the saved views people want after a build or a round."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ViewFile(BaseModel):
    """One COCO-format file of a build shown as a segmentation field of its images."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Path
    split: str = Field(description="a tag of every sample it holds")
    field: str = Field(description="the segmentation field its annotations are drawn into")
    images: Path = Field(description="the folder its images' file names are relative to")
    image_key: str = Field("file_name", description="the image entry's key naming its file")
    image_suffix: str = Field("", description="added to that name (SPIN names its images by stem)")


class ViewSample(BaseModel):
    model_config = ConfigDict(extra="forbid")

    filepath: Path
    tags: list[str] = Field(default_factory=list)
    fields: dict[str, Any] = Field(default_factory=dict, description="plain values: numbers, text, flags, lists")
    masks: dict[str, Path] = Field(default_factory=dict, description="segmentation field → label mask PNG")
    labels: dict[str, str | None] = Field(default_factory=dict, description="classification field → label")


class SavedView(BaseModel):
    """A saved view: the samples whose ``field`` equals ``equals``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str
    field: str
    equals: Any = True


class ViewDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    samples: list[ViewSample]
    mask_targets: dict[str, dict[int, str]] = Field(default_factory=dict)
    views: list[SavedView] = Field(default_factory=list)


class ViewLoaded(BaseModel):
    """What FiftyOne loaded: the dataset's name, its size, fields and the size of each saved view."""

    model_config = ConfigDict(extra="forbid")

    name: str
    samples: int
    fields: list[str]
    views: dict[str, int]
    app: str | None = None
