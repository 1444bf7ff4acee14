"""What a release needs from its maker, and what ``segbench release`` returns.

A build records where its data came from and how it was selected and annotated; it cannot know
under which licence its maker releases the annotations, what the data is for, or who maintains it.
Those come from options or a ``release.toml`` (:class:`ReleaseInfo`); a release without them stops
with an error naming each missing field.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from segbench.core.errors import InputError
from segbench.core.io import read_text

# The fields a release cannot be made without, with the option that sets each.
REQUIRED_FIELDS = {
    "annotations_license": "--annotations-license",
    "intended_uses": "--intended-uses",
    "social_impact": "--social-impact",
    "personal_information": "--personal-information",
    "maintainer": "--maintainer",
}


# An SPDX-style licence id (cc-by-4.0, apache-2.0, other): it goes into the card's YAML header and
# the Croissant metadata, where a space or a new line would make it another thing.
_LICENCE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+-]*")


def _licence_id(value: str | None) -> str | None:
    if value is not None and not _LICENCE_ID.fullmatch(value):
        raise ValueError(f"{value!r} is not a licence id: use an SPDX-style id such as cc-by-4.0, or other")
    return value


class ImageTerms(BaseModel):
    """The terms of a source's images (or of its annotations), where the maker knows better than the
    dataset's defaults: a private source, a generated world."""

    model_config = ConfigDict(extra="forbid")

    license: str = Field(description="SPDX-style id, e.g. cc-by-4.0")
    name: str = Field(description="the terms' name, as LICENSES.md shows it")
    url: str | None = Field(None, description="where the terms are stated")
    redistributable: bool = Field(description="whether the images (or annotations) may be passed on")

    _check_license = field_validator("license")(_licence_id)


class ReleaseInfo(BaseModel):
    """The answers only the maker of a release can give (``release.toml`` or options)."""

    model_config = ConfigDict(extra="forbid")

    annotations_license: str | None = Field(None, description="SPDX id of the annotations' licence, e.g. cc-by-4.0")
    intended_uses: str | None = Field(None, description="what the data is for, in a sentence")
    social_impact: str | None = Field(None, description="its possible impact, good and bad")
    personal_information: str | None = Field(None, description="whether it holds personal or sensitive information")
    maintainer: str | None = Field(None, description="who maintains it: a name and a contact")
    out_of_scope_uses: str | None = Field(None, description="what it should not be used for")
    images: ImageTerms | None = Field(None, description="overrides the source images' terms")
    source_annotations: ImageTerms | None = Field(
        None, description="overrides the terms of masks and labels copied from the sources")
    # Datasheet answers only the maker can give; a question left without one says "not recorded".
    version: str = Field("1.0.0", pattern=r"^\d+\.\d+\.\d+$",
                         description="the release's own version (MAJOR.MINOR.PATCH); the data version is appended")
    collection: str | None = Field(None, description="how the sources were collected, replacing what the build "
                                                     "assumes of them (a private or generated source)")
    creators: str | None = Field(None, description="who made the dataset, on behalf of whom")
    funding: str | None = Field(None, description="who funded it")
    ethical_review: str | None = Field(None, description="ethical review of the collection, if any")
    consent: str | None = Field(None, description="whether people in the data were notified and consented")
    offensive_content: str | None = Field(None, description="whether it may offend or upset a viewer")
    contributions: str | None = Field(None, description="how others extend or correct it")
    erratum: str | None = Field(None, description="where corrections are listed")
    retention: str | None = Field(None, description="limits on keeping data about people")
    export_controls: str | None = Field(None, description="export or other regulatory restrictions")
    citation: str | None = Field(None, description="BibTeX of this release, printed before the papers'")
    embed_restricted: bool = Field(False, description="embed images whose licence forbids redistribution")

    _check_license = field_validator("annotations_license")(_licence_id)

    def missing(self) -> list[str]:
        return [name for name in REQUIRED_FIELDS if not (getattr(self, name) or "").strip()]

    def require_complete(self, where: str) -> ReleaseInfo:
        """Itself, or an error naming every field still missing and how to give it."""
        missing = self.missing()
        if missing:
            raise InputError(
                f"a release needs {', '.join(missing)}",
                path=where,
                hint="give them in release.toml ("
                     + "; ".join(f'{name} = "..."' for name in missing)
                     + ") or as options (" + ", ".join(REQUIRED_FIELDS[name] for name in missing) + ")",
            )
        return self


def load_release_info(path: Path | None, **options: object) -> ReleaseInfo:
    """The release info of ``path`` (a ``release.toml``; none is fine), with options taking precedence."""
    data: dict[str, object] = {}
    if path is not None:
        try:
            data = tomllib.loads(read_text(path, encoding="utf-8-sig", hint="check --info"))
        except RecursionError:
            raise InputError("TOML nested too deeply to read", path=path, hint="release info is flat") from None
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"not valid TOML ({exc})", path=path, hint="fix the file's syntax") from exc
    data.update({name: value for name, value in options.items() if value is not None})
    try:
        return ReleaseInfo.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(map(str, first["loc"]))
        hint = (f"the fields are {', '.join(ReleaseInfo.model_fields)}" if first["type"] == "extra_forbidden"
                else f"correct {field}: {_field_help(first['loc'])}")
        raise InputError(f"{field}: {first['msg'].removeprefix('Value error, ')}", path=path, hint=hint) from exc


def _field_help(loc: tuple) -> str:
    """What a release.toml field holds, from its model's description (``images.license`` looks in ImageTerms)."""
    model: type[BaseModel] = ReleaseInfo
    if len(loc) > 1 and loc[0] in ("images", "source_annotations"):
        model, loc = ImageTerms, loc[1:]
    field = model.model_fields.get(str(loc[0]))
    return (field.description if field and field.description
            else "the README's 'Releasing a dataset' section lists every field")


class ReleaseFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    size: int
    sha256: str


class ReleaseResult(BaseModel):
    """What a release wrote: the folder, its configs with rows per split, its files, where it was pushed."""

    model_config = ConfigDict(extra="forbid")

    dataset: str
    out: Path
    version: str
    configs: dict[str, dict[str, int]]
    files: list[ReleaseFile]
    embedded_images: int
    withheld_images: int
    pushed_to: str | None = None
    tag: str | None = None
