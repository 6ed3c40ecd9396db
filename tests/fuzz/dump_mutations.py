"""Mutations of graph dump files: damage a real dump the ways files get damaged, and the ways a
careless or hostile writer could print one.

Every mutation takes the case's random source and the file's bytes and returns the new bytes and
a few words saying what it did (for the failure message). :data:`DUMP_MUTATIONS` lists them by
name; :func:`mutate_name` damages the ``NNN_`` counter of a file name instead.
"""
from __future__ import annotations

import random
import re
from collections.abc import Callable

Mutation = Callable[[random.Random, bytes], "tuple[bytes, str]"]

BANNER = b"=" * 80
_SYNTAX = b"%:()[]{},= _x.0123456789'\"\\#\t"
_BRACKETS = b"()[]{}"
_CALL_LINE = re.compile(rb"^%([A-Za-z_]\w*) = (.+?)\((.*)\) : (.*)$", re.MULTILINE)
_REF = re.compile(rb"%([A-Za-z_]\w*)")
_LAYER_INDEX = re.compile(rb"(?:layers|layer|h|blocks)[_.](\d+)(?=[_.])")
_SHAPE_DIM = re.compile(rb" : (\d+)x")
#: Numbers that do not fit where a dump's numbers go: beyond 32 and 64 bits, beyond any integer
#: Python converts by default (4,300 digits), and zero-padded past ten digits.
HUGE_NUMBERS = [str(1 << 31).encode(), str(1 << 63).encode(), str(1 << 64).encode(),
                str((1 << 64) + 1).encode(), b"9" * 40, b"9" * 5000, b"0" * 30 + b"7"]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _node_lines(lines: list[bytes]) -> list[int]:
    return [i for i, line in enumerate(lines) if line.startswith(b"%")] or list(range(len(lines)))


def flip_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Overwrite a few bytes: a random byte, one bit flipped, or a character of the line syntax
    (which gets past the UTF-8 check into the line parser)."""
    buf = bytearray(data)
    n = rng.randint(1, 16)
    for _ in range(n):
        p = rng.randrange(len(buf))
        how = rng.randrange(3)
        if how == 0:
            buf[p] = rng.randrange(256)
        elif how == 1:
            buf[p] ^= 1 << rng.randrange(8)
        else:
            buf[p] = rng.choice(_SYNTAX)
    return bytes(buf), f"{n} byte(s) overwritten"


def truncate(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Cut the file short: mid-line, or at a line end."""
    cut = rng.randrange(len(data))
    if rng.random() < 0.3:
        end = data.find(b"\n", cut)
        cut = end + 1 if end >= 0 else cut
    return data[:cut], f"cut at byte {cut} of {len(data)}"


def duplicate_lines(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Print a node line twice: right after itself, or somewhere else."""
    lines = _lines(data)
    i = rng.choice(_node_lines(lines))
    j = i + 1 if rng.random() < 0.5 else rng.randrange(len(lines) + 1)
    lines.insert(j, lines[i])
    return b"\n".join(lines), f"line {i + 1} repeated at {j + 1}"


def swap_lines(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Swap two node lines: neighbours, or far apart (a use before its definition)."""
    lines = _lines(data)
    nodes = _node_lines(lines)
    i = rng.choice(nodes)
    j = i + 1 if rng.random() < 0.5 and i + 1 < len(lines) else rng.choice(nodes)
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines), f"lines {i + 1} and {j + 1} swapped"


def remove_brackets(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Delete one to three brackets or parentheses."""
    positions = [m.start() for m in re.finditer(rb"[()\[\]{}]", data)]
    if not positions:
        return flip_bytes(rng, data)
    gone = sorted(rng.sample(positions, min(len(positions), rng.randint(1, 3))), reverse=True)
    buf = bytearray(data)
    for p in gone:
        del buf[p]
    return bytes(buf), f"brackets at bytes {sorted(gone)} removed"


def giant_line(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """One line of megabytes: a call with its arguments repeated, a weight name, a header, or
    syntax characters."""
    size = rng.choice([1 << 16, 1 << 20, 2 << 20])
    lines = _lines(data)
    i = rng.choice(_node_lines(lines))
    how = rng.randrange(4)
    m = _CALL_LINE.match(lines[i])
    if how == 0 and m is not None:
        args = m.group(3) or b"%x : 2 : torch.float32"
        many = b", ".join([args] * (size // (len(args) + 2) + 1))
        lines[i] = b"%" + m.group(1) + b" = " + m.group(2) + b"(" + many + b") : " + m.group(4)
        what = "arguments repeated"
    elif how == 1 and m is not None:
        name = b"model_layers_0_" + b"w" * size
        lines[i] = (b"%" + m.group(1) + b" = " + m.group(2) + b"(%" + name + b" : 4x4 : torch.float32) : "
                    + m.group(4))
        what = "a giant weight name"
    elif how == 2:
        lines.insert(0, b"# Transform: " + b"t" * size)
        i = 0
        what = "a giant header line"
    else:
        lines[i] = bytes(rng.choice(_SYNTAX) for _ in range(size // 64)) * 64
        what = "a giant line of syntax characters"
    return b"\n".join(lines), f"{what} ({size:,} bytes) at line {i + 1}"


def non_utf8(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Bytes that are not UTF-8: a stray byte, a broken sequence, Latin-1 text, or the whole file
    in UTF-16."""
    how = rng.randrange(4)
    if how == 3:
        return data.decode("utf-8", "replace").encode("utf-16"), "the whole file in UTF-16"
    bad = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xe9", b"\x80"][rng.randrange(6)]
    p = rng.randrange(len(data) + 1)
    if how == 2:
        bad = "caf\u00e9 na\u00efve".encode("latin-1")
    return data[:p] + bad + data[p:], f"{bad!r} inserted at byte {p}"


def crlf(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Windows line ends on every line or on some, lone carriage returns, or trailing blanks."""
    how = rng.randrange(4)
    if how == 0:
        return data.replace(b"\n", b"\r\n"), "CRLF on every line"
    lines = _lines(data)
    picked = rng.sample(range(len(lines)), min(len(lines), rng.randint(1, 20)))
    for i in picked:
        lines[i] = lines[i] + (b"\r", b"\r\r", b" \t")[how - 1]
    ending = ("CR", "CR CR", "blanks")[how - 1]
    return b"\n".join(lines), f"{ending} at the end of {len(picked)} line(s)"


def nul_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """NUL bytes, near the start or anywhere (past the first 64 KiB, which the binary check reads)."""
    buf = bytearray(data)
    places = []
    for _ in range(rng.randint(1, 3)):
        p = rng.randrange(len(buf) + 1)
        buf[p:p] = b"\0" * rng.choice([1, 1, 8])
        places.append(p)
    return bytes(buf), f"NUL at bytes {sorted(places)}"


def damage_banner(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Break a GraphModule banner or the header: a short or long rule, a missing rule or name, a
    repeated or empty section name, a rule amid a section, an odd module count."""
    lines = _lines(data)
    rules = [i for i, line in enumerate(lines) if line.rstrip(b"\r") == BANNER]
    how = rng.randrange(8)
    if how == 7 or not rules:
        count = rng.choice([b"-1", b"x", b"", b"99999999999999999999999", b"9" * 5000])
        for i, line in enumerate(lines):
            if line.startswith(b"# GraphModules found:"):
                lines[i] = b"# GraphModules found: " + count
                return b"\n".join(lines), f"module count {count[:30]!r}"
        lines.insert(0, b"# GraphModules found: " + count)
        return b"\n".join(lines), f"module count {count[:30]!r} added"
    i = rng.choice(rules)
    names = [line for line in lines if line.startswith(b"# GraphModule:")]
    if how == 0:
        lines[i] = BANNER[:-1]
    elif how == 1:
        lines[i] = BANNER + b"="
    elif how == 2:
        del lines[i]
    elif how == 3 and i + 1 < len(lines):
        del lines[i + 1]
    elif how == 4 and i + 1 < len(lines) and names:
        lines[i + 1] = rng.choice(names)
    elif how == 5 and i + 1 < len(lines):
        lines[i + 1] = b"# GraphModule:"
    else:
        j = rng.randrange(len(lines) + 1)
        lines[j:j] = [BANNER, rng.choice(names) if names else b"# GraphModule: x", BANNER]
    return b"\n".join(lines), f"banner damage #{how} at line {i + 1}"


def layer_index_overflow(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """A layer index in weight names beyond 32 or 64 bits (or of 5,000 digits): in every weight
    of one layer (the layer itself gets the huge index), or in one weight name."""
    big = rng.choice(HUGE_NUMBERS[:-1])
    indices = list(_LAYER_INDEX.finditer(data))
    if not indices:
        # A dump without numbered layers gets a weight of one.
        lines = _lines(data)
        calls = [(i, m) for i, line in enumerate(lines) if (m := _CALL_LINE.match(line)) is not None]
        if not calls:
            line = (b"%w = aten.mul.Tensor(%model_layers_" + big + b"_mlp_weight : 4 : torch.float32) "
                    b": 4 : torch.float32\n")
            return data + b"\n" + line, f"a weight of layer {big[:30]!r} appended"
        i, m = rng.choice(calls)
        lines[i] = lines[i][:m.start(3)] + b"%model_layers_" + big + b"_mlp_weight : 4 : torch.float32, " + \
            lines[i][m.start(3):]
        return b"\n".join(lines), f"a weight of layer {big[:30]!r} read on line {i + 1}"
    m = rng.choice(indices)
    if rng.random() < 0.6:
        old = m.group(0)
        new = old[:m.start(1) - m.start(0)] + big
        return data.replace(old + b"_", new + b"_").replace(old + b".", new + b"."), \
            f"layer index {m.group(1).decode()} -> {big[:30]!r} everywhere"
    return data[:m.start(1)] + big + data[m.end(1):], f"one layer index -> {big[:30]!r}"


def big_numbers(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Numbers beyond 32 or 64 bits where the reader may turn digits into integers: a shape's
    size, a constant index, a symbol's number."""
    big = rng.choice(HUGE_NUMBERS)
    places = list(_SHAPE_DIM.finditer(data)) + list(re.finditer(rb", (\d+)\) : ", data)) + \
        list(re.finditer(rb"\bs(\d+)\b", data))
    if not places:
        return layer_index_overflow(rng, data)
    m = rng.choice(places)
    return data[:m.start(1)] + big + data[m.end(1):], f"{m.group(0)[:20]!r} -> {big[:30]!r}"


def self_reference(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """A node that reads its own value: as ``%self : shape : dtype``, or bare inside a list."""
    lines = _lines(data)
    calls = [(i, m) for i, line in enumerate(lines) if (m := _CALL_LINE.match(line)) is not None]
    if not calls:
        return data + b"\n%me = aten.neg.default(%me : 2 : torch.float32) : 2 : torch.float32\n", \
            "a self-reading node appended"
    i, m = rng.choice(calls)
    name = m.group(1)
    refs = list(_REF.finditer(m.group(3)))
    start = m.start(3)
    if refs and rng.random() < 0.6:
        r = rng.choice(refs)
        lines[i] = lines[i][:start + r.start(1)] + name + lines[i][start + r.end(1):]
        what = "reads itself"
    else:
        lines[i] = lines[i][:start] + b"[" + name + b", " + m.group(3) + b"]" + lines[i][m.end(3):]
        what = "reads itself inside a list"
    return b"\n".join(lines), f"%{name.decode()} on line {i + 1} {what}"


def bad_references(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """References that break the graph: a node reading a later one, a node that is never
    defined, a call of a section (the section itself, or one calling back)."""
    lines = _lines(data)
    calls = [(i, m) for i, line in enumerate(lines) if (m := _CALL_LINE.match(line)) is not None]
    if not calls:
        return truncate(rng, data)
    i, m = rng.choice(calls)
    name = m.group(1)
    how = rng.randrange(3)
    refs = list(_REF.finditer(m.group(3)))
    start = m.start(3)
    if how == 0 and refs:
        later = [c for c in calls if c[0] > i]
        other = rng.choice(later)[1].group(1) if later else name
        r = rng.choice(refs)
        line = lines[i][:start + r.start(1)] + other + lines[i][start + r.end(1):]
        what = f"reads %{other.decode()} defined later"
    elif how == 1 and refs:
        r = rng.choice(refs)
        line = lines[i][:start + r.start(1)] + name + b"_99999999999999999999" + lines[i][start + r.end(1):]
        what = "reads an undefined node"
    else:
        banner = b"# GraphModule:"
        sections = [line[len(banner):].strip() for line in lines if line.startswith(banner)]
        target = rng.choice(sections).rsplit(b".", 1)[-1] if sections else name
        line = b"%" + name + b" = " + target + b"(" + m.group(3) + b") : " + m.group(4)
        what = f"calls section {target.decode(errors='replace')}"
    lines[i] = line
    return b"\n".join(lines), f"line {i + 1} {what}"


def deep_nesting(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Arguments nested 100,000 deep, balanced or not."""
    lines = _lines(data)
    calls = [(i, m) for i, line in enumerate(lines) if (m := _CALL_LINE.match(line)) is not None]
    depth = 100_000
    opener, closer = rng.choice([(b"(", b")"), (b"[", b"]"), (b"{", b"}")])
    inner = opener * depth + (closer * depth if rng.random() < 0.7 else b"")
    if not calls:
        return data + b"\n%deep = f(" + inner + b") : 2 : torch.float32\n", f"{depth:,}-deep call appended"
    i, m = rng.choice(calls)
    lines[i] = lines[i][:m.start(3)] + inner + b", " + m.group(3) + lines[i][m.end(3):]
    return b"\n".join(lines), f"{depth:,}-deep {opener.decode()} in line {i + 1}"


DUMP_MUTATIONS: dict[str, Mutation] = {
    "flip_bytes": flip_bytes, "truncate": truncate, "duplicate_lines": duplicate_lines,
    "swap_lines": swap_lines, "remove_brackets": remove_brackets, "giant_line": giant_line,
    "non_utf8": non_utf8, "crlf": crlf, "nul_bytes": nul_bytes, "damage_banner": damage_banner,
    "layer_index_overflow": layer_index_overflow, "big_numbers": big_numbers,
    "self_reference": self_reference, "bad_references": bad_references, "deep_nesting": deep_nesting,
}


def mutate_name(rng: random.Random, name: str) -> tuple[str, str]:
    """A damaged ``NNN_`` counter of a dump file name (past 64 bits, zero-padded, four digits,
    too short, in other scripts' digits, the first stage's again), or a name with a byte that is
    not UTF-8."""
    rest = name.split("_", 1)[1] if "_" in name else name
    counter = rng.choice(["1000", "0" * 25 + "1", str(1 << 64), "9" * 200, "01", "\u0661\u0662\u0663",
                          "000", "001", "\uff11\uff12\uff13", "001\udcff", "001_\udcff"])
    return f"{counter}_{rest}", f"file named {counter[:30]!r}_..."
