"""Categories of GPU time (attention, MoE experts, router, shared experts, GEMMs, norms,
communication, memory operations...), kept as data (``categories.json``) that users extend with
``--categories FILE``, like the kernel map.

A file is a JSON list of rules ``{"category": NAME, "kernel": REGEX, "op": REGEX, "group": REGEX,
"sub_group": REGEX, "note": TEXT}`` (an object ``{"rows": [...]}`` is accepted too); a rule needs
a category and at least one pattern, and applies to a kernel when any of its patterns matches:
``kernel`` is searched in the kernel's short and full names, ``op`` in its node's FX target,
``group`` and ``sub_group`` in its node's group and sub-group. The first rule that applies
decides; rules of a user file come before the built-in ones. Matching ignores case.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tb_ad_layer.errors import InputError

BUILTIN_PATH = Path(__file__).with_name("categories.json")
#: The category of memory copies and fills (reported apart from kernels).
MEMORY = "memory"
#: The category of collectives (what overlap and exposed communication are about).
COMMUNICATION = "communication"
#: The category of kernels no rule claims.
OTHER = "other"
_FIELDS = ("kernel", "op", "group", "sub_group")


@dataclass(frozen=True)
class CategoryRule:
    """One rule with its patterns compiled (None where the rule has none)."""

    category: str
    kernel: re.Pattern[str] | None
    op: re.Pattern[str] | None
    group: re.Pattern[str] | None
    sub_group: re.Pattern[str] | None
    source: str

    def applies(self, short: str, name: str, op: str | None, group: str | None,
                sub_group: str | None) -> bool:
        """Whether any of the rule's patterns matches the kernel or its node."""
        if self.kernel is not None and (self.kernel.search(short) or self.kernel.search(name)):
            return True
        if op is not None and self.op is not None and self.op.search(op):
            return True
        if group is not None and self.group is not None and self.group.search(group):
            return True
        return sub_group is not None and self.sub_group is not None \
            and self.sub_group.search(sub_group) is not None


class Categories:
    """Ordered rules; :meth:`classify` is cached per (kernel, node) description, since the same
    kernels on the same ops recur in every layer."""

    def __init__(self, rules: list[CategoryRule]) -> None:
        self.rules = rules
        self._cache: dict[tuple[str, str, str | None, str | None, str | None], str] = {}

    def classify(self, short: str, name: str, op: str | None = None, group: str | None = None,
                 sub_group: str | None = None) -> str:
        """The category of a kernel (and its node, when mapped to one)."""
        key = (short, name, op, group, sub_group)
        got = self._cache.get(key)
        if got is None:
            got = next((r.category for r in self.rules
                        if r.applies(short, name, op, group, sub_group)), OTHER)
            self._cache[key] = got
        return got


def _rules(data: Any, source: str) -> list[CategoryRule]:
    rows = data.get("rows") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise InputError("a categories file is a JSON list of rules", path=source)
    out = []
    for i, row in enumerate(rows):
        where = f"rule {i + 1}"
        if not isinstance(row, dict) or not isinstance(row.get("category"), str) \
                or not row["category"]:
            raise InputError(f"{where}: needs a \"category\" name", path=source, field="category")
        patterns: dict[str, re.Pattern[str] | None] = {}
        for name in _FIELDS:
            value = row.get(name)
            if value is None:
                patterns[name] = None
                continue
            if not isinstance(value, str):
                raise InputError(f"{where}: \"{name}\" must be a regular expression", path=source,
                                 field=name)
            try:
                patterns[name] = re.compile(value, re.IGNORECASE)
            except re.error as e:
                raise InputError(f"{where}: bad \"{name}\" pattern ({e})", path=source,
                                 field=name) from None
        if all(p is None for p in patterns.values()):
            raise InputError(f"{where}: needs at least one of {', '.join(_FIELDS)}", path=source)
        out.append(CategoryRule(row["category"], patterns["kernel"], patterns["op"],
                                patterns["group"], patterns["sub_group"], source))
    return out


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"cannot read categories file ({e.strerror or e})", path=path) from None
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(f"categories file is not JSON ({e})", path=path) from None


def load_categories(extra: str | Path | None = None) -> Categories:
    """The built-in rules, after those of ``extra`` (a user file) when given.

    Raises:
        InputError: the user file cannot be read or holds a bad rule (the message names it).
    """
    rules = _rules(_read(BUILTIN_PATH), str(BUILTIN_PATH))
    if extra is not None:
        rules = _rules(_read(Path(extra)), str(extra)) + rules
    return Categories(rules)
