"""The run store reader: named records back as written, links out of a directory refused before
anything is read, and damage reported as damage with the command that rebuilds the store."""
from __future__ import annotations

import os
import shutil
import sqlite3
import zlib
from pathlib import Path

import pytest

from tb_ad_layer.convert import convert, store_stage
from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.layers.layered import layer_graph
from tb_ad_layer.options import ConvertOptions
from tb_ad_layer.store.reader import OutsideError, RunStore, StoreDamagedError
from tb_ad_layer.store.records import KernelRow, StoredKernel, StreamRow
from tb_ad_layer.store.writer import StoreWriter, store_path
from tests.conftest import DUMPS

LAST = sorted((DUMPS / "ad_dsv3").glob("*.txt"))[-1]


def write_store(path: Path, kernels: list[KernelRow], streams: list[StreamRow]) -> Path:
    lg = layer_graph(parse_dump(LAST).select())
    with StoreWriter(path) as w:
        store_stage(w, lg, file=LAST.name, order_no=85, stage="compile", transform="compile_model",
                    modules=[lg.graph.module])
        w.add_streams(streams)
        w.add_kernels(kernels)
        w.add_file(LAST, "dump")
        for key, value in (("run", "r"), ("model", "m"), ("source_dir", str(LAST.parent)),
                           ("converter_version", "0"), ("created", "2026-01-01T00:00:00Z"),
                           ("trace", None)):
            w.set_meta(key, value)
        return w.commit()


def test_records_come_back_as_written(tmp_path: Path) -> None:
    streams = [StreamRow("p1/dev0/ctx1/s9", "GPU 0 · stream 9", 0, 1, 1, 9),
               StreamRow("p1/dev0/ctx1/s7", "GPU 0 · stream 7", 0, 1, 1, 7)]
    kernels = [KernelRow("void b<float>()", "b", 500, 900, 0, streams[1].key, 7, 2, 11, 1, "mm",
                         None, 20, 399.5, 380, 450),
               KernelRow("void a()", "a", 100, 300, 0, streams[0].key, None, None, None, None,
                         None, "outside any layer", None, None, None, None)]
    store = RunStore(write_store(store_path(tmp_path, "r"), kernels, streams))
    assert store.streams() == [streams[1], streams[0]]  # by device, pid, context, stream id
    got = store.kernels()
    assert got == [StoredKernel(2, *kernels[1]), StoredKernel(1, *kernels[0])]  # start order
    assert got[1].median_ns == 399.5 and got[1].node == "mm"
    assert store.kernels(layer=1) == [got[1]] and store.kernels(start_ns=301) == [got[1]]
    assert [s.file for s in store.stages()] == [LAST.name] and store.stages()[0].order == 85
    assert [f.role for f in store.files()] == ["dump"] and len(store.files()[0].sha256) == 64
    assert store.meta.run == "r" and store.meta.trace is None
    assert store.layer_indexes() == [r.layer for r in store.layers(0)] == [0, 1, 2, 3, 4]


@pytest.fixture
def inside_and_outside(tmp_path: Path) -> tuple[Path, Path]:
    logdir, outside = tmp_path / "logdir", tmp_path / "outside"
    convert(ConvertOptions(DUMPS / "ad_llama", logdir, run="a"))
    convert(ConvertOptions(DUMPS / "ad_dsv3", outside, run="a"))
    return logdir, outside


@pytest.mark.parametrize("link", ["a/plugins/ad_layer/run.sqlite", "a/plugins", "a"])
def test_a_link_out_of_within_is_refused_before_reading(inside_and_outside: tuple[Path, Path],
                                                        link: str) -> None:
    logdir, outside = inside_and_outside
    shutil.move(str(logdir / link), str(logdir / ".kept"))
    os.symlink(outside / link, logdir / link)
    # Damage the outside store's meta: were it read, the error would say so.
    conn = sqlite3.connect(store_path(outside, "a"))
    conn.execute("DROP TABLE meta")
    conn.commit()
    conn.close()
    with pytest.raises(OutsideError, match="outside the logdir"):
        RunStore(store_path(logdir, "a"), within=logdir)
    with pytest.raises(StoreDamagedError):  # without the check it is opened and read
        RunStore(store_path(logdir, "a"))


def test_a_link_inside_within_is_followed(inside_and_outside: tuple[Path, Path]) -> None:
    logdir, _ = inside_and_outside
    convert(ConvertOptions(DUMPS / "ad_dsv3", logdir, run="b"))
    os.symlink(logdir / "b", logdir / "c")
    assert RunStore(store_path(logdir, "c"), within=logdir).meta.run == "b"


def test_damage_names_the_place_and_the_rebuild_command(tmp_path: Path) -> None:
    convert(ConvertOptions(DUMPS / "ad_dsv3", tmp_path / "logs", run="x/y", stages=("all",)))
    path = store_path(tmp_path / "logs", "x/y")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE docs SET data=? WHERE hash=(SELECT nodes FROM outside WHERE stage=2)",
                 (zlib.compress(b'[{"id": 1}]'),))
    conn.commit()
    conn.close()
    store = RunStore(path)
    assert len(store.nodes(1, -1)) > 0
    with pytest.raises(StoreDamagedError) as info:
        store.nodes(2, -1)
    message = str(info.value)
    assert "outside.nodes of stage 2" in message and "Expected `str`, got `int`" in message
    assert message.endswith(f"rebuild it with: tb-ad-layer convert "
                            f"{(DUMPS / 'ad_dsv3').resolve()} --logdir {tmp_path / 'logs'} "
                            f"--run x/y")


def test_damaged_meta_gives_a_command_with_placeholders(tmp_path: Path) -> None:
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path, run="r"))
    path = store_path(tmp_path, "r")
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE meta")
    conn.commit()
    conn.close()
    with pytest.raises(StoreDamagedError) as info:
        RunStore(path)
    assert str(info.value).endswith(f"rebuild it with: tb-ad-layer convert DUMP_DIR --logdir "
                                    f"{tmp_path} --run r")


def test_doubts_come_back_with_their_stage_and_layer(tmp_path: Path) -> None:
    from tests.doubtful import oversized_dump

    dump = oversized_dump(tmp_path)
    result = convert(ConvertOptions(dump, tmp_path / "logs", run="d"))
    store = RunStore(store_path(tmp_path / "logs", "d"))
    (stage,) = store.stages()
    assert [(d.kind, d.layer) for d in stage.doubts] == [("index_gap", None),
                                                          ("oversized_layer", 10)]
    assert result.stages[-1].doubts == stage.doubts  # what the converter found, as stored
    doc = store.layer_document(0, 10)
    assert doc is not None and doc.doubts == [stage.doubts[1]]
    assert all(store.layer_document(0, r.layer).doubts == []  # type: ignore[union-attr]
               for r in store.layers(0) if r.layer != 10)
    # A stage without doubts stores an empty list.
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path / "logs", run="plain"))
    assert [s.doubts for s in RunStore(store_path(tmp_path / "logs", "plain")).stages()] == [[]]


def test_damaged_doubts_are_reported_as_damage(tmp_path: Path) -> None:
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path, run="r"))
    path = store_path(tmp_path, "r")
    conn = sqlite3.connect(path)
    conn.execute("""UPDATE stages SET doubts='[{"kind": "index_gap", "layer": "x", "message": ""}]'""")
    conn.commit()
    conn.close()
    with pytest.raises(StoreDamagedError, match=r"stages.doubts of stage 0: Expected `int \| null`"):
        RunStore(path).stages()


@pytest.mark.parametrize("version", [2, 3, 4])
def test_an_older_store_asks_to_convert_again(tmp_path: Path, version: int) -> None:
    """Version 2 stores have no doubts, version 3 stores no weight roles: they are refused with
    what to do, never misread."""
    from tb_ad_layer.store.reader import StoreVersionError
    from tb_ad_layer.store.schema import SCHEMA_VERSION

    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path, run="r"))
    path = store_path(tmp_path, "r")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(version),))
    if version < 3:
        conn.execute("ALTER TABLE stages DROP COLUMN doubts")
    conn.commit()
    conn.close()
    with pytest.raises(StoreVersionError, match=rf"run store schema version {version} is older "
                                                rf"than this tb-ad-layer reads \({SCHEMA_VERSION}\); "
                                                r"convert the run again"):
        RunStore(path)
