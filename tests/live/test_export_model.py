"""``tb_ad_layer.export_model``: a live model exported as AutoDeploy does, then converted.

torch is an optional extra: ``import tb_ad_layer`` never imports it, and without it the call
says so in one line. The exports themselves need torch and transformers (not installed in CI:
those tests are skipped there, with the reason).
"""
from __future__ import annotations

import importlib.util
import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import tb_ad_layer
from tests.conftest import REPO

HAVE_TORCH = importlib.util.find_spec("torch") is not None
HAVE_TRANSFORMERS = HAVE_TORCH and importlib.util.find_spec("transformers") is not None
needs_models = pytest.mark.skipif(not HAVE_TRANSFORMERS,
                                  reason="export_model needs torch and transformers (the "
                                         "'torch' extra); not installed here")


def test_import_does_not_import_torch() -> None:
    code = "import sys, tb_ad_layer; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_without_torch_one_line_says_what_to_install(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    with pytest.raises(ImportError) as err:
        tb_ad_layer.export_model(object(), {}, tmp_path)
    text = str(err.value)
    assert "\n" not in text and "pip install" in text and "tb-ad-layer[torch]" in text


@needs_models
@pytest.mark.parametrize("name, kinds", [("llama", ["attention+mlp"] * 3),
                                         ("qwen_moe", ["attention+mlp", "attention+moe",
                                                       "attention+moe"])])
def test_export_real_architectures(name: str, kinds: list[str], tmp_path: Path) -> None:
    import torch

    sys.path.insert(0, str(REPO / "tools"))
    from model_dumps.models import BUILDERS

    spec = BUILDERS[name]()
    model = spec.model
    ids = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(0))
    before = model(input_ids=ids).logits
    result = tb_ad_layer.export_model(model, {"input_ids": ids}, tmp_path, run=name)
    # The model is left as it was: same device, same outputs.
    assert torch.equal(model(input_ids=ids).logits, before)
    assert [s.file for s in result.stages][:2] == ["001_export_export_to_gm.txt",
                                                   "002_post_export_cleanup_noop_slice.txt"]
    final = result.stages[-1]
    assert [final.layers[i] for i in sorted(final.layers)] == kinds
    dump = (tmp_path / name / "ad_dumps" / "001_export_export_to_gm.txt").read_text()
    # The sequence length is exported dynamic, as AutoDeploy exports it.
    assert "# Stage: export" in dump and re.search(r"^%input_ids : \w+xs\d+ :", dump, re.M)
    with sqlite3.connect(result.store) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    assert json.loads(meta["run"]) == name
