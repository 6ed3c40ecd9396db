"""The release as users install it: the sdist carries the built panel, the wheel adds the compiled
converter, and a fresh virtual environment without Node.js converts a dump with the compiled
modules and serves the "AD Layers" tab from a real TensorBoard."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from build_support.compiled import GROUP, MODULES
from tests.conftest import DUMPS, REPO
from tests.packaging.conftest import Release, clean_env, path_without_node_or_compiler, run
from tests.tensorboard_process import running_tensorboard

BASE = "/data/plugin/ad_layer"
PANEL = ("tb_ad_layer/plugin/static/index.js", "tb_ad_layer/plugin/static/layout_worker.js")


def test_sdist_carries_the_built_panel_not_its_sources(release: Release) -> None:
    names = release.sdist_names()
    assert "npm" in release.build_log and "building the panel" in release.build_log
    for panel_file in PANEL:
        assert panel_file in names
    for build_file in ("setup.py", "pyproject.toml", "build_support/compiled.py",
                       "build_support/panel.py", *MODULES):
        assert build_file in names
    assert not [n for n in names if n.startswith(("frontend/", "tests/"))]
    assert not [n for n in names if n.endswith((".so", ".c", "_compiled_stamp.json"))]


#: What setuptools (and ``build`` relaying it) says when it warns: distutils' "warning: ..." lines,
#: a ``*Warning`` category, and the "!!" banner of its deprecation notices. pip's own lines about
#: the package index of the machine ("WARNING: Location ... is ignored") are not the build's.
SETUPTOOLS_WARNING = re.compile(r"^\s*warning:|^WARNING |\b\w*Warning\b|^!!\s*$", re.MULTILINE)


def test_building_the_sdist_and_the_wheel_gives_no_setuptools_warning(release: Release) -> None:
    warnings = [m.group(0) + release.build_log[m.end():].split("\n", 1)[0]
                for m in SETUPTOOLS_WARNING.finditer(release.build_log)]
    assert not warnings, "python -m build warned:\n  " + "\n  ".join(warnings)


def test_wheel_carries_panel_sources_compiled_modules_and_their_stamp(release: Release) -> None:
    names = release.wheel_names()
    assert "-cp3" in release.wheel.name  # built for this interpreter, not "py3-none-any"
    for panel_file in PANEL:
        assert panel_file in names
    compiled = {n.split(".", 1)[0] for n in names if n.endswith(".so")}
    assert compiled == {m[:-3] for m in MODULES} | {GROUP.replace(".", "/") + "__mypyc"}
    for source in MODULES:  # the fallback when a compiled module is refused
        assert source in names
    with zipfile.ZipFile(release.wheel) as z:
        stamp = json.loads(z.read("tb_ad_layer/_compiled_stamp.json"))
    assert sorted(stamp["sources"]) == sorted(m[:-3].replace("/", ".") for m in MODULES)
    assert stamp["compiler"].startswith("mypyc ")


def test_installed_wheel_without_node_converts_compiled_and_serves_the_panel(
        release: Release, tmp_path: Path) -> None:
    env = release.env
    python = str(release.venv_python)
    assert "compiled with mypyc" in run(
        [python, "-c", "from tb_ad_layer._compiled import describe; print(describe())"],
        env, tmp_path)
    logdir = tmp_path / "logs"
    out = run([str(release.venv_python.parent / "tb-ad-layer"), "convert", str(DUMPS / "ad_dsv3"),
               "--logdir", str(logdir), "--run", "dsv3", "--stages", "all", "-q"], env, tmp_path)
    assert "tb-ad-layer:" not in out  # no warning about the compiled modules
    built_index = (release.site_packages / PANEL[0]).read_bytes()
    with running_tensorboard(logdir, tmp_path, python=python, env=env) as tb:
        status, body, _ = tb.get("/data/plugins_listing")
        entry = json.loads(body)["ad_layer"]
        assert status == 200 and entry["enabled"] and entry["tab_name"] == "AD Layers"
        assert entry["loading_mechanism"]["module_path"] == f"{BASE}/index.js"
        status, body, _ = tb.get(f"{BASE}/index.js")
        assert status == 200 and body == built_index  # the built panel, not the placeholder
        assert tb.get(f"{BASE}/static/layout_worker.js")[0] == 200
        status, body, _ = tb.get(f"{BASE}/api/runs")
        assert status == 200 and [r["run"] for r in json.loads(body)["runs"]] == ["dsv3"]
        status, body, _ = tb.get(f"{BASE}/api/layer?run=dsv3&stage=3&layer=1")
        assert status == 200 and json.loads(body)["layer"] == 1


def test_compiled_and_source_modules_write_the_same_store(release: Release, tmp_path: Path) -> None:
    """The compiled modules are the sources, built: on every fixture dump and the dumps
    AutoDeploy's writer produced, both write byte-identical layer documents, or refuse the
    input with the same message."""
    real = REPO.parent / "shared" / "dumps" / "real_writer"
    assert real.is_dir(), f"{real} is missing"
    sources = [d for d in sorted(DUMPS.iterdir()) if d.is_dir()]
    sources += [d for d in sorted(real.iterdir()) if d.is_dir()]
    script = (
        "import json, sqlite3, sys\n"
        "from pathlib import Path\n"
        "from tb_ad_layer.convert import convert\n"
        "from tb_ad_layer.errors import InputError\n"
        "from tb_ad_layer.options import ConvertOptions\n"
        "from tb_ad_layer._compiled import describe\n"
        "out = {'impl': describe(), 'runs': {}}\n"
        "for i, src in enumerate(sys.argv[2:]):\n"
        "    options = ConvertOptions(Path(src), Path(sys.argv[1]), run=f'r{i}', stages=('all',))\n"
        "    try:\n"
        "        res = convert(options)\n"
        "    except InputError as e:\n"
        "        out['runs'][src] = str(e)\n"
        "        continue\n"
        "    con = sqlite3.connect(res.store)\n"
        "    out['runs'][src] = [list(r) for r in con.execute("
        "'SELECT stage, layer, doc FROM layers ORDER BY stage, layer')]"
        " + [list(r) for r in con.execute('SELECT stage, node_count, nodes FROM outside')]\n"
        "print(json.dumps(out))\n")
    results = []
    for pure in ("0", "1"):
        env = dict(release.env, TB_AD_LAYER_PURE_PYTHON=pure)
        proc = subprocess.run([str(release.venv_python), "-c", script, str(tmp_path / pure),
                               *map(str, sources)], env=env, cwd=tmp_path, capture_output=True,
                              text=True, check=True)
        results.append(json.loads(proc.stdout))
    compiled, pure_python = results
    assert compiled["impl"].startswith("compiled with mypyc")
    assert pure_python["impl"].startswith("Python sources")
    assert compiled["runs"].keys() == pure_python["runs"].keys()
    for src, docs in compiled["runs"].items():
        assert docs, src
        assert docs == pure_python["runs"][src], src


def test_without_a_c_compiler_the_wheel_holds_the_sources_and_converts(
        release: Release, tmp_path: Path) -> None:
    env = clean_env(path_without_node_or_compiler(tmp_path / "bin"))
    log = run([sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path / "dist"),
               str(release.sdist)], env, tmp_path)
    assert "no C compiler" in log
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert not [n for n in names if n.endswith((".so", "_compiled_stamp.json"))]
    assert set(PANEL) | set(MODULES) <= set(names)
    # Installed on its own path, in front of the compiled release (which brings the dependencies).
    target = tmp_path / "site"
    run([str(release.venv_python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "--no-deps", "--target", str(target), str(wheel)], release.env, tmp_path)
    script = ("import sys\n"
              "from pathlib import Path\n"
              "from tb_ad_layer.convert import convert\n"
              "from tb_ad_layer.options import ConvertOptions\n"
              "from tb_ad_layer._compiled import describe\n"
              "import tb_ad_layer.dump.reader as reader\n"
              "res = convert(ConvertOptions(Path(sys.argv[1]), Path(sys.argv[2]), run='dsv3'))\n"
              "print(reader.__file__, len(res.stages[0].layers), describe())")
    out = run([str(release.venv_python), "-c", script, str(DUMPS / "ad_dsv3"),
               str(tmp_path / "logs")],
              dict(release.env, PYTHONPATH=str(target)), tmp_path)
    file, layers, impl = out.split(" ", 2)
    assert file == str(target / "tb_ad_layer" / "dump" / "reader.py")
    assert int(layers) > 0 and impl.startswith("Python sources (not compiled: no build stamp")
