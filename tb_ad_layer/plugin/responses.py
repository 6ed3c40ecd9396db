"""Response bodies and their HTTP framing.

A :class:`Payload` is an encoded body plus what HTTP needs to send it. The data layer caches
payloads per store version, so the gzip form and the ETag of a layer document are computed once
and every later request is a dictionary lookup and a socket write. How hard a body is
compressed is its route's choice (:mod:`tb_ad_layer.plugin.routes`).

Every response carries ``X-Content-Type-Options: nosniff`` and a Content-Type (TensorBoard's
security middleware checks both). API bodies are ``no-cache`` with an ETag: the browser keeps
them but revalidates, because a run can be re-converted under the same name at any time; the
revalidation is a 304 without a body, which matters through a slow SSH port forward.
"""
from __future__ import annotations

import gzip
import hashlib
import re
import threading
from typing import Any

from werkzeug import wrappers

from tb_ad_layer.contract.record import encode
from tb_ad_layer.plugin.errors import ApiError

JSON = "application/json; charset=utf-8"
NO_CACHE = "no-cache"
#: Bodies smaller than this are sent as they are: gzip would cost more than it saves.
GZIP_MIN_BYTES = 1024
_COMPRESSIBLE = ("application/json", "text/", "application/javascript", "image/svg+xml",
                 "application/wasm")
_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")


class Payload:
    """An encoded response body; its gzip form and ETag are computed on first use and kept."""

    __slots__ = ("body", "content_type", "filename", "cache_control", "headers", "_gz",
                 "_gz_lock", "_etag")

    def __init__(self, body: bytes, content_type: str, *, filename: str | None = None,
                 cache_control: str = NO_CACHE,
                 headers: tuple[tuple[str, str], ...] = ()) -> None:
        self.body = body
        self.content_type = content_type
        self.filename = filename
        self.cache_control = cache_control
        self.headers = headers
        self._gz: bytes | None = None
        self._gz_lock = threading.Lock()
        self._etag: str | None = None

    @property
    def compressible(self) -> bool:
        """Whether gzip is worth it: a text-like body of at least ``GZIP_MIN_BYTES``."""
        return len(self.body) >= GZIP_MIN_BYTES and self.content_type.startswith(_COMPRESSIBLE)

    def gzipped(self, level: int = 6) -> bytes:
        """The body gzip-compressed at ``level`` (``mtime=0`` so equal bodies give equal
        bytes). Compressed once: fifty clients asking for a fresh answer at once wait for one
        compression instead of each doing it."""
        if self._gz is None:
            with self._gz_lock:
                if self._gz is None:
                    self._gz = gzip.compress(self.body, compresslevel=level, mtime=0)
        return self._gz

    @property
    def etag(self) -> str:
        """A strong ETag: a hash of the body, computed once."""
        if self._etag is None:
            self._etag = '"' + hashlib.blake2b(self.body, digest_size=12).hexdigest() + '"'
        return self._etag

    @property
    def size_bytes(self) -> int:
        """Bytes held (for the cache's budget), counting the gzip form once it exists."""
        return len(self.body) + (len(self._gz) if self._gz is not None else 0)


def json_payload(obj: Any) -> Payload:
    """``obj`` (contract records, or plain JSON values) as compact UTF-8 JSON. Non-finite
    floats are written as null, so the body is always valid JSON."""
    return Payload(encode(obj), JSON)


def safe_filename(name: str, default: str = "download") -> str:
    """A file name safe in a Content-Disposition header (ASCII letters, digits, ``._-``)."""
    clean = _UNSAFE_FILENAME.sub("_", name).strip("._") or default
    return clean[:200]


def accepts_gzip(request: wrappers.Request) -> bool:
    """Whether Accept-Encoding allows gzip (``gzip``, ``x-gzip`` or ``*``, unless ``q=0``)."""
    for item in request.headers.get("Accept-Encoding", "").lower().split(","):
        coding, _, params = item.partition(";")
        if coding.strip() not in ("gzip", "x-gzip", "*"):
            continue
        q = params.strip()
        if q.startswith("q="):
            try:
                return float(q[2:]) > 0
            except ValueError:
                return False
        return True
    return False


class _NotModified(wrappers.Response):
    """A 304 that keeps its Content-Type: werkzeug drops entity headers from a 304, and
    TensorBoard's security middleware logs a warning for every response without one."""

    def get_wsgi_headers(self, environ: Any) -> Any:
        headers = super().get_wsgi_headers(environ)
        if "Content-Type" not in headers and self.mimetype:
            headers["Content-Type"] = self.content_type
        return headers


def respond(request: wrappers.Request, payload: Payload, *, gzip_level: int = 6,
            status: int = 200) -> wrappers.Response:
    """Send ``payload``: 304 when the client's ETag matches, gzip (at ``gzip_level``; 0 never)
    when accepted and worth it."""
    headers = [("X-Content-Type-Options", "nosniff"), ("Cache-Control", payload.cache_control)]
    headers += payload.headers
    if payload.filename:
        headers.append(("Content-Disposition", f'attachment; filename="{payload.filename}"'))
    if status == 200:
        headers.append(("ETag", payload.etag))
        if payload.etag in request.headers.get("If-None-Match", ""):
            return _NotModified(None, status=304, headers=headers,
                                content_type=payload.content_type)
    body = payload.body
    if gzip_level > 0 and payload.compressible:
        headers.append(("Vary", "Accept-Encoding"))
        if accepts_gzip(request):
            body = payload.gzipped(gzip_level)
            headers.append(("Content-Encoding", "gzip"))
    headers.append(("Content-Length", str(len(body))))
    # werkzeug drops the body of HEAD responses itself, keeping the headers.
    return wrappers.Response(body, status=status, headers=headers,
                             content_type=payload.content_type)


def error_response(request: wrappers.Request, err: ApiError) -> wrappers.Response:
    """The contract's error body ``{"error", "known"}`` with the error's status."""
    return respond(request, json_payload(err.body()), status=err.status)
