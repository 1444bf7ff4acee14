"""Label Studio label configs rendered from XML templates: the generic machinery.

A :class:`LabelConfig` names a template in ``templates/<name>.xml``, the parameters it takes and how
they are checked; each round kind brings its own (see :mod:`segbench.annotation_ui.kinds`; the
datasets define theirs next to their round kinds). Every template shows the task's image
(``<Image name="image" value="$image"/>``) and names its controls so that converters can read
answers by control name. Every parameter value is escaped for XML text and attributes. Whether
Label Studio accepts a config is checked by the server at project creation (see ``client.py``),
not here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import jinja2

from segbench.core.errors import InputError

# XML 1.0 forbids these characters even when escaped.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# Label Studio substitutes `$name` in displayed values with task data, so a user string holding
# one would silently show something else.
_TASK_VARIABLE = re.compile(r"\$[A-Za-z_]")

# (config name, parameter values with defaults filled in) -> the template's context
Prepare = Callable[[str, dict[str, Any]], Mapping[str, object]]


def check_all(config: str, values: dict[str, Any]) -> dict[str, str]:
    """The default preparation: every parameter is a usable non-empty string."""
    return {key: text(config, key, value) for key, value in values.items()}


@dataclass(frozen=True)
class LabelConfig:
    """One template and its parameters.

    Attributes:
        name: the template's file name without ``.xml``; round records store it
            (``RoundConfig.label_config``).
        required: parameters that must be given.
        defaults: optional parameters with their default values.
        prepare: checks the values and turns them into the template's context (default: every
            value is a non-empty string).
    """

    name: str
    required: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)
    prepare: Prepare = check_all

    def render(self, **params: Any) -> str:
        """The label config XML for ``params``.

        Raises:
            InputError: missing or unexpected parameter, or a value that is empty, repeated, not a
                string, or unusable in a label config.
        """
        missing = [key for key in self.required if key not in params]
        unexpected = sorted(set(params) - set(self.required) - set(self.defaults))
        if missing or unexpected:
            problems = ([f"missing {', '.join(missing)}"] if missing else []) + (
                [f"unexpected {', '.join(unexpected)}"] if unexpected else []
            )
            raise InputError(f"label config {self.name!r}: {'; '.join(problems)}", item=self.name,
                             hint=f"it takes {self.describe()}")
        context = self.prepare(self.name, {**self.defaults, **params})
        return _template(self.name).render(**context)

    def instructions(self) -> str:
        """The instructions page annotators see before the tasks (HTML; ``templates/<name>.html``)."""
        page = resources.files("segbench.annotation_ui").joinpath("templates", f"{self.name}.html")
        return page.read_text("utf-8") if page.is_file() else ""

    def describe(self) -> str:
        parts = list(self.required) + [f"{key} (optional)" for key in self.defaults]
        return ", ".join(parts) if parts else "no parameters"


def text(config: str, key: str, value: Any, *, shown: bool = False) -> str:
    """A parameter value checked to be a usable non-empty string (``shown``: displayed as is, so
    it may not hold a Label Studio task variable)."""
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


def texts(config: str, key: str, values: Any, *, shown: bool = False) -> list[str]:
    """A non-empty list of distinct usable strings."""
    if isinstance(values, str) or not isinstance(values, (list, tuple)) or not values:
        raise InputError(f"label config {config!r}: {key} must be a non-empty list of strings", item=config)
    out = [text(config, key, value, shown=shown) for value in values]
    repeated = sorted({value for value in out if out.count(value) > 1})
    if repeated:
        raise InputError(f"label config {config!r}: {key} repeats {', '.join(repeated)}", item=config)
    return out


@cache
def _template(name: str) -> jinja2.Template:
    source = resources.files("segbench.annotation_ui").joinpath("templates", f"{name}.xml").read_text("utf-8")
    # autoescape turns & < > " ' into entities, valid in both XML text and attribute values.
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.from_string(source)
