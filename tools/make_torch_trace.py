#!/usr/bin/env python3
"""Make real torch.compile structured logs (TORCH_TRACE) of tiny Hugging Face models, with truth.

Dev-only tool (torch and transformers are not runtime dependencies of tb_ad_layer):

    pip install torch==2.13.0 transformers
    python tools/make_torch_trace.py --out /tmp/tt --models llama qwen_moe mixtral
    python tools/make_torch_trace.py --out /tmp/tt --models llama --graph-break 1 --suffix _break
    # the committed fixtures (tests/fixtures/torch_trace/):
    python tools/make_torch_trace.py --out tests/fixtures/torch_trace --models llama \
        --backend inductor --provenance --strip --suffix _inductor
    python tools/make_torch_trace.py --out tests/fixtures/torch_trace --models qwen_moe \
        --graph-break 1 --strip --suffix _break
    python tools/make_torch_trace.py --score /tmp/tt          # node-to-layer of every model there

Per model (the builders of ``tools/model_dumps``: tiny configs, random init, no download), one
subprocess runs with ``TORCH_TRACE=<out>/<model>/trace`` (torch reads it at import, so it must be
set before torch is imported), compiles the model with ``torch.compile`` and runs it twice (the
second time on a longer sequence, as a server warming up would: a recompilation). The backend
first records every graph Dynamo hands it: per compile id ``[F/C]`` and FX node, the decoder
layer from ``node.meta["nn_module_stack"]`` (the outermost stack entry that is
``<layers ModuleList>[N]``, as ``tools/model_dumps/truth.py`` does for exports), written to
``<out>/<model>/truth.json``; then it hands the graph on (``aot_eager`` by default: the AOT graphs
are logged; ``inductor``: also the post-grad graph and, with ``--provenance``, Inductor's
node-to-kernel provenance).

``--graph-break N`` adds a forward pre-hook to decoder layer N that calls
``torch._dynamo.graph_break()``: the model's frame is cut there and layer N runs as a frame of
its own, compiled once for that layer.

``--score DIR`` converts each ``<model>/trace`` with tb_ad_layer and compares the layer of every
Dynamo graph call node (``[F/C] name``) with the truth.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent

_INDEX = re.compile(r"\[(\d+)\]")
_KEY = re.compile(r"\['([^']*)'\]")


def module_path(path: str) -> str:
    """``L['self'].model.layers[0].mlp`` -> ``model.layers.0.mlp`` (a Dynamo stack entry's path
    as ``named_modules`` spells it); a path from another local keeps that local's name."""
    text = path
    if text.startswith("L['self']"):
        text = text[len("L['self']"):]
    elif text.startswith(("L[", "G[")):
        text = _KEY.sub(lambda m: "." + m.group(1), text[1:], count=1)
    text = _KEY.sub(lambda m: "." + m.group(1), text)
    text = _INDEX.sub(lambda m: "." + m.group(1), text)
    return text.lstrip(".")


def layers_suffix_pattern(layers_path: str) -> str:
    """``model.layers`` -> a pattern for ``model.layers`` or ``layers``: a frame's local may be
    any module on the way down to the layers."""
    parts = layers_path.split(".")
    pattern = re.escape(parts[-1])
    for part in reversed(parts[:-1]):
        pattern = f"(?:{re.escape(part)}\\.)?" + pattern
    return pattern


# -- child: compile one model under TORCH_TRACE ----------------------------------------------

def child(name: str, out: Path, backend_name: str, graph_break: int | None,
          provenance: bool, nested: bool = False, loop: bool = False) -> None:
    import torch

    if nested:
        torch._dynamo.config.nested_graph_breaks = True

    sys.path.insert(0, str(TOOLS))
    from model_dumps.models import BUILDERS as FIRST
    from model_dumps.more_models import MORE_BUILDERS
    from model_dumps.truth import decoder_layers_path

    builders = {**FIRST, **MORE_BUILDERS}
    spec = builders[name]()
    model = spec.model
    n_layers = int(model.config.num_hidden_layers)
    layers_path = decoder_layers_path(model, n_layers)
    # The path starts from the compiled frame's local: ``L['self']`` (the model, or the inner
    # model in a frame resumed after a graph break: ``layers.3``), or ``L['args'][0]`` where a
    # decorator wraps the forward (``args.0.model.layers.3`` after module_path).
    layer_re = re.compile(r"(?:^|\.)" + layers_suffix_pattern(layers_path) + r"\.(\d+)$")
    truth: dict[str, dict[str, int | None]] = {}
    stacks: dict[str, dict[str, list[str]]] = {}

    def layer_of(node: Any) -> int | None:
        stack = node.meta.get("nn_module_stack") or {}
        for path, _cls in stack.values():
            m = layer_re.search(module_path(str(path)))
            if m:
                return int(m.group(1))
        return None

    if provenance:
        torch._inductor.config.trace.provenance_tracking_level = 1
    inner = torch._dynamo.lookup_backend(backend_name)

    def backend(gm: Any, example_inputs: Any) -> Any:
        from torch._guards import CompileContext
        cid = str(CompileContext.current_compile_id())
        truth[cid] = {n.name: layer_of(n) for n in gm.graph.nodes
                      if n.op not in ("placeholder", "output", "get_attr")}
        stacks[cid] = {n.name: [module_path(str(p)) for p, _ in
                                (n.meta.get("nn_module_stack") or {}).values()]
                       for n in gm.graph.nodes
                       if n.op not in ("placeholder", "output", "get_attr")}
        return inner(gm, example_inputs)

    if graph_break is not None and not loop:
        layers = model.get_submodule(layers_path)
        layers[graph_break].register_forward_pre_hook(
            lambda mod, args: torch._dynamo.graph_break())
    if loop:
        # The decoder loop written out, as a serving engine's model runner does, with the
        # break between two layers: the graphs before and after it name layers by index.
        body = model.get_submodule(layers_path.rsplit(".", 1)[0])
        stop = graph_break

        def layers(h: Any, pos: Any, pe: Any, which: Any) -> Any:
            for layer in which:
                out = layer(h, attention_mask=None, position_ids=pos, position_embeddings=pe)
                h = out[0] if isinstance(out, tuple) else out
            return h

        def run(input_ids: Any) -> Any:
            h = body.embed_tokens(input_ids)
            pos = torch.arange(input_ids.shape[1]).unsqueeze(0)
            pe = body.rotary_emb(h, pos)
            h = layers(h, pos, pe, body.layers[:stop])
            # Outside any loop, so that Dynamo resumes after it in the same frame.
            torch._dynamo.graph_break()
            h = layers(h, pos, pe, body.layers[stop:])
            return model.lm_head(body.norm(h))

        compiled = torch.compile(run, backend=backend)
    else:
        compiled = torch.compile(model, backend=backend)
    vocab = int(model.config.vocab_size)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for seq in (spec.seq, spec.seq + 4):
            ids = torch.randint(0, vocab, (spec.batch, seq), generator=gen)
            if loop:
                compiled(ids)
            else:
                compiled(input_ids=ids)
    doc = {"model": name, "architecture": type(model).__name__, "layers_module": layers_path,
           "num_layers": n_layers, "backend": backend_name, "graph_break": graph_break,
           "torch": torch.__version__, "graphs": truth, "stacks": stacks}
    (out / "truth.json").write_text(json.dumps(doc, indent=0, sort_keys=True) + "\n")


def make(name: str, out_root: Path, backend: str, graph_break: int | None,
         provenance: bool, strip: bool, suffix: str = "", nested: bool = False,
         loop: bool = False) -> None:
    out = out_root / (name + suffix)
    trace = out / "trace"
    trace.mkdir(parents=True, exist_ok=True)
    for f in trace.iterdir():
        f.unlink()
    # Inductor logs its post-grad graph and provenance only when it compiles: no cache hits.
    env = dict(os.environ, TORCH_TRACE=str(trace), PYTHONHASHSEED="0",
               TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")
    args = [sys.executable, __file__, "--child", name, "--out", str(out), "--backend", backend]
    if graph_break is not None:
        args += ["--graph-break", str(graph_break)]
    if provenance:
        args.append("--provenance")
    if nested:
        args.append("--nested-graph-breaks")
    if loop:
        args.append("--loop")
    t0 = time.monotonic()
    proc = subprocess.run(args, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else
                           f"exit {proc.returncode}")
    if strip:
        for f in trace.glob("*.log"):
            strip_log(f)
    size = sum(f.stat().st_size for f in trace.iterdir())
    print(f"{name}: {size:,} B of logs in {time.monotonic() - t0:.0f} s -> {trace}")


#: Records a fixture does not need: large payloads no reader of ours looks at.
_DROP_ARTIFACTS = ("inductor_output_code", "fx_graph_runnable", "before_pre_grad_graph",
                   "after_pre_grad_graph", "before_joint_graph", "after_joint_graph",
                   "before_post_grad_graph", "aot_forward_graph_fw_metadata", "dynamo_cpp_guards_str",
                   "torch._functorch.config")
_DROP_EVENTS = ('"chromium_event"', '"describe_tensor"', '"describe_storage"', '"describe_source"',
                '"guard_added_fast"', '"dynamo_cpp_guards_str"', '"compilation_metrics"',
                '"create_symbol"', '"bwd_compilation_metrics"', '"dynamo_start"',
                '"guard_added"', '"propagate_real_tensors"')


def strip_log(path: Path) -> None:
    """Drop the records and artifact payloads a fixture does not need, and gzip the log."""
    keep: list[str] = []
    skipping = False
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("\t"):
                if not skipping:
                    keep.append(line)
                continue
            skipping = any(e in line for e in _DROP_EVENTS) or any(
                f'"name": "{a}"' in line for a in _DROP_ARTIFACTS)
            if not skipping:
                keep.append(line)
    gz = path.with_name(path.name + ".gz")
    with open(gz, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as fh:
        fh.write("".join(keep).encode("utf-8"))
    path.unlink()


# -- scoring ---------------------------------------------------------------------------------

def score(root: Path) -> int:
    sys.path.insert(0, str(ROOT))
    from tb_ad_layer.compile_log.load import load_torch_trace

    worst = 1.0
    for model_dir in sorted(p for p in root.iterdir() if (p / "truth.json").is_file()):
        truth = json.loads((model_dir / "truth.json").read_text())
        if "stacks" in truth:
            # Layers again from the recorded module stacks, by the rule above.
            layer_re = re.compile(r"(?:^|\.)" + layers_suffix_pattern(truth["layers_module"])
                                  + r"\.(\d+)$")
            truth["graphs"] = {
                cid: {name: next((int(m.group(1)) for p in paths
                                  if (m := layer_re.search(p))), None)
                      for name, paths in nodes.items()}
                for cid, nodes in truth["stacks"].items()}
        loaded = load_torch_trace(model_dir / "trace")
        lg = loaded.stages[0]
        got = {n.name: lg.layer[n.index] for n in lg.graph.nodes}
        total = right = missing = 0
        wrong: list[str] = []
        for cid, nodes in truth["graphs"].items():
            for name, layer in nodes.items():
                key = f"[{cid}] {name}"
                total += 1
                if key not in got:
                    missing += 1
                    wrong.append(f"{key}: missing")
                    continue
                if got[key] == layer:
                    right += 1
                else:
                    wrong.append(f"{key}: {got[key]} (truth {layer})")
        share = right / total if total else 1.0
        worst = min(worst, share)
        print(f"{model_dir.name:<22} {right:>6}/{total:<6} {100 * share:6.2f} %  "
              f"layers={len(lg.layers)} graphs={len(truth['graphs'])} doubts={len(lg.doubts)}"
              + (f" missing={missing}" if missing else ""))
        for w in wrong[:8]:
            print(f"    {w}")
    return 0 if worst == 1.0 else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/torch_traces"))
    ap.add_argument("--models", nargs="*", default=["llama", "qwen_moe"])
    ap.add_argument("--backend", default="aot_eager", help="aot_eager (default) or inductor")
    ap.add_argument("--graph-break", type=int, metavar="N",
                    help="break the graph before decoder layer N")
    ap.add_argument("--provenance", action="store_true",
                    help="log Inductor's provenance (with --backend inductor)")
    ap.add_argument("--nested-graph-breaks", action="store_true",
                    help="torch._dynamo.config.nested_graph_breaks: a break inside a layer "
                         "splits the model's own graph there instead of compiling the layer apart")
    ap.add_argument("--loop", action="store_true",
                    help="compile the decoder loop written out (embedding, layers, norm, lm head) "
                         "rather than the model's forward; --graph-break N breaks before layer N")
    ap.add_argument("--suffix", default="", help="added to each model's directory name")
    ap.add_argument("--strip", action="store_true",
                    help="drop records no reader needs and gzip the log (for fixtures)")
    ap.add_argument("--score", type=Path, metavar="DIR",
                    help="score node-to-layer of every <model>/trace under DIR")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.out, args.backend, args.graph_break, args.provenance,
              args.nested_graph_breaks, args.loop)
        return 0
    if args.score:
        return score(args.score)
    failed = 0
    for name in args.models:
        try:
            make(name, args.out, args.backend, args.graph_break, args.provenance, args.strip,
                 args.suffix, args.nested_graph_breaks, args.loop)
        except Exception as exc:  # report every model that fails
            failed += 1
            print(f"{name}: FAILED: {type(exc).__name__}: {str(exc)[:300]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
