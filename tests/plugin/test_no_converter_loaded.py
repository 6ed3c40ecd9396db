"""The plugin reads the run store only: serving every route loads no module of the converter.

TensorBoard imports the plugin in every process that serves a logdir, often on a machine where
only the stores were copied; the converter (``dump``, ``layers``, ``trace``) is megabytes of code
and seconds of import (compiled modules included) that the plugin must not need. Every fact the
panel shows (a weight's role too) is stored in the document at conversion, and the downloads are
written by :mod:`tb_ad_layer.export` from stored records.

The check runs in a fresh interpreter: this test process has loaded the converter long ago.
"""
from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO

CONVERTER = ("tb_ad_layer.dump", "tb_ad_layer.layers", "tb_ad_layer.trace")

# Imports the TensorBoard entry point and every plugin module, answers every route of the
# plugin's table over the committed demo logdir, and prints what it asked, what failed and
# which converter modules are loaded.
SCRIPT = r"""
import importlib, json, pkgutil, sys
from importlib.metadata import entry_points

(ep,) = [e for e in entry_points(group="tensorboard_plugins") if e.name == "ad_layer"]
plugin_class = ep.load()
import tb_ad_layer.plugin as package
for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
    importlib.import_module(info.name)

from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_ad_layer.plugin.plugin import route_table
from tb_ad_layer.plugin.static_files import StaticFiles

logdir, converter = sys.argv[1], sys.argv[2].split(",")
plugin = plugin_class(base_plugin.TBContext(logdir=logdir))
client = Client(application.TensorBoardWSGI([plugin]))
base = "/data/plugin/ad_layer"

def get(path, **params):
    r = client.get(base + path, query_string={k: str(v) for k, v in params.items()})
    asked.append(path)
    if r.status_code != 200:
        failed.append(f"{path} {params}: {r.status_code} {r.get_data(as_text=True)[:200]}")
    return r

asked, failed = [], []
runs = json.loads(get("/api/runs").get_data())["runs"]
readable = [r for r in runs if r["error"] is None]
if not readable:
    failed.append(f"no readable run: {runs}")
get("/index.js")
get("/static/layout_worker.js")
for run in readable:
    name = run["run"]
    stage = run["default_stage"]
    get("/api/overview", run=name, stage=stage)
    get("/api/stage_graph", run=name, stage=stage)
    for row in run["layers"]:
        layer = row["layer"]
        get("/api/layer", run=name, stage=stage, layer=layer)
        get("/api/stages", run=name, layer=layer)
        get("/api/download/layer.json", run=name, stage=stage, layer=layer)
        get("/api/download/layer.dot", run=name, stage=stage, layer=layer)
        get("/api/timeline", run=name, layer=layer, max_items=50)
    get("/api/timeline", run=name)
    if run["trace"] is not None:
        get("/api/download/trace.json", run=name)
    first, last = run["layers"][0]["layer"], run["layers"][-1]["layer"]
    get("/api/compare", a_run=name, a_stage=stage, a_layer=first, b_run=readable[0]["run"],
        b_layer=readable[0]["layers"][-1]["layer"])
    get("/api/compare", a_run=name, a_layer=first, b_layer=last)
traced = [r["run"] for r in readable if r["trace"] is not None]
for name in traced:
    get("/api/report", run=name)
    get("/api/ranks", run=name)
for run in readable:
    for rank in run["ranks"][1:2]:
        get("/api/layer", run=run["run"], stage=run["default_stage"],
            layer=run["layers"][0]["layer"], rank=rank)
        get("/api/timeline", run=run["run"], rank=rank, max_items=50)
if traced:
    get("/api/diff", a_run=traced[0], b_run=traced[-1])
routes = [r.path.replace("*", "layout_worker.js")
          for r in route_table(plugin.data, StaticFiles())]
print(json.dumps({
    "unasked": sorted(set(routes) - set(asked)),
    "failed": failed,
    "loaded": sorted(m for m in sys.modules
                     if any(m == p or m.startswith(p + ".") for p in converter)),
}))
"""


def test_serving_every_route_loads_no_converter_module() -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(REPO / "demo_logs"), ",".join(CONVERTER)],
                          capture_output=True, text=True, cwd=REPO, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["failed"] == [], "\n".join(report["failed"])
    assert report["unasked"] == [], "a route of the plugin is not asked here: ask it"
    assert report["loaded"] == [], f"the plugin loaded {len(report['loaded'])} converter modules"
