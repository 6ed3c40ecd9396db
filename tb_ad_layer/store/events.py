"""A TensorBoard event file per run, so a converted run also shows in the Text and Scalars tabs.

TensorBoard lists a run only where it finds event files; with one written next to the store,
``tensorboard --logdir`` shows the conversion summary (Text tab) and per-layer node counts and
GPU times (Scalars tab, step = layer index) beside the "AD Layers" tab.

The file (TFRecord-framed ``Event`` protos, :mod:`tb_ad_layer.store.tfrecord`) is written under a
hidden temporary name that TensorBoard does not read and renamed into the run directory when
complete, so TensorBoard never reads a half-written file.
Our files end in :data:`EVENTS_SUFFIX`; re-converting removes the previous one, so runs do not
accumulate duplicate summaries (other event files in the directory are left alone).
"""
from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.text import metadata as text_metadata

from tb_ad_layer.errors import InputError
from tb_ad_layer.metadata import STORE_DIR
from tb_ad_layer.store.reader import RunStore
from tb_ad_layer.store.tfrecord import write_record

EVENTS_SUFFIX = ".ad_layer"
TEXT_TAG = "ad_layer/conversion"
NODE_COUNT_TAG = "ad_layer/node_count"
GPU_TIME_TAG = "ad_layer/gpu_time_us"
FILE_VERSION = "brain.Event:2"  # the first record of every event file, as TensorBoard writes it


def run_dir_of(store_path: str | Path) -> Path:
    """``<logdir>/<run>`` of a store at ``<logdir>/<run>/plugins/ad_layer/run.sqlite``."""
    p = Path(store_path)
    if p.parent.name != STORE_DIR[1] or p.parent.parent.name != STORE_DIR[0]:
        raise InputError("not inside <run>/plugins/ad_layer/", path=p)
    return p.parent.parent.parent


def _cell(value: object) -> str:
    """Text for a markdown table cell or code span: names from dumps may hold ``|`` or a
    backtick, which would break the table or the span."""
    return str(value).replace("`", "'").replace("|", "\\|").replace("\n", " ")


def conversion_markdown(store: RunStore) -> str:
    """The run summary shown in TensorBoard's Text tab: source, stages, the doubts about their
    layering, layers, trace."""
    meta = store.meta
    stages = store.stages()
    lines = [f"**tb-ad-layer run `{_cell(meta.run)}`** "
             f"(converter {_cell(meta.converter_version)}, {_cell(meta.created)})", "",
             f"- model: `{_cell(meta.model)}`",
             f"- source: `{_cell(meta.source_dir)}`"]
    trace = meta.trace
    if trace is not None:
        share = trace.mapped_share
        lines.append(
            f"- trace: `{_cell(trace.source)}`, phase {_cell(trace.phase)}, "
            f"{trace.kernel_count} kernels on {trace.num_streams} streams"
            + (f", {100 * share:.0f}% mapped to nodes" if share is not None else ""))
    else:
        lines.append("- trace: none (convert with `--trace` to see GPU kernels per node)")
    lines += ["", "| stage | file | transform | nodes | layers |", "|---:|---|---|---:|---:|"]
    for s in stages:
        lines.append(f"| {s.idx} | `{_cell(s.file)}` | {_cell(s.stage)} / "
                     f"{_cell(s.transform)} | {s.node_count} | {s.layer_count} |")
    doubtful = [s for s in stages if s.doubts]
    if doubtful:
        lines += ["", "**The layers found may be wrong** (doubts about the layering):", ""]
        for s in doubtful:
            lines += [f"- stage {s.idx} (`{_cell(s.file)}`): {_cell(d.message)}"
                      for d in s.doubts]
    if stages:
        layers = store.layers(stages[-1].idx)
        lines += ["", f"Layers of the last stage ({len(layers)}):", "",
                  "| layer | kind | attention | nodes | GPU µs |", "|---:|---|---|---:|---:|"]
        for r in layers:
            gpu = f"{r.gpu_time_us:.1f}" if r.gpu_time_us is not None else "-"
            lines.append(f"| {r.layer} | {_cell(r.kind)} | {_cell(r.attention or '-')} "
                         f"| {r.node_count} | {gpu} |")
    return "\n".join(lines) + "\n"


def _text_event(tag: str, text: str, wall_time_s: float) -> event_pb2.Event:
    tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING,
                                    tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                                    string_val=[text.encode("utf-8")])
    meta = text_metadata.create_summary_metadata(display_name="tb-ad-layer conversion",
                                                 description="")
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, metadata=meta,
                                                                   tensor=tensor)])
    return event_pb2.Event(wall_time=wall_time_s, step=0, summary=summary)


def _scalar_event(tag: str, value: float, step: int, wall_time_s: float,
                  description: str) -> event_pb2.Event:
    tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT,
                                    tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                                    float_val=[float(value)])
    meta = scalar_metadata.create_summary_metadata(display_name=tag, description=description)
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, metadata=meta,
                                                                   tensor=tensor)])
    return event_pb2.Event(wall_time=wall_time_s, step=step, summary=summary)


def run_events(store: RunStore, wall_time_s: float | None = None) -> list[event_pb2.Event]:
    """The events describing one run (text summary; per-layer scalars of the last stage)."""
    wall_time_s = time.time() if wall_time_s is None else wall_time_s
    events = [_text_event(TEXT_TAG, conversion_markdown(store), wall_time_s)]
    stages = store.stages()
    if stages:
        for r in store.layers(stages[-1].idx):
            events.append(_scalar_event(NODE_COUNT_TAG, r.node_count, r.layer, wall_time_s,
                                        "FX nodes per decoder layer (step = layer index)"))
            if r.gpu_time_us is not None:
                events.append(_scalar_event(GPU_TIME_TAG, r.gpu_time_us, r.layer, wall_time_s,
                                            "GPU time per decoder layer in µs "
                                            "(step = layer index)"))
    return events


def write_run_events(store_path: Path) -> Path:
    """Write the run's event file into ``<logdir>/<run>/``, replacing the one written by a
    previous conversion; return its path.

    Raises:
        InputError: the store cannot be read or the directory cannot be written.
    """
    store_path = Path(store_path)
    run_dir = run_dir_of(store_path)
    store = RunStore(store_path)
    try:
        events = run_events(store)
    finally:
        store.close()
    wall_time_s = time.time()
    # TensorBoard finds event files by "tfevents" in the name; the rest follows its own writer's
    # pattern (time, host, pid) so files from several conversions sort by time.
    name = (f"events.out.tfevents.{int(wall_time_s):010d}.{socket.gethostname()}.{os.getpid()}"
            f"{EVENTS_SUFFIX}")
    # Written under a name TensorBoard does not read (no "tfevents" in it), beside the store,
    # then renamed into place whole.
    tmp = store_path.parent / f".events-{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            write_record(f, event_pb2.Event(wall_time=wall_time_s,
                                            file_version=FILE_VERSION).SerializeToString())
            for event in events:
                write_record(f, event.SerializeToString())
        final = run_dir / name
        os.replace(tmp, final)
        for old in run_dir.glob(f"events.out.tfevents.*{EVENTS_SUFFIX}"):
            if old != final:
                old.unlink(missing_ok=True)
        return final
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write the event file: {e.strerror or e}", path=run_dir) from None
