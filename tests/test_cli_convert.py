"""The CLI end to end: convert, extract, and what bad input leaves behind."""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tb_ad_layer.cli import EXAMPLES, main
from tb_ad_layer.convert import convert
from tb_ad_layer.layers.seed_json import read_seed_json
from tb_ad_layer.options import ConvertOptions, TraceOptions
from tb_ad_layer.store.reader import RunStore, StoreVersionError
from tb_ad_layer.store.writer import store_path
from tests.conftest import DUMPS, write_dump


def test_convert_all_stages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", str(DUMPS / "ad_dsv3"), "--logdir", str(tmp_path), "--run",
                 "dsv3", "--stages", "all"]) == 0
    err = capsys.readouterr().err
    assert "[4/4] 085_compile_compile_model.txt" in err and "5 layers (2 mla+mlp, 3 mla+moe)" in err
    store = RunStore(store_path(tmp_path, "dsv3"))
    stages = store.stages()
    assert [s.file for s in stages] == ["001_export_export_to_gm.txt",
                                       "040_pattern_matcher_match_rope_pattern.txt",
                                       "060_sharding_sharding_transform_executor.txt",
                                       "085_compile_compile_model.txt"]
    assert stages[-1].module == "(root)" and stages[2].modules == ["submod_0", "(root)"]
    assert [layer.kind for layer in store.layers(3)] == ["mla+mlp", "mla+mlp", "mla+moe", "mla+moe",
                                                         "mla+moe"]
    doc = store.layer_doc(3, 3)
    assert doc is not None and doc["layer"] == 3 and len(doc["nodes"]) == 46
    assert store.meta.run == "dsv3" and store.meta.converter_version
    # Each dump file, in stage order, with the SHA-256 and size of its bytes.
    files = [(f.path, f.sha256, f.size_bytes, f.role) for f in store.files()]
    assert files == [(str(p.resolve()), hashlib.sha256(p.read_bytes()).hexdigest(),
                      p.stat().st_size, "dump")
                     for p in sorted((DUMPS / "ad_dsv3").glob("*.txt"))]
    nodes = store.nodes(3, 3)
    assert [n["id"] for n in nodes] == [n["id"] for n in doc["nodes"]]
    assert len(store.nodes(3, -1)) > 0  # model-level nodes kept too


def test_convert_quiet_and_default_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", str(DUMPS / "llama"), "--logdir", str(tmp_path), "-q"]) == 0
    assert capsys.readouterr().err == ""
    assert store_path(tmp_path, "llama").is_file()


def test_failed_conversion_keeps_previous_store(tmp_path: Path, capsys) -> None:
    logdir = tmp_path / "logs"
    assert main(["convert", str(DUMPS / "llama"), "--logdir", str(logdir), "--run", "r", "-q"]) == 0
    before = store_path(logdir, "r").read_bytes()
    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(DUMPS / "llama" / "001_export_export_to_gm.txt", bad)
    write_dump(bad / "002_x_y.txt", "%x : 2 : torch.float32\n%y = aten.neg.default(%x : 2")
    assert main(["convert", str(bad), "--logdir", str(logdir), "--run", "r", "--stages", "all",
                 "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tb-ad-layer: error: ") and "002_x_y.txt:" in err and "\n" not in err
    assert store_path(logdir, "r").read_bytes() == before
    assert sorted(p.name for p in store_path(logdir, "r").parent.iterdir()) == ["run.sqlite"]


def test_failed_first_conversion_leaves_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    write_dump(bad / "001_x_y.txt", "%x : 2 : torch.float32\ngarbage")
    assert main(["convert", str(bad), "--logdir", str(tmp_path / "logs"), "--run", "r", "-q"]) == 2
    assert not (tmp_path / "logs" / "r").exists()


def test_library_convert_takes_the_options_record(tmp_path: Path) -> None:
    """A Python caller converts with the same record the command line builds."""
    options = ConvertOptions(DUMPS / "ad_dsv3", tmp_path, run="lib", stages=("all",),
                             model="dsv3-lib")
    result = convert(options)
    assert result.run == "lib" and len(result.stages) == 4
    store = RunStore(store_path(tmp_path, "lib"))
    assert store.meta.model == "dsv3-lib" and len(store.stages()) == 4
    # A trace named in the options but no attacher to map it: refused before anything is written.
    with_trace = ConvertOptions(DUMPS / "ad_dsv3", tmp_path, run="traced",
                                traces=(TraceOptions(path=tmp_path / "decode.nsys-rep"),))
    with pytest.raises(ValueError, match="attach_trace"):
        convert(with_trace)
    assert not (tmp_path / "traced").exists()


@pytest.mark.parametrize("args,message", [
    (["convert", "/nonexistent/dir", "--logdir", "L"], "no such directory"),
    (["convert", "{empty}", "--logdir", "L"], "no graph dump files"),
    (["convert", "{dsv3}", "--logdir", "L", "--run", "../escape"], "bad run name"),
    (["convert", "{dsv3}", "--logdir", "L", "--module", "nope"], "no GraphModule named 'nope'"),
    (["extract", "{dsv3}", "--layer", "61"], "layer 61 does not exist; layers here: 0-4"),
])
def test_bad_arguments_exit_2_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "empty").mkdir()
    args = [a.format(empty=tmp_path / "empty", dsv3=DUMPS / "ad_dsv3").replace("L", str(tmp_path / "L"))
            if a in ("L", "{empty}", "{dsv3}") else a for a in args]
    proc = subprocess.run([sys.executable, "-m", "tb_ad_layer.cli", *args], capture_output=True,
                          text=True, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("[")]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr


def test_help_has_examples() -> None:
    proc = subprocess.run([sys.executable, "-m", "tb_ad_layer.cli", "convert", "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "examples:" in proc.stdout and "--stages" in proc.stdout


def test_every_command_shows_its_own_examples_and_every_option_is_explained() -> None:
    from tb_ad_layer.cli import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(sub.choices) == set(EXAMPLES)
    for name, command in sub.choices.items():
        text = command.format_help()
        examples = text.split("examples:\n", 1)[1]
        assert f"tb-ad-layer {name} " in examples, name
        others = [f"tb-ad-layer {n} " for n in sub.choices if n != name and n != "diff"]
        assert not any(o in examples for o in others), f"{name} shows another command's examples"
        unexplained = [a.dest for a in command._actions
                       if not isinstance(a, argparse._HelpAction) and not a.help]
        assert not unexplained, f"{name}: options without help text: {unexplained}"


def test_a_usage_error_shows_the_commands_usage(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main(["extract", "somewhere"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("usage: tb-ad-layer extract ")
    assert "the following arguments are required: --layer" in err


def test_png_without_graphviz_fails_before_writing(tmp_path: Path, capsys,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "dumps"
    shutil.copytree(DUMPS / "ad_dsv3", src)
    before = sorted(src.iterdir())
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["extract", str(src), "--layer", "3", "--dot", str(tmp_path / "l3.dot"),
                 "--png", str(tmp_path / "l3.png"), "-q"]) == 2
    assert "Graphviz 'dot' is not on PATH" in capsys.readouterr().err
    assert sorted(src.iterdir()) == before and not (tmp_path / "l3.dot").exists()


def test_extract_seed_json_dot_and_roundtrip(tmp_path: Path) -> None:
    src = tmp_path / "dumps"
    shutil.copytree(DUMPS / "ad_dsv3", src)
    assert main(["extract", str(src), "--layer", "3", "--dot", str(tmp_path / "l3.dot"), "-q"]) == 0
    out = src / "085_compile_compile_model_layer3.json"
    data = json.loads(out.read_text())
    assert set(data) == {"layer", "source_file", "nodes", "edges", "external_inputs"}
    assert data["layer"] == 3 and data["source_file"] == "085_compile_compile_model.txt"
    node = data["nodes"][0]
    assert set(node) <= {"id", "op", "shape", "dtype", "group", "sub_group", "inputs",
                         "weight_inputs", "trace_kernels"}
    assert {"id", "op", "shape", "dtype", "group", "inputs", "weight_inputs"} <= set(node)
    assert set(data["edges"][0]) == {"from", "to"}
    assert set(data["external_inputs"][0]) == {"id", "label", "shape"}
    dot = (tmp_path / "l3.dot").read_text()
    assert dot.startswith("digraph layer_3 {") and "cluster_" in dot
    # The seed JSON reads back as a layer, and converts into a run like a dump does.
    lg = read_seed_json(out)
    assert set(lg.layers) == {3} and lg.layers[3].node_count == len(data["nodes"])
    assert main(["convert", str(out), "--logdir", str(tmp_path / "L"), "--run", "seed", "-q"]) == 0
    store = RunStore(store_path(tmp_path / "L", "seed"))
    assert [layer.layer for layer in store.layers(0)] == [3]


def test_png_without_graphviz_says_how_to_install(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["extract", str(DUMPS / "ad_llama"), "--layer", "1", "-o",
                 str(tmp_path / "l.json"), "--png", str(tmp_path / "l.png"), "-q"]) == 2
    assert "apt-get install graphviz" in capsys.readouterr().err
    assert not (tmp_path / "l.png").exists()


def test_store_version_mismatch(tmp_path: Path) -> None:
    assert main(["convert", str(DUMPS / "ad_llama"), "--logdir", str(tmp_path), "-q"]) == 0
    path = store_path(tmp_path, "ad_llama")
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    con.commit()
    con.close()
    with pytest.raises(StoreVersionError, match="version 99 is newer.*upgrade tb-ad-layer"):
        RunStore(path)


def test_bad_seed_json(tmp_path: Path, capsys) -> None:
    p = tmp_path / "x_layer1.json"
    p.write_text('{"layer": 1, "nodes": [{"id": "a", "group": "weird"}]}')
    assert main(["convert", str(p), "--logdir", str(tmp_path / "L"), "-q"]) == 2
    assert "nodes[0].group" in capsys.readouterr().err
    # A sub-group outside the contract's vocabulary would make the stored document unreadable.
    p.write_text('{"layer": 1, "nodes": [{"id": "a", "group": "moe", "sub_group": "router"}]}')
    assert main(["convert", str(p), "--logdir", str(tmp_path / "L"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "nodes[0].sub_group" in err and "unknown sub_group 'router'" in err
    p.write_text('{"layer": 1, "nodes": [')
    assert main(["convert", str(p), "--logdir", str(tmp_path / "L"), "-q"]) == 2
    assert "not valid JSON" in capsys.readouterr().err


@pytest.mark.parametrize("body,message", [
    ("%x : 2 : torch.float32\n"
     "%y = aten.mul.Tensor(%x : 2 : torch.float32, %model_layers_9223372036854775808_mlp_w : "
     "2 : torch.float32) : 2 : torch.float32\noutput %y",
     ":11: layer index 9223372036854775808 in the weight name "
     "'model_layers_9223372036854775808_mlp_w' is out of range"),
    ("%x : 2 : torch.float32\n"
     "%y = aten.add.Tensor(%x : 2 : torch.float32, %y : 2 : torch.float32) : 2 : torch.float32\n"
     "output %y", ":11: %y reads its own value"),
    ("%x : 2 : torch.float32\n"
     "%y = aten.add.Tensor(%x : 2 : torch.float32, %z : 2 : torch.float32) : 2 : torch.float32\n"
     "%z = aten.neg.default(%x : 2 : torch.float32) : 2 : torch.float32\noutput %y",
     ":11: %z is used before its definition on line 12"),
], ids=["layer_index_beyond_64_bits", "self_reference", "later_node"])
def test_bad_graph_exit_2_one_line_nothing_written(tmp_path: Path, body: str,
                                                    message: str) -> None:
    src = tmp_path / "dumps"
    src.mkdir()
    write_dump(src / "001_export_export_to_gm.txt", body)
    proc = subprocess.run([sys.executable, "-m", "tb_ad_layer.cli", "convert", str(src),
                           "--logdir", str(tmp_path / "logs"), "--run", "r", "-q"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "logs" / "r").exists()


def test_doubts_about_the_final_stage_are_warning_lines_also_when_quiet(tmp_path: Path) -> None:
    from tb_ad_layer.store.events import conversion_markdown
    from tests.doubtful import oversized_dump

    dump = oversized_dump(tmp_path / "dumps")
    final = next(dump.glob("*.txt"))
    proc = subprocess.run([sys.executable, "-m", "tb_ad_layer.cli", "convert", str(dump),
                           "--logdir", str(tmp_path / "logs"), "--run", "d", "-q"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 2, proc.stderr
    assert lines[0] == (f"tb-ad-layer: warning: {final}: no layers 11-15 (5 missing): "
                        f"layers 0-10, 16-60 found")
    assert lines[1].startswith(f"tb-ad-layer: warning: {final}: layer 10 has ")
    assert lines[1].endswith("x the median of mla+moe layers (124)")
    # Without -q, the same lines among the progress lines.
    proc = subprocess.run([sys.executable, "-m", "tb_ad_layer.cli", "convert", str(dump),
                           "--logdir", str(tmp_path / "logs"), "--run", "d"],
                          capture_output=True, text=True)
    assert [ln for ln in proc.stderr.splitlines() if "warning" in ln] == lines
    # The run's summary in TensorBoard's Text tab says so too.
    text = conversion_markdown(RunStore(store_path(tmp_path / "logs", "d")))
    assert "**The layers found may be wrong**" in text
    assert f"- stage 0 (`{final.name}`): no layers 11-15 (5 missing)" in text
    # extract warns about the stage it reads.
    proc = subprocess.run([sys.executable, "-m", "tb_ad_layer.cli", "extract", str(dump),
                           "--layer", "10", "-o", str(tmp_path / "l10.json"), "-q"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr.splitlines() == lines
    # A command that fails still says so in one line: the doubts are printed on success only.
    proc = subprocess.run([sys.executable, "-m", "tb_ad_layer.cli", "extract", str(dump),
                           "--layer", "12", "-q"], capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("tb-ad-layer: error: ") and "layer 12 does not exist" in proc.stderr


def test_only_the_final_stages_doubts_are_printed(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from tests.doubtful import gap_dump

    dump = gap_dump(tmp_path)  # 001: the export with a gap in its layer indices
    shutil.copy(DUMPS / "llama" / "002_post_export_cleanup_noop_slice.txt", dump)
    assert main(["convert", str(dump), "--logdir", str(tmp_path / "L"), "--stages", "all",
                 "-q"]) == 0
    # The untouched 002 names every weight after its module: it is layered from its own graph,
    # never from the damaged export's layers; 001's own doubt (the gap) is stored, not printed.
    assert capsys.readouterr().err == ""
    stages = RunStore(store_path(tmp_path / "L", "gap_dump")).stages()
    assert [[d.kind for d in s.doubts] for s in stages] == [["index_gap"], []]
    assert main(["convert", str(dump), "--logdir", str(tmp_path / "L"), "--stages", "001",
                 "-q"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"tb-ad-layer: warning: {dump / '001_export_export_to_gm.txt'}: no layers 1")
