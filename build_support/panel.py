"""Build the panel (``frontend/`` -> ``tb_ad_layer/plugin/static/``) for a package build.

In a checkout (``frontend/package.json`` present) with npm on PATH, every wheel or sdist build
builds the panel afresh (``npm ci``, ``npm run build``), so a package never carries a stale one.
A source distribution carries the built panel and not ``frontend/``, so building a wheel from
it, or installing it, needs no Node.js. ``TB_AD_LAYER_BUILD_PANEL=0`` skips the build (the
README's set-up builds the panel itself, with its own error message, after installing).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools.errors import ExecError

ROOT = Path(__file__).resolve().parents[1]
FRONTEND = ROOT / "frontend"
STATIC = ROOT / "tb_ad_layer" / "plugin" / "static"
ENTRY = "index.js"  # the module TensorBoard loads: the panel exists when it does
SWITCH = "TB_AD_LAYER_BUILD_PANEL"


def _say(text: str) -> None:
    print(f"tb-ad-layer: {text}", file=sys.stderr, flush=True)


def ensure_panel(*, required: bool) -> None:
    """Build the panel when this is a checkout with npm; otherwise use the one already built.

    Args:
        required: fail when no built panel is there in the end (packages must carry it).
    Raises:
        ExecError: npm failed, or the panel is required and cannot be built.
    """
    if os.environ.get(SWITCH, "1") == "0":
        _say(f"{SWITCH}=0: not building the panel")
        return
    npm = shutil.which("npm")
    if (FRONTEND / "package.json").is_file() and npm is not None:
        _say("building the panel (frontend/ -> tb_ad_layer/plugin/static/) with npm")
        for args in (["ci", "--no-audit", "--no-fund", "--loglevel=error"],
                     ["run", "--silent", "build"]):
            proc = subprocess.run([npm, *args], cwd=FRONTEND, check=False)
            if proc.returncode != 0:
                raise ExecError(f"'npm {' '.join(args)}' in {FRONTEND} failed with exit "
                                f"status {proc.returncode}")
        return
    if (STATIC / ENTRY).is_file():
        if (FRONTEND / "package.json").is_file():
            _say("npm is not on PATH; packaging the panel built before in "
                 "tb_ad_layer/plugin/static/")
        return
    if required:
        raise ExecError("the panel is not built (tb_ad_layer/plugin/static/index.js is missing) "
                        "and cannot be: building it needs Node.js >= 18 with npm on PATH")
