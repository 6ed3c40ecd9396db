"""The ``report`` and ``diff`` commands of ``tb-ad-layer``: their arguments and what they print.

``report`` exits 0; ``diff`` exits 1 when it finds a regression beyond the gate and 0 otherwise,
so CI can run it; both exit 2 on bad input, with one line on stderr (the CLI's error handling).
The JSON they print is byte for byte what the plugin serves at ``api/report`` and ``api/diff``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tb_ad_layer.analysis.diff import DEFAULT_GATE_PCT, diff_stores
from tb_ad_layer.analysis.markdown import diff_markdown, report_markdown
from tb_ad_layer.analysis.report import ReportOptions, parse_dims, report_for_store
from tb_ad_layer.contract.record import encode
from tb_ad_layer.errors import InputError
from tb_ad_layer.metadata import STORE_DIR, STORE_FILE
from tb_ad_layer.store.reader import RunStore

#: diff's exit status when it finds a regression beyond the gate.
EXIT_REGRESSION = 1


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``report`` and ``diff`` to the CLI's sub-commands."""
    r = sub.add_parser("report", help="where one step's time goes, with findings ranked by time "
                                      "at stake")
    r.add_argument("run", metavar="RUN", help="run directory <logdir>/<run> (or its run.sqlite)")
    r.add_argument("--format", choices=("md", "json"), default="md",
                   help="Markdown for people (default) or JSON (docs/API.md Report)")
    r.add_argument("--dim", action="append", default=[], metavar="NAME=N",
                   help="size of a symbolic dim (s70=1024; over the size the trace's recorded "
                        "shapes give), kv_len=N for attention with a KV cache, or "
                        "world_size=N for all-reduces; repeatable")
    r.add_argument("--gpu", metavar="NAME", help="GPU to take peaks for (default: the trace's)")
    r.add_argument("--categories", metavar="FILE",
                   help="extra category rules (JSON), taking precedence over the built-in ones")
    d = sub.add_parser("diff", help="compare two runs per layer, group and node; exit 1 on a "
                                    "regression beyond the gate")
    d.add_argument("run_a", metavar="RUN_A", help="the baseline run")
    d.add_argument("run_b", metavar="RUN_B", help="the run compared with the baseline")
    d.add_argument("--gate", type=float, default=DEFAULT_GATE_PCT, metavar="PCT",
                   help=f"percentage a change must exceed, besides twice the noise (default "
                        f"{DEFAULT_GATE_PCT:g})")
    d.add_argument("--format", choices=("md", "json"), default="md",
                   help="Markdown for people (default) or JSON (docs/API.md Diff)")


def open_run(value: str) -> RunStore:
    """The run store of a run directory (or the store file itself)."""
    p = Path(value)
    path = p if p.is_file() else p.joinpath(*STORE_DIR, STORE_FILE)
    if not path.is_file():
        raise InputError("no run store here (expected <run>/plugins/ad_layer/run.sqlite; "
                         "convert the dumps first)", path=p)
    return RunStore(path)


def _print(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def cmd_report(args: argparse.Namespace) -> int:
    """``tb-ad-layer report``."""
    options = ReportOptions(dims=parse_dims(args.dim), gpu=args.gpu, categories=args.categories)
    store = open_run(args.run)
    try:
        report = report_for_store(store, options)
    finally:
        store.close()
    _print(encode(report) + b"\n" if args.format == "json"
           else report_markdown(report).encode("utf-8"))
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    """``tb-ad-layer diff``."""
    if not 0 <= args.gate < 1e6:
        raise InputError(f"--gate {args.gate:g}: expected a percentage >= 0", field="gate")
    a = open_run(args.run_a)
    try:
        b = open_run(args.run_b)
        try:
            diff = diff_stores(a, b, args.gate)
        finally:
            b.close()
    finally:
        a.close()
    _print(encode(diff) + b"\n" if args.format == "json" else diff_markdown(diff).encode("utf-8"))
    return EXIT_REGRESSION if diff.verdict == "regression" else 0
