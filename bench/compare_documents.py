"""Check that two versions of the converter store the same layer documents on every input.

A change meant to make the converter faster must not change what it stores. This converts
every stage of every input with the sources of a git revision (``--before``, run as Python
sources from ``git archive`` in a temporary directory) and with this checkout (its compiled
modules, and with ``--pure`` its sources too), and compares what the run store would keep per
stage: the stage row, the doubts about its layering, the nodes outside every layer, and every
layer's summary and document, byte for byte (a document is encoded deterministically, so equal
bytes are equal documents). An input that one version refuses must be refused by the other with
the same message.

Only versions that store the same format compare equal: a revision from before a format change
differs on every stage. Run store schema version 3 added the doubts (``doubts`` in every layer
document, and a ``doubts`` part here), version 4 each weight's ``role``; compare with a
revision from the last of those changes on.

Inputs: the fixture dumps (``tests/fixtures/dumps``), the real writer's dumps
(``../shared/dumps/real_writer``) and, with ``--bench``, the benchmark dumps of
``bench/bench_convert.py`` (generated into ``bench/out`` when missing; all but its 256-layer
one) and its real exports.

    python bench/compare_documents.py --before HEAD          # uncommitted changes
    python bench/compare_documents.py --before main --pure --bench

Exit status 0 when every stage is the same, 1 with a line per difference otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "dumps"
REAL_WRITER = REPO.parent / "shared" / "dumps" / "real_writer"
# The generated dumps of bench/bench_convert.py (name, layers, how experts' weights are
# dequantised), without its largest (256 layers: minutes per version).
BENCH_SIZES = [("dsv3_61", 61, "none"), ("dsv3_61", 61, "op"), ("dsv3_61", 61, "aten"),
               ("x1", 16, "op"), ("x4", 64, "op")]

# Runs in the version under test, through the functions every version has had: per stage file,
# the SHA-256 of each stored part (or the refusal's message).
DIGESTS = r"""
import hashlib, json, sys
from pathlib import Path
import msgspec
import tb_ad_layer
from tb_ad_layer._compiled import describe
from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.dump.stages import discover_stages
from tb_ad_layer.errors import InputError
from tb_ad_layer.layers.document import layer_document_json, outside_nodes_json
from tb_ad_layer.layers.layered import layer_graph

def sha(data):
    return hashlib.sha256(data).hexdigest()

out = {}
for source in sys.argv[1:]:
    try:
        files = [s.path for s in discover_stages(source)]
    except InputError as e:
        out[source] = {"": "refused: " + str(e)}
        continue
    stages = out[source] = {}
    for path in files:
        try:
            dump = parse_dump(path)
            lg = layer_graph(dump.select())
        except InputError as e:
            stages[path.name] = "refused: " + str(e)
            continue
        graph = lg.graph
        parts = {"stage": sha(json.dumps([dump.module_names(), graph.module, len(graph.nodes),
                                          graph.call_count, len(lg.layers),
                                          lg.layer.count(None)]).encode()),
                 "outside": sha(outside_nodes_json(lg))}
        # The doubts about the layering (the stage row's), in versions that have them.
        if hasattr(lg, "doubts"):
            parts["doubts"] = sha(msgspec.json.encode(lg.doubts))
        for index in sorted(lg.layers):
            info = lg.layers[index]
            summary = json.dumps([info.kind, info.attention, info.node_count,
                                  info.group_counts]).encode()
            parts[f"layer {index}"] = sha(summary + b"\0" + layer_document_json(lg, index))
        stages[path.name] = parts
where = Path(tb_ad_layer.__file__).parent
print(json.dumps({"implementation": f"{describe()}, from {where}", "digests": out}))
"""


def inputs(bench: bool) -> list[Path]:
    found = [d for d in sorted(FIXTURES.iterdir()) if d.is_dir()]
    if REAL_WRITER.is_dir():
        found += [d for d in sorted(REAL_WRITER.iterdir()) if d.is_dir()]
    else:
        print(f"note: {REAL_WRITER} is missing; comparing without the real writer's dumps",
              file=sys.stderr)
    if bench:
        sys.path.insert(0, str(REPO / "bench"))
        import bench_convert

        found += [bench_convert.generate(name, layers, dequant)
                  for name, layers, dequant in BENCH_SIZES]
        found += [bench_convert.real_dump(name) for name in bench_convert.REAL]
    return found


def digests(sources: list[Path], tree: Path, pure: bool) -> tuple[str, dict[str, object]]:
    """What the converter in ``tree`` (a checkout with the ``tb_ad_layer`` package) stores for
    every input: ``(implementation, {source: {stage file: {part: sha256} | refusal}})``."""
    env = {k: v for k, v in os.environ.items() if k != "TB_AD_LAYER_PURE_PYTHON"}
    env["PYTHONPATH"] = str(tree)
    if pure:
        env["TB_AD_LAYER_PURE_PYTHON"] = "1"
    proc = subprocess.run([sys.executable, "-c", DIGESTS, *map(str, sources)], cwd=tree,
                          env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"the converter in {tree} failed:\n{proc.stderr[-4000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return str(result["implementation"]), dict(result["digests"])


def differences(before: dict[str, object], after: dict[str, object]) -> list[str]:
    out: list[str] = []
    for source in sorted(set(before) | set(after)):
        old, new = before.get(source), after.get(source)
        if old == new:
            continue
        if not isinstance(old, dict) or not isinstance(new, dict):
            out.append(f"{source}: {old!r} -> {new!r}")
            continue
        for stage in sorted(set(old) | set(new)):
            a, b = old.get(stage), new.get(stage)
            if a == b:
                continue
            if isinstance(a, dict) and isinstance(b, dict):
                parts = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                out.append(f"{source}/{stage}: differs in {', '.join(parts[:8])}"
                           + (f" and {len(parts) - 8} more" if len(parts) > 8 else ""))
            else:
                out.append(f"{source}/{stage}: {str(a)[:200]!r} -> {str(b)[:200]!r}")
    return out


def export_revision(revision: str, into: Path) -> None:
    """The package sources of ``revision`` (no compiled modules: they run as sources)."""
    archive = subprocess.run(["git", "archive", "--format=tar", revision, "tb_ad_layer"],
                             cwd=REPO, capture_output=True, check=True).stdout
    tar_path = into / "sources.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into, filter="data")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, metavar="REV",
                    help="the git revision to compare with (run as Python sources)")
    ap.add_argument("--pure", action="store_true",
                    help="also compare this checkout's Python sources, beside its compiled "
                         "modules")
    ap.add_argument("--bench", action="store_true",
                    help="also the benchmark dumps (large: minutes)")
    args = ap.parse_args()
    sources = inputs(args.bench)
    with tempfile.TemporaryDirectory() as tmp:
        export_revision(args.before, Path(tmp))
        impl, before = digests(sources, Path(tmp), pure=True)
    print(f"before ({args.before}): {impl}", flush=True)
    stages = sum(len(v) for v in before.values() if isinstance(v, dict))
    failed = False
    for pure in ([False, True] if args.pure else [False]):
        impl, after = digests(sources, REPO, pure)
        found = differences(before, after)
        print(f"this checkout: {impl}: {len(sources)} inputs, {stages} stage files, "
              f"{len(found)} differences", flush=True)
        for line in found:
            print(f"  {line}")
        failed = failed or bool(found)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
