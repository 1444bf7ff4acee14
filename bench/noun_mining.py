"""Noun-mining throughput: segbench's miner vs plain spaCy ``nlp.pipe`` with the full pipeline.

Both run on the same captions (generated from the demo caption templates) and must give identical
noun counts. Two corpora: the templated captions as generated (they repeat, as real caption sets do
to a much smaller degree), and the distinct captions only, which measures parsing speed alone.
Writes ``bench/out/noun_mining.json``.

    .venv/bin/python bench/noun_mining.py [--captions 20000] [--workers 2]
"""

from __future__ import annotations

import argparse
import logging
import random
import time
from collections import Counter
from pathlib import Path

from segbench.core.io import write_json
from segbench.demo.vocab.captions import scene_captions
from segbench.demo.world import build_scenes
from segbench.tasks.vocab import nouns

log = logging.getLogger("bench.noun_mining")
OUT = Path(__file__).parent / "out" / "noun_mining.json"


def make_captions(n: int, seed: int = 0) -> list[str]:
    """``n`` captions from the demo templates over scenes of several demo worlds."""
    captions: list[str] = []
    world = seed
    while len(captions) < n:
        rng = random.Random(world)
        for scene in build_scenes(seed=world, group_sizes={"cat/indoor": 200, "cat/outdoor": 200,
                                                           "dog/indoor": 200, "dog/outdoor": 200}):
            captions += scene_captions(scene, rng, n=5)
        world += 1
    return captions[:n]


def baseline(model: str, captions: list[str], batch_size: int) -> tuple[Counter, float]:
    nlp = nouns.load_pipeline(model, full=True)
    start = time.perf_counter()
    counts: Counter = Counter()
    for doc in nlp.pipe(captions, batch_size=batch_size):
        counts.update(nouns.doc_nouns(doc))
    return counts, time.perf_counter() - start


def ours(model: str, captions: list[str], *, workers: int, shard_size: int, batch_size: int) -> tuple[Counter, float, float]:
    """(counts, seconds without start-up, seconds with start-up of the worker processes)."""
    started = time.perf_counter()
    with nouns.NounMiner(model, workers=workers, batch_size=batch_size) as miner:
        for future in [miner.submit([("warm up", 1)]) for _ in range(workers)]:
            future.result()  # every worker has loaded its pipeline
        ready = time.perf_counter()
        total: Counter = Counter()
        caption_counts = Counter(captions)
        for future in [miner.submit(s) for s in nouns.shards(caption_counts, shard_size)]:
            total.update(future.result())
        end = time.perf_counter()
    return total, end - ready, end - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captions", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shard-size", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--model", default="en_core_web_sm")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    templated = make_captions(args.captions)
    distinct = list(dict.fromkeys(templated))
    results = {"params": vars(args), "corpora": {}}
    for name, captions in (("templated", templated), ("distinct", distinct)):
        expected, t_base = baseline(args.model, captions, args.batch_size)
        got, t_ours, t_ours_cold = ours(args.model, captions, workers=args.workers, shard_size=args.shard_size,
                                        batch_size=args.batch_size)
        if got != expected:
            raise SystemExit(f"{name}: noun counts differ from the full pipeline")
        row = {"captions": len(captions), "distinct": len(set(captions)), "nouns": len(got),
               "full_pipeline_captions_per_s": round(len(captions) / t_base, 1),
               "segbench_captions_per_s": round(len(captions) / t_ours, 1),
               "segbench_captions_per_s_with_startup": round(len(captions) / t_ours_cold, 1),
               "speedup": round(t_base / t_ours, 2), "speedup_with_startup": round(t_base / t_ours_cold, 2),
               "identical_counts": True}
        results["corpora"][name] = row
        log.info("%s: %d captions (%d distinct): full pipeline %.0f/s, segbench %.0f/s (%.0f/s with start-up), "
                 "%.2fx (%.2fx), counts identical", name, row["captions"], row["distinct"],
                 row["full_pipeline_captions_per_s"], row["segbench_captions_per_s"],
                 row["segbench_captions_per_s_with_startup"], row["speedup"], row["speedup_with_startup"])
    write_json(OUT, results, indent=1)
    log.info("wrote %s", OUT)


if __name__ == "__main__":
    main()
