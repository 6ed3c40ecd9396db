#!/usr/bin/env python3
"""Node-to-layer agreement of the product's layer assignment with the truth, per model and stage.

Reads the multi-stage fixtures (tests/fixtures/ad_stages/, made by tools/make_ad_stages.py) and,
for every stage, compares ``layer_graph(parse_dump(path).select()).layer[node.index]`` with each
node's truth layer (``None`` = model-level on both sides). Run it with the project's own
environment (``bash scripts/setup.sh`` makes .venv):

    .venv/bin/python tools/ad_stages_report.py [--root tests/fixtures/ad_stages] [--models ...]

Prints one row per stage: nodes, nodes whose layer agrees, the share, and how the others split
(the product said another layer / said none where the truth has a layer / said a layer where
the truth has none). Needs no torch.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))

from model_dumps.stage_check import iter_stages  # noqa: E402
from tb_ad_layer.dump.reader import parse_dump  # noqa: E402
from tb_ad_layer.layers.layered import layer_graph  # noqa: E402


def agreement(path: Path, text: str, truth: dict) -> tuple[int, int, int, int, int]:
    graph = parse_dump(path.with_suffix(""), text=text).select()
    lg = layer_graph(graph)
    total = ok = other = missed = extra = 0
    for node in graph.nodes:
        if node.name not in truth["nodes"]:
            continue
        want = truth["nodes"][node.name]["layer"]
        got = lg.layer[node.index]
        total += 1
        if got == want:
            ok += 1
        elif want is None:
            extra += 1
        elif got is None:
            missed += 1
        else:
            other += 1
    return total, ok, other, missed, extra


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=ROOT / "tests" / "fixtures" / "ad_stages")
    ap.add_argument("--models", nargs="*")
    args = ap.parse_args(argv)
    models = args.models or sorted(p.name for p in args.root.iterdir() if p.is_dir())
    print(f"{'model':<16} {'stage':<56} {'nodes':>6} {'agree':>6} {'share':>7}"
          f" {'other':>6} {'none!':>6} {'extra':>6}")
    for model in models:
        for path, text, truth in iter_stages(args.root / model):
            start = time.monotonic()
            try:
                total, ok, other, missed, extra = agreement(path, text, truth)
            except Exception as exc:  # report and go on: the point is the table
                print(f"{model:<16} {path.name[:-7]:<56} ERROR {type(exc).__name__}: "
                      f"{str(exc)[:120]}")
                continue
            share = 100.0 * ok / total if total else 0.0
            print(f"{model:<16} {path.name[:-7]:<56} {total:>6} {ok:>6} {share:>6.1f}%"
                  f" {other:>6} {missed:>6} {extra:>6}  ({time.monotonic() - start:.2f} s)",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
