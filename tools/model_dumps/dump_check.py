"""Check a whole dump file's layout and dataflow (standard library only).

Layout: ``# Transform:``, ``# Stage:`` and ``# GraphModules found: <n>`` lines matching the file
name ``NNN_<stage>_<transform>.txt``, a blank line, then ``n`` sections, each a blank line, a
rule of 80 ``=``, ``# GraphModule: <name>``, another rule, a blank line, node lines and one
``output`` line last. Dataflow: node names are unique in a section; every ``%ref`` and every
bare name inside a list or tuple argument is a node defined above it or a weight (a name no line
of the section defines). Returns the node names of each section in order, and the weights.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .line_format import LineError, parse_line

RULE = "=" * 80
FILE_RE = re.compile(r"^(\d{3,})_([a-z_]+?)_([a-z0-9_]+)\.txt$")


@dataclass
class Section:
    name: str
    nodes: list[str] = field(default_factory=list)
    weights: set[str] = field(default_factory=set)
    outputs: list[str] = field(default_factory=list)


class DumpError(ValueError):
    """A dump that breaks the layout; the message names the file and line."""


def _banner_name(lines: list[str], i: int) -> str:
    """The GraphModule name of the banner starting at line index ``i`` ('' when none is there)."""
    block = lines[i:i + 5]
    if len(block) == 5 and block[0] == "" and block[1] == RULE and block[3] == RULE \
            and block[4] == "" and block[2].startswith("# GraphModule: "):
        return block[2][len("# GraphModule: "):]
    return ""


def _check_section(file_name: str, first_line: int, body: list[str], sec: Section) -> None:
    """Check one section's node lines (``first_line`` is the 1-based number of ``body[0]``)."""
    names_here = {re.split(r" [=:] ", t[1:], maxsplit=1)[0] for t in body if t.startswith("%")}
    defined: set[str] = set()
    for k, text_line in enumerate(body):
        where = f"{file_name}:{first_line + k}"
        try:
            line = parse_line(text_line)
        except LineError as exc:
            raise DumpError(f"{where}: {exc}") from None
        if line is None:
            raise DumpError(f"{where}: a header line inside a section")
        if line.kind == "output":
            if k != len(body) - 1:
                raise DumpError(f"{where}: a line after the output line")
            sec.outputs = line.outputs
            continue
        for ref in [r[0] for r in line.refs] + line.list_names:
            if ref not in defined:
                if ref in names_here:
                    raise DumpError(f"{where}: %{ref} used before the line that defines it")
                sec.weights.add(ref)  # never defined: a parameter or buffer
        if line.name in defined:
            raise DumpError(f"{where}: %{line.name} defined twice")
        defined.add(line.name)
        sec.nodes.append(line.name)
    if not body or not body[-1].startswith("output"):
        raise DumpError(f"{file_name}:{first_line + len(body)}: section {sec.name} has no output line")


def check_dump(file_name: str, text: str) -> list[Section]:
    """The sections of a dump after checking it line by line (raises :class:`DumpError`)."""
    if not text.endswith("\n"):
        raise DumpError(f"{file_name}: no newline at the end")
    lines = text[:-1].split("\n")
    if len(lines) < 4 or not lines[0].startswith("# Transform: ") \
            or not lines[1].startswith("# Stage: ") \
            or not lines[2].startswith("# GraphModules found: ") or lines[3] != "":
        raise DumpError(f"{file_name}:1: bad header")
    stage, transform = lines[1][len("# Stage: "):], lines[0][len("# Transform: "):]
    if not re.fullmatch(rf"\d{{3,}}_{re.escape(stage)}_{re.escape(transform)}\.txt", file_name):
        raise DumpError(f"{file_name}:1: header says {stage}/{transform}, the file name differs")
    sections: list[Section] = []
    i = 4
    while i < len(lines):
        name = _banner_name(lines, i)
        if not name:
            raise DumpError(f"{file_name}:{i + 1}: expected a GraphModule banner")
        i += 5
        end = i
        while end < len(lines) and lines[end] != "":
            end += 1
        sec = Section(name)
        _check_section(file_name, i + 1, lines[i:end], sec)
        sections.append(sec)
        i = end
    announced = int(lines[2][len("# GraphModules found: "):])
    if announced != len(sections):
        raise DumpError(f"{file_name}:3: {announced} GraphModules announced, {len(sections)} found")
    return sections
