#!/usr/bin/env python3
"""Write the dumps ``tb_ad_layer.export_model`` makes of a tiny real Qwen3 into
``tests/fixtures/export_model/qwen3/`` (the demo's ``qwen3_export_model`` run converts them).

Dev-only (torch and transformers are an optional extra, not installed in CI): the committed
dumps are what this wrote, so the demo regenerates without torch. Qwen3 from its config at a
tiny width (``tools/model_dumps/models.py``), random weights, nothing downloaded.

    pip install torch==2.13.0 transformers && python tools/make_export_model_fixture.py
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))
OUT = REPO / "tests" / "fixtures" / "export_model"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen3", help="a builder of tools/model_dumps/models.py")
    args = ap.parse_args()
    import torch

    import tb_ad_layer
    from model_dumps.models import BUILDERS

    spec = BUILDERS[args.model]()
    ids = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(0))
    with tempfile.TemporaryDirectory() as tmp:
        tb_ad_layer.export_model(spec.model, {"input_ids": ids}, tmp, run=args.model, quiet=True)
        dumps = Path(tmp) / args.model / "ad_dumps"
        out = OUT / args.model
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(dumps, out)
    for f in sorted(out.iterdir()):
        print(f"wrote {f.relative_to(REPO)} ({f.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
