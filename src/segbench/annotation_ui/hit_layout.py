"""The HIT layout of a files-backend round: one HTML page an external crowd shows for every task (the
layout of a Mechanical Turk project on the requester site, whose batch upload of ``tasks.csv`` fills
``${column}``, or any platform that does the same), made from the same label config Label Studio shows.

The page is a plain form, so each answer comes back as the ``Answer.<control>`` column the results
import reads (:mod:`segbench.annotation_ui.convert`): a radio group per ``Choices`` control, and for a
``PolygonLabels`` control a drawing tool over the image whose polygons are sent as ``Answer.polygons``,
``[{"label", "points": [[x, y], ...]}]`` in image pixels. ``visibleWhen`` views show and hide as in
Label Studio (hidden questions are not sent and not required); a required question left unanswered
stops the submit with its ``requiredMessage``. ``$name`` in the config becomes ``${name}``: the task's
``tasks.csv`` column (``image`` must then be a URL the workers' browsers can load; a platform inserts
each value as it is, so a text holding HTML is shown as HTML). The form posts to
``<turkSubmitTo>/mturk/externalSubmit`` with the ``assignmentId`` of the page's query string, as MTurk
requires; in MTurk's preview (no assignment) it cannot be submitted.
"""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

from segbench.core.io import atomic_write_text
from segbench.schemas.rounds import Round

HIT_NAME = "hit.html"
_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_.]*)")


def _value(text: str) -> str:
    """An attribute value for the page: escaped, with ``$name`` as the crowd platform's ``${name}``."""
    return _VARIABLE.sub(r"${\1}", html.escape(text, quote=True))


def _element(node: ET.Element) -> str:
    tag, attrs = node.tag, node.attrib
    inner = "".join(_element(child) for child in node)
    if tag == "View":
        when = ""
        if attrs.get("visibleWhen") == "choice-selected":
            when = (f' data-when-name="{_value(attrs["whenTagName"])}"'
                    f' data-when-value="{_value(attrs["whenChoiceValue"])}"')
        style = f' style="{_value(attrs["style"])}"' if "style" in attrs else ""
        return f"<div{style}{when}>{inner}</div>"
    if tag == "Image":
        return (f'<div class="stage"><img id="image" src="{_value(attrs["value"])}" alt="task image">'
                '<canvas id="drawing"></canvas></div>')
    if tag == "Header":
        return f"<h4>{_value(attrs['value'])}</h4>"
    if tag == "Text":
        return f'<p class="text">{_value(attrs["value"])}</p>'
    if tag == "Choices":
        name = _value(attrs["name"])
        required = attrs.get("required") == "true"
        message = _value(attrs.get("requiredMessage") or f"Answer the question {attrs['name']}.")
        options = "".join(f'<label><input type="radio" name="{name}" value="{_value(c.attrib["value"])}"> '
                          f'{_value(c.attrib["value"])}</label>' for c in node.iter("Choice"))
        inline = " inline" if attrs.get("showInline") == "true" else ""
        return (f'<fieldset class="choices{inline}" data-name="{name}" data-required="{int(required)}" '
                f'data-message="{message}">{options}</fieldset>')
    if tag == "PolygonLabels":
        buttons = "".join(f'<button type="button" class="label" data-label="{_value(label.attrib["value"])}" '
                          f'style="border-color: {_value(label.attrib.get("background", "#e6194b"))}">'
                          f'{_value(label.attrib["value"])}</button>' for label in node.iter("Label"))
        return (f'<div class="polygons" data-name="{_value(attrs["name"])}"><div class="labels">{buttons}</div>'
                '<p class="hint">Pick a label, click the image to place points, then close the polygon.</p>'
                '<button type="button" id="close-polygon">Close polygon</button> '
                '<button type="button" id="undo-point">Undo point</button> '
                '<button type="button" id="remove-polygon">Remove last polygon</button>'
                f'<input type="hidden" name="{_value(attrs["name"])}" id="polygons-answer" value="[]">'
                '<ol id="polygon-list"></ol></div>')
    if tag in ("Label", "Choice"):
        return ""
    raise ValueError(f"label config element <{tag}> has no HIT layout")


def render_hit(label_config: str, *, title: str, instructions: str) -> str:
    """The HIT page of a rendered label config (module docstring); ``instructions`` is HTML shown above.

    Raises:
        ValueError: the config uses an element the layout does not know (a segbench config never does).
    """
    body = _element(ET.fromstring(label_config))
    page = resources.files("segbench.annotation_ui").joinpath("templates", "hit_page.html").read_text("utf-8")
    return (page.replace("{{ title }}", html.escape(title)).replace("{{ instructions }}", instructions)
            .replace("{{ body }}", body))


def write_hit(round_: Round, out_dir: str | Path) -> Path:
    """Write ``hit.html``, the round's HIT layout, into ``out_dir`` (beside its ``tasks.csv``)."""
    from segbench.annotation_ui.kinds import label_config_instructions, render_label_config

    name = round_.config.label_config
    page = render_hit(render_label_config(name, **round_.config.params), title=f"{round_.kind}: {round_.key}",
                      instructions=label_config_instructions(name))
    return atomic_write_text(Path(out_dir) / HIT_NAME, page)
