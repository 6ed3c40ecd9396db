"""Shared fixtures: paths to the committed dumps and to the real traces in ../shared."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DUMPS = REPO / "tests" / "fixtures" / "dumps"
SHARED_TRACES = REPO.parent / "shared" / "traces"


@pytest.fixture
def dumps() -> Path:
    return DUMPS


def write_dump(path: Path, body: str, module: str = "(root)", transform: str = "compile_model",
               stage: str = "compile") -> Path:
    """Write a dump file in TensorRT-LLM's layout around ``body`` (node lines)."""
    banner = "=" * 80
    path.write_text(f"# Transform: {transform}\n# Stage: {stage}\n# GraphModules found: 1\n\n\n"
                    f"{banner}\n# GraphModule: {module}\n{banner}\n\n{body.strip()}\n",
                    encoding="utf-8")
    return path
