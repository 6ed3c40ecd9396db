"""The ``tb-ad-layer`` command line: parse the arguments, run one command, report its outcome.

The arguments become typed option records (:mod:`tb_ad_layer.options`) or plain typed
arguments before any library code sees them. Every bad input ends as one line on stderr and exit
status 2; nothing half-written is left, also when the command is stopped by Ctrl-C, SIGTERM
(``kill``, a batch scheduler) or SIGHUP (the SSH session to the GPU server closing): those
unwind like an error, so every temporary file is removed on the way out.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from tb_ad_layer.errors import InputError
from tb_ad_layer.options import ALL_DEVICES, PHASES, ConvertOptions, TraceChoice, TraceOptions
from tb_ad_layer.progress import Progress
from tb_ad_layer.version import __version__

#: Each command's examples, shown by ``tb-ad-layer COMMAND --help``; ``--help`` alone shows all.
EXAMPLES: dict[str, str] = {
    "convert": """\
  # final stage of a dump directory, as run 'dsv3' under ./logs
  tb-ad-layer convert /data/ad_dumps/dsv3 --logdir logs --run dsv3
  # every transform stage, plus a decode trace mapped onto the final stage
  tb-ad-layer convert /data/ad_dumps/dsv3 --logdir logs --run dsv3_decode --stages all \\
      --trace decode.nsys-rep --phase decode
  # chosen stages (file names or NNN prefixes) of one GraphModule section
  tb-ad-layer convert /data/ad_dumps/dsv3 --logdir logs --stages 040 085 --module "(root)"
  # a multi-GPU run: one trace per rank, or every device of one trace
  tb-ad-layer convert /data/ad_dumps/dsv3 --logdir logs --run tp8 \\
      --trace rank0.nsys-rep --trace rank1.nsys-rep --phase decode
  tb-ad-layer convert /data/ad_dumps/dsv3 --logdir logs --run tp8 --trace all.sqlite --device all
""",
    "extract": """\
  # one layer as seed-schema JSON, DOT and PNG
  tb-ad-layer extract /data/ad_dumps/dsv3 --layer 5 --dot l5.dot --png l5.png
  # with the kernels of a trace on its nodes (trace_kernels)
  tb-ad-layer extract /data/ad_dumps/dsv3 --layer 5 --trace decode.sqlite
""",
    "kernels": """\
  # per-layer kernel sequences cut by the graph's layers, every kernel naming its node
  tb-ad-layer kernels decode.sqlite --layer 5 -o kernels.json --dump /data/ad_dumps/dsv3
  # without a dump: layers from the trace's own ranges or its repeating pattern
  tb-ad-layer kernels decode.sqlite
""",
    "inspect": """\
  # what a trace holds (devices, streams, graphs, steps) and what would be picked
  tb-ad-layer inspect decode.sqlite
  tb-ad-layer inspect decode.sqlite --json --device 1
""",
    "export-trace": """\
  # a converted run's kernels as Chrome trace JSON for Perfetto
  tb-ad-layer export-trace logs/dsv3_decode --chrome dsv3.trace.json
""",
    "report": """\
  # where one step's time goes, with findings ranked by time at stake
  tb-ad-layer report logs/dsv3_decode --dim s70=1024
  tb-ad-layer report logs/dsv3_decode --format json --gpu H100
""",
    "diff": """\
  # two runs compared per layer, group and node; exit 1 on a regression beyond 5 %
  tb-ad-layer diff logs/dsv3_before logs/dsv3_after --gate 5
""",
}
EPILOG = "examples:\n" + "".join(EXAMPLES.values()) + \
    'then: tensorboard --logdir logs   (the "AD Layers" tab)\n'


def _device(text: str) -> int | str:
    """``--device``: a GPU number, or ``all`` (every device is a rank: ``convert`` only)."""
    if text == ALL_DEVICES:
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a device number or 'all': {text!r}") from None


def add_choice_args(p: argparse.ArgumentParser | argparse._ArgumentGroup,
                    ranks: bool = False) -> None:
    """The options of a :class:`~tb_ad_layer.options.TraceChoice` (``--phase``, ``--device``,
    ``--graph-id``, ``--step``), declared once for every command that reads a trace;
    ``ranks``: the command keeps several ranks (``--device all``)."""
    p.add_argument("--phase", choices=PHASES,
                   help="what the trace captured (default: detect; decode = CUDA graph replays)")
    if ranks:
        p.add_argument("--device", type=_device, metavar="N|all",
                       help="GPU to use (default: the busiest); 'all': every device of the "
                            "trace, each a rank of the run")
    else:
        p.add_argument("--device", type=int, metavar="N", help="GPU to use (default: the busiest)")
    p.add_argument("--graph-id", type=int, metavar="ID",
                   help="CUDA graph to use (default: the one with the most kernels)")
    p.add_argument("--step", type=int, metavar="N",
                   help="profiler step to use (ProfilerStep#N; default: the last complete step)")


def trace_choice(args: argparse.Namespace) -> TraceChoice:
    """The :class:`~tb_ad_layer.options.TraceChoice` of the options :func:`add_choice_args`
    declared."""
    device = args.device if isinstance(args.device, int) else None
    return TraceChoice(phase=args.phase, device=device, graph_id=args.graph_id, step=args.step)


def _add_trace_args(p: argparse.ArgumentParser, ranks: bool = False) -> None:
    g = p.add_argument_group("trace")
    if ranks:
        g.add_argument("--trace", metavar="TRACE", action="append",
                       help="nsys .nsys-rep/.sqlite export or PyTorch profiler .json[.gz]; "
                            "given once per rank of a multi-GPU run (the rank is the trace's "
                            "device, or its position when devices repeat)")
    else:
        g.add_argument("--trace", metavar="TRACE",
                       help="nsys .nsys-rep/.sqlite export or PyTorch profiler .json[.gz]")
    add_choice_args(g, ranks)
    g.add_argument("--kernel-map", metavar="FILE",
                   help="extra op -> kernel-name rules (JSON), taking precedence over the built-in table")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command and its options."""
    parser = argparse.ArgumentParser(
        prog="tb-ad-layer",
        description="Turn TensorRT-LLM AutoDeploy FX graph dumps (and Nsight Systems / PyTorch "
                    "profiler traces) into per-layer graphs for TensorBoard.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"tb-ad-layer {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    c = sub.add_parser("convert", help="convert a dump directory into a run store under a logdir")
    c.add_argument("dump_dir", metavar="DUMP_DIR",
                   help="AD_DUMP_GRAPHS_DIR (NNN_stage_transform.txt files), one dump file, "
                        "or a seed-schema layer JSON")
    c.add_argument("--logdir", required=True, help="TensorBoard log directory")
    c.add_argument("--run", help="run name under the logdir (default: the dump directory's name)")
    c.add_argument("--stages", nargs="+", metavar="last|all|FILE", default=["last"],
                   help="which stages: 'last' (default), 'all', or file names / NNN prefixes")
    c.add_argument("--module", help="GraphModule section to use (default: monolithic.model, "
                                    "else the largest)")
    c.add_argument("--model", help="model name to record (default: the directory's name)")
    c.add_argument("--jobs", "-j", type=_positive_int, default=None, metavar="N",
                   help="worker processes converting stages at once (default: the cores this "
                        "process may use; 1: no workers); the run store is the same")
    _add_trace_args(c, ranks=True)
    c.add_argument("--events", action="store_true",
                   help="also write a TensorBoard event file (conversion summary in the Text tab, "
                        "per-layer scalars in Scalars); off by default, since TensorBoard then "
                        "opens on Scalars instead of AD Layers")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress output")

    e = sub.add_parser("extract", help="write one layer as seed-schema JSON (and DOT/PNG)")
    e.add_argument("dump_dir", metavar="DUMP_DIR",
                   help="dump directory, one dump file, or a seed-schema layer JSON")
    e.add_argument("--layer", type=int, required=True, metavar="N", help="the layer to write")
    e.add_argument("--dump-file", metavar="F", help="dump file to use (default: the last stage)")
    e.add_argument("--module", help="GraphModule section to use")
    e.add_argument("-o", "--output", metavar="OUT.json",
                   help="default: <dump_dir>/<dump_stem>_layer<N>.json")
    e.add_argument("--dot", metavar="OUT.dot", help="also write the layer as Graphviz DOT")
    e.add_argument("--png", metavar="OUT.png",
                   help="also render the layer to PNG (needs Graphviz's 'dot' on PATH)")
    _add_trace_args(e)
    e.add_argument("-q", "--quiet", action="store_true", help="no progress output")

    k = sub.add_parser("kernels", help="print or write per-layer kernel sequences of a trace")
    k.add_argument("trace", metavar="TRACE",
                   help="nsys .nsys-rep/.sqlite export or PyTorch profiler .json[.gz]")
    k.add_argument("--layer", type=int, metavar="N", help="only this layer (default: every layer)")
    k.add_argument("-o", "--output", metavar="kernels.json",
                   help="write the sequences as JSON here (default: a summary on stdout)")
    add_choice_args(k)
    k.add_argument("--dump", metavar="DUMP_DIR",
                   help="cut the trace by this dump's layers and map kernels to its nodes; without "
                        "it, layers come from the trace's own layer ranges or from repetition, "
                        "with a stated confidence")
    k.add_argument("--module", help="GraphModule section of --dump to use")
    k.add_argument("-q", "--quiet", action="store_true", help="no progress output")

    i = sub.add_parser("inspect", help="list what a trace holds and what convert would pick from it")
    i.add_argument("trace", metavar="TRACE",
                   help="nsys .nsys-rep/.sqlite export or PyTorch profiler .json[.gz]")
    i.add_argument("--json", action="store_true", help="write the inventory as JSON on stdout")
    add_choice_args(i)

    x = sub.add_parser("export-trace", help="write a run's stored kernels as Chrome trace JSON")
    x.add_argument("run", metavar="RUN", help="run directory (or its run.sqlite)")
    x.add_argument("--chrome", required=True, metavar="OUT.json",
                   help="the Chrome trace JSON to write (opens in Perfetto or chrome://tracing)")
    x.add_argument("-q", "--quiet", action="store_true", help="no progress output")

    from tb_ad_layer.analysis.commands import add_parsers
    add_parsers(sub)
    for name, command in sub.choices.items():
        command.epilog = "examples:\n" + EXAMPLES[name]
        command.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser


def trace_options(args: argparse.Namespace) -> TraceOptions | None:
    """The trace options of ``extract``; None without ``--trace``."""
    if not args.trace:
        return None
    return TraceOptions(path=Path(args.trace), choice=trace_choice(args),
                        kernel_map=Path(args.kernel_map) if args.kernel_map else None)


def rank_trace_options(args: argparse.Namespace) -> tuple[TraceOptions, ...]:
    """The traces of ``convert``: one per ``--trace`` (one per rank), each with the same
    choice and kernel map.

    Raises:
        InputError: ``--device all`` with several traces, or without one.
    """
    paths = list(args.trace or [])
    if args.device == ALL_DEVICES and len(paths) != 1:
        raise InputError("--device all takes one --trace, whose devices are the ranks"
                         + (f" (got {len(paths)}); give one --trace per rank instead, without "
                            f"--device all" if paths else ""), field="--device")
    choice = trace_choice(args)
    kmap = Path(args.kernel_map) if args.kernel_map else None
    return tuple(TraceOptions(path=Path(p), choice=choice, kernel_map=kmap) for p in paths)


def convert_options(args: argparse.Namespace) -> ConvertOptions:
    """The options of ``convert``."""
    return ConvertOptions(source=Path(args.dump_dir), logdir=Path(args.logdir), run=args.run,
                          stages=tuple(args.stages), module=args.module, model=args.model,
                          traces=rank_trace_options(args),
                          all_devices=args.device == ALL_DEVICES,
                          jobs=args.jobs if args.jobs is not None else default_jobs(),
                          events=args.events)


def default_jobs() -> int:
    """The cores this process may run on (its CPU affinity, which a container or ``taskset``
    narrows), not the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no sched_getaffinity (macOS)
        return os.cpu_count() or 1


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more: {value}")
    return value


def _cmd_convert(args: argparse.Namespace, progress: Progress) -> int:
    from tb_ad_layer.convert import convert
    from tb_ad_layer.trace_attach import trace_attacher

    options = convert_options(args)
    attach = trace_attacher(options.traces, progress, options.all_devices, options.jobs) \
        if options.traces else None
    convert(options, attach_trace=attach, progress=progress)
    return 0


def _cmd_extract(args: argparse.Namespace, progress: Progress) -> int:
    from tb_ad_layer.convert import (
        MappedTrace,
        load_history,
        load_stage,
        resolve_inputs,
        torch_trace_stages,
        warn_doubts,
    )
    from tb_ad_layer.export.dot import graphviz_dot, render_png, to_dot
    from tb_ad_layer.export.seed_json import seed_json_text
    from tb_ad_layer.layers.document import layer_record
    from tb_ad_layer.trace_attach import trace_attacher

    if args.png:
        graphviz_dot()  # before anything is read or written
    # A TORCH_TRACE directory shows its Dynamo graph unless --dump-file names another kind.
    compiled, _ = torch_trace_stages(args.dump_dir, [args.dump_file or "dynamo"], progress)
    if compiled:
        ls = compiled[-1]
        stage = ls.stage
    else:
        stage = resolve_inputs(args.dump_dir, None, args.dump_file)[-1]
        ls = load_stage(stage, args.module, lambda: load_history(args.dump_dir, stage, progress))
    stem = ls.name or stage.path.stem
    progress(f"read {ls.name or stage.path.name}: {len(ls.lg.graph.nodes):,} nodes, "
             f"{len(ls.lg.layers)} layers in {ls.seconds:.2f}s")
    if args.layer not in ls.lg.layers:
        have = sorted(ls.lg.layers)
        raise InputError(f"layer {args.layer} does not exist; layers here: "
                         f"{_ranges(have) if have else 'none'}", path=stage.path, field="--layer")
    trace_opts = trace_options(args)
    # The trace is mapped across every layer at once; only the asked layer's document is built.
    mapped: MappedTrace | None = None
    if trace_opts is not None:
        mapped = trace_attacher(trace_opts, progress)(ls.lg, None)
    doc = layer_record(ls.lg, args.layer, mapped.times(args.layer) if mapped is not None else None)
    out = Path(args.output) if args.output else (
        Path(args.dump_dir) if Path(args.dump_dir).is_dir() else Path(args.dump_dir).parent
    ) / f"{stem}_layer{args.layer}.json"
    _write_text(out, seed_json_text(doc))
    progress(f"wrote {out} ({len(doc.nodes)} nodes, {len(doc.edges)} edges, "
             f"{len(doc.external_inputs)} external inputs)")
    if args.dot or args.png:
        dot = to_dot(doc)
        if args.dot:
            _write_text(Path(args.dot), dot)
            progress(f"wrote {args.dot}")
        if args.png:
            render_png(dot, args.png)
            progress(f"wrote {args.png}")
    warn_doubts(stage.path, ls.lg.doubts, progress)
    print(out)
    return 0


def _cmd_kernels(args: argparse.Namespace, progress: Progress) -> int:
    from tb_ad_layer.trace.ingest import kernel_sequences

    layers = None
    if args.dump:
        from tb_ad_layer.convert import load_history, load_stage, resolve_inputs, torch_trace_stages
        from tb_ad_layer.trace_attach import model_nodes
        compiled, _ = torch_trace_stages(args.dump, None, progress)
        if compiled:
            layers = model_nodes(compiled[-1].lg)
        else:
            stage = resolve_inputs(args.dump)[-1]
            layers = model_nodes(load_stage(stage, args.module,
                                            lambda: load_history(args.dump, stage, progress)).lg)
    data = kernel_sequences(args.trace, args.layer, choice=trace_choice(args), layers=layers,
                            progress=progress)
    seg = data.segmentation
    sure = f", confidence {seg.confidence:.2f}" if seg.confidence is not None else ""
    progress(f"{data.num_layers} layers by {seg.method}{sure}: {seg.detail}")
    for w in data.warnings:
        progress.warn(w)
    text = _json_text(data)
    if args.output:
        _write_text(Path(args.output), text)
        progress(f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def _cmd_inspect(args: argparse.Namespace, progress: Progress) -> int:
    from tb_ad_layer.trace.inventory import inventory, inventory_text
    from tb_ad_layer.trace.reader import read_trace

    db = read_trace(args.trace)
    try:
        report = inventory(db, trace_choice(args))
        for w in db.warnings:
            progress.warn(w)
        if args.json:
            sys.stdout.write(_json_text(report))
        else:
            sys.stdout.write(inventory_text(db, report))
    finally:
        db.close()
    return 0


def _cmd_export_trace(args: argparse.Namespace, progress: Progress) -> int:
    from tb_ad_layer.export.chrome import export_chrome_trace
    from tb_ad_layer.metadata import STORE_DIR, STORE_FILE
    from tb_ad_layer.store.reader import RunStore

    p = Path(args.run)
    path = p if p.is_file() else p.joinpath(*STORE_DIR, STORE_FILE)
    if not path.is_file():
        raise InputError("no run store here (expected <run>/plugins/ad_layer/run.sqlite; "
                         "convert the dumps first)", path=p)
    store = RunStore(path)
    try:
        text = export_chrome_trace(store)
    finally:
        store.close()
    _write_text(Path(args.chrome), text)
    progress(f"wrote {args.chrome}")
    return 0


def _json_text(record: object) -> str:
    """A contract record as the indented JSON the commands print (``kernels``,
    ``inspect --json``)."""
    import msgspec

    return json.dumps(msgspec.to_builtins(record), indent=2, ensure_ascii=False) + "\n"


def _write_text(path: Path, text: str) -> None:
    """Write via a temporary file so a failure never leaves a half-written output."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except BaseException as e:  # a stop signal too: never leave the temporary file
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise InputError(f"cannot write: {e.strerror or e}", path=path) from None
        raise


def _ranges(values: list[int]) -> str:
    """Sorted integers as runs: ``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    out: list[str] = []
    start = prev = values[0]
    for v in values[1:]:
        if v != prev + 1:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = v
        prev = v
    out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(out)


def _cmd_report(args: argparse.Namespace, progress: Progress) -> int:
    from tb_ad_layer.analysis.commands import cmd_report
    return cmd_report(args)


def _cmd_diff(args: argparse.Namespace, progress: Progress) -> int:
    from tb_ad_layer.analysis.commands import cmd_diff
    return cmd_diff(args)


COMMANDS = {"convert": _cmd_convert, "extract": _cmd_extract, "kernels": _cmd_kernels,
            "inspect": _cmd_inspect, "export-trace": _cmd_export_trace, "report": _cmd_report,
            "diff": _cmd_diff}

#: Signals that stop a command the way Ctrl-C does.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(BaseException):
    """A stop signal arrived. A BaseException, like KeyboardInterrupt, so that nothing on the
    way out mistakes it for an error to handle, and every ``finally`` and ``with`` runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame: FrameType | None) -> None:
    # Once is enough: a second signal must not interrupt the clean-up the first one started.
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise Stopped(signum)


@contextmanager
def _stop_signals_unwind() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into :class:`Stopped` while the block runs (signal handlers can
    only be set from the main thread; elsewhere the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _stop) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command (``argv``, or the process's arguments) and return its exit status:
    0, 2 for bad input (one line on stderr), 128 + N when stopped by signal N."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    progress = Progress(quiet=getattr(args, "quiet", False))
    try:
        with _stop_signals_unwind():
            return COMMANDS[args.command](args, progress)
    except Stopped as e:
        name = signal.Signals(e.signum).name
        print(f"tb-ad-layer: stopped by {name}; no partial output was left behind",
              file=sys.stderr)
        return 128 + e.signum
    except InputError as e:
        print(f"tb-ad-layer: error: {e}", file=sys.stderr)
        return 2
    except sqlite3.Error as e:
        print(f"tb-ad-layer: error: SQLite: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(f"tb-ad-layer: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tb-ad-layer: interrupted; nothing was written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
