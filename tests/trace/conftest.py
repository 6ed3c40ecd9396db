"""Fixtures of the trace tests: generated traces in a per-session temporary directory."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.trace.helpers import make_traces


@pytest.fixture(scope="session")
def generate(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., dict[str, Path]]:
    """``generate(name, layers=5, dense=2, formats=("sqlite",), **Options)`` -> output paths."""
    out = tmp_path_factory.mktemp("traces")
    mt = make_traces()
    cache: dict[tuple, dict[str, Path]] = {}

    def run(name: str, layers: int = 5, dense: int = 2, formats: tuple[str, ...] = ("sqlite",),
            unknown_kernel: bool = False, **opts: object) -> dict[str, Path]:
        key = (name, layers, dense, formats, unknown_kernel, tuple(sorted(opts.items())))
        if key not in cache:
            plan = mt.dsv3_plan(layers, dense, unknown_kernel)
            cache[key] = mt.generate(out, name, plan, mt.Options(**opts), formats)
        return cache[key]

    return run
