"""Fixtures for plugin tests: a logdir of converted runs (with and without a fake trace) and a
werkzeug client over the full TensorBoard WSGI app, so routing, the path prefix and
TensorBoard's middlewares are exercised as in production."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_ad_layer.convert import convert
from tb_ad_layer.options import ConvertOptions
from tb_ad_layer.plugin.data import PluginData
from tb_ad_layer.plugin.plugin import AdLayerPlugin, route_table
from tb_ad_layer.plugin.responses import Payload
from tb_ad_layer.plugin.routes import Query
from tb_ad_layer.plugin.static_files import StaticFiles
from tests.conftest import DUMPS
from tests.plugin.fake_trace import convert_with_trace

BASE = "/data/plugin/ad_layer"


def make_logdir(root: Path) -> Path:
    """runs: ``dsv3`` (4 stages, no trace), ``llama``, ``traced/decode`` and
    ``traced/faster`` (last stage of ad_dsv3 with fake traces, B 10% faster)."""
    convert(ConvertOptions(DUMPS / "ad_dsv3", root, run="dsv3", stages=("all",)))
    convert(ConvertOptions(DUMPS / "ad_llama", root, run="llama"))
    convert_with_trace(DUMPS / "ad_dsv3", root, "traced/decode")
    convert_with_trace(DUMPS / "ad_dsv3", root, "traced/faster", scale=0.9)
    return root


@pytest.fixture(scope="session")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A read-only shared logdir (tests that change files make their own)."""
    return make_logdir(tmp_path_factory.mktemp("logdir"))


def make_client(logdir: Path | None, path_prefix: str = "", *, data: PluginData | None = None,
                static: StaticFiles | None = None) -> tuple[Client, AdLayerPlugin]:
    """A client of TensorBoard's WSGI app serving our plugin over ``logdir``, optionally with
    its data layer or static files replaced (before TensorBoard asks for its routes)."""
    plugin = AdLayerPlugin(base_plugin.TBContext(logdir=str(logdir) if logdir else ""))
    if data is not None:
        plugin.data = data
    if static is not None:
        plugin.static = static
    app = application.TensorBoardWSGI([plugin], path_prefix=path_prefix)
    return Client(app), plugin


@pytest.fixture
def client(logdir: Path) -> Iterator[Client]:
    c, _ = make_client(logdir)
    yield c


def answer(data: PluginData, path: str, **params: object) -> Payload:
    """Call the handler of route ``api/<path>`` as a request with ``params`` would (values as
    query strings; None for absent ones). Raises ApiError as the handler does."""
    route = next(r for r in route_table(data, StaticFiles()) if r.path == f"/api/{path}")
    unknown = set(params) - set(route.params)
    assert not unknown, f"{path} takes no {unknown}"
    values = tuple(None if params.get(p) is None else str(params[p]) for p in route.params)
    return route.handler(Query(route.path, values, ""))


def call(data: PluginData, path: str, **params: object) -> Any:
    """:func:`answer`'s body decoded."""
    return json.loads(answer(data, path, **params).body)
