"""Licences of a release, derived once per component and read by every document that states one.

A release is made of components: the source images (per image where the source records a licence),
masks and labels copied from sources, the annotations its maker adds, and composites that carry
every part's terms. A row's ``license_id`` is an SPDX expression over the ids of its image's parts
(``LicenseRef-CUB-200-2011 AND LicenseRef-Places365``). :func:`derive` turns the plan's components
and the rows that were written into one :class:`ReleaseLicences`; the card's YAML ``license``, the
Croissant ``license`` list, ``LICENSES.md`` and ``licenses.json`` are all written from it, so no
document can state a narrower licence than another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NotRequired, TypedDict

from segbench.core.release.plan import Licence

SEGBENCH = Licence(id="apache-2.0", name="Apache License 2.0", url="https://www.apache.org/licenses/LICENSE-2.0",
                   redistributable=True, applies_to="segbench, the code that built this release", of_images=False)

# Ids the Hub's card knows; any other (a LicenseRef-…, other, unknown) makes the card say `other`.
HUB_LICENCES = {"cc-by-4.0": "https://creativecommons.org/licenses/by/4.0/",
                "cc-by-sa-4.0": "https://creativecommons.org/licenses/by-sa/4.0/",
                "cc-by-nc-4.0": "https://creativecommons.org/licenses/by-nc/4.0/",
                "cc-by-nc-sa-4.0": "https://creativecommons.org/licenses/by-nc-sa/4.0/",
                "cc-by-2.0": "https://creativecommons.org/licenses/by/2.0/",
                "cc-by-sa-2.0": "https://creativecommons.org/licenses/by-sa/2.0/",
                "cc-by-nc-2.0": "https://creativecommons.org/licenses/by-nc/2.0/",
                "cc-by-nc-sa-2.0": "https://creativecommons.org/licenses/by-nc-sa/2.0/",
                "cc-by-nd-2.0": "https://creativecommons.org/licenses/by-nd/2.0/",
                "cc-by-nc-nd-2.0": "https://creativecommons.org/licenses/by-nc-nd/2.0/",
                "cc0-1.0": "https://creativecommons.org/publicdomain/zero/1.0/",
                "apache-2.0": "https://www.apache.org/licenses/LICENSE-2.0",
                "mit": "https://opensource.org/licenses/MIT"}

# COCO's eight licence ids (the `licenses` table of instances_*.json): Flickr terms, all redistributable.
COCO_LICENCES = {
    1: Licence("cc-by-nc-sa-2.0", "Attribution-NonCommercial-ShareAlike License",
               "http://creativecommons.org/licenses/by-nc-sa/2.0/", True, "COCO images with licence id 1"),
    2: Licence("cc-by-nc-2.0", "Attribution-NonCommercial License",
               "http://creativecommons.org/licenses/by-nc/2.0/", True, "COCO images with licence id 2"),
    3: Licence("cc-by-nc-nd-2.0", "Attribution-NonCommercial-NoDerivs License",
               "http://creativecommons.org/licenses/by-nc-nd/2.0/", True, "COCO images with licence id 3"),
    4: Licence("cc-by-2.0", "Attribution License", "http://creativecommons.org/licenses/by/2.0/", True,
               "COCO images with licence id 4"),
    5: Licence("cc-by-sa-2.0", "Attribution-ShareAlike License", "http://creativecommons.org/licenses/by-sa/2.0/",
               True, "COCO images with licence id 5"),
    6: Licence("cc-by-nd-2.0", "Attribution-NoDerivs License", "http://creativecommons.org/licenses/by-nd/2.0/", True,
               "COCO images with licence id 6"),
    7: Licence("LicenseRef-Flickr-Commons", "No known copyright restrictions", "http://flickr.com/commons/usage/",
               True, "COCO images with licence id 7"),
    8: Licence("LicenseRef-US-Government-Work", "United States Government Work", "http://www.usa.gov/copyright.shtml",
               True, "COCO images with licence id 8"),
}
COCO_ANNOTATIONS = Licence("cc-by-4.0", "COCO annotations: Creative Commons Attribution 4.0",
                           "https://cocodataset.org/#termsofuse", True, "masks copied from COCO's instance polygons",
                           of_images=False)
COCO_STUFF_ANNOTATIONS = Licence("cc-by-4.0", "COCO-Stuff annotations: Creative Commons Attribution 4.0",
                                 "https://github.com/nightrome/cocostuff#licensing", True,
                                 "the context labels and evidence columns, derived from COCO-Stuff's stuff "
                                 "annotations", of_images=False)


class CardLicence(TypedDict):
    """The licence fields of a dataset card's YAML."""

    license: str
    license_name: NotRequired[str]
    license_link: NotRequired[str]


class ComponentEntry(TypedDict):
    id: str
    name: str
    url: str | None
    redistributable: bool
    applies_to: str
    kind: str
    in_release: bool


class LicencesJson(TypedDict):
    """``licenses.json``: the release's licence, each component's, and where each image comes from."""

    release: CardLicence
    components: list[ComponentEntry]
    code: ComponentEntry
    images: dict[str, str]
    withheld_images: list[str]


def coco_licence(licence_id: int | None, table: list[dict] | None = None) -> Licence:
    """The licence of a COCO image by its id, from the file's own ``licenses`` table where it has one."""
    known = COCO_LICENCES.get(licence_id or 0)
    if known is not None:
        return known
    for row in table or []:
        if row.get("id") == licence_id:
            return Licence(f"LicenseRef-COCO-{licence_id}", str(row.get("name", "")), row.get("url"), False,
                           f"COCO images with licence id {licence_id}")
    return Licence("unknown", "unknown", None, False, f"images with licence id {licence_id}")


def licence_url(licence: Licence) -> str:
    """The licence's own address: the canonical one for a known id, else the source's page, else the id."""
    return HUB_LICENCES.get(licence.id) or licence.url or licence.id


def expression(licences: list[Licence]) -> str:
    """The SPDX expression of an item that carries every one of ``licences`` (a composite's parts)."""
    return " AND ".join(dict.fromkeys(licence.id for licence in licences))


def ids_of(expression_: str) -> list[str]:
    return [part.strip("() ") for part in expression_.split(" AND ") if part.strip("() ")]


def maker_licence(licence_id: str, covers: str) -> Licence:
    """The licence the release's maker gives what the release adds (``annotations_license``)."""
    name = {"cc0-1.0": "CC0 1.0 Universal", "cc-by-4.0": "Creative Commons Attribution 4.0"}.get(licence_id,
                                                                                                  licence_id)
    return Licence(licence_id, name, HUB_LICENCES.get(licence_id), True, covers, of_images=False)


@dataclass(frozen=True)
class Component:
    """One licensed part of a release and whether its bytes are in it."""

    licence: Licence
    shipped: bool


@dataclass(frozen=True)
class ReleaseLicences:
    """The licences of one release, computed once: every document reads this."""

    components: list[Component]
    images: dict[str, str]  # row id → its image's SPDX expression
    withheld: list[str]

    @property
    def shipped_ids(self) -> list[str]:
        return list(dict.fromkeys(c.licence.id for c in self.components if c.shipped))

    def card_fields(self) -> CardLicence:
        """The card's YAML: the one licence when every shipped part has it, else ``other`` and a link."""
        ids = self.shipped_ids
        if len(ids) == 1 and ids[0] in HUB_LICENCES:
            return {"license": ids[0]}
        return {"license": "other", "license_name": "multiple-licenses" if len(ids) > 1 else ids[0].lower(),
                "license_link": "LICENSES.md"}

    def summary(self) -> str:
        """One line for the card's text and the datasheet."""
        fields = self.card_fields()
        if fields["license"] != "other":
            return f"every part of this release is under `{fields['license']}`"
        return "its parts carry different licences: " + ", ".join(f"`{i}`" for i in self.shipped_ids)

    def croissant(self) -> list[str]:
        """Croissant's ``license``: a URL (or the id where none is known) per shipped licence."""
        urls = {c.licence.id: licence_url(c.licence) for c in self.components if c.shipped}
        return list(dict.fromkeys(urls[i] for i in self.shipped_ids))

    def to_json(self) -> LicencesJson:
        """``licenses.json``, the machine-readable form."""
        def entry(component: Component) -> ComponentEntry:
            lic = component.licence
            return {"id": lic.id, "name": lic.name, "url": lic.url, "redistributable": lic.redistributable,
                    "applies_to": lic.applies_to, "kind": "images" if lic.of_images else "annotations",
                    "in_release": component.shipped}

        return {"release": self.card_fields(), "components": [entry(c) for c in self.components],
                "code": {**entry(Component(SEGBENCH, True)), "kind": "code"},
                "images": dict(sorted(self.images.items())), "withheld_images": sorted(self.withheld)}

    def markdown(self, title: str) -> str:
        """``LICENSES.md``: the same facts for a person."""
        lines = [f"# Licences of {title}", "", f"In short: {self.summary()}. The card's `license` field says "
                 f"`{self.card_fields()['license']}`.", "",
                 "| part of the release | licence | id | redistributable | in this release |", "|---|---|---|---|---|"]
        for component in self.components:
            lic = component.licence
            name = f"[{lic.name}]({lic.url})" if lic.url else lic.name
            shipped = "yes" if component.shipped else "no (withheld or referenced only)"
            lines.append(f"| {lic.applies_to} | {name} | `{lic.id}` | {'yes' if lic.redistributable else 'no'} "
                         f"| {shipped} |")
        lines += ["", f"The code that built the release, segbench, is under [{SEGBENCH.name}]({SEGBENCH.url}); "
                      "so is any script shipped in the release.", ""]
        if self.images:
            lines.append(f"{len(self.images)} rows carry their image's licence in their `license_id` column (an SPDX "
                         "expression: a composite carries every part's licence, joined by AND); `licenses.json` "
                         "lists them under `images`.")
        if self.withheld:
            lines += ["", f"{len(self.withheld)} images are not in this release, in no file: their licence forbids "
                          "redistribution. Their rows keep a reference to the source file (`licenses.json`, "
                          "`withheld_images`)."]
        return "\n".join(lines) + "\n"


def derive(maker: Licence, sources: list[Licence], images: dict[str, str], embedded: set[str],
           withheld: list[str]) -> ReleaseLicences:
    """The release's licences.

    Args:
        maker: the licence of what the release adds (the maker's ``annotations_license``).
        sources: the licences the plan names: source images (``of_images``) and copied annotations.
        images: row id → the SPDX expression in the row's ``license_id``.
        embedded: the ids of rows whose image bytes are in the release.
        withheld: the rows whose image is not.
    """
    shipped_image_ids = {i for row, expr in images.items() if row in embedded for i in ids_of(expr)}
    used_image_ids = {i for expr in images.values() for i in ids_of(expr)}
    components = [Component(maker, True)]
    seen = {(maker.id, maker.applies_to)}
    for licence in sources:
        if (licence.id, licence.applies_to) in seen:
            continue
        seen.add((licence.id, licence.applies_to))
        if licence.of_images:
            if images and licence.id not in used_image_ids:
                continue  # a source licence no row carries
            components.append(Component(licence, licence.id in shipped_image_ids))
        else:
            components.append(Component(licence, True))
    return ReleaseLicences(components=components, images=images, withheld=withheld)
