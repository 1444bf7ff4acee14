"""Label Studio label configs for segbench's annotation rounds, rendered from XML templates.

Each template in ``templates/<name>.xml`` shows the task's image (``<Image name="image"
value="$image"/>``) and names its controls so that converters can read answers by control name
(``context``, ``positive_valid``, ``has_<subpart slug>``, ``polygons``, ``category``, ...).
:data:`LABEL_CONFIGS` lists the templates and their parameters; :func:`render_label_config`
checks the parameters and renders one. Every parameter value is escaped for XML text and
attributes. Whether Label Studio accepts a config is checked by the server at project creation
(see ``client.py``), not here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import jinja2

from segbench.core.errors import InputError

DEFAULT_RELATIONS = ("exact", "synonym", "hyponym", "meronym", "none")
# Distinct, readable polygon colours; subparts beyond the palette reuse it in order.
_PALETTE = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324")
# XML 1.0 forbids these characters even when escaped.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# Label Studio substitutes `$name` in displayed values with task data, so a user string holding
# one would silently show something else.
_TASK_VARIABLE = re.compile(r"\$[A-Za-z_]")


@dataclass(frozen=True)
class LabelConfigSpec:
    """What a template needs: required parameters and optional ones with their defaults."""

    required: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)


LABEL_CONFIGS: dict[str, LabelConfigSpec] = {
    "coco_cd_context": LabelConfigSpec(),
    "cafe_verification": LabelConfigSpec(),
    "spin_subparts": LabelConfigSpec(required=("object", "part", "subparts")),
    "vocab_adjudication": LabelConfigSpec(required=("categories",), defaults={"relations": DEFAULT_RELATIONS}),
}


def render_label_config(name: str, **params: Any) -> str:
    """Render the label config ``name`` with ``params``.

    Args:
        name: a key of :data:`LABEL_CONFIGS`.
        params: the template's parameters (strings, or lists of strings for ``subparts``,
            ``categories`` and ``relations``).

    Returns:
        The label config XML.

    Raises:
        InputError: unknown name, missing or unexpected parameter, or a value that is empty,
            repeated, not a string, or unusable in a label config.
    """
    if name not in LABEL_CONFIGS:
        raise InputError(
            f"unknown label config {name!r}",
            item=name,
            hint=f"use one of: {', '.join(sorted(LABEL_CONFIGS))}",
        )
    spec = LABEL_CONFIGS[name]
    missing = [key for key in spec.required if key not in params]
    unexpected = sorted(set(params) - set(spec.required) - set(spec.defaults))
    if missing or unexpected:
        problems = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unexpected {', '.join(unexpected)}"] if unexpected else []
        )
        raise InputError(
            f"label config {name!r}: {'; '.join(problems)}",
            item=name,
            hint=f"it takes {_describe(spec)}",
        )
    values = {**spec.defaults, **params}
    context = _PREPARE.get(name, _check_all)(name, values)
    return _template(name).render(**context)


def _describe(spec: LabelConfigSpec) -> str:
    parts = list(spec.required) + [f"{key} (optional)" for key in spec.defaults]
    return ", ".join(parts) if parts else "no parameters"


def _text(config: str, key: str, value: Any, *, shown: bool = False) -> str:
    """A parameter value checked to be a usable non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"label config {config!r}: {key} must be a non-empty string, got {value!r}", item=config)
    if _XML_INVALID.search(value):
        raise InputError(f"label config {config!r}: {key} {value!r} holds a control character", item=config)
    if shown and _TASK_VARIABLE.search(value):
        raise InputError(
            f"label config {config!r}: {key} {value!r} contains '$<name>', which Label Studio would replace "
            "with task data",
            item=config,
            hint="remove the '$'",
        )
    return value.strip()


def _texts(config: str, key: str, values: Any, *, shown: bool = False) -> list[str]:
    """A non-empty list of distinct usable strings."""
    if isinstance(values, str) or not isinstance(values, (list, tuple)) or not values:
        raise InputError(f"label config {config!r}: {key} must be a non-empty list of strings", item=config)
    out = [_text(config, key, value, shown=shown) for value in values]
    repeated = sorted({value for value in out if out.count(value) > 1})
    if repeated:
        raise InputError(f"label config {config!r}: {key} repeats {', '.join(repeated)}", item=config)
    return out


def _check_all(config: str, values: dict[str, Any]) -> dict[str, Any]:
    return {key: _text(config, key, value) for key, value in values.items()}


def slugify(text: str) -> str:
    """The control-name form of a subpart: lowercase ASCII letters, digits and underscores."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "x"


def _prepare_spin(config: str, values: dict[str, Any]) -> dict[str, Any]:
    subparts = _texts(config, "subparts", values["subparts"], shown=True)
    slugs = [slugify(name) for name in subparts]
    clashes = sorted({slug for slug in slugs if slugs.count(slug) > 1})
    if clashes:
        # Control names must be unique; `has_<slug>` is how converters find each subpart's answer.
        raise InputError(
            f"label config {config!r}: subparts {subparts} give the same control name has_{clashes[0]}",
            item=config,
            hint="rename the subparts so they differ in letters or digits",
        )
    return {
        "object": _text(config, "object", values["object"], shown=True),
        "part": _text(config, "part", values["part"], shown=True),
        "subparts": [
            {"name": name, "slug": slug, "color": _PALETTE[i % len(_PALETTE)]}
            for i, (name, slug) in enumerate(zip(subparts, slugs))
        ],
    }


def _prepare_vocab(config: str, values: dict[str, Any]) -> dict[str, Any]:
    categories = _texts(config, "categories", values["categories"])
    if "none" in categories:
        raise InputError(
            f"label config {config!r}: 'none' is added to the categories; it cannot be one",
            item=config,
            hint="rename that category",
        )
    return {"categories": categories, "relations": _texts(config, "relations", values["relations"])}


_PREPARE = {"spin_subparts": _prepare_spin, "vocab_adjudication": _prepare_vocab}


@cache
def _template(name: str) -> jinja2.Template:
    source = resources.files("segbench.annotation_ui").joinpath("templates", f"{name}.xml").read_text("utf-8")
    # autoescape turns & < > " ' into entities, valid in both XML text and attribute values.
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.from_string(source)
