"""Load a segbench view document into a FiftyOne dataset and serve the FiftyOne App on 127.0.0.1.

Run by ``segbench view`` with the Python of FiftyOne's own environment (``scripts/fiftyone.sh
install``): it imports FiftyOne and the standard library only, never segbench, whose pinned
packages FiftyOne's cannot share.

    python fiftyone_view.py VIEW.json [--port PORT]

Prints one JSON line with what was loaded (samples, fields, each saved view's size); with
``--port`` it then serves the App there, prints ``app: URL`` once it answers, and runs until
SIGTERM or SIGINT. The dataset is not persistent: FiftyOne deletes it when its database stops.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import Any

# Names FiftyOne gives every sample: a segbench field of the same name is shown with this prefix.
RESERVED = {"id", "filepath", "tags", "metadata", "media_type", "created_at", "last_modified_at"}


def field_name(name: str) -> str:
    return f"segbench_{name}" if name in RESERVED or name.startswith("_") else name


def load(document: dict[str, Any]) -> Any:
    import fiftyone as fo
    from fiftyone import ViewField as F

    dataset = fo.Dataset(document["name"], overwrite=True)
    samples = []
    for entry in document["samples"]:
        sample = fo.Sample(filepath=entry["filepath"], tags=entry["tags"])
        for name, value in entry["fields"].items():
            sample[field_name(name)] = value
        for name, path in entry["masks"].items():
            sample[field_name(name)] = fo.Segmentation(mask_path=path)
        for name, label in entry["labels"].items():
            sample[field_name(name)] = fo.Classification(label=label) if label is not None else None
        samples.append(sample)
    dataset.add_samples(samples, progress=False)
    dataset.mask_targets = {field_name(name): {int(value): label for value, label in targets.items()}
                            for name, targets in document["mask_targets"].items()}
    for view in document["views"]:
        dataset.save_view(view["name"], dataset.match(F(field_name(view["field"])) == view["equals"]),
                          description=view["description"])
    return dataset


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("document")
    parser.add_argument("--port", type=int, default=None)
    args = parser.parse_args()
    with open(args.document, encoding="utf-8") as handle:
        document = json.load(handle)
    dataset = load(document)
    print(json.dumps({"name": dataset.name, "samples": len(dataset),
                      "fields": sorted(dataset.get_field_schema()),
                      "views": {name: len(dataset.load_saved_view(name)) for name in dataset.list_saved_views()}},
                     sort_keys=True), flush=True)
    if args.port is None:
        return 0
    import fiftyone as fo

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    session = fo.launch_app(dataset, address="127.0.0.1", port=args.port, remote=True, auto=False)
    print(f"app: http://127.0.0.1:{args.port}/", flush=True)
    stop.wait()
    session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
