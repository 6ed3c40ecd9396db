"""The multi-stage AutoDeploy fixtures (tests/fixtures/ad_stages/): every dump line and every
truth file checked with the standard-library checker, stage order and counters as written."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "tools"))

from model_dumps.stage_check import check_stage_dir, iter_stages  # noqa: E402

ROOT = REPO / "tests" / "fixtures" / "ad_stages"
MODELS = sorted(p.name for p in ROOT.iterdir() if p.is_dir()) if ROOT.is_dir() else []


@pytest.mark.parametrize("model", MODELS)
def test_stage_dir_checks(model: str) -> None:
    rows = check_stage_dir(ROOT / model)
    assert rows[0]["file"] == "001_export_export_to_gm.txt.gz"
    assert rows[-1]["file"] == "066_compile_compile_model.txt.gz"
    assert rows[-1]["sections"] == ["_orig_mod"]


@pytest.mark.parametrize("model", MODELS)
def test_truth_layers_cover_every_layer(model: str) -> None:
    for _path, _text, truth in iter_stages(ROOT / model):
        layers = {n["layer"] for n in truth["nodes"].values()} - {None}
        assert layers == set(range(truth["num_layers"]))


def test_readme_lists_exactly_the_committed_files() -> None:
    """The README's per-directory tables name every stage file there is, and no other."""
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    listed: dict[str, set[str]] = {}
    current = None
    for line in text.splitlines():
        head = re.match(r"^### `([a-z0-9_]+)/`", line)
        if head:
            current = listed.setdefault(head.group(1), set())
        elif current is not None and (row := re.match(r"^\| `(\d{3}_[a-z0-9_]+)` \|", line)):
            current.update({row.group(1) + ".txt.gz", row.group(1) + ".truth.json.gz"})
    on_disk = {m: {p.name for p in (ROOT / m).iterdir()} for m in MODELS}
    assert listed == on_disk
