"""The switch for the optional C fast paths (``dump/_scan.c``, ``layers/_*.c``).

Each fast path sits beside the Python module it accelerates, which stays the reference: the C
code declines whatever it is not sure of and the Python code runs instead. Setting
``TB_AD_LAYER_PURE_PYTHON=1`` makes every module take the Python code, to compare the two or to
rule the C code out when a result looks wrong.
"""
from __future__ import annotations

import os

PURE_PYTHON_ENV = "TB_AD_LAYER_PURE_PYTHON"


def enabled() -> bool:
    """Whether built fast paths may be used now (read at each call, so tests can switch)."""
    return os.environ.get(PURE_PYTHON_ENV) != "1"
