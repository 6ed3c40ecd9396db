"""The syntax of one node line of a graph dump: split it into its parts, find its references.

Three line layouts exist on disk, all printed by TensorRT-LLM's graph writer:

- ``%name : <shape> : <dtype>`` and ``%name = <target>(<args>) : <shape> : <dtype>`` (current),
  where every node argument prints as ``%ref : <shape> : <dtype>``;
- ``%name : <dtype>`` and ``%name = <target>(<args>) : <dtype>`` (the oldest writer), where a
  node argument prints as ``%ref``;
- ``output <values>``, where the values print as ``%a, %b``, ``(%a, %b)``, or as the ``str()`` of
  a container (``None``, ``[a, b]``, ``{'logits': mul}``).

A symbolic shape prints as ``str(SymInt)``, a sympy expression that can hold spaces, ``+ - * //``,
parentheses, commas and function names (``1xs70 + (Mod(4 - (Mod(s70, 4)), 4))x4x32``). None of
``' '``, ``'x'`` or ``','`` splits a line safely; ``' : '`` never occurs inside a shape, a dtype, a
target or a name, so the separators read from the right end of the line delimit shape and dtype,
and the call's own ``(...)`` is found by bracket matching (a target may hold parentheses itself:
``functools.partial(<function add at 0x...>, alpha=1)``).

Inside list, tuple and dict arguments node references lose their ``%`` (``[getitem_3, view_2]``,
``((res_mlp, o_1))``, ``(slice(None, None, None), getitem)``): a bare identifier inside brackets
is a reference unless it is a constant (``None``, ``Ellipsis``), a symbol of a symbolic size
(``s70``), a call (``slice(``), a keyword (``index=0``) or part of a dotted name
(``torch.float32``). Bare identifiers outside brackets are unquoted strings (``bsnd``, ``cpu``).
"""
from __future__ import annotations

import re
from typing import Any, Final, cast

# `%name` with the metadata the current layout prints after it. A reference's shape never holds
# ' : ' or ':' (sympy prints no colons), and its dtype is one dotted word. (`[^:]*` is greedy:
# it cannot pass the first colon, so it ends where a lazy match would, with no per-character
# retries of the rest of the pattern.)
REF: Final = re.compile(r"%([A-Za-z_]\w*)(?: : ([^:]*) : ([A-Za-z_?][\w./]*))?")
# The same patterns for ASCII text (every real dump): there `\w` and `\d` mean what they mean
# in Unicode text, without the Unicode tables the matcher reads for every character otherwise.
# REF's classes are spelled out as ASCII sets, which the matcher tests with one bitmap lookup
# per character rather than one category test per set member, and the name and the dtype are
# matched possessively: what follows either never starts with a character they accept (the
# optional metadata, the pattern's end), so giving characters back could not change a match.
_REF_ASCII: Final = re.compile(
    r"%([A-Za-z_][0-9A-Z_a-z]*+)(?: : ([^:]*) : ([?A-Z_a-z][.-9A-Z_a-z]*+))?", re.ASCII)
_BRACKETS: Final = re.compile(r"[()\[\]{}]")
_BRACKET_CHARS: Final = "()[]{}"
# Texts from this length on are searched for brackets with str.find (_bracket_positions).
_LONG_TEXT: Final = 1000
_QUOTED: Final = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
_BARE: Final = re.compile(r"(?<![\w.%'\"])([A-Za-z_]\w*)(?![\w.(=])")
_BARE_ASCII: Final = re.compile(_BARE.pattern, re.ASCII)
_DTYPE: Final = re.compile(r"[\w./?]+|\([^()]*\)")
_DTYPE_ASCII: Final = re.compile(_DTYPE.pattern, re.ASCII)
_NOT_REFS: Final = frozenset({"None", "True", "False", "inf", "nan", "Ellipsis", "NotImplemented"})
# Symbols of symbolic sizes as torch prints them (backed s0, unbacked u0, float zf0/zuf0).
_SYMBOL: Final = re.compile(r"(?:s|u|zf|zuf|ps)\d+")
_SYMBOL_FIRST: Final = "supz"
_CLOSE: Final = {")": "(", "]": "[", "}": "{"}


class LineError(ValueError):
    """A node line that does not follow the format; the message says what is wrong."""


def split_call(line: str, start: int, end: int = -1, line_start: int = 0
               ) -> tuple[str, str, str, str]:
    """Split ``line[start:end]``, the text after ``%name = ``, into ``(target, args, shape,
    dtype)``.

    The current layout (``target(args) : shape : dtype``) is tried first, then the oldest
    (``target(args) : dtype``, shape ``?``).

    Args:
        line: the line, or a text holding it from position ``line_start`` (for the columns
            that errors name).
        start: where the text after ``%name = `` starts.
        end: where the line ends; -1 for the end of ``line``.
    Raises:
        LineError: the text is neither.
    """
    if end < 0:
        end = len(line)
    # The current layout, read in place: each part is copied out of the line once.
    d2 = line.rfind(" : ", start, end)
    if d2 > start:
        d1 = line.rfind(" : ", start, d2)
        if d1 > start and line[d1 - 1] == ")":
            found = _call_parts_in(line, start, d1)
            if found is not None:
                shape = line[d1 + 3:d2]
                dtype = line[d2 + 3:end]
                check_shape(shape)
                check_dtype(dtype)
                return found[0], found[1], shape, dtype
    return _split_call_text(line[start:end], start - line_start + 1)


def _split_call_text(rest: str, column: int) -> tuple[str, str, str, str]:
    """:func:`split_call` of the text after ``%name = ``, which starts at ``column`` of its
    line: every layout, and the message of what is wrong."""
    parts = rest.rsplit(" : ", 2)
    if len(parts) == 3 and parts[0].endswith(")"):
        found = _call_parts(parts[0])
        if found is not None:
            check_shape(parts[1])
            check_dtype(parts[2])
            return found[0], found[1], parts[1], parts[2]
    parts = rest.rsplit(" : ", 1)
    if len(parts) == 2 and parts[0].endswith(")"):
        found = _call_parts(parts[0])
        if found is not None:
            check_dtype(parts[1])
            return found[0], found[1], "?", parts[1]
    call = parts[0] if len(parts) == 2 else rest
    if "(" not in call:
        raise LineError("a call line needs '<target>(<args>) : <shape> : <dtype>'; "
                        "this one has no '(' after ' = '")
    problem = bracket_problem(call, column)
    if problem:
        hint = " (the line may be cut short)" if problem.endswith("never closed") else ""
        raise LineError(f"{problem} in the call{hint}")
    if " : " not in rest:
        raise LineError("no ' : <shape> : <dtype>' after the call (the line may be cut short)")
    raise LineError("the call's argument list does not end right before ' : <shape> : <dtype>'")


def split_placeholder(rest: str) -> tuple[str, str]:
    """``(shape, dtype)`` of the text after ``%name : `` (``shape : dtype``, or a dtype alone)."""
    parts = rest.rsplit(" : ", 1)
    if len(parts) == 2:
        check_shape(parts[0])
        check_dtype(parts[1])
        return parts[0], parts[1]
    check_dtype(rest)
    return "?", rest


def check_shape(shape: str) -> None:
    """A printed shape: any text with balanced parentheses (sympy expressions included)."""
    if not shape:
        raise LineError("empty shape before the dtype")
    if ("(" in shape or ")" in shape) and not _balanced_shape(shape):
        raise LineError(f"{bracket_problem(shape)} in the shape {_cut(shape)!r}")


# Symbolic shapes whose brackets match. A dump prints a few hundred distinct shapes, each on
# thousands of lines (as a node's shape and beside every reference to it), so each is checked
# once. Emptied when it holds _BALANCED_MAX of them.
_BALANCED: Final[set[str]] = set()
_BALANCED_MAX: Final = 1 << 16


def _balanced_shape(shape: str) -> bool:
    """``brackets_match(shape)``, remembered for the shapes that pass."""
    if shape in _BALANCED:
        return True
    if not brackets_match(shape):
        return False
    if len(_BALANCED) >= _BALANCED_MAX:
        _BALANCED.clear()
    _BALANCED.add(shape)
    return True


# Dtypes that passed check_dtype: a dump prints a few dozen distinct ones, each on thousands of
# lines. Emptied when it holds _BALANCED_MAX of them.
_DTYPES: Final[set[str]] = set()


def check_dtype(dtype: str) -> None:
    """A printed dtype: one word (``torch.bfloat16``, ``SymInt``, ``N/A``) or a tuple of them."""
    if dtype in _DTYPES:
        return
    if (_DTYPE_ASCII if dtype.isascii() else _DTYPE).fullmatch(dtype) is None:
        raise LineError(f"bad dtype {_cut(dtype)!r} (expected e.g. 'torch.bfloat16', 'SymInt', "
                        f"'N/A' or '(torch.bfloat16, torch.int32)')")
    if len(_DTYPES) >= _BALANCED_MAX:
        _DTYPES.clear()
    _DTYPES.add(dtype)


def _call_parts_in(line: str, start: int, end: int) -> tuple[str, str] | None:
    """:func:`_call_parts` of ``line[start:end]``, which ends in ``)``.

    Most lines hold a single pair of parentheses: they are split without a scan, and without
    copying the call out of its line.
    """
    first = line.find("(", start, end)
    if first <= start:
        return None
    # (The one ')' is the last character: none before it. str.find runs at memchr's speed,
    # str.count tests every character.)
    if line.find("(", first + 1, end) < 0 and line.find(")", start, end - 1) < 0:
        args = line[first + 1:end - 1]
        if ("[" in args or "{" in args) and not brackets_match(args):
            return None
        return line[start:first].rstrip(), args
    call = line[start:end]
    opened = _args_open(call)
    if opened is None:
        return None
    return call[:opened].rstrip(), call[opened + 1:-1]


def _call_parts(call: str) -> tuple[str, str] | None:
    """``(target, args)`` of ``target(args)``, or None when the brackets do not close at the end."""
    return _call_parts_in(call, 0, len(call))


def _args_open(call: str) -> int | None:
    """Position of the ``(`` that the final ``)`` of ``call`` closes, if every bracket matches."""
    if "'" not in call and '"' not in call:
        opened = _args_open_fast(call)
        if opened >= 0:
            return opened
    text = _QUOTED.sub(_blank, call) if "'" in call or '"' in call else call
    stack: list[int] = []
    kinds: list[str] = []
    for m in _BRACKETS.finditer(text):
        ch = m.group()
        if ch in "([{":
            stack.append(m.start())
            kinds.append(ch)
        else:
            if not stack or kinds[-1] != _CLOSE[ch]:
                return None
            start = stack.pop()
            kinds.pop()
            if m.end() == len(text):
                return start if not stack and ch == ")" and start > 0 else None
    return None


def _args_open_fast(call: str) -> int:
    """:func:`_args_open` of a call without quoted strings whose target holds no bracket and
    whose brackets all match: the position of its first ``(``; -1 for any other call.

    Most calls with several brackets have symbolic shapes in their arguments. A shape whose
    brackets match can be taken out of the text without changing which bracket closes which,
    so the shapes are checked one by one (each distinct shape once, :func:`_balanced_shape`)
    and only the brackets around them are matched here.
    """
    first = _BRACKETS.search(call)
    if first is None or first.group() != "(" or first.start() == 0 or not call.endswith(")"):
        return -1
    opened = first.start()
    if "%" in call[:opened]:
        return -1
    ascii_call = call.isascii()
    bracketed = call[opened:]
    pieces = (_REF_ASCII if ascii_call else REF).split(bracketed)
    for k in range(2, len(pieces), 4):
        shape = pieces[k]
        if shape is not None and ("(" in shape or ")" in shape or "[" in shape or "]" in shape
                                  or "{" in shape or "}" in shape) \
                and not _balanced_shape(shape):
            return -1
    around = " ".join(pieces[0::4]) if len(pieces) > 1 else cast(str, pieces[0])
    if not _closes_at_end(_brackets_of(around)):
        return -1
    if ascii_call and len(pieces) > 1:
        # references() splits these arguments next, the same way (see _split_memo).
        _SPLIT_MEMO[0] = bracketed
        _SPLIT_MEMO[1] = pieces
        _SPLIT_MEMO[2] = around
    return opened


# The last ``(args)`` text that _args_open_fast split around its references, its pieces and the
# text around them: the parser calls references() on the same arguments right after, which
# then reuses the split (most lines whose arguments hold symbolic shapes go through both).
# Taken only when the text is equal, so a stale entry costs one comparison, never a wrong split.
_SPLIT_MEMO: Final[list[Any]] = ["", [], ""]


def _split_memo(args: str) -> tuple[list[str | None], str] | None:
    """The pieces of ``args`` split by ``_REF_ASCII`` and the text around its references
    (``" ".join(pieces[0::4])``), when the last split of :func:`_args_open_fast` was that of
    ``(args)``; None otherwise."""
    text: str = _SPLIT_MEMO[0]
    if len(text) != len(args) + 2 or not text.startswith(args, 1):
        return None
    pieces: list[str | None] = list(_SPLIT_MEMO[1])
    # The split of "(" + args + ")" differs from that of args only in its first and last
    # text pieces: a reference starts at '%' and its metadata ends before ')'.
    pieces[0] = cast(str, pieces[0])[1:]
    pieces[-1] = cast(str, pieces[-1])[:-1]
    around: str = _SPLIT_MEMO[2]
    return pieces, around[1:-1]


def brackets_match(text: str) -> bool:
    """Whether every bracket of ``text`` is closed by its own kind, outside quoted strings
    (``bracket_problem(text) == ""``, without the message)."""
    clean = _QUOTED.sub(_blank, text) if "'" in text or '"' in text else text
    kinds: list[str] = []
    for ch in _brackets_of(clean):
        if ch == "(" or ch == "[" or ch == "{":
            kinds.append(ch)
        elif not kinds or kinds.pop() != _CLOSE[ch]:
            return False
    return not kinds


def _bracket_positions(text: str) -> list[int]:
    """The positions of the brackets of ``text``, in order: what ``_BRACKETS.finditer`` finds.

    In a long text ``str.find`` passes over the text between brackets many times faster than
    the pattern, which tests every character: the argument list of an unfused MoE op (every
    expert's weights, tens of thousands of characters) holds a few dozen brackets. In a line
    of ordinary length the pattern's one call costs less than a call of ``str.find`` per
    bracket.
    """
    if len(text) < _LONG_TEXT:
        return [m.start() for m in _BRACKETS.finditer(text)]
    found: list[int] = []
    for ch in _BRACKET_CHARS:
        k = text.find(ch)
        while k >= 0:
            found.append(k)
            k = text.find(ch, k + 1)
    found.sort()
    return found


def _brackets_of(text: str) -> list[str]:
    """The brackets of ``text``, in order: ``_BRACKETS.findall(text)`` (see
    :func:`_bracket_positions`)."""
    if len(text) < _LONG_TEXT:
        return _BRACKETS.findall(text)
    return [text[k] for k in _bracket_positions(text)]


def _closes_at_end(brackets: list[str]) -> bool:
    """Whether ``brackets`` match and the last one closes the first (no bracket is closed at
    the outermost level before the end)."""
    kinds: list[str] = []
    last = len(brackets) - 1
    for k, ch in enumerate(brackets):
        if ch == "(" or ch == "[" or ch == "{":
            kinds.append(ch)
        elif not kinds or kinds.pop() != _CLOSE[ch]:
            return False
        elif not kinds and k != last:
            return False
    return not kinds and last > 0


def bracket_problem(text: str, column: int = 1) -> str:
    """What is wrong with the brackets of ``text`` (empty when they all match); columns count
    from ``column``."""
    clean = _QUOTED.sub(_blank, text) if "'" in text or '"' in text else text
    kinds: list[str] = []
    cols: list[int] = []
    for m in _BRACKETS.finditer(clean):
        ch = m.group()
        if ch in "([{":
            kinds.append(ch)
            cols.append(m.start())
        elif not kinds:
            return f"{ch!r} at column {m.start() + column} closes nothing"
        elif kinds[-1] != _CLOSE[ch]:
            return (f"{ch!r} at column {m.start() + column} closes {kinds[-1]!r} of column "
                    f"{cols[-1] + column}")
        else:
            kinds.pop()
            cols.pop()
    if kinds:
        return f"{kinds[-1]!r} at column {cols[-1] + column} is never closed"
    return ""


def _blank(m: re.Match[str]) -> str:
    # Same length, so that columns and positions stay those of the original text.
    return " " * len(m.group())


def references(args: str, ascii_text: bool = False) -> tuple[list[str | None], list[str]]:
    """Every reference in an argument text, in order: ``(marked, bare)``.

    ``marked`` is the text split around its ``%name`` references: from index 1, every fourth
    item is a name, followed by the shape and dtype printed beside it (``None`` in the oldest
    layout) and the text up to the next reference. ``bare`` holds the bare references inside
    brackets, which carry no metadata. (The pieces as the pattern splits them, rather than a
    tuple per reference: a MoE dump has a few references on each of tens of thousands of
    lines.) ``ascii_text`` says that ``args`` is known to be ASCII (cut from an ASCII file).
    """
    if not args:
        return [], []
    if "%" not in args:
        if "[" in args or "(" in args or "{" in args:
            return [], bare_references(args)
        return [], []
    # One pass finds the references and the text between them: [text, name, shape, dtype,
    # text, ...], with None for metadata not printed.
    memo = _split_memo(args)
    if memo is not None:
        pieces, rest = memo
    else:
        pieces = (_REF_ASCII if ascii_text or args.isascii() else REF).split(args)
        rest = ""
    bare: list[str] = []
    if "[" in args or "(" in args or "{" in args:
        if "'" in args or '"' in args:
            bare = bare_references(args)
        else:
            # The text around the references (whose shapes hold most of the brackets); the
            # number of blanks where a reference was does not change what is bare.
            if memo is None:
                rest = " ".join(cast("list[str]", pieces[0::4]))
            if "[" in rest or "(" in rest or "{" in rest:
                bare = _bare_in_brackets(rest)
    return pieces, bare


def bare_references(text: str) -> list[str]:
    """Bare identifiers inside brackets of ``text`` that can name a node or a weight."""
    clean = _QUOTED.sub(_blank, text) if "'" in text or '"' in text else text
    if "%" in clean:
        clean = REF.sub(_blank, clean)
    return _bare_in_brackets(clean)


def _bare_in_brackets(clean: str) -> list[str]:
    """:func:`bare_references` of a text without quoted strings and ``%`` references."""
    found: list[str] = []
    depth = 0
    start = 0
    for k in _bracket_positions(clean):
        if clean[k] in "([{":
            if depth == 0:
                start = k + 1
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                _bare_in(clean[start:k], found)
    return found


def output_references(text: str) -> list[str]:
    """Names an ``output`` line refers to: ``%name`` tokens and bare identifiers anywhere
    (``output None``, ``output mul``, ``output {'logits': mul}``)."""
    out = [m[0] for m in REF.findall(text)] if "%" in text else []
    clean = _QUOTED.sub(_blank, text) if "'" in text or '"' in text else text
    if "%" in clean:
        clean = REF.sub(_blank, clean)
    _bare_in(clean, out)
    return out


def _bare_in(text: str, out: list[str]) -> None:
    if text.isascii():
        # A list of node names (``a, b_1, c``, the expert weights of an unfused MoE op: tens of
        # thousands of characters): every item is what _BARE finds there. For ASCII text
        # str.isidentifier is ``[A-Za-z_]\w*``, and an item is preceded by ``' '`` or the
        # start and followed by ``','`` or the end, which _BARE's look-arounds accept.
        items = text.split(", ")
        plain = True
        for item in items:
            if not item.isidentifier():
                plain = False
                break
        names = items if plain else _BARE_ASCII.findall(text)
    else:
        names = _BARE.findall(text)
    for name in names:
        # A symbol starts with the first letter of one of its prefixes and ends in a digit
        # (every \d is one that str.isdigit accepts): most names are not matched at all.
        if name not in _NOT_REFS and not (name[0] in _SYMBOL_FIRST and name[-1].isdigit()
                                          and _SYMBOL.fullmatch(name)):
            out.append(name)


def _cut(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
