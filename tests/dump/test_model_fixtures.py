"""The committed dump fixtures are well-formed, and their truth files describe them exactly.

Needs no torch: the dumps are read with the generator's own standard-library checker
(``tools/model_dumps/dump_check.py``, the layout of DESIGN.md "The dump format"). Layer
membership through tb_ad_layer is tested elsewhere; here the truth itself is checked: it names
exactly the node lines of its dump, in order, and its layer kinds use the documented vocabulary.
"""
from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DUMPS, REPO

sys.path.insert(0, str(REPO / "tools"))
from model_dumps.dump_check import DumpError, check_dump  # noqa: E402

DUMP_FILES = sorted(p for p in DUMPS.glob("*/*.txt") if re.match(r"\d{3,}_", p.name))
TRUTHS = sorted(DUMPS.glob("*/*.truth.json"))
BENCH = [REPO / "bench" / "data" / d / f for d in ("dsv3_61l", "qwen3_next_48l")
         for f in ("001_export_export_to_gm.txt.gz", "002_post_export_cleanup_noop_slice.txt.gz")]
MIXERS = ["attention", "mla", "mamba", "gdn"]
GROUPS = {"attention", "mla", "mamba", "gdn", "mlp", "moe", "norm", None}


def _rel(p: Path) -> str:
    return f"{p.parent.name}/{p.name}"


def _truth(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _export_truths() -> list[Path]:
    """Truth files of real-model exports (tools/make_model_dumps.py writes ``architecture``)."""
    return [p for p in TRUTHS if "architecture" in _truth(p)]


def _kind_ok(kind: str) -> bool:
    parts = kind.split("+")
    mixers, ffn = parts, []
    if parts[-1] in ("mlp", "moe"):
        mixers, ffn = parts[:-1], parts[-1:]
    return bool(parts) and all(m in MIXERS for m in mixers) and \
        mixers == sorted(mixers, key=MIXERS.index) and len(set(mixers)) == len(mixers) \
        and (bool(mixers) or bool(ffn))


@pytest.mark.parametrize("path", DUMP_FILES, ids=_rel)
def test_every_dump_line_has_a_documented_shape(path: Path) -> None:
    sections = check_dump(path.name, path.read_text(encoding="utf-8"))
    assert sections and all(s.nodes for s in sections)


@pytest.mark.parametrize("path", TRUTHS, ids=_rel)
def test_truth_names_exactly_the_dump_nodes(path: Path) -> None:
    truth = _truth(path)
    dump = path.with_name(path.name[: -len(".truth.json")] + ".txt")
    assert truth["dump"] == dump.name
    sections = check_dump(dump.name, dump.read_text(encoding="utf-8"))
    if "architecture" in truth:  # one section, every node line, in order
        assert [n for s in sections for n in s.nodes] == list(truth["nodes"])
    else:  # AutoDeploy-style truth: the model's own section (helper graphs may sit beside it)
        assert any(s.nodes == list(truth["nodes"]) for s in sections)


def test_at_least_fifteen_architectures() -> None:
    archs = {_truth(p)["architecture"] for p in _export_truths()}
    assert len(archs) >= 15, sorted(archs)


@pytest.mark.parametrize("path", _export_truths(), ids=_rel)
def test_truth_layers_groups_and_kinds(path: Path) -> None:
    truth = _truth(path)
    n = truth["num_layers"]
    assert sorted(truth["layer_kinds"], key=int) == [str(i) for i in range(n)]
    assert all(_kind_ok(k) for k in truth["layer_kinds"].values()), truth["layer_kinds"]
    seen = set()
    for name, info in truth["nodes"].items():
        assert set(info) == {"layer", "module", "class", "group"}, name
        assert info["group"] in GROUPS, (name, info)
        if info["layer"] is not None:
            assert 0 <= info["layer"] < n and info["module"].startswith(
                f"{truth['layers_module']}.{info['layer']}"), (name, info)
            seen.add(info["layer"])
    assert seen == set(range(n))
    for layer, kind in truth["layer_kinds"].items():
        groups = {i["group"] for i in truth["nodes"].values() if i["layer"] == int(layer)}
        assert set(kind.split("+")) <= groups, (layer, kind, groups)


def test_fixtures_show_the_constructs_the_readme_names() -> None:
    zamba2 = (DUMPS / "zamba2" / "001_export_export_to_gm.txt").read_text(encoding="utf-8")
    truth = _truth(DUMPS / "zamba2" / "001_export_export_to_gm.truth.json")["nodes"]
    users = [m.group(1) for m in re.finditer(
        r"^%(\w+) = .*%model_layers_1_shared_transformer_self_attn_q_proj_weight", zamba2, re.M)]
    assert sorted(truth[u]["layer"] for u in users) == [1, 3]  # one shared block, two layers
    bamba = (DUMPS / "bamba" / "001_export_export_to_gm.txt").read_text(encoding="utf-8")
    assert "s44xs70 + (Mod(4 - (Mod(s70, 4)), 4))x" in bamba
    gdn = _truth(DUMPS / "qwen3_next" / "001_export_export_to_gm.truth.json")["nodes"]
    assert sum(1 for i in gdn.values() if i["layer"] == 0) >= 900
    dsv3 = (DUMPS / "deepseek_v3" / "001_export_export_to_gm.txt").read_text(encoding="utf-8")
    assert re.search(r"= auto_deploy\.torch_moe\.default\(.*\[model_layers_1_mlp_experts_0_gate_proj"
                     r"_weight, model_layers_1_mlp_experts_1_gate_proj_weight", dsv3)


@pytest.mark.parametrize("path", BENCH, ids=_rel)
def test_benchmark_dumps_are_well_formed(path: Path) -> None:
    text = gzip.decompress(path.read_bytes()).decode("utf-8")
    sections = check_dump(path.name[: -len(".gz")], text)
    assert sum(len(s.nodes) for s in sections) > 7000


def test_checker_accepts_every_file_of_the_real_writer() -> None:
    """The checker is right about the format: AutoDeploy's own writer's files all pass."""
    files = sorted((REPO.parent / "shared" / "dumps" / "real_writer").glob("*/*.txt"))
    assert len(files) >= 10
    for path in files:
        assert check_dump(path.name, path.read_text(encoding="utf-8")), path


def test_checker_rejects_what_the_writer_never_prints() -> None:
    good = ("# Transform: export_to_gm\n# Stage: export\n# GraphModules found: 1\n\n\n" + "=" * 80
            + "\n# GraphModule: (root)\n" + "=" * 80 + "\n\n%x : s70 + 3x64 : torch.bfloat16\n"
            "%y = aten.neg.default(%x : s70 + 3x64 : torch.bfloat16) : s70 + 3x64 : torch.bfloat16\n"
            "output %y\n")
    assert check_dump("001_export_export_to_gm.txt", good)[0].nodes == ["x", "y"]
    used_before_defined = good.replace("(%x :", "(%z :").replace(
        "output %y", "%z : 4 : torch.float32\noutput %y")
    no_dtype = good.replace(" : torch.bfloat16\noutput", "\noutput")
    for bad in (good.replace("%y = aten", "%y aten"), used_before_defined, no_dtype):
        with pytest.raises(DumpError):
            check_dump("001_export_export_to_gm.txt", bad)
