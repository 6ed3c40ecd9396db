"""Compile the converter's hot modules with mypyc, when a C compiler is there.

The compiled modules are the same typed Python sources, built into one shared library
(``tb_ad_layer/_native__mypyc.*.so``) plus one small extension module per source. Without a C
compiler or Python headers, when the compiler fails, or with ``TB_AD_LAYER_COMPILE=0``, the
package installs without them and runs its sources, slower (``bench/bench_convert.py --pure``
prints both). A type error that mypyc reports fails the build: it is a bug in the sources, not
a missing tool.

mypyc compiles its generated C with ``-Werror`` (it switches off only the warnings its generated
code is known to give); the C and mypyc's runtime library are the compiler's, versioned with
the pinned mypy in ``pyproject.toml``, and the wheel is tagged for the one CPython it was built
for. Nothing here is hand-written C.

Each build writes ``tb_ad_layer/_compiled_stamp.json`` last, with the SHA-256 of every source it
compiled; ``tb_ad_layer._compiled`` refuses compiled modules whose sources have changed since.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import cast

from setuptools import Extension
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError

ROOT = Path(__file__).resolve().parents[1]
SWITCH = "TB_AD_LAYER_COMPILE"
# One group: the modules call each other's functions and classes natively.
GROUP = "tb_ad_layer._native"
# The converter's hot path, in data-flow order: read the dump, assign layers and groups, encode
# the layer documents. Every module here must stay plain typed Python (mypy-clean).
MODULES = (
    "tb_ad_layer/dump/graph.py",
    "tb_ad_layer/dump/line.py",
    "tb_ad_layer/dump/sections.py",
    "tb_ad_layer/dump/reader.py",
    "tb_ad_layer/layers/weights.py",
    "tb_ad_layer/layers/hints.py",
    "tb_ad_layer/layers/shared_weights.py",
    "tb_ad_layer/layers/history.py",
    "tb_ad_layer/layers/mutation.py",
    "tb_ad_layer/layers/sinks.py",
    "tb_ad_layer/layers/membership.py",
    "tb_ad_layer/layers/vocabulary.py",
    "tb_ad_layer/layers/subgroups.py",
    "tb_ad_layer/layers/moe_blocks.py",
    "tb_ad_layer/layers/groups.py",
    "tb_ad_layer/layers/external.py",
    "tb_ad_layer/layers/doubts.py",
    "tb_ad_layer/layers/layered.py",
    "tb_ad_layer/layers/document.py",
)


def _stamp_module() -> ModuleType:
    """``tb_ad_layer/_compiled.py``, which owns the stamp's format, loaded without importing
    the package (whose ``__init__`` would install its import guard in the build process)."""
    spec = importlib.util.spec_from_file_location("_tb_ad_layer_compiled",
                                                  ROOT / "tb_ad_layer" / "_compiled.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compiling_enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


def missing_compiler() -> str | None:
    """Why no C compiler can be run here, or None when one can (checked before running mypyc,
    which would otherwise spend its time generating C nobody can build)."""
    cc = (sysconfig.get_config_var("CC") or "").split()
    cc = os.environ.get("CC", "").split() or cc
    if sys.platform == "win32" or not cc:
        return None  # MSVC is found by setuptools itself; let it try
    if shutil.which(cc[0]) is None:
        return f"no C compiler: {cc[0]!r} is not on PATH"
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not headers.is_file():
        return f"no Python headers: {headers} is missing (Debian: apt-get install python3-dev)"
    return None


def _say(text: str) -> None:
    print(f"tb-ad-layer: {text}", file=sys.stderr, flush=True)


# Commands that build extension modules; others (egg_info, dist_info, sdist) never run mypyc.
BUILD_COMMANDS = frozenset({"build", "build_ext", "bdist_wheel", "editable_wheel", "install",
                            "develop"})
# The stamp of each source as mypyc read it: taken before generating C, so that a source edited
# while the build runs does not get the stamp of code it was not compiled from.
_GENERATED_FROM: dict[str, str] = {}


def compiled_extensions(commands: Sequence[str]) -> list[Extension]:
    """The extension modules to build for ``commands`` (setup.py's arguments): mypyc's C for
    :data:`MODULES`, generated here, or none when compiling is off or impossible."""
    if not BUILD_COMMANDS.intersection(commands):
        return []
    if not compiling_enabled():
        _say(f"{SWITCH}=0: not compiling; the converter runs from its Python sources")
        return []
    why = missing_compiler()
    if why is not None:
        _say(f"{why}; the converter runs from its Python sources (slower)")
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:  # a build without isolation, in an environment without mypy
        _say("mypyc is not installed (pip install mypy); the converter runs from its Python "
             "sources (slower)")
        return []
    if importlib.util.find_spec("msgspec") is None:
        # The compiled modules build msgspec records: mypyc needs msgspec's types (a build
        # without isolation, in an environment without the runtime dependencies yet).
        _say("msgspec is not installed (pip install msgspec); the converter runs from its "
             "Python sources (slower)")
        return []
    stamp = _stamp_module()
    _GENERATED_FROM.update({path[:-3].replace("/", "."): stamp.source_sha256(str(ROOT / path))
                            for path in MODULES})
    # "--config-file=": mypyc type-checks the sources by mypy's defaults, whatever the checks in
    # pyproject.toml say (they may hold modules to stricter rules, or exempt some for a while).
    # mypyc builds setuptools' Extension, not distutils', once setuptools is imported.
    # mypyc type-checks every module the compiled ones reach through the package (the optional
    # torch of live/, tensorboard of the store's event files), and the build environment has
    # neither; nothing outside MODULES is compiled, so their types change no generated code.
    return cast("list[Extension]", mypycify(["--config-file=", "--ignore-missing-imports",
                                             *MODULES], opt_level="3", group_name=GROUP))


class BuildCompiled(build_ext):
    """``build_ext`` that builds the mypyc extensions and stamps them, or, when the C compiler
    fails, leaves the converter to its sources."""

    def run(self) -> None:
        stamp = _stamp_module()
        package_dir = (ROOT if self.inplace else Path(self.build_lib)) / "tb_ad_layer"
        stamp_path = package_dir / stamp.STAMP_FILE
        stamp_path.unlink(missing_ok=True)  # a build that stops half-way leaves no stamp
        if not self.extensions:
            return
        try:
            super().run()
        except (CCompilerError, ExecError, PlatformError) as e:
            _say(f"compiling failed ({e}); the converter runs from its Python sources "
                 f"(slower)")
            return
        import mypy.version

        sources = dict(_GENERATED_FROM)
        record = {"compiler": f"mypyc {mypy.version.__version__}",
                  "library": f"{GROUP}__mypyc", "sources": sources}
        package_dir.mkdir(parents=True, exist_ok=True)
        tmp = stamp_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, stamp_path)
        _say(f"compiled {len(sources)} modules with mypyc {mypy.version.__version__}")

    def get_outputs(self) -> list[str]:
        outputs = super().get_outputs()
        if self.extensions and not self.inplace:
            outputs.append(str(Path(self.build_lib) / "tb_ad_layer" /
                               _stamp_module().STAMP_FILE))
        return outputs
