#!/usr/bin/env python3
"""Write real-depth export dumps: published layer counts and patterns, tiny widths, gzip.

Dev-only tool (torch and transformers are no runtime dependencies of tb_ad_layer), made with
torch 2.13.0 (CPU) and transformers 5.23.0:

    python tools/make_deep_dumps.py                          # every model of deep_models
    python tools/make_deep_dumps.py --models zamba2_2_7b     # some
    python tools/make_deep_dumps.py --list                   # names and sources

Each model of :mod:`model_dumps.deep_models` is exported like the fixtures of
tests/fixtures/dumps/ (:func:`model_dumps.ad_export.export_to_gm`: meta device, torch.export with
dynamic batch and sequence, AutoDeploy's clean-ups) and written to
``tests/fixtures/deep_exports/<model>/``:

- ``001_export_export_to_gm.txt.gz``: the export stage in the exact text of AutoDeploy's graph
  writer (:mod:`model_dumps.writer`), checked line by line (:mod:`model_dumps.dump_check`);
- ``001_export_export_to_gm.truth.json.gz``: per node its decoder layer, module, class and group
  from ``nn_module_stack`` and per layer its kind (:mod:`model_dumps.truth`, with the one
  extension of :class:`DeepTruthMaker`);
- ``export.json``: the model's source (checkpoint, layer count, pattern), notes, node and layer
  counts, file sizes, and which tensors AutoDeploy's ``get_attr`` de-duplication folded (the
  name a shared block keeps) and which weights nodes of other layers read.

``README.md`` of the directory is rewritten from every ``export.json`` there. Output is
byte-identical from one run to the next: seed 0, ``PYTHONHASHSEED=0`` (the script re-runs itself
under it), addresses in targets pinned, gzip with a zero timestamp.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import re
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch
import transformers
from torch import fx

from model_dumps import ad_export
from model_dumps.deep_models import DEEP_BUILDERS, NOT_EXPORTED, DeepSpec
from model_dumps.dump_check import check_dump
from model_dumps.generate import EXPORT_STAGE
from model_dumps.truth import TruthMaker, decoder_layers_path, format_truth, graph_truth
from model_dumps.writer import dump_file_name, dump_text

OUT = Path("tests/fixtures/deep_exports")
COMMAND = "python tools/make_deep_dumps.py"


class DeepTruthMaker(TruthMaker):
    """:class:`TruthMaker` that also sees an MoE block the decoder layer owns directly.

    The fixtures' classifier calls a module ``moe`` when it has an ``experts`` or ``router``
    child; Gemma 4's decoder layer holds ``router`` and ``experts`` itself, so below the layer
    they would read as no group (the experts) and ``norm`` (the router's own norm). Here a
    module whose class is named ``*Experts`` or ``*Router`` is ``moe`` too, where the fixtures'
    rules give it no other group. Every other module keeps the fixtures' classification.
    """

    def __init__(self, model: torch.nn.Module, layers_path: str) -> None:
        super().__init__(model, layers_path)
        for name, mod in model.named_modules(remove_duplicate=False):
            cls = type(mod).__name__
            if self._groups.get(name) is None and (cls.endswith("Experts")
                                                   or cls.endswith("Router")):
                self._groups[name] = "moe"


def _write_gz(path: Path, data: bytes) -> int:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(data)
    path.write_bytes(buf.getvalue())
    return path.stat().st_size


class _DedupRecorder:
    """Wraps AutoDeploy's ``get_attr`` de-duplication to record what it folds.

    For each tensor read through several ``get_attr`` nodes: the node kept (the first in graph
    order) and the ones folded into it.
    """

    def __init__(self) -> None:
        self.folded: list[tuple[str, list[str]]] = []
        self._original = ad_export._dedup_params

    def __enter__(self) -> _DedupRecorder:
        def recording(gm: fx.GraphModule) -> None:
            by_tensor: dict[int, list[str]] = defaultdict(list)
            for node in gm.graph.nodes:
                if node.op == "get_attr":
                    owner, _, name = str(node.target).rpartition(".")
                    by_tensor[id(getattr(gm.get_submodule(owner), name))].append(node.name)
            self.folded = [(names[0], names[1:]) for names in by_tensor.values()
                           if len(names) > 1]
            self._original(gm)

        ad_export._dedup_params = recording
        return self

    def __exit__(self, *exc: object) -> None:
        ad_export._dedup_params = self._original


_LAYER_IN_NAME = re.compile(r"(?:^|_)(?:layers|h|blocks)_(\d+)_")


def _summarise_folds(folded: list[tuple[str, list[str]]]) -> list[str]:
    """One line per (kept name's layer, folded names' layers): ``kept layers_1 <- 18, 30 (12)``."""
    groups: dict[tuple[str, tuple[str, ...]], int] = defaultdict(int)
    for kept, dropped in folded:
        def where(name: str) -> str:
            m = _LAYER_IN_NAME.search(name)
            return f"layer {m.group(1)}" if m else name
        groups[(where(kept), tuple(sorted({where(d) for d in dropped},
                                          key=lambda s: (len(s), s))))] += 1
    return [f"{n} tensor(s) keep the name of {kept} (first get_attr in graph order); folded: "
            f"{', '.join(dropped)}" for (kept, dropped), n in sorted(groups.items())]


def _cross_layer_weights(text: str, truth: dict[str, Any]) -> list[str]:
    """Weights named after layer N that nodes of other layers read (by the truth)."""
    nodes = truth["nodes"]
    readers: dict[str, set[int | None]] = defaultdict(set)
    ref = re.compile(r"%?([A-Za-z_][A-Za-z0-9_]*)")
    defined = set(nodes)
    for line in text.splitlines():
        if not line.startswith("%") or " = " not in line:
            continue
        name, _, rest = line[1:].partition(" = ")
        args = rest[rest.find("(") + 1:]
        for tok in ref.findall(args):
            if tok not in defined and _LAYER_IN_NAME.search(tok):
                readers[tok].add(nodes[name]["layer"])
    groups: dict[tuple[int, tuple[Any, ...]], int] = defaultdict(int)
    for weight, layers in readers.items():
        m = _LAYER_IN_NAME.search(weight)
        owner = int(m.group(1)) if m else -1
        if layers != {owner}:
            groups[(owner, tuple(sorted(layers, key=lambda v: -1 if v is None else v)))] += 1
    return [f"{n} weight(s) named after layer {owner} read by layers "
            f"{', '.join('none' if v is None else str(v) for v in layers)}"
            for (owner, layers), n in sorted(groups.items())]


def make_deep(spec: DeepSpec, out_root: Path) -> dict[str, Any]:
    """Export ``spec``'s model, write its directory; returns its ``export.json`` record."""
    model = spec.model
    n_layers = spec.layers or int(model.config.num_hidden_layers)  # type: ignore[union-attr]
    maker = DeepTruthMaker(model, decoder_layers_path(model, n_layers))
    vocab = int(model.config.vocab_size)  # type: ignore[union-attr]
    inputs = ad_export.example_inputs(spec.batch, spec.seq, vocab, seed=0)
    start = time.monotonic()
    with _DedupRecorder() as rec:
        gm = ad_export.export_to_gm(model, inputs, dynamic_seq=spec.dynamic_seq)
    export_s = time.monotonic() - start
    name = dump_file_name(1, *EXPORT_STAGE)
    text = dump_text(gm, *EXPORT_STAGE)
    sections = check_dump(name, text)
    truth = graph_truth(gm, maker, spec.name, type(model).__name__, name)
    if [s.nodes for s in sections] != [list(truth["nodes"])]:
        raise AssertionError(f"{spec.name}: the truth does not name exactly the dump's nodes")
    kinds = [truth["layer_kinds"][str(i)] for i in range(truth["num_layers"])]
    if truth["num_layers"] != n_layers:
        raise AssertionError(f"{spec.name}: {truth['num_layers']} layers in the truth, "
                             f"{n_layers} in the model")
    if spec.expected_kinds is not None and kinds != spec.expected_kinds:
        diff = [(i, k, e) for i, (k, e) in enumerate(zip(kinds, spec.expected_kinds, strict=False))
                if k != e]
        raise AssertionError(f"{spec.name}: layer kinds differ from the pattern (layer, truth, "
                             f"pattern): {diff[:6]}")
    out_dir = out_root / spec.name
    out_dir.mkdir(parents=True, exist_ok=True)
    dump_gz = _write_gz(out_dir / f"{name}.gz", text.encode("utf-8"))
    truth_name = name.replace(".txt", ".truth.json")
    truth_gz = _write_gz(out_dir / f"{truth_name}.gz", format_truth(truth).encode("utf-8"))
    per_layer: dict[str, int] = defaultdict(int)
    for info in truth["nodes"].values():
        per_layer["none" if info["layer"] is None else str(info["layer"])] += 1
    record = {
        "model": spec.name, "architecture": type(model).__name__, "source": spec.source,
        "notes": spec.notes, "layers": n_layers, "kinds": _runs(kinds),
        "nodes": len(truth["nodes"]), "largest_layer": max(
            (v for k, v in per_layer.items() if k != "none"), default=0),
        "outside_layers": per_layer.get("none", 0),
        "sequence": "dynamic" if spec.dynamic_seq else f"static {spec.seq}",
        "text_bytes": len(text.encode("utf-8")), "dump_gz_bytes": dump_gz,
        "truth_gz_bytes": truth_gz, "dedup": _summarise_folds(rec.folded),
        "cross_layer_weights": _cross_layer_weights(text, truth),
        "export_seconds": round(export_s, 1),
    }
    export_json = dict(record)
    export_json.pop("export_seconds")  # keeps the file byte-identical between runs
    (out_dir / "export.json").write_text(json.dumps(export_json, indent=1) + "\n",
                                         encoding="utf-8")
    return record


def _runs(kinds: list[str]) -> str:
    """``0-2 attention+mlp; 3-60 mla+moe`` (consecutive equal kinds), or the pattern's period."""
    out: list[str] = []
    i = 0
    while i < len(kinds):
        j = i
        while j + 1 < len(kinds) and kinds[j + 1] == kinds[i]:
            j += 1
        out.append(f"{i} {kinds[i]}" if i == j else f"{i}-{j} {kinds[i]}")
        i = j + 1
    if len(out) <= 8:
        return "; ".join(out)
    by_kind: dict[str, list[int]] = defaultdict(list)
    for i, k in enumerate(kinds):
        by_kind[k].append(i)
    return "; ".join(f"{k}: {_ranges(v)}" for k, v in by_kind.items())


def _ranges(ids: list[int]) -> str:
    if len(ids) > 12:
        return f"{len(ids)} layers ({', '.join(map(str, ids[:6]))}, ...)"
    return ", ".join(map(str, ids))


README_HEAD = """# Real-depth export dumps

Export-stage dumps (`001_export_export_to_gm.txt.gz`) and their truth
(`001_export_export_to_gm.truth.json.gz`, the format of `tests/fixtures/dumps/README.md`) of
Hugging Face architectures at the **layer count and layer-type pattern of a published
checkpoint**, with tiny widths (hidden 64, 4 query / 2 KV heads, head dim 16, 8 experts top-2,
vocabulary 128), so that what only depth shows is tested: shared blocks used by many layers,
KV-sharing layers reading a layer far back, model-level slices between layers, dense prefixes
before dozens of MoE layers, hybrid patterns. Exported like the fixtures of
`tests/fixtures/dumps/` (`torch.export` on the meta device, dynamic batch and sequence,
AutoDeploy's clean-ups), written by `tools/make_deep_dumps.py` from
`tools/model_dumps/deep_models.py`:

```
pip install torch==2.13.0 transformers==5.23.0
python tools/make_deep_dumps.py                        # every model (--models NAME ... for some)
```

Made with torch 2.13.0 (CPU) and transformers 5.23.0; byte-identical from one run to the next.
`tests/layers/test_deep_exports.py` checks the product's layer of every node and every layer's
kind against the truth. Each directory's `export.json` holds the source, the notes, the counts,
and two records about shared weights: `dedup` (tensors read through several `get_attr` nodes
after export, and the one name AutoDeploy's de-duplication keeps: the first `get_attr` node in
graph order) and `cross_layer_weights` (weights named after layer N that nodes of other layers
read, by the truth).

Sizes are of the gzip files (dump + truth). Kinds list consecutive layers of one kind, or the
layers of each kind for long patterns.

| model | architecture | source of depth and pattern | layers | kinds | nodes (largest layer) | gzip KiB |
| --- | --- | --- | --- | --- | --- | --- |
"""


def write_readme(out_root: Path) -> None:
    rows = []
    notes = []
    for path in sorted(out_root.glob("*/export.json")):
        r = json.loads(path.read_text(encoding="utf-8"))
        size = (r["dump_gz_bytes"] + r["truth_gz_bytes"]) / 1024
        seq = "" if r["sequence"] == "dynamic" else f" ({r['sequence']} sequence)"
        rows.append(f"| `{r['model']}/` | {r['architecture']} | {r['source']} | {r['layers']} | "
                    f"{r['kinds']} | {r['nodes']} ({r['largest_layer']}){seq} | {size:.0f} |")
        # (tied embedding and lm head, folded in every model that ties them, left out here)
        extra = list(r["notes"]) + [f"de-duplication: {d}" for d in r["dedup"] if "layer " in d] \
            + [f"shared weights: {c}" for c in r["cross_layer_weights"]]
        if extra:
            notes.append(f"- `{r['model']}/`: " + "; ".join(extra))
    total = sum(p.stat().st_size for p in out_root.glob("*/*.gz"))
    left_out = [f"- `{name}`: {why}" for name, why in NOT_EXPORTED.items()]
    text = README_HEAD + "\n".join(rows) + f"\n\nTotal: {len(rows)} models, " \
        f"{total / 1024 / 1024:.1f} MiB of gzip.\n\n## Notes per model\n\n" + "\n".join(notes) \
        + "\n\n## Not exported\n\n" + "\n".join(left_out) + "\n"
    (out_root / "README.md").write_text(text, encoding="utf-8")


def _pin_hash_seed() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--models", nargs="*", default=list(DEEP_BUILDERS),
                    choices=list(DEEP_BUILDERS))
    ap.add_argument("--list", action="store_true", help="print the models and their sources")
    args = ap.parse_args(argv)
    if args.list:
        for name in DEEP_BUILDERS:
            print(name)
        return 0
    print(f"torch {torch.__version__}, transformers {transformers.__version__} "
          "(dumps made with 2.13.0 and 5.23.0)", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    failed = []
    for name in args.models:
        start = time.monotonic()
        try:
            r = make_deep(DEEP_BUILDERS[name](), args.out)
        except Exception as exc:  # report every model that fails, then exit non-zero
            failed.append(name)
            print(f"{name}: FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:400]}",
                  flush=True)
            continue
        print(f"{name:<22} layers={r['layers']:<3} nodes={r['nodes']:<6} "
              f"gz={(r['dump_gz_bytes'] + r['truth_gz_bytes']) // 1024} KiB  "
              f"export {r['export_seconds']} s, total {time.monotonic() - start:.1f} s"
              + "".join(f"\n    dedup: {d}" for d in r["dedup"])
              + "".join(f"\n    cross: {c}" for c in r["cross_layer_weights"]), flush=True)
    write_readme(args.out)
    if failed:
        print(f"failed: {' '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    _pin_hash_seed()
    sys.exit(main())
