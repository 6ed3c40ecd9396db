"""The TensorBoard plugin: thin werkzeug handlers over :class:`~tb_ad_layer.plugin.data.PluginData`.

TensorBoard finds this class through the ``tensorboard_plugins`` entry point and serves each
route of :meth:`AdLayerPlugin.get_plugin_apps` under ``<prefix>/data/plugin/ad_layer/``. The
panel runs in an iframe that imports ``index.js`` and calls its ``render()``; it then uses only
relative URLs (``api/...``, ``static/...``), which is what makes ``--path_prefix`` and SSH port
forwarding work.

The plugin reads its own run stores from ``context.logdir`` and never the event multiplexer,
which is None under TensorBoard's default fast loader and would only hold downsampled data
anyway; so it behaves the same with ``--load_fast=true`` and ``--load_fast=false``.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from tb_ad_layer.plugin.data import DOWNLOADS, PluginData
from tb_ad_layer.plugin.errors import ApiError, show
from tb_ad_layer.plugin.responses import Payload, error_response, json_payload, respond
from tb_ad_layer.plugin.static_files import StaticFiles

logger = logging.getLogger(__name__)

PLUGIN_NAME = "ad_layer"
ROUTE_PREFIX = f"/data/plugin/{PLUGIN_NAME}"
API_ENDPOINTS = ("runs", "layer", "overview", "stages", "timeline", "compare")

WsgiApp = Callable[..., Any]


def _local_logdir(context: base_plugin.TBContext) -> str | None:
    """The logdir if it is a local directory; remote ones (``gs://``) hold no run stores we
    could open with SQLite, and ``--logdir_spec`` leaves it empty."""
    logdir = getattr(context, "logdir", None)
    if not logdir or "://" in logdir:
        return None
    return logdir


class AdLayerPlugin(base_plugin.TBPlugin):
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
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="AD Layers",
                                            disable_reload=True)

    def get_plugin_apps(self) -> dict[str, WsgiApp]:
        apps: dict[str, WsgiApp] = {
            "/index.js": self._serve_index,
            "/static/*": self._serve_static,
            "/api/download/*": self._serve_download,
        }
        for endpoint in API_ENDPOINTS:
            apps[f"/api/{endpoint}"] = self._api_app(endpoint)
        return apps

    # -- handlers ---------------------------------------------------------------------------

    @staticmethod
    def _answer(request: wrappers.Request, produce: Callable[[], Payload],
                extra_headers: list[tuple[str, str]] | None = None) -> wrappers.Response:
        """Run ``produce`` and frame its payload; every failure becomes a JSON error body."""
        if request.method not in ("GET", "HEAD"):
            return error_response(request, ApiError(405, f"method {request.method} not allowed",
                                                    ["GET", "HEAD"]))
        try:
            return respond(request, produce(), extra_headers=extra_headers)
        except ApiError as e:
            return error_response(request, e)
        except Exception as e:  # a bug: log the traceback, answer in the API's error shape
            logger.exception("ad_layer: %s failed", request.path)
            return respond(request, json_payload({"error": f"internal error: {type(e).__name__}",
                                                  "known": []}), status=500)

    def _api_app(self, endpoint: str) -> WsgiApp:
        @wrappers.Request.application
        def app(request: wrappers.Request) -> wrappers.Response:
            return self._answer(request, lambda: self.data.payload(endpoint, request.args))
        return app

    @staticmethod
    def _tail(request: wrappers.Request, route: str) -> str:
        """What follows ``<plugin>/<route>/`` in the (already URL-decoded) request path."""
        marker = f"{ROUTE_PREFIX}/{route}/"
        path = request.path
        i = path.find(marker)
        return path[i + len(marker):] if i >= 0 else ""

    @wrappers.Request.application
    def _serve_download(self, request: wrappers.Request) -> wrappers.Response:
        what = self._tail(request, "api/download")

        def produce() -> Payload:
            if what not in DOWNLOADS:
                raise ApiError(404, f"unknown download {show(what)}", list(DOWNLOADS))
            return self.data.payload(f"download/{what}", request.args)
        return self._answer(request, produce)

    @wrappers.Request.application
    def _serve_index(self, request: wrappers.Request) -> wrappers.Response:
        return self._answer(request, self.static.index_js)

    @wrappers.Request.application
    def _serve_static(self, request: wrappers.Request) -> wrappers.Response:
        name = self._tail(request, "static")
        payload = self.static.get(name)
        if payload is None:
            return error_response(request, ApiError(404, f"no static file {show(name)}"))
        return self._answer(request, lambda: payload, self.static.extra_headers(payload))
