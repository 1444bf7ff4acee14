"""Licences of a release: the annotations', segbench's and each source's images, per image where known."""

from __future__ import annotations

from segbench.core.release.plan import Licence

SEGBENCH = Licence(id="apache-2.0", name="Apache License 2.0", url="https://www.apache.org/licenses/LICENSE-2.0",
                   redistributable=True, applies_to="segbench, the code that built this release")

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
    7: Licence("other", "No known copyright restrictions", "http://flickr.com/commons/usage/", True,
               "COCO images with licence id 7"),
    8: Licence("other", "United States Government Work", "http://www.usa.gov/copyright.shtml", True,
               "COCO images with licence id 8"),
}
COCO_ANNOTATIONS = Licence("cc-by-4.0", "COCO annotations: Creative Commons Attribution 4.0",
                           "https://cocodataset.org/#termsofuse", True, "COCO and COCO-Stuff annotations",
                           of_images=False)


def coco_licence(licence_id: int | None, table: list[dict] | None = None) -> Licence:
    """The licence of a COCO image by its id, from the file's own ``licenses`` table where it has one."""
    known = COCO_LICENCES.get(licence_id or 0)
    for row in table or []:
        if row.get("id") == licence_id and known is None:
            return Licence("other", str(row.get("name", "")), row.get("url"), False,
                           f"COCO images with licence id {licence_id}")
    return known or Licence("unknown", "unknown", None, False, f"images with licence id {licence_id}")


def licences_json(annotations: Licence, sources: list[Licence], image_licences: dict[str, str],
                  withheld: list[str]) -> dict:
    """The machine-readable ``licenses.json``."""
    def entry(licence: Licence) -> dict:
        return {"id": licence.id, "name": licence.name, "url": licence.url,
                "redistributable": licence.redistributable, "applies_to": licence.applies_to}

    return {
        "annotations": entry(annotations),
        "segbench": entry(SEGBENCH),
        "sources": [entry(licence) for licence in sources],
        "images": dict(sorted(image_licences.items())),
        "withheld_images": sorted(withheld),
    }


def licences_markdown(title: str, data: dict) -> str:
    """``LICENSES.md``: the same facts for a person."""
    rows = [data["annotations"], data["segbench"], *data["sources"]]
    lines = [f"# Licences of {title}", "",
             "| applies to | licence | id | redistributable |", "|---|---|---|---|"]
    for row in rows:
        name = f"[{row['name']}]({row['url']})" if row["url"] else row["name"]
        lines.append(f"| {row['applies_to']} | {name} | `{row['id']}` | {'yes' if row['redistributable'] else 'no'} |")
    lines += ["", f"{len(data['images'])} images carry a per-image licence id in `licenses.json` (`images`)."]
    if data["withheld_images"]:
        lines += ["", f"{len(data['withheld_images'])} images are not embedded because their licence forbids "
                      "redistribution; their rows keep a reference to the source file (`licenses.json`, "
                      "`withheld_images`)."]
    return "\n".join(lines) + "\n"
