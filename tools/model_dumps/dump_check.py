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
from typing import Dict, List, Set

from .line_format import LineError, parse_line

RULE = "=" * 80
FILE_RE = re.compile(r"^(\d{3,})_([a-z_]+?)_([a-z0-9_]+)\.txt$")


@dataclass
class Section:
    name: str
    nodes: List[str] = field(default_factory=list)
    weights: Set[str] = field(default_factory=set)
    outputs: List[str] = field(default_factory=list)


class DumpError(ValueError):
    """A dump that breaks the layout; the message names the file and line."""


def check_dump(file_name: str, text: str) -> List[Section]:
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
    sections: List[Section] = []
    i = 4
    while i < len(lines):
        if lines[i:i + 5] != ["", RULE, lines[i + 2] if i + 2 < len(lines) else "", RULE, ""] \
                or not lines[i + 2].startswith("# GraphModule: "):
            raise DumpError(f"{file_name}:{i + 1}: expected a GraphModule banner")
        sec = Section(lines[i + 2][len("# GraphModule: "):])
        i += 5
        defined: Set[str] = set()
        body_start = i
        body: List[str] = []
        while i < len(lines) and lines[i] != "":
            body.append(lines[i])
            i += 1
        all_defined = set()
        for text_line in body:
            if text_line.startswith("%"):
                all_defined.add(re.split(r" [=:] ", text_line[1:], maxsplit=1)[0])
        for k, text_line in enumerate(body):
            where = f"{file_name}:{body_start + k + 1}"
            try:
                line = parse_line(text_line)
            except LineError as exc:
                raise DumpError(f"{where}: {exc}") from None
            if line is None:
                raise DumpError(f"{where}: header line inside a section")
            if sec.outputs or (line.kind == "output" and k != len(body) - 1):
                raise DumpError(f"{where}: a line after the output line")
            if line.kind == "output":
                sec.outputs = line.outputs
                continue
            refs = [r[0] for r in line.refs] + line.list_names
            for ref in refs:
                if ref in defined:
                    continue
                if ref in all_defined:
                    raise DumpError(f"{where}: %{ref} used before it is defined")
                sec.weights.add(ref)
            if line.name in defined:
                raise DumpError(f"{where}: %{line.name} defined twice")
            defined.add(line.name)
            sec.nodes.append(line.name)
        if not sec.outputs and not (body and body[-1].startswith("output")):
            raise DumpError(f"{file_name}:{i}: section {sec.name} has no output line")
        sections.append(sec)
    found = int(lines[2][len("# GraphModules found: "):])
    if found != len(sections):
        raise DumpError(f"{file_name}:3: {found} GraphModules announced, {len(sections)} found")
    return sections


def weights_by_section(sections: List[Section]) -> Dict[str, Set[str]]:
    return {s.name: s.weights for s in sections}
