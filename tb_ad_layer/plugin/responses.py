"""Response bodies and their HTTP framing.

A :class:`Payload` is an encoded body plus what HTTP needs to send it. The data layer caches
payloads per store version, so the gzip form and the ETag of a layer document are computed once
and every later request is a dictionary lookup and a socket write.

Every response carries ``X-Content-Type-Options: nosniff`` and a Content-Type (TensorBoard's
security middleware checks both). API bodies are ``no-cache`` with an ETag: the browser keeps
them but revalidates, because a run can be re-converted under the same name at any time; the
revalidation is a 304 without a body, which matters through a slow SSH port forward.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import re
from typing import Any

from werkzeug import wrappers

from tb_ad_layer.plugin.errors import ApiError

JSON = "application/json; charset=utf-8"
NO_CACHE = "no-cache"
#: Bodies smaller than this are sent as they are: gzip would cost more than it saves.
GZIP_MIN_BYTES = 1024
_COMPRESSIBLE = ("application/json", "text/", "application/javascript", "image/svg+xml",
                 "application/wasm")
_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")


class Payload:
    """An encoded response body; gzip form and ETag are computed on first use and kept.

    ``gzip_level`` 6 suits answers that are computed once and served many times (layer
    documents, static files); answers that change per request use a faster level."""

    __slots__ = ("body", "content_type", "filename", "cache_control", "gzip_level", "_gz",
                 "_etag")

    def __init__(self, body: bytes, content_type: str, *, filename: str | None = None,
                 cache_control: str = NO_CACHE, gzip_level: int = 6) -> None:
        self.body = body
        self.gzip_level = gzip_level
        self.content_type = content_type
        self.filename = filename
        self.cache_control = cache_control
        self._gz: bytes | None = None
        self._etag: str | None = None

    @property
    def compressible(self) -> bool:
        return len(self.body) >= GZIP_MIN_BYTES and self.content_type.startswith(_COMPRESSIBLE)

    def gzipped(self) -> bytes:
        """The body gzip-compressed (``mtime=0`` so equal bodies give equal bytes)."""
        if self._gz is None:
            # A benign race: two threads may both compress; either result is the same.
            self._gz = gzip.compress(self.body, compresslevel=self.gzip_level, mtime=0)
        return self._gz

    @property
    def etag(self) -> str:
        if self._etag is None:
            self._etag = '"' + hashlib.blake2b(self.body, digest_size=12).hexdigest() + '"'
        return self._etag

    @property
    def size(self) -> int:
        """Bytes held (for the cache's budget), counting the gzip form once it exists."""
        return len(self.body) + (len(self._gz) if self._gz is not None else 0)


def json_payload(obj: Any) -> Payload:
    """``obj`` as compact UTF-8 JSON. NaN/Infinity are not JSON, so they raise here rather than
    reach a browser that cannot parse them."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return Payload(text.encode("utf-8"), JSON)


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


def respond(request: wrappers.Request, payload: Payload, status: int = 200,
            extra_headers: list[tuple[str, str]] | None = None) -> wrappers.Response:
    """Send ``payload``: 304 when the client's ETag matches, gzip when accepted and worth it."""
    headers = [("X-Content-Type-Options", "nosniff"), ("Cache-Control", payload.cache_control)]
    headers += extra_headers or []
    if payload.filename:
        headers.append(("Content-Disposition", f'attachment; filename="{payload.filename}"'))
    if status == 200:
        headers.append(("ETag", payload.etag))
        if payload.etag in request.headers.get("If-None-Match", ""):
            return wrappers.Response(None, status=304, headers=headers,
                                     content_type=payload.content_type)
    body = payload.body
    if payload.compressible:
        headers.append(("Vary", "Accept-Encoding"))
        if accepts_gzip(request):
            body = payload.gzipped()
            headers.append(("Content-Encoding", "gzip"))
    headers.append(("Content-Length", str(len(body))))
    # werkzeug drops the body of HEAD responses itself, keeping the headers.
    return wrappers.Response(body, status=status, headers=headers,
                             content_type=payload.content_type)


def error_response(request: wrappers.Request, err: ApiError) -> wrappers.Response:
    """The contract's error body ``{"error", "known"}`` with the error's status."""
    return respond(request, json_payload(err.body()), status=err.status)
