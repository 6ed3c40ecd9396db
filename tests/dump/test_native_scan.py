"""The C scanner (tb_ad_layer/dump/_scan.c) against the pure-Python reader it accelerates.

Every case is parsed both ways and must give the same nodes (all fields), the same weights in
the same insertion order, the same outputs and the same topology, or the same InputError. Cases
the C code is meant to handle also check that it did (and did not decline to the Python code).
"""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tb_ad_layer.dump import reader
from tb_ad_layer.dump.graph import Graph
from tb_ad_layer.dump.reader import BANNER, parse_dump
from tb_ad_layer.errors import InputError
from tb_ad_layer.fast_paths import PURE_PYTHON_ENV
from tests.conftest import DUMPS
from tests.dump.test_reader import BAD_CASES, BODY

native_only = pytest.mark.skipif(not reader.NATIVE, reason="C extension not built")
HEADER = "# Transform: compile_model\n# Stage: compile\n# GraphModules found: 1\n\n\n"


def dump_text(*sections: str, eol: str = "\n") -> str:
    parts = [HEADER]
    for i, body in enumerate(sections):
        parts.append(f"{BANNER}\n# GraphModule: m{i}\n{BANNER}\n\n{body.strip(chr(10))}\n\n")
    return "".join(parts).replace("\n", eol)


def snapshot(text: str, pure: bool) -> tuple:
    """Everything the parse gives, or the error; with the C path on or off."""
    old = os.environ.get(PURE_PYTHON_ENV)
    os.environ[PURE_PYTHON_ENV] = "1" if pure else "0"
    try:
        dump = parse_dump("dump.txt", text=text)
    except InputError as e:
        return ("error", str(e), e.line)
    finally:
        if old is None:
            del os.environ[PURE_PYTHON_ENV]
        else:
            os.environ[PURE_PYTHON_ENV] = old
    out = []
    for g in dump.modules:
        topology = g.topology()
        # The native path pre-fills the topology: it must be what Graph computes from the nodes.
        assert topology == Graph(module="", source="", nodes=g.nodes).topology()
        out.append((g.module, [(n.name, n.kind, n.target, n.shape, n.dtype, n.inputs, n.weights,
                                n.args, n.line, n.index) for n in g.nodes],
                    [(k, w.name, w.shape, w.dtype) for k, w in g.weights.items()],
                    g.outputs, topology))
    return ("ok", dump.transform, dump.stage, out)


def scanned_natively(text: str) -> list[bool]:
    """Per section: whether the C scanner took it (False: declined to the Python code)."""
    lines = text.split("\n")
    return [reader._scan.scan_section(lines, i + 3) is not None
            for i in range(len(lines) - 2)
            if lines[i].rstrip("\r") == BANNER and lines[i + 1].startswith("# GraphModule:")]


def assert_same(text: str, native: bool | None = True) -> tuple:
    """Both paths agree; ``native``: whether every section must (True) or none may (False) be
    taken by the C scanner (None: either)."""
    c, py = snapshot(text, pure=False), snapshot(text, pure=True)
    assert c == py
    if native is not None and reader.NATIVE:
        assert scanned_natively(text) == [native] * len(scanned_natively(text))
    return py


def test_native_required_when_asked() -> None:
    """CI builds the extension and sets TB_AD_LAYER_REQUIRE_NATIVE=1: a silent fallback to pure
    Python (no compiler, Node/Weight changed shape) must fail there."""
    if os.environ.get("TB_AD_LAYER_REQUIRE_NATIVE") != "1":
        pytest.skip("TB_AD_LAYER_REQUIRE_NATIVE is not set")
    assert reader.NATIVE, "tb_ad_layer.dump._scan is not built or not usable"


@native_only
@pytest.mark.parametrize("path", sorted(DUMPS.glob("*/*.txt")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_dumps(path: Path) -> None:
    assert_same(reader.read_text(path))


@native_only
def test_pure_python_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    text = dump_text(BODY + "output %moe\n")
    calls = []
    real = reader._parse_section
    monkeypatch.setattr(reader, "_parse_section", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    parse_dump("d.txt", text=text)
    assert calls == [1]
    monkeypatch.setenv(PURE_PYTHON_ENV, "0")
    parse_dump("d.txt", text=text)
    assert calls == [1]


def test_weight_order_is_first_reference_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """graph.weights (and so the store's weights table) must not depend on string hashing: the
    Python code once took the new names of a list in set order."""
    names = [f"model_layers_{i}_mlp_w{i % 3}_weight" for i in range(30)]
    body = (f"%x : 2 : f\n%a = f.default(%wm : 2 : f, [{', '.join(names)}], [x, bias_1]) : 2 : f\n"
            "%b = f.default(%bias_2, %wm, [z]) : 2 : f\noutput %b")
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    g = parse_dump("d.txt", text=dump_text(body)).modules[0]
    assert list(g.weights) == ["wm", *names, "bias_1", "bias_2", "z"]


# -- hand-written lines: each parsed both ways ---------------------------------------------------

P = "%x : 2x4 : torch.float32\n%y : s0x4 : torch.int64\n"
EDGE_CASES = {
    "reader_body": BODY + "output %moe, %scalar_op\n",
    "tuple_meta": P + "%t = custom.split.default(%x : 2x4 : torch.float32) : (8x8, 8x8) : (torch.bfloat16, None)\n"
                      "%g = <built-in function getitem>(%t : ? : tuple, 0) : 8x8 : torch.bfloat16\noutput %g",
    "odd_meta": P + "%a = f.default(%x : 2x4 : torch.float32) : ? : N/A\n%b = f.default(%a) : scalar : SymInt\n"
                    "%c = f.default(%b : s0*4 : torch.float32, %x) : s0*4x64 : torch.float32\n"
                    "%d = f.default(%w : (s0x2, ?) : (torch.bfloat16, None)) : () : x/y\noutput(%c, %d)",
    "refs_without_meta": P + "%a = aten.add.Tensor(%x, %y, %wt, %x) : 2x4 : torch.float32\noutput %a",
    "nested_lists": P + "%a = f.default([[x, y], [wa]], [[[wb, x]]], []) : 2 : f\noutput %a",
    "mixed_list": P + "%a = f.default([%x : 2x4 : torch.float32, y, %w1 : 3 : torch.bfloat16, w2, %w3]) : 2 : f\n"
                      "output %a",
    "quotes": P + "%a = f.default([x, 'a, [b], c', \"y, [z]\", 'it\\'s [w1]', \"q\\\"[w2]\", y], 'x', \"%w3 : 2 : f\")"
                  " : 2 : f\noutput %a",
    "unterminated_quote": P + "%a = f.default([x, 'abc, y], w1) : 2 : f\n"
                              "%b = f.default([x, \"abc\\\"], [y]) : 2 : f\noutput %a",
    "constants": P + "%a = f.default(%x, 1e-06, -inf, torch.bfloat16, None, [1e-06, -inf, inf, nan, None, True, "
                     "False, Ellipsis, torch.bfloat16, -1, 2.5, x]) : 2 : f\noutput %a",
    "symbols": P + "%a = f.default([s12, u3, s0, u, s, s1a, x, su1]) : 2 : f\noutput %a",
    "dotted_and_calls": P + "%a = f.default([torch.int64, x.y, y(1), x, a.b.c, w_9]) : 2 : f\noutput %a",
    "output_paren": P + "%a = f.default(%x) : 2 : f\noutput(%a, %x)",
    "output_bare_list": P + "%a = f.default(%x) : 2 : f\noutput [a, x, %a, wq, None]",
    "output_empty": P + "output",
    "no_output": P + "%a = f.default(%x) : 2 : f",
    "bare_then_meta": P + "%a = f.default([x, wlate]) : 2 : f\n%b = f.default(%wlate : 4x4 : torch.int8) : 2 : f\n"
                          "output %b",
    "meta_twice": P + "%a = f.default(%w : 4 : t1, %w : 5 : t2) : 2 : f\n%b = f.default(%w : 6 : t3) : 2 : f\n"
                      "output %b",
    "comments_blank": P + "# a comment\n\n   \n\t\n%a = f.default(%x) : 2 : f\n# %b = f(%a) : 2 : f\noutput %a",
    "builtin_target": P + "%getitem = <built-in function getitem>(%x : 2x4 : torch.float32, 0) : 4 : f\n"
                          "%getitem_1 = <built-in function getitem>(%x, 1) : 4 : f\n"
                          "%add = <built-in function add>(%getitem, [getitem_1]) : 4 : f\noutput %add",
    "weights_follow_no_node_name": "%x : 2 : f\n%getitem = g(%x) : 2 : f\n%y = g(%getitem, %getitem_weight,"
                                   " [view_3, getitem2]) : 2 : f\noutput %y",
    "weight_named_like_filtered": P + "%a = f.default(%None : 2 : f, %s0, [None, s0, x, u1]) : 2 : f\n"
                                      "%b = f.default([None, s0, u1], %s0) : 2 : f\noutput %b",
    "not_refs_in_percent": P + "%a = f.default(%inf, %s3 : 2 : t) : 2 : f\noutput %a",
    "percent_oddities": P + "%a = f.default(%, %1, %%x, [%, %1 , x], 50%) : 2 : f\noutput %a",
    "meta_oddities": P + "%a = f.default(%x : 2x4 : torch.float32x, %y : (a : b) : t, %w : (c : d), %v : 2 : (a(b))) "
                         ": 2 : f\n"
                         "%b = f.default(%x : 2 :, %y : : t, %w2 : [1] : t, %w3 : 2 : t.u/v_1-2) : 2 : f\noutput %b",
    "group_with_ref_metadata": P + "%a = f.default([%x : (2, 3) : (a, b), y, %w : 2 : t, z1]) : 2 : f\n"
                                   "output %a",
    "control_chars": P + "%a = f.default(%x : 2\x1c : f, [x\x0by, w\x00q], %w\x1f) : 2 : f\n"
                         "%b = f.default(%a) : 2 : f\x0c\noutput %b",
    "keyword_names": "%x : 2 : f\n%def = f.default(%x) : 2 : f\n%class_ = f.default([def, x]) : 2 : f\n"
                     "output %class_",
    "empty_section": "# nothing here",
    "output_then_node_named_output": P + "%a = f.default(%x) : 2 : f\noutput %a\n%output = f.default(%a) : 2 : f\n"
                                         "%b = f.default([output, a]) : 2 : f",
    "output_named_weight": P + "%a = f.default([output, x]) : 2 : f\noutput %a\n%z = f.default([output]) : 2 : f",
}


@native_only
@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_edge_case(case: str) -> None:
    result = assert_same(dump_text(EDGE_CASES[case]))
    assert result[0] == "ok", result


@native_only
def test_edge_case_crlf_and_several_sections() -> None:
    bodies = [EDGE_CASES["quotes"], EDGE_CASES["tuple_meta"], EDGE_CASES["comments_blank"]]
    for eol in ("\n", "\r\n"):
        result = assert_same(dump_text(*bodies, eol=eol))
        assert [m[0] for m in result[3]] == ["m0", "m1", "m2"]


@native_only
def test_long_args_are_cut_for_display() -> None:
    experts = ", ".join(f"model_layers_3_mlp_experts_{e}_w1_weight" for e in range(3000))
    body = (f"%x : 2x8 : torch.bfloat16\n%moe = auto_deploy.torch_moe.default(%x : 2x8 : torch.bfloat16, "
            f"[{experts}], [x, {experts}]) : 2x8 : torch.bfloat16\noutput %moe\n")
    result = assert_same(dump_text(body))
    _, _, _, inputs, weights, args, _, _ = result[3][0][1][1][2:]
    assert inputs == ("x",) and len(weights) == 3000
    assert args.endswith(" characters)") and len(args) < 1030
    for n in (999, 1000, 1001, 1234567):  # cut at reader._ARGS_KEPT, the rest counted as f"{n:,}"
        args = "x, " + "a" * (n - 3)
        result = assert_same(dump_text(f"%x : 2 : f\n%a = f.default({args}) : 2 : f"))
        kept = result[3][0][1][1][7]
        assert kept == (args if n <= 1000 else f"{args[:1000]}... (+{n - 1000:,} characters)")


# -- what the C code declines: the Python code decides, errors come from it ----------------------

DECLINED = {
    "non_ascii": P + "%a = f.default(%x, 'é') : 2 : f\noutput %a",
    "non_ascii_comment": P + "# café\noutput %x",
    "second_output": P + "output %x\noutput %y",
    "self_reference": P + "%a = f.default(%a : 2 : f, %x) : 2 : f\noutput %a",
    "dropped_then_weight": P + "%a = f.default([None, x]) : 2 : f\n%b = f.default(%None : 2 : f) : 2 : f\noutput %b",
    "filtered_name_defined_late": P + "%a = f.default([s7, x]) : 2 : f\n%s7 = f.default(%a) : 2 : f\noutput %s7",
}


@native_only
@pytest.mark.parametrize("case", sorted(DECLINED))
def test_declined_case(case: str) -> None:
    result = assert_same(dump_text(DECLINED[case]), native=False)
    assert result[0] == "ok", result


ERRORS = {
    "unbalanced": P + "%a = f.default([x, y) : 2 : f",
    "bad_name": P + "%a-b = f.default(%x) : 2 : f",
    "bad_placeholder": "%1x : 2 : f",
    "bad_meta": P + "%a = f.default(%x) : 2, 3 : f",
    "bad_call": P + "%a = f.default : 2 : f",
    "node_called_output": P + "%output = f.default(%x) : 2 : f\noutput %output",
    "self_reference_forward": P + "%a = f.default(%b) : 2 : f\n%b = f.default(%x) : 2 : f",
    "bare_forward": P + "%a = f.default([b, x]) : 2 : f\n%b = f.default(%x) : 2 : f",
    "undefined_base": "%x : 2 : f\n%view_2 = f(%x) : 2 : f\n%a = f.default([view_7, x]) : 2 : f",
    "undefined_base_exact": "%x : 2 : f\n%view_2 = f(%x) : 2 : f\n%a = f.default(%view : 2 : f) : 2 : f",
    "duplicate_placeholder": "%x : 2 : f\n%x : 2 : f",
}


@native_only
@pytest.mark.parametrize("case", sorted(ERRORS) + [f"reader:{c}" for c in sorted(BAD_CASES)
                                                   if c not in ("empty", "binary")])
def test_same_error(case: str) -> None:
    if case.startswith("reader:"):  # test_reader's bad inputs (its file-level ones excepted)
        content, message = BAD_CASES[case[len("reader:"):]]
        text = content if case == "reader:not_a_dump" else dump_text(content)
    else:
        text, message = dump_text(ERRORS[case]), ""
    result = assert_same(text, native=False)
    assert result[0] == "error" and message in result[1]


# -- generated stress cases ----------------------------------------------------------------------

def _stress_dump(r: random.Random) -> str:
    """A random section from the dump grammar: many node/weight names, lists, quotes, constants,
    and (sometimes) a damaged line."""
    bases = ["getitem", "view", "mm", "x", "moe", "s", "add"]
    weights = ["w_0", "model_w_weight", "bias", "None", "s0", "u3", "inf", "output", "_t", "expert_1_w"]
    defined: list[str] = []
    counts: dict[str, int] = {}

    def ref() -> str:
        return r.choice(defined) if defined and r.random() < 0.6 else r.choice(weights)

    def meta() -> str:
        return (f"{r.choice(['2x4', 's0*4x64', '?', 'scalar', '(8x8, 8x8)', '3'])} : "
                f"{r.choice(['torch.bfloat16', 'N/A', 'tuple', '(torch.int8, None)', 'a/b'])}")

    def arg(depth: int = 0) -> str:
        k = r.random()
        if k < 0.3:
            return f"%{ref()} : {meta()}" if r.random() < 0.6 else f"%{ref()}"
        if k < 0.5:
            return ref()
        if k < 0.6:
            return r.choice(["1e-06", "-inf", "None", "torch.float32", "s12", "a.b", "f(x)", "%", "%%x"])
        if k < 0.7:
            q = r.choice("'\"")
            return q + r.choice(["a, b", "[x]", "it\\'s", "x\\\"y", "w_0"]) + (q if r.random() < 0.9 else "")
        if depth < 3:
            return "[" + ", ".join(arg(depth + 1) for _ in range(r.randint(0, 5))) + "]"
        return "0"

    lines = []
    for _ in range(r.randint(1, 25)):
        base = r.choice(bases)
        counts[base] = counts.get(base, -1) + 1
        name = base if counts[base] == 0 else f"{base}_{counts[base]}"
        if r.random() < 0.2:
            line = f"%{name} : {meta()}"
        else:
            line = f"%{name} = {r.choice(['aten.mm.default', '<built-in function getitem>'])}(" \
                   f"{', '.join(arg() for _ in range(r.randint(0, 5)))}) : {meta()}"
        if r.random() < 0.05:
            i = r.randrange(len(line) + 1)
            line = line[:i] + r.choice(["", "'", "[", ")", "%", " : ", "é", "\x1c"]) + line[i + r.randint(0, 1):]
        defined.append(name)
        lines.append(line)
    lines.append(r.choice(["output ", "output(", "output ["]) + ", ".join(f"%{d}" for d in defined[-2:])
                 + r.choice(["", ")", "]"]))
    return dump_text("\n".join(lines), eol=r.choice(["\n"] * 9 + ["\r\n"]))


@native_only
def test_generated_stress_cases() -> None:
    r = random.Random(20240611)
    taken = 0
    for _ in range(600):
        text = _stress_dump(r)
        if assert_same(text, native=None)[0] == "ok":
            taken += sum(scanned_natively(text))
    assert taken > 100  # the C path did run on many of them


@native_only
@pytest.mark.parametrize("data", [b"a", b"a\n", b"\n\n", b"a\r\nb\r\n", b"x" * 5000 + b"\ny",
                                  b"\n", b"# h\n\n\n" + b"=" * 80 + b"\n"])
def test_ascii_lines_are_the_split_lines(data: bytes) -> None:
    """An ASCII file is scanned from its bytes (reader._AsciiLines + _scan.line_starts) instead
    of being split into str lines: the lines must be exactly what split would give."""
    lines = reader._AsciiLines(data)
    assert len(lines) == len(data.split(b"\n"))
    assert [lines[i] for i in range(len(lines))] == data.decode().split("\n")
    with pytest.raises(IndexError):
        lines[len(lines)]


@native_only
def test_file_read_as_bytes_or_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file is parsed from its bytes when it is ASCII, from split str lines when it is not
    (the C scanner then takes the ASCII sections of the list); both give the reference result."""
    ascii_text = dump_text(BODY + "output %moe\n", BODY.replace("%moe", "%moe2") + "output %moe2\n")
    mixed = ascii_text.replace("# GraphModule: m1", "# GraphModule: m1 \u00e9t\u00e9")
    seen: list[str] = []
    real = reader._scan.scan_section
    monkeypatch.setattr(reader._scan, "scan_section",
                        lambda src, *a: seen.append(type(src).__name__) or real(src, *a))
    for text, kind in ((ascii_text, "bytes"), (mixed, "list")):
        path = tmp_path / f"{kind}.txt"
        path.write_text(text, encoding="utf-8")
        seen.clear()
        from_file = parse_dump(path)
        assert seen == [kind, kind]
        monkeypatch.setenv(PURE_PYTHON_ENV, "1")
        reference = parse_dump(path)
        monkeypatch.delenv(PURE_PYTHON_ENV)
        assert [[(n.name, n.target, n.inputs, n.weights, n.args, n.line) for n in g.nodes]
                for g in from_file.modules] == \
            [[(n.name, n.target, n.inputs, n.weights, n.args, n.line) for n in g.nodes]
             for g in reference.modules]
        assert from_file.size_bytes == len(text.encode("utf-8"))  # bytes, not characters
