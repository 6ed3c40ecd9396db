#!/usr/bin/env python3
"""Score the product's layer assignment on real-depth export dumps (standard library + product).

    python tools/score_deep_dumps.py [DIR_OR_DUMP ...] [--wrong N] [--json OUT]

Each argument is a ``<model>/`` directory of tests/fixtures/deep_exports/ (default: all of
them), or a ``001_export_export_to_gm.txt[.gz]`` file with its ``.truth.json[.gz]`` beside it.
Per model: layers, nodes, the share of nodes whose layer agrees with the truth (``None`` =
outside every layer on both sides), the number of wrong nodes, whether every layer's kind
agrees, and the first ``N`` wrong nodes (name, target, truth layer, product layer, truth module).
Run it with the checkout whose layer rules you want to score, e.g.
``cd /work/main && .venv/bin/python /path/to/tools/score_deep_dumps.py /path/to/deep_exports``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.layers.layered import layer_graph

DEFAULT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "deep_exports"
STEM = "001_export_export_to_gm"


def _read(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8")


def _dumps(args: list[str]) -> list[Path]:
    found: list[Path] = []
    for arg in args or [str(DEFAULT)]:
        p = Path(arg)
        if p.is_file():
            found.append(p)
        elif (p / f"{STEM}.txt.gz").is_file() or (p / f"{STEM}.txt").is_file():
            found.extend(sorted(p.glob(f"{STEM}.txt*")))
        else:
            found.extend(sorted(p.glob(f"*/{STEM}.txt.gz")))
    return found


def score(dump: Path, n_wrong: int) -> dict[str, Any]:
    """One model's row and its first wrong nodes."""
    truth_path = dump.with_name(dump.name.replace(".txt", ".truth.json"))
    truth = json.loads(_read(truth_path))
    nodes = truth["nodes"]
    start = time.monotonic()
    lg = layer_graph(parse_dump(dump.with_suffix("") if dump.suffix == ".gz" else dump,
                                text=_read(dump)).select())
    seconds = time.monotonic() - start
    wrong = []
    total = 0
    for n in lg.graph.nodes:
        if n.kind == "output":
            continue
        total += 1
        want, got = nodes[n.name]["layer"], lg.layer[n.index]
        if want != got:
            wrong.append({"name": n.name, "target": n.target, "truth": want, "product": got,
                          "module": nodes[n.name]["module"], "line": n.line})
    want_kinds = {int(k): v for k, v in truth["layer_kinds"].items()}
    got_kinds = {i: info.kind for i, info in lg.layers.items()}
    kind_diff = sorted((i, want_kinds.get(i), got_kinds.get(i))
                       for i in set(want_kinds) | set(got_kinds)
                       if want_kinds.get(i) != got_kinds.get(i))
    return {"model": dump.parent.name, "layers": truth["num_layers"], "nodes": total,
            "agree": 100.0 * (total - len(wrong)) / total, "wrong": len(wrong),
            "wrong_layers": sorted({w["truth"] for w in wrong} | {w["product"] for w in wrong},
                                   key=lambda v: -1 if v is None else v),
            "kinds_ok": not kind_diff, "kind_diff": kind_diff[:8],
            "first_wrong": wrong[:n_wrong], "seconds": round(seconds, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--wrong", type=int, default=6, help="wrong nodes to print per model")
    ap.add_argument("--json", type=Path, help="write every row (and its wrong nodes) here")
    args = ap.parse_args(argv)
    rows = []
    print("| model | layers | nodes | agreement % | wrong nodes | kinds |")
    print("| --- | --- | --- | --- | --- | --- |")
    for dump in _dumps(args.paths):
        try:
            r = score(dump, args.wrong)
        except Exception as exc:  # one model's failure must not hide the others
            print(f"| {dump.parent.name} | ERROR {type(exc).__name__}: {exc} |", flush=True)
            rows.append({"model": dump.parent.name, "error": f"{type(exc).__name__}: {exc}"})
            continue
        rows.append(r)
        kinds = "ok" if r["kinds_ok"] else f"differ: {r['kind_diff'][:3]}"
        print(f"| {r['model']} | {r['layers']} | {r['nodes']} | {r['agree']:.2f} | {r['wrong']} "
              f"| {kinds} |", flush=True)
    for r in rows:
        if r.get("first_wrong"):
            print(f"\n{r['model']}: {r['wrong']} wrong, layers involved "
                  f"{r['wrong_layers'][:20]}")
            for w in r["first_wrong"]:
                print(f"  line {w['line']}: {w['name']} = {w['target']}  truth={w['truth']} "
                      f"product={w['product']}  ({w['module']})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0 if all(r.get("wrong") == 0 and r.get("kinds_ok") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
