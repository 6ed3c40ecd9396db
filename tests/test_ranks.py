"""Several ranks in one run: ``convert --trace T0 --trace T1 ...`` and ``--device all``, the
store's ranks, ``api/ranks`` with its stragglers, ``rank=`` on ``api/layer`` and
``api/timeline``, and ``report``'s ``ranks`` and ``stragglers``.

The 8-rank trace is generated with known answers: rank 3 runs layer 3 40 % slower with a small
spread (a straggler that must be found), rank 5 runs layer 1 10 % slower with a huge spread (a
noisy rank that must not be called a straggler)."""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from tb_ad_layer.cli import main
from tb_ad_layer.plugin.data import PluginData
from tb_ad_layer.plugin.errors import ApiError
from tb_ad_layer.progress import Progress
from tb_ad_layer.store.reader import RunStore
from tb_ad_layer.store.writer import StoreWriter, store_path
from tb_ad_layer.trace.ingest import ingest_trace
from tb_ad_layer.trace_attach import attach_trace, rank_devices, rank_numbers
from tests.conftest import DUMPS
from tests.plugin.conftest import call
from tests.trace.helpers import H100, make_traces

TRUTH = DUMPS / "ad_dsv3" / "085_compile_compile_model.truth.json"
LLAMA_TRUTH = DUMPS / "ad_llama" / "085_compile_compile_model.truth.json"
STRAGGLER = (3, 3)   # rank, layer
NOISY = (5, 1)


def _generate(out: Path, name: str, truth: Path = TRUTH, **options: Any) -> Path:
    mt = make_traces()
    opts = mt.Options(**options)
    return mt.generate(out, name, mt.plan_from_truth(truth), opts)["sqlite"]


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("ranks")
    return {
        "x8": _generate(out, "x8", devices=8, replays=16,
                        slow=((*STRAGGLER, 1.4, 0.02), (*NOISY, 1.1, 0.5))),
        "r0": _generate(out, "r0", seed=1),
        "r1": _generate(out, "r1", seed=2, slow=((0, 2, 1.5, 0.02),)),
        "prefill": _generate(out, "prefill", phase="prefill", seed=3),
        "llama": _generate(out, "llama", truth=LLAMA_TRUTH, seed=4),
    }


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory, traces: dict[str, Path]) -> Path:
    root = tmp_path_factory.mktemp("logs")
    dump = str(DUMPS / "ad_dsv3")
    assert main(["convert", dump, "--logdir", str(root), "--run", "x8", "-q", "--stages", "all",
                 "--trace", str(traces["x8"]), "--device", "all"]) == 0
    assert main(["convert", dump, "--logdir", str(root), "--run", "pair", "-q",
                 "--trace", str(traces["r0"]), "--trace", str(traces["r1"])]) == 0
    assert main(["convert", dump, "--logdir", str(root), "--run", "one", "-q",
                 "--trace", str(traces["r0"])]) == 0
    return root


@pytest.fixture(scope="module")
def data(logdir: Path) -> PluginData:
    return PluginData(logdir)


def _store(logdir: Path, run: str) -> RunStore:
    return RunStore(store_path(logdir, run))


def test_device_all_keeps_every_rank(logdir: Path) -> None:
    store = _store(logdir, "x8")
    ranks = store.ranks()
    assert [r.rank for r in ranks] == [r.device for r in ranks] == list(range(8))
    assert store.default_rank() == 0 and store.meta.trace == ranks[0].info
    assert all(r.replays == 16 and r.trace.endswith("x8.sqlite") for r in ranks)
    # Every rank's kernels are kept, each on its own device's streams.
    counts = {r.rank: len(store.kernels(rank=r.rank)) for r in ranks}
    assert len(set(counts.values())) == 1 and counts[0] == ranks[0].kernel_count + \
        ranks[0].info.memcpy_count + ranks[0].info.memset_count
    for r in ranks:
        assert {k.device for k in store.kernels(rank=r.rank)} == {r.rank}
        assert {s.device for s in store.streams(r.rank)} == {r.rank}
    # The default reads are the first rank's, as for a one-rank run.
    assert store.kernels() == store.kernels(rank=0)
    last = store.stages()[-1].idx
    rows = store.rank_layers(last)
    assert len(rows) == 8 * 5 and {r.rank for r in rows} == set(range(8))
    # Rank 0's rows are the layers table's; the straggler's layer 3 is slower in its document.
    assert [r.gpu_time_us for r in rows if r.rank == 0] == \
        [r.gpu_time_us for r in store.layers(last)]
    slow = store.layer_document(last, 3, rank=3)
    base = store.layer_document(last, 3)
    assert slow is not None and base is not None and slow.trace_summary and base.trace_summary
    assert slow.trace_summary.total_duration_us > 1.3 * base.trace_summary.total_duration_us
    assert [n.id for n in slow.nodes] == [n.id for n in base.nodes]
    # Stages without the trace have the same documents for every rank.
    assert store.layer_document(0, 3, rank=3) == store.layer_document(0, 3)
    # A damaged store names the command that writes it again, every rank included.
    assert store.rebuild_command().endswith(f"--trace {ranks[0].trace} --device all --phase decode")


def test_planted_straggler_found_noisy_rank_not(data: PluginData) -> None:
    body = call(data, "ranks", run="x8")
    assert body["default_rank"] == 0 and body["layers"] == [0, 1, 2, 3, 4]
    assert [(s["rank"], s["layer"]) for s in body["stragglers"]] == [STRAGGLER]
    s = body["stragglers"][0]
    assert s["excess_us"] > 0.3 * s["others_us"] and s["excess_us"] > 2 * s["noise_us"]
    by = {r["rank"]: {x["layer"]: x for x in r["layers"]} for r in body["ranks"]}
    # The noisy rank is slower at its layer, but within its replay noise.
    noisy = by[NOISY[0]][NOISY[1]]
    others = [by[r][NOISY[1]] for r in by if r != NOISY[0]]
    assert noisy["compute_us"] > statistics.median(o["compute_us"] for o in others)
    assert noisy["noise_us"] > 3 * max(o["noise_us"] for o in others)
    # Collectives are mapped (an all-reduce per layer): communication per rank and layer.
    assert all(x["communication_us"] and x["communication_us"] > 0
               for layers in by.values() for x in layers.values())
    assert all(r["communication_us"] > 0 and r["gpu_time_us"] > 0 for r in body["ranks"])
    assert "straggler" in body["rule"]


def test_report_lists_ranks_and_stragglers(logdir: Path, data: PluginData,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(logdir / "x8"), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    ranks = call(data, "ranks", run="x8")
    assert report["ranks"] == [{"rank": r["rank"], "device": r["device"], "trace": r["trace"],
                                "gpu_time_us": r["gpu_time_us"],
                                "communication_us": r["communication_us"],
                                "layers": r["layers"]} for r in ranks["ranks"]]
    assert report["stragglers"] == ranks["stragglers"]
    # The rest of the report is the first rank's.
    assert report["step"]["gpu_time_us"] == pytest.approx(ranks["ranks"][0]["gpu_time_us"])
    assert main(["report", str(logdir / "x8")]) == 0
    md = capsys.readouterr().out
    assert "## Ranks" in md and "## Stragglers" in md and "| 3 | 3 |" in md
    assert main(["report", str(logdir / "one"), "--format", "json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["ranks"] == [] and one["stragglers"] == []


def test_rank_parameter_on_layer_and_timeline(data: PluginData) -> None:
    runs = {r["run"]: r for r in call(data, "runs")["runs"]}
    assert runs["x8"]["ranks"] == list(range(8)) and runs["one"]["ranks"] == [0]
    first = call(data, "layer", run="x8", layer=3)
    assert first["rank"] == 0 and call(data, "layer", run="x8", layer=3, rank=0) == first
    slow = call(data, "layer", run="x8", layer=3, rank=3)
    assert slow["rank"] == 3
    assert slow["trace_summary"]["total_duration_us"] > \
        1.3 * first["trace_summary"]["total_duration_us"]
    assert {k["stream"].split("/")[1] for n in slow["nodes"] for k in n["kernels"]} == {"dev3"}
    timeline = call(data, "timeline", run="x8", layer=3, rank=3)
    assert timeline["rank"] == 3 and timeline["streams"]
    assert all(s["device"] == 3 and s["label"].startswith("GPU 3") for s in timeline["streams"])
    assert call(data, "timeline", run="x8", layer=3)["rank"] == 0
    for path, extra in (("layer", {"layer": 3}), ("timeline", {})):
        with pytest.raises(ApiError) as info:
            call(data, path, run="x8", rank=9, **extra)
        assert info.value.status == 404 and info.value.known == list(range(8))
        with pytest.raises(ApiError) as info:
            call(data, path, run="x8", rank="x", **extra)
        assert info.value.status == 400
    with pytest.raises(ApiError) as info:
        call(data, "ranks", run="x8", stage=0)
    assert info.value.status == 404 and info.value.known == [3]


def test_one_trace_per_rank_ranks_by_position(logdir: Path, data: PluginData) -> None:
    store = _store(logdir, "pair")
    # Both traces name device 0: the ranks are their positions.
    assert [(r.rank, r.device) for r in store.ranks()] == [(0, 0), (1, 0)]
    assert {r.trace.rsplit("/", 1)[-1] for r in store.ranks()} == {"r0.sqlite", "r1.sqlite"}
    assert sorted(f.path.rsplit("/", 1)[-1] for f in store.files() if f.role == "trace") == \
        ["r0.sqlite", "r1.sqlite"]
    command = store.rebuild_command()
    assert command.count("--trace ") == 2 and "--device" not in command
    # Stream keys repeat between the two traces; each rank keeps its own.
    assert {s.key for s in store.streams(0)} == {s.key for s in store.streams(1)}
    body = call(data, "ranks", run="pair")
    assert [(s["rank"], s["layer"]) for s in body["stragglers"]] == [(1, 2)]


def test_one_trace_is_one_rank_as_before(logdir: Path, data: PluginData) -> None:
    store = _store(logdir, "one")
    assert [(r.rank, r.device) for r in store.ranks()] == [(0, 0)]
    body = call(data, "ranks", run="one")
    assert [r["rank"] for r in body["ranks"]] == [0] and body["stragglers"] == []
    last = store.stages()[-1].idx
    assert [r.gpu_time_us for r in store.rank_layers(last)] == \
        [r.gpu_time_us for r in store.layers(last)]


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_clear_errors(tmp_path: Path, traces: dict[str, Path],
                      capsys: pytest.CaptureFixture[str]) -> None:
    base = ["convert", str(DUMPS / "ad_dsv3"), "--logdir", str(tmp_path), "--run", "bad", "-q"]
    err = _refused(base + ["--trace", str(traces["r0"]), "--trace", str(traces["r1"]),
                           "--device", "all"], capsys)
    assert "--device all takes one --trace" in err and "(got 2)" in err
    # A rank of another model: the trace is named, nothing is written.
    err = _refused(base + ["--trace", str(traces["r0"]), "--trace", str(traces["llama"])],
                   capsys)
    assert "llama.sqlite" in err and "trace 2 of 2" in err
    err = _refused(base + ["--trace", str(traces["r0"]), "--trace", str(traces["prefill"])],
                   capsys)
    assert "different phases" in err and "decode" in err and "prefill" in err
    with pytest.raises(SystemExit) as exit_info:
        main(["inspect", str(traces["r0"]), "--device", "all"])  # convert alone keeps ranks
    assert exit_info.value.code == 2
    assert "argument --device: invalid int value: 'all'" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_real_two_gpu_trace_ingests_both_devices(tmp_path: Path) -> None:
    """The real 2-GPU trace (two H100s, two processes, eager): no dump of its model is at hand,
    so its two ranks are ingested without a graph and stored as the converter stores ranks."""
    first = ingest_trace(H100, None)
    devices = rank_devices(first.info)
    assert devices == [0, 1] and rank_numbers(devices) == [0, 1]
    results = [first] + [ingest_trace(H100, None, choice=_device(1))]
    assert [r.info.device for r in results] == [0, 1]
    # One eager forward pass a device (of 1,721 kernels over the whole capture).
    assert all(1000 < r.info.kernel_count < 1721 for r in results)
    path = tmp_path / "run.sqlite"
    with StoreWriter(path) as writer:
        for j, r in enumerate(results):
            attach_trace(r, writer, Progress(quiet=True), rank=j, first=j == 0)
        writer.set_meta("run", "h100")
        for key in ("model", "source_dir", "converter_version", "created"):
            writer.set_meta(key, "x")
        writer.set_meta("trace", first.info)
        writer.commit()
    store = RunStore(path)
    assert [(r.rank, r.device) for r in store.ranks()] == [(0, 0), (1, 1)]
    for rank, stream in ((0, "/s7"), (1, "/s15")):
        kernels = [k for k in store.kernels(rank=rank) if not k.short.startswith("[CUDA")]
        assert len(kernels) == results[rank].info.kernel_count
        assert all(k.stream.endswith(stream) for k in kernels)
        assert {s.pid for s in store.streams(rank)} == {111 + rank}
        # Layers come from repetition (24 a rank), as `kernels --device N` finds them.
        assert {k.layer for k in kernels if k.layer is not None} == set(range(24))


def _device(n: int) -> Any:
    from tb_ad_layer.options import TraceChoice
    return TraceChoice(device=n)


def test_rank_traces_read_in_workers_give_the_same_store(
        tmp_path: Path, traces: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import re
    import sqlite3

    from tb_ad_layer import trace_attach
    monkeypatch.setattr(trace_attach, "PARALLEL_MIN_BYTES", 0)  # the test traces are small
    called: list[int] = []
    pool = trace_attach.StagePool

    class Counting(pool):  # type: ignore[misc,valid-type]
        def __enter__(self) -> Any:
            called.append(self.jobs)
            return super().__enter__()
    monkeypatch.setattr(trace_attach, "StagePool", Counting)

    def run(name: str, jobs: int, *extra: str) -> str:
        assert main(["convert", str(DUMPS / "ad_dsv3"), "--logdir", str(tmp_path), "--run", name,
                     "--jobs", str(jobs), *extra]) == 0
        # The progress lines, in the same order, without their times.
        return re.sub(r"\[\s*[0-9.]+s\] | in [0-9.]+ ?s", "", capsys.readouterr().err)

    def rows(name: str) -> dict[str, list[Any]]:
        con = sqlite3.connect(store_path(tmp_path, name))
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
                for t in ("kernels", "streams", "ranks", "rank_layers", "layers", "docs")}

    for extra in (["--trace", str(traces["x8"]), "--device", "all"],
                  ["--trace", str(traces["r0"]), "--trace", str(traces["r1"])]):
        serial = run("serial", 1, *extra)
        parallel = run("parallel", 2, *extra)
        assert parallel.replace("parallel", "serial") == serial
        assert rows("parallel") == rows("serial")
    assert called == [2, 2]
