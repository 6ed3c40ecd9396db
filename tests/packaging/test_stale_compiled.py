"""A compiled module is used only when it was built from the source beside it.

Each test copies the installed package of the release (compiled modules, their stamp and their
sources) to its own directory, changes one thing, and imports it in a fresh interpreter: CPython
alone would load the extension module and run the old code."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests.packaging.conftest import Release

PROBE = (
    "import json, sys\n"
    "import tb_ad_layer.layers.layered, tb_ad_layer.layers.weights as weights\n"
    "from tb_ad_layer._compiled import describe\n"
    "files = {m: getattr(sys.modules[m], '__file__', '') for m in sorted(sys.modules)\n"
    "         if m.startswith('tb_ad_layer.')}\n"
    "print(json.dumps({'files': files, 'describe': describe(),\n"
    "                  'edited': hasattr(weights, 'edited_after_build')}))\n")


def installed_copy(release: Release, dest: Path) -> Path:
    """The release's installed package, copied under ``dest`` (which then goes first on the
    Python path); returns the package directory."""
    shutil.copytree(release.site_packages / "tb_ad_layer", dest / "tb_ad_layer",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return dest / "tb_ad_layer"


def probe(release: Release, path_dir: Path, **env: str) -> tuple[dict, list[str]]:
    """Import the package from ``path_dir`` in a fresh interpreter: (what it loaded, stderr lines)."""
    proc = subprocess.run([str(release.venv_python), "-c", PROBE],
                          env=dict(release.env, PYTHONPATH=str(path_dir), **env), cwd=path_dir,
                          capture_output=True, text=True, check=True)
    result = json.loads(proc.stdout)
    assert all(f.startswith(str(path_dir)) for f in result["files"].values() if f)
    return result, proc.stderr.splitlines()


def compiled(result: dict) -> set[str]:
    return {m for m, f in result["files"].items() if f.endswith(".so")}


def test_fresh_build_loads_every_compiled_module_silently(release: Release, tmp_path: Path) -> None:
    installed_copy(release, tmp_path)
    result, stderr = probe(release, tmp_path)
    assert stderr == []
    assert {"tb_ad_layer.layers.layered", "tb_ad_layer.layers.weights",
            "tb_ad_layer.layers.groups", "tb_ad_layer.dump.graph",
            "tb_ad_layer._native__mypyc"} <= compiled(result)
    assert result["describe"].startswith("compiled with mypyc")


def test_an_edited_source_is_run_instead_of_its_old_compiled_module(release: Release,
                                                                    tmp_path: Path) -> None:
    pkg = installed_copy(release, tmp_path)
    with open(pkg / "layers" / "weights.py", "a", encoding="utf-8") as f:
        f.write("\n\ndef edited_after_build() -> bool:\n    return True\n")
    result, stderr = probe(release, tmp_path)
    assert result["edited"] is True
    # All or none: compiled modules call each other natively, so none of them may run.
    assert compiled(result) == set()
    assert len(stderr) == 1
    assert "tb_ad_layer.layers.weights was compiled from another version of" in stderr[0]
    assert "Python sources" in result["describe"]


def test_compiled_modules_without_their_stamp_are_refused(release: Release, tmp_path: Path) -> None:
    pkg = installed_copy(release, tmp_path)
    (pkg / "_compiled_stamp.json").unlink()
    result, stderr = probe(release, tmp_path)
    assert compiled(result) == set()
    assert len(stderr) == 1 and "no build stamp" in stderr[0]


def test_a_leftover_compiled_module_outside_the_build_is_refused(release: Release,
                                                                 tmp_path: Path) -> None:
    """An extension module the stamp does not list (left by a build that compiled a different
    set of modules) is not trusted; the stamped ones still load."""
    pkg = installed_copy(release, tmp_path)
    stamp_path = pkg / "_compiled_stamp.json"
    stamp = json.loads(stamp_path.read_text())
    del stamp["sources"]["tb_ad_layer.layers.layered"]
    stamp_path.write_text(json.dumps(stamp))
    result, stderr = probe(release, tmp_path)
    assert result["files"]["tb_ad_layer.layers.layered"].endswith("layered.py")
    assert "tb_ad_layer.layers.weights" in compiled(result)
    assert len(stderr) == 1 and "layered" in stderr[0] and "not part of this build" in stderr[0]


def test_pure_python_switch_runs_the_sources_silently(release: Release, tmp_path: Path) -> None:
    installed_copy(release, tmp_path)
    result, stderr = probe(release, tmp_path, TB_AD_LAYER_PURE_PYTHON="1")
    assert compiled(result) == set() and stderr == []
    assert result["describe"] == "Python sources (TB_AD_LAYER_PURE_PYTHON is set)"
