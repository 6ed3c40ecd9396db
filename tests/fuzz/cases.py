"""Seeds, counts and ids of fuzz cases: every case is rebuilt from ``(seed, family, index)`` alone.

Environment:

- ``TB_AD_LAYER_FUZZ_SEED``: the seed (default :data:`DEFAULT_SEED`, so the test command is the
  same run every time; ``random`` draws a new one, printed with every failure).
- ``TB_AD_LAYER_FUZZ_COUNT``: cases of the dump family (default :data:`DEFAULT_COUNT`); the
  trace family runs half as many (a trace is larger to mutate and to read) and the command-line
  family 15 in 100 (each of its cases starts processes).
- ``TB_AD_LAYER_FUZZ_CASE``: one case id (``dump-0042``), or several separated by commas, to run
  only those (with the seed of the failing run).

A failure prints the seed, the case id, what was mutated and how, where the mutated input was
kept, and the command that runs that case alone.
"""
from __future__ import annotations

import os
import random
import secrets
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_SEED = 14
DEFAULT_COUNT = 400
#: Cases of each family per case of the dump family.
SHARE = {"dump": 1.0, "trace": 0.5, "cli": 0.15}
#: Families and the test file that runs each.
FAMILIES = {"dump": "tests/fuzz/test_fuzz_dumps.py", "trace": "tests/fuzz/test_fuzz_traces.py",
            "cli": "tests/fuzz/test_fuzz_cli.py"}
#: Longest any one case may run (a reader stuck in a loop on damaged input is a failure).
LIMIT_S = 10.0


def _seed() -> int:
    raw = os.environ.get("TB_AD_LAYER_FUZZ_SEED", "").strip()
    if raw == "random":
        return secrets.randbelow(1 << 31)
    if raw:
        return int(raw)
    return DEFAULT_SEED


SEED = _seed()


def count(family: str) -> int:
    """Number of cases of ``family`` in this run."""
    raw = os.environ.get("TB_AD_LAYER_FUZZ_COUNT", "").strip()
    n = int(raw) if raw else DEFAULT_COUNT
    return max(1, round(n * SHARE[family]))


def case_ids(family: str) -> list[str]:
    """The ids of the cases of ``family`` to run: all of them, or those ``TB_AD_LAYER_FUZZ_CASE``
    names."""
    chosen = [c.strip() for c in os.environ.get("TB_AD_LAYER_FUZZ_CASE", "").split(",") if c.strip()]
    if chosen:
        return [c for c in chosen if c.startswith(family + "-")]
    return [f"{family}-{i:04d}" for i in range(count(family))]


def case_index(case_id: str) -> int:
    return int(case_id.rsplit("-", 1)[1])


def case_rng(case_id: str) -> random.Random:
    """The random source of one case; the same for the same seed and id on every machine (a
    string seed is hashed with SHA-512, not with Python's per-process hash)."""
    return random.Random(f"tb-ad-layer-fuzz/{SEED}/{case_id}")


@dataclass
class Case:
    """One fuzz case as it was built: what it mutated and how, for the failure message."""

    case_id: str
    source: Path
    steps: list[str] = field(default_factory=list)
    kept: Path | None = None

    def describe(self) -> str:
        family = self.case_id.rsplit("-", 1)[0]
        return (f"fuzz case {self.case_id} (seed {SEED}): {self.source} mutated by "
                f"{' + '.join(self.steps) or 'nothing'}"
                + (f"; input kept at {self.kept}" if self.kept else "")
                + f"\nrun it alone: TB_AD_LAYER_FUZZ_SEED={SEED} TB_AD_LAYER_FUZZ_CASE={self.case_id} "
                  f"python -m pytest -q {FAMILIES[family]}")
