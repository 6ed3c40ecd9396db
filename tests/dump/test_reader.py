"""The dump reader on every case of the format, and on every kind of bad input."""
from __future__ import annotations

from pathlib import Path

import pytest

from tb_ad_layer.dump.graph import CALL, OUTPUT, PLACEHOLDER
from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.dump.stages import discover_stages, select_stages
from tb_ad_layer.errors import InputError
from tests.conftest import DUMPS, write_dump

# Every shape of node line a writer prints. A backslash ending a line here continues the same
# node line: the writer prints each node on one line, however long.
BODY = """
%input_ids : s0x4 : torch.int64
%kv_cache_0 : 8x64x576 : torch.bfloat16
%sym_size_int = aten.sym_size.int(%input_ids : s0x4 : torch.int64, 0) : ? : SymInt
%embedding = aten.embedding.default(%model_embed_tokens_weight : 256x64 : torch.bfloat16, \
%input_ids : s0x4 : torch.int64) : s0x4x64 : torch.bfloat16
%noaux_tc_op_default_2 = trtllm.noaux_tc_op.default(%embedding : s0x4x64 : torch.bfloat16, \
%model_layers_5_mlp_gate_e_score_correction_bias : 256 : torch.bfloat16, 8, 1e-06, None, \
torch.bfloat16) : (8x8, 8x8) : (torch.bfloat16, torch.int32)
%getitem = <built-in function getitem>(%noaux_tc_op_default_2 : ? : tuple, 0) : 8x8 : torch.bfloat16
%getitem_1 = <built-in function getitem>(%noaux_tc_op_default_2 : ? : tuple, 1) : 8x8 : torch.int32
%view = aten.view.default(%embedding : s0x4x64 : torch.bfloat16, \
[sym_size_int, -1]) : s0*4x64 : torch.bfloat16
%moe = auto_deploy.torch_moe.default(%view : s0*4x64 : torch.bfloat16, [getitem, getitem_1], \
[model_layers_5_mlp_experts_0_w1_weight, model_layers_5_mlp_experts_1_w1_weight], 'silu', \
bsnd) : s0*4x64 : torch.bfloat16
%scalar_op = aten.sum.default(%moe : s0*4x64 : torch.bfloat16) : scalar : torch.float32
%nometa = custom.op.default(%moe : s0*4x64 : torch.bfloat16) : ? : N/A
%pair = custom.split.default(%moe : s0*4x64 : torch.bfloat16) : (s0*4x32, ?) : (torch.bfloat16, None)
"""


def test_every_line_shape(tmp_path: Path) -> None:
    p = write_dump(tmp_path / "085_compile_compile_model.txt", BODY + "output %moe, %scalar_op\n")
    dump = parse_dump(p)
    assert (dump.transform, dump.stage) == ("compile_model", "compile")
    g = dump.select()
    names = [n.name for n in g.nodes]
    assert names[-1] == "output" and g.outputs == ("moe", "scalar_op")
    ph = g.node("input_ids")
    assert (ph.kind, ph.shape, ph.dtype) == (PLACEHOLDER, "s0x4", "torch.int64")
    multi = g.node("noaux_tc_op_default_2")
    assert multi.kind == CALL and multi.target == "trtllm.noaux_tc_op.default"
    assert (multi.shape, multi.dtype) == ("(8x8, 8x8)", "(torch.bfloat16, torch.int32)")
    assert multi.inputs == ("embedding",)
    assert multi.weights == ("model_layers_5_mlp_gate_e_score_correction_bias",)
    assert g.weights["model_layers_5_mlp_gate_e_score_correction_bias"].shape == "256"
    assert g.node("getitem").target == "<built-in function getitem>"
    assert g.node("getitem").op_name == "getitem"
    # References inside list args lose their '%': defined names are inputs, others weights.
    moe = g.node("moe")
    assert moe.inputs == ("view", "getitem", "getitem_1")
    assert moe.weights == ("model_layers_5_mlp_experts_0_w1_weight",
                           "model_layers_5_mlp_experts_1_w1_weight")
    assert g.weights["model_layers_5_mlp_experts_0_w1_weight"].shape == "?"
    assert g.node("view").inputs == ("embedding", "sym_size_int")
    assert g.node("scalar_op").shape == "scalar"
    assert (g.node("nometa").shape, g.node("nometa").dtype) == ("?", "N/A")
    assert g.node("pair").dtype == "(torch.bfloat16, None)"
    assert g.node("sym_size_int").dtype == "SymInt"
    assert g.node("output").kind == OUTPUT


def test_output_paren_spelling(tmp_path: Path) -> None:
    p = write_dump(tmp_path / "001_export_export_to_gm.txt", BODY + "output(%moe, %pair)\n")
    assert parse_dump(p).select().outputs == ("moe", "pair")


def test_several_modules_choose_monolithic_largest_or_named(tmp_path: Path) -> None:
    banner = "=" * 80
    small = ("%x : 2 : torch.float32\n"
             "%y = aten.neg.default(%x : 2 : torch.float32) : 2 : torch.float32\n"
             "output %y\n")
    text = ("# Transform: t\n# Stage: s\n# GraphModules found: 2\n\n"
            f"{banner}\n# GraphModule: submod\n{banner}\n\n{small}\n"
            f"{banner}\n# GraphModule: (root)\n{banner}\n\n{BODY.strip()}\noutput %moe\n")
    p = tmp_path / "001_s_t.txt"
    p.write_text(text)
    dump = parse_dump(p)
    assert dump.module_names() == ["submod", "(root)"]
    assert dump.select().module == "(root)"          # the largest
    assert dump.select("submod").module == "submod"  # by name
    with pytest.raises(InputError, match="no GraphModule named 'nope'.*submod, \\(root\\)"):
        dump.select("nope")
    p.write_text(text.replace("# GraphModule: submod", "# GraphModule: monolithic.model"))
    assert parse_dump(p).select().module == "monolithic.model"


def test_real_fixtures_parse() -> None:
    for f in sorted(DUMPS.glob("*/*.txt")):
        g = parse_dump(f).select()
        assert g.call_count > 50, f
        assert all(i in g.by_name for n in g.nodes for i in n.inputs)


def test_long_line(tmp_path: Path) -> None:
    experts = ", ".join(f"model_layers_3_mlp_experts_{e}_w1_weight" for e in range(120_000))
    body = ("%x : 2x8 : torch.bfloat16\n"
            f"%moe = auto_deploy.torch_moe.default(%x : 2x8 : torch.bfloat16, [{experts}]) "
            ": 2x8 : torch.bfloat16\n"
            "output %moe\n")
    p = write_dump(tmp_path / "001_a_b.txt", body)
    assert p.stat().st_size > 4_000_000
    g = parse_dump(p).select()
    assert len(g.node("moe").weights) == 120_000


# -- stage discovery ----------------------------------------------------------------------------

def test_stage_discovery_order_and_selection() -> None:
    stages = discover_stages(DUMPS / "ad_dsv3")
    assert [s.order for s in stages] == [1, 40, 60, 85]
    assert stages[1].stage == "pattern_matcher" and stages[1].transform == "match_rope_pattern"
    assert select_stages(stages, None) == [stages[-1]]
    assert select_stages(stages, ["all"]) == stages
    assert select_stages(stages, ["040", "001_export_export_to_gm.txt"]) == [stages[0], stages[1]]
    with pytest.raises(InputError, match="no dump file '099'"):
        select_stages(stages, ["099"])


def test_other_files_are_ignored() -> None:
    names = [s.path.name for s in discover_stages(DUMPS / "llama")]
    assert names == ["001_export_export_to_gm.txt", "002_post_export_cleanup_noop_slice.txt"]


# -- bad input: one line, naming file and line ---------------------------------------------------

# A placeholder, and a node that reads it: the lines most bad inputs are made of.
X = "%x : 2 : torch.float32\n"
NEG_X = "aten.neg.default(%x : 2 : torch.float32) : 2 : torch.float32"
BAD_CASES = {
    "empty": ("", "empty file"),
    "binary": (b"\x7fELF\x00\x01\x02garbage", "binary file"),
    "not_a_dump": ("Hello,\nthis is a README about the model.\n", "not an AutoDeploy graph dump"),
    "truncated": (X + "%y = aten.add.Tensor(%x : 2 : torch.float32, %x : 2",
                  "'(' at column 21 is never closed in the call (the line may be cut short)"),
    "extra_paren": (X + "%y = aten.neg.default(%x : 2 : torch.float32)) : 2 : torch.float32",
                    "')' at column 46 closes nothing in the call"),
    "bad_dtype": (X + "%y = aten.neg.default(%x : 2 : torch.float32) : 2 : torch float32",
                  "bad dtype 'torch float32'"),
    "self_reference": (X + "%y = aten.add.Tensor(%x : 2 : torch.float32, %y : 2 : torch.float32) "
                       ": 2 : torch.float32",
                       "%y reads its own value"),
    "self_reference_in_list": (X + "%y = aten.cat.default([x, y], 0) : 4 : torch.float32",
                               "%y reads its own value"),
    "duplicate": (X + f"%y = {NEG_X}\n%y = {NEG_X}", "duplicate node name %y"),
    "undefined": (X + f"%getitem = {NEG_X}\n"
                  "%y = aten.add.Tensor(%x : 2 : torch.float32, %getitem_7 : 2 : torch.float32) "
                  ": 2 : torch.float32",
                  "undefined node %getitem_7"),
    "forward_ref": (X + "%y = aten.neg.default(%z : 2 : torch.float32) : 2 : torch.float32\n"
                    f"%z = {NEG_X}",
                    "%z is used before its definition on line 12 (not in SSA order)"),
    "garbage_line": (X + "this is not a node line", "unrecognised line"),
    # More weights than nodes, one node read before its definition.
    "forward_ref_among_weights": (X + "%y = aten.cat.default(" + ", ".join(
        f"%w_{k} : 2 : torch.float32" for k in range(40)) + ", %z : 2 : torch.float32) : 82 : "
        f"torch.float32\n%z = {NEG_X}",
        "%z is used before its definition on line 12 (not in SSA order)"),
    # Two names read before their definitions: the error names the one read first (within a
    # line the '%' references come before the bare ones)...
    "forward_refs_in_reading_order": (X + "%y = aten.cat.default(%z : 2 : torch.float32, "
                                      "[u]) : 4 : torch.float32\n"
                                      f"%u = {NEG_X}\n%z = {NEG_X}",
                                      "%z is used before its definition on line 13"),
    # ...also when the bare one comes on an earlier line.
    "forward_refs_across_lines": (X + "%y = aten.cat.default([u], 0) : 2 : torch.float32\n"
                                  "%v = aten.add.Tensor(%z : 2 : torch.float32, "
                                  "%x : 2 : torch.float32) : 2 : torch.float32\n"
                                  f"%z = {NEG_X}\n%u = {NEG_X}",
                                  "%u is used before its definition on line 14"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_input(tmp_path: Path, case: str) -> None:
    content, message = BAD_CASES[case]
    p = tmp_path / "001_export_export_to_gm.txt"
    if isinstance(content, bytes):
        p.write_bytes(content)
    elif case in ("empty", "not_a_dump"):
        p.write_text(content)
    else:
        write_dump(p, content)
    with pytest.raises(InputError) as err:
        parse_dump(p)
    text = str(err.value)
    assert message in err.value.message and str(p) in text and "\n" not in text
    if case not in ("empty", "not_a_dump"):
        assert err.value.line is not None


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = write_dump(tmp_path / "001_a_b.txt", "%x : 2 : torch.float32\noutput %x")

    def denied(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    # Tests run as root in CI, where mode 000 does not stop reads: simulate the OS refusing.
    monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.raises(InputError, match="cannot read file: Permission denied"):
        parse_dump(p)


def test_directory_given_as_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        parse_dump(tmp_path)


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no graph dump files"):
        discover_stages(tmp_path)


_REAL_WRITER = DUMPS.parents[2].parent / "shared" / "dumps" / "real_writer"


@pytest.mark.parametrize("path", sorted(DUMPS.glob("*/*.txt")) + sorted(_REAL_WRITER.glob("*/*.txt")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_weight_records_are_the_graphs_weights(path: Path) -> None:
    """The records the reader gives each node are its weights' own, in its weights' order, in
    every section and in the graph the sections join into."""
    dump = parse_dump(path)
    for graph in [*dump.modules, dump.select()]:
        records = graph.weight_records()
        assert [tuple(w.name for w in r) for r in records] == [n.weights for n in graph.nodes]
        assert all(w is graph.weights[w.name] for r in records for w in r)


def test_weight_records_of_names_read_without_metadata_and_repeats(tmp_path: Path) -> None:
    path = write_dump(tmp_path / "d.txt", """\
%x : 2x4 : torch.bfloat16
%cat = aten.cat.default([w_a, %w_b : 4 : torch.float32]) : 8 : torch.float32
%mul = aten.mul.Tensor(%w_b : 4 : torch.float32, %w_b : 4 : torch.float32) : 4 : torch.float32
%add = aten.add.Tensor(%x : 2x4 : torch.bfloat16, %w_c : 4 : torch.float32) : 2x4 : torch.bfloat16
output %add, %cat, %mul
""")
    graph = parse_dump(path).select()
    records = {n.name: [(w.name, w.shape) for w in r]
               for n, r in zip(graph.nodes, graph.weight_records(), strict=True)}
    assert records == {"x": [], "cat": [("w_b", "4"), ("w_a", "?")], "mul": [("w_b", "4")],
                       "add": [("w_c", "4")], "output": []}
