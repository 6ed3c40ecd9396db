"""Why a picked replay or pass yields no layers to show, in one line for the user.

``kernels`` and ``convert --trace`` stop with this line (exit status 2) rather than report an
empty result as if it were one. The facts are those ``tb-ad-layer inspect`` prints: the capture
mode (a ``--cuda-graph-trace=graph`` capture records each CUDA graph launch as one block without
its kernels), and what the pick holds.
"""
from __future__ import annotations

from tb_ad_layer.trace.kernel import KIND_KERNEL
from tb_ad_layer.trace.nsys_sqlite import RECAPTURE_HINT
from tb_ad_layer.trace.replay import Selection
from tb_ad_layer.trace.segment import Segmentation


def no_layers_reason(sel: Selection, seg: Segmentation | None, min_confidence: float) -> str | None:
    """Why ``seg`` (the cut of the picked ``sel``; None when nothing was cut) holds no layers to
    show: it has none, or inferred ones below ``min_confidence``. None when it has some.

    The reason says what was found (the pick, its kernel count) and what is missing.
    """
    if seg is not None and seg.layers and not (seg.inferred and seg.confidence < min_confidence):
        return None
    what = "replay" if sel.phase == "decode" else "pass"
    kernels = sum(1 for k in sel.kernels if k.kind == KIND_KERNEL)
    if sel.graph_mode_capture:
        eager = (f"only {kernels:,} kernel(s) outside CUDA graphs" if kernels
                 else "and no kernel outside CUDA graphs")
        return (f"no layer found: the trace was captured with --cuda-graph-trace=graph, so the "
                f"kernels of its {len(sel.launches):,} CUDA graph launch(es) on device "
                f"{sel.device} are not in it ({eager}); {RECAPTURE_HINT}")
    if seg is None or not kernels:
        return (f"no layer found: the {sel.phase} {what} picked on device {sel.device} holds no "
                f"kernels ({sel.reason})")
    found = f"{kernels:,} kernels on device {sel.device}"
    if not seg.inferred:
        return (f"no layer found in the {sel.phase} {what} ({found}): the graph has no decoder "
                f"layers to cut it by")
    if seg.layers:
        why = (f"the best cut, {len(seg.layers)} layers, has confidence {seg.confidence:.2f}: "
               f"{seg.detail}")
    else:
        why = "no repeating per-layer kernel pattern and no layer ranges"
    return (f"no layer structure found in the {sel.phase} {what} ({found}; {why}); pass --dump "
            f"with the model's graph dump to cut it by the graph's layers")
