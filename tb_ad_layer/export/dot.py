"""Graphviz DOT (and PNG through Graphviz's ``dot``) for one layer document.

Groups and sub-groups become nested clusters; nodes with kernels list ``⚡ kernel (µs)`` lines
under their label, as seed 000's renderer does.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tb_ad_layer.contract.document import LayerDocument, LayerNode
from tb_ad_layer.errors import InputError

GROUP_COLOURS = {
    "norm": "#d9ead3", "attention": "#cfe2f3", "mla": "#cfe2f3", "moe": "#fce5cd",
    "mlp": "#fff2cc", "mamba": "#d9d2e9", "gdn": "#ead1dc", "other": "#eeeeee",
}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _label(node: LayerNode) -> str:
    lines = [node.label or node.op, node.id, node.shape]
    for w in node.weights[:3]:
        lines.append(f"w: {w.name} [{w.shape}]")
    if len(node.weights) > 3:
        lines.append(f"... +{len(node.weights) - 3} weights")
    for k in node.kernels[:6]:
        lines.append(f"\u26a1 {k.kernel[:48]} ({k.duration_us:.1f}\u00b5s)")
    return "\n".join(lines)


def to_dot(doc: LayerDocument) -> str:
    """Render a layer document as a DOT digraph."""
    out = [f"digraph layer_{doc.layer} {{", "  rankdir=TB;", "  compound=true;",
           '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];']
    nl = "\n"
    title = f"Layer {doc.layer} ({doc.kind}) - {doc.source_file}"
    out.append(f"  label={_quote(title)};")
    for e in doc.external_inputs:
        out.append(f"  {_quote(e.id)} [shape=parallelogram, fillcolor=\"#ffffff\", "
                   f"label={_quote(nl.join((e.label, e.id, e.shape)))}];")
    clusters: dict[str, dict[str | None, list[LayerNode]]] = {}
    for n in doc.nodes:
        clusters.setdefault(n.group, {}).setdefault(n.sub_group, []).append(n)
    for gi, (group, subs) in enumerate(clusters.items()):
        colour = GROUP_COLOURS.get(group, "#eeeeee")
        out.append(f"  subgraph cluster_{gi} {{ label={_quote(group)}; style=rounded;")
        for si, (sub, nodes) in enumerate(subs.items()):
            if sub:
                out.append(f"    subgraph cluster_{gi}_{si} {{ label={_quote(sub)}; style=dashed;")
            for n in nodes:
                out.append(f"      {_quote(n.id)} [fillcolor=\"{colour}\", "
                           f"label={_quote(_label(n))}];")
            if sub:
                out.append("    }")
        out.append("  }")
    for edge in doc.edges:
        out.append(f"  {_quote(edge.from_)} -> {_quote(edge.to)} "
                   f"[label={_quote(edge.shape)}, fontsize=8];")
    out.append("}")
    return "\n".join(out) + "\n"


def graphviz_dot() -> str:
    """The path of Graphviz's ``dot``; a clear error when it is not installed. Callers that
    write other files too ask first, so a missing Graphviz leaves nothing half-done."""
    exe = shutil.which("dot")
    if exe is None:
        raise InputError("Graphviz 'dot' is not on PATH; install it (Debian/Ubuntu: "
                         "'apt-get install graphviz', macOS: 'brew install graphviz', conda: "
                         "'conda install graphviz') or use --dot to write DOT only",
                         field="--png")
    return exe


def render_png(dot_text: str, png_path: str | Path) -> None:
    """Render DOT text to PNG with Graphviz's ``dot``."""
    exe = graphviz_dot()
    proc = subprocess.run([exe, "-Tpng", "-o", str(png_path)], input=dot_text.encode("utf-8"),
                          capture_output=True, check=False)
    if proc.returncode != 0:
        raise InputError(f"Graphviz failed: {proc.stderr.decode('utf-8', 'replace').strip()}",
                         path=png_path)
