"""What a route is, and how one becomes a werkzeug app: the machinery under the route table.

The table itself (:func:`tb_ad_layer.plugin.plugin.route_table`) lists every URL the plugin
serves with the query parameters it reads, the function that answers it and how hard its
answers are compressed; everything a request goes through before and after that function
(method check, parameters, error bodies, framing) is here, once for all routes.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, NamedTuple

from werkzeug import wrappers

from tb_ad_layer.metadata import ROUTE_PREFIX
from tb_ad_layer.plugin.errors import NOT_ALLOWED, NOT_FOUND, ApiError, show
from tb_ad_layer.plugin.responses import Payload, error_response, json_payload, respond

logger = logging.getLogger(__name__)


WsgiApp = Callable[..., Any]


class Query(NamedTuple):
    """A request as a route's handler sees it."""

    path: str                           #: the route's path (part of every cache key)
    values: tuple[str | None, ...]      #: the route's parameters in its order; None if absent
    tail: str                           #: what follows a wildcard route's ``/`` ("" otherwise)


class Route(NamedTuple):
    """One URL of the plugin, under ``<prefix>/data/plugin/ad_layer``."""

    path: str                           #: e.g. ``/api/layer``; a trailing ``/*`` is a wildcard
    params: tuple[str, ...]             #: query parameters read (any others are ignored, so
                                        #: cache busters neither fail nor fragment the cache)
    handler: Callable[[Query], Payload]
    gzip_level: int                     #: gzip level of its answers; 0: never compressed


def _tail(request: wrappers.Request, route: Route) -> str:
    """What follows a wildcard route's ``/`` in the (already URL-decoded) request path."""
    if not route.path.endswith("/*"):
        return ""
    marker = ROUTE_PREFIX + route.path[:-1]
    path = request.path
    i = path.find(marker)
    return path[i + len(marker):] if i >= 0 else ""


def wsgi_app(route: Route) -> WsgiApp:
    """The werkzeug app serving ``route``: GET and HEAD only, every refusal a JSON error body,
    every unexpected failure a logged traceback and a JSON 500."""

    @wrappers.Request.application
    def app(request: wrappers.Request) -> wrappers.Response:
        if request.method not in ("GET", "HEAD"):
            return error_response(request, ApiError(
                NOT_ALLOWED, f"method {request.method} not allowed", ["GET", "HEAD"]))
        query = Query(route.path, tuple(request.args.get(p) for p in route.params),
                      _tail(request, route))
        try:
            payload = route.handler(query)
        except ApiError as e:
            return error_response(request, e)
        except Exception as e:  # a bug: log the traceback, answer in the API's error shape
            logger.exception("ad_layer: %s failed", request.path)
            return respond(request, json_payload({"error": f"internal error: {type(e).__name__}",
                                                  "known": []}), status=500)
        return respond(request, payload, gzip_level=route.gzip_level)

    return app


def not_found_app(what: str, known: list[str]) -> WsgiApp:
    """The app for a wildcard that catches unknown paths: a JSON 404 listing ``known``."""

    @wrappers.Request.application
    def app(request: wrappers.Request) -> wrappers.Response:
        name = request.path.rsplit("/", 1)[-1]
        return error_response(request, ApiError(NOT_FOUND, f"unknown {what} {show(name)}", known))

    return app
