"""The TensorBoard plugin and its route table: every URL it serves, in one place.

TensorBoard finds :class:`AdLayerPlugin` through the ``tensorboard_plugins`` entry point and
serves each route of :meth:`AdLayerPlugin.get_plugin_apps` under ``<prefix>/data/plugin/ad_layer/``.
The panel runs in an iframe that imports ``index.js`` and calls its ``render()``; it then uses only
relative URLs (``api/...``, ``static/...``), which is what makes ``--path_prefix`` and SSH port
forwarding work.

The plugin reads its own run stores from ``context.logdir`` and never the event multiplexer,
which is None under TensorBoard's default fast loader and would only hold downsampled data
anyway; so it behaves the same with ``--load_fast=true`` and ``--load_fast=false``.
"""
from __future__ import annotations

import logging

from tensorboard.plugins import base_plugin

from tb_ad_layer.metadata import DISPLAY_NAME, PLUGIN_NAME
from tb_ad_layer.plugin.analysis import AnalysisRoutes
from tb_ad_layer.plugin.data import PluginData
from tb_ad_layer.plugin.errors import NOT_FOUND, ApiError, show
from tb_ad_layer.plugin.responses import Payload
from tb_ad_layer.plugin.routes import Query, Route, WsgiApp, not_found_app, wsgi_app
from tb_ad_layer.plugin.static_files import StaticFiles

logger = logging.getLogger(__name__)

#: gzip level of every answer. Level 1: a user waits for the first answer of each layer (the
#: browser keeps it afterwards, by ETag), and on the largest layer document of the 48-layer
#: Qwen3-Next export (543 KB of JSON) level 6 took 14.5 ms, more than reading, decompressing and
#: checking the stored document together (4.9 ms), against 2.3 ms at level 1 for 46 KB instead of
#: 35 KB on the wire. Timeline windows change at every pan: the same holds for them.
GZIP = 1


def route_table(data: PluginData, static: StaticFiles) -> tuple[Route, ...]:
    """Every route of the plugin (docs/API.md): path, parameters, handler, gzip level."""

    def static_file(q: Query) -> Payload:
        payload = static.get(q.tail)
        if payload is None:
            raise ApiError(NOT_FOUND, f"no static file {show(q.tail)}")
        return payload

    layer = ("run", "stage", "layer")
    analysis = AnalysisRoutes(data)
    return (
        Route("/index.js", (), lambda q: static.index_js(), GZIP),
        Route("/static/*", (), static_file, GZIP),
        Route("/api/runs", (), data.runs_payload, GZIP),
        Route("/api/layer", layer + ("rank",), data.layer_payload, GZIP),
        Route("/api/overview", ("run", "stage"), data.overview_payload, GZIP),
        Route("/api/stage_graph", ("run", "stage"), data.stage_graph_payload, GZIP),
        Route("/api/stages", ("run", "layer"), data.stages_payload, GZIP),
        Route("/api/timeline", ("run", "layer", "start_us", "end_us", "max_items", "rank"),
              data.timeline_payload, GZIP),
        Route("/api/compare", ("a_run", "a_stage", "a_layer", "b_run", "b_stage", "b_layer"),
              data.compare_payload, GZIP),
        Route("/api/download/layer.json", layer, data.layer_json_payload, GZIP),
        Route("/api/download/layer.dot", layer, data.layer_dot_payload, GZIP),
        Route("/api/download/trace.json", ("run",), data.trace_json_payload, GZIP),
        Route("/api/report", ("run", "dim", "gpu"), analysis.report_payload, GZIP),
        Route("/api/ranks", ("run", "stage"), analysis.ranks_payload, GZIP),
        Route("/api/diff", ("a_run", "b_run", "gate"), analysis.diff_payload, GZIP),
    )


def _local_logdir(context: base_plugin.TBContext) -> str | None:
    """The logdir if it is a local directory; remote ones (``gs://``) hold no run stores we
    could open with SQLite, and ``--logdir_spec`` leaves it empty."""
    logdir = getattr(context, "logdir", None)
    if not logdir or "://" in logdir:
        return None
    return str(logdir)


class AdLayerPlugin(base_plugin.TBPlugin):  # type: ignore[misc]  # TensorBoard has no types
    """The "AD Layers" tab: per-layer AutoDeploy FX graphs with GPU kernels per node."""

    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext) -> None:
        # Nothing here may fail or touch the disk: TensorBoard constructs every plugin at
        # start-up, and discovery happens on the first request instead.
        self.data = PluginData(_local_logdir(context))
        self.static = StaticFiles()

    def is_active(self) -> bool:
        """True when the logdir holds at least one run store (rescanned at most every 2 s)."""
        try:
            return self.data.discovery.has_runs()
        except Exception:  # never take TensorBoard's plugin listing down
            logger.exception("ad_layer: discovery failed")
            return False

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        """The panel's ES module and the tab's name, for TensorBoard's frontend."""
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name=DISPLAY_NAME,
                                            disable_reload=True)

    def get_plugin_apps(self) -> dict[str, WsgiApp]:
        """One app per route of :func:`route_table`, plus JSON 404s for unknown API paths
        (listing what exists) instead of TensorBoard's plain-text one."""
        routes = route_table(self.data, self.static)
        apps = {r.path: wsgi_app(r) for r in routes}
        downloads = [r.path.rsplit("/", 1)[-1] for r in routes
                     if r.path.startswith("/api/download/")]
        endpoints = [r.path[1:] for r in routes if r.path.startswith("/api/")]
        apps["/api/download/*"] = not_found_app("download", downloads)
        apps["/api/*"] = not_found_app("endpoint", endpoints)
        return apps
