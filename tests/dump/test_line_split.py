"""Splitting call lines whose arguments carry symbolic shapes: the call's own parentheses are
found by bracket matching, whatever the shapes' parentheses, and a line whose brackets do not
match is refused. Checked against a plain character-by-character matcher on generated lines
built from the shapes real dynamic-shape exports print."""
from __future__ import annotations

import random
import re

import pytest

from tb_ad_layer.dump.line import LineError, references, split_call

# Shapes as torch.export prints them (bench/data/qwen3_next_48l, tests/fixtures/dumps).
SHAPES = ["s44x32x1x((s70 + (Mod(64 - (Mod(s70, 64)), 64)))//64)", "s44*s70x7168", "1x128xs70 + 3",
          "2x((s27 + 1)//2)x4", "1xs70 + (Mod(4 - (Mod(s70, 4)), 4))x4x32", "8x8", "(8x8, 8x8)"]
BROKEN = ["s44x(s70", "s44)x2", "(s1))", "s2x[3)"]
ARGS = ["%{n} : {s} : torch.float32", "[%{n} : {s} : torch.bfloat16, 3]", "{n}", "[{n}, w_1]",
        "(slice(None, None, None), {n})", "-1", "'('", "dtype=torch.float32", "[-2]"]


def reference(line: str, start: int) -> tuple[str, str, str, str] | None:
    """``(target, args, shape, dtype)`` of the current layout, or None when its brackets do
    not match with the final ')' closing the call's own '('."""
    parts = line[start:].rsplit(" : ", 2)
    if len(parts) != 3 or not parts[0].endswith(")"):
        return None
    call = parts[0]
    stack: list[tuple[str, int]] = []
    quote = ""
    for k, ch in enumerate(call):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            stack.append((ch, k))
        elif ch in ")]}":
            if not stack or stack[-1][0] != {")": "(", "]": "[", "}": "{"}[ch]:
                return None
            opened = stack.pop()[1]
            if k == len(call) - 1:
                if stack or opened == 0:
                    return None
                shape = parts[1]
                if ("(" in shape or ")" in shape) and not reference_brackets(shape):
                    return None
                return call[:opened].rstrip(), call[opened + 1:-1], parts[1], parts[2]
    return None


def reference_brackets(text: str) -> bool:
    """Whether every bracket of ``text`` is closed by its own kind."""
    stack: list[str] = []
    for ch in text:
        if ch in "([{":
            stack.append(ch)
        elif ch in ")]}" and (not stack or stack.pop() != {")": "(", "]": "[", "}": "{"}[ch]):
            return False
    return not stack


def generated_lines(count: int, most_args: int = 4, seed: int = 12) -> list[str]:
    rng = random.Random(seed)
    out = []
    for k in range(count):
        args = ", ".join(rng.choice(ARGS).format(n=f"v_{rng.randrange(9)}",
                                                 s=rng.choice(SHAPES + BROKEN[:1] * (k % 7 == 0)))
                         for _ in range(rng.randrange(most_args)))
        shape = rng.choice(SHAPES + (BROKEN if k % 5 == 0 else []))
        out.append(f"%out_{k} = aten.slice.Tensor({args}) : {shape} : torch.float32")
    return out


@pytest.mark.parametrize("line", generated_lines(400))
def test_call_lines_split_as_brackets_match(line: str) -> None:
    start = line.index(" = ") + 3
    expected = reference(line, start)
    if expected is None:
        with pytest.raises(LineError):
            split_call(line, start)
    else:
        assert split_call(line, start) == expected


# Argument lists of thousands of characters (an unfused MoE op lists every expert's weights),
# whose brackets are searched differently from those of ordinary lines.
@pytest.mark.parametrize("line", [line for line in generated_lines(200, 120, 13)
                                  if len(line) > 2000])
def test_long_call_lines_split_as_brackets_match(line: str) -> None:
    test_call_lines_split_as_brackets_match(line)


@pytest.mark.parametrize("line", generated_lines(60, 8, 14))
def test_call_line_split_in_place_in_its_text(line: str) -> None:
    # A line read where it lies in the file's text: the same parts, the same error columns.
    text = f"%before = a.b(%x : 2 : f32) : 2 : f32\r\n{line}\r\n%after : 2 : f32\n"
    line_start = text.index(line)
    start = line_start + line.index(" = ") + 3
    try:
        expected = split_call(line, line.index(" = ") + 3)
    except LineError as e:
        with pytest.raises(LineError, match=re.escape(str(e))):
            split_call(text, start, line_start + len(line), line_start)
    else:
        assert split_call(text, start, line_start + len(line), line_start) == expected


@pytest.mark.parametrize("line", [line for line in generated_lines(200, 6, 15)
                                  if reference(line, line.index(" = ") + 3) is not None])
def test_references_of_a_split_line_are_those_of_its_arguments_alone(line: str) -> None:
    # The parser finds a line's references right after splitting it, and the split's own
    # pass over the arguments is reused: what is found must be what the arguments alone give,
    # right after the split and after another line's split.
    start = line.index(" = ") + 3
    args = split_call(line, start)[1]
    after_split = references(args, True)
    split_call("%other = aten.add.Tensor(%v_9 : (8x8, 8x8) : torch.float32, 1) : 8x8 : f32", 9)
    assert after_split == references(args)
    assert references(f"{args} ", True)[0][:-1] == after_split[0][:-1]
