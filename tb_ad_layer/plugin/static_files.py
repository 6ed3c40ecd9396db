"""Serve the panel's built assets from ``tb_ad_layer/plugin/static/``.

URL names are looked up in a listing of the directory (refreshed at most every few seconds, so
a rebuilt frontend shows up without restarting TensorBoard); a name is never joined to a path,
so ``..`` or encoded separators cannot leave the directory. File bodies are cached per
(path, mtime, size) together with their gzip form and ETag.

Caching: file names carrying a content hash (``layout_worker.3f9a1c2e.js``) never change, so
browsers may keep them for a year; everything else (``index.js`` above all, whose name is fixed
by TensorBoard's plugin contract) is ``no-cache`` and revalidated by ETag.

When ``index.js`` is missing (the frontend was not built) ``/index.js`` is a tiny module whose
``render()`` says so and how to build it, instead of an error TensorBoard would show as a blank
tab.
"""
from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

from tb_ad_layer.plugin.responses import Payload

STATIC_DIR = Path(__file__).with_name("static")
IMMUTABLE = "public, max-age=31536000, immutable"
_HASHED = re.compile(r"[.-][0-9a-fA-F]{8,}\.[A-Za-z0-9]+$")

CONTENT_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json; charset=utf-8",
    ".map": "application/json; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
    ".wasm": "application/wasm",
}

NOT_BUILT_JS = """\
// tb-ad-layer: the panel's frontend bundle (tb_ad_layer/plugin/static/index.js) was not built.
export function render() {
  document.documentElement.style.colorScheme = "light dark";
  const box = document.createElement("div");
  box.style.cssText = "font: 14px/1.5 system-ui, sans-serif; padding: 24px; max-width: 760px;";
  const title = document.createElement("h2");
  title.textContent = "AD Layers: the frontend was not built";
  const text = document.createElement("p");
  text.textContent = "The tb-ad-layer backend is running, but the panel's JavaScript bundle "
    + "(tb_ad_layer/plugin/static/index.js) is missing. Build it from the source checkout, "
    + "then reload this page (reinstall the package if it is not installed in editable mode):";
  const cmd = document.createElement("pre");
  cmd.style.cssText = "padding: 8px 12px; border: 1px solid #8884; border-radius: 4px;";
  cmd.textContent = "cd frontend && npm ci && npm run build";
  const api = document.createElement("p");
  api.textContent = "The JSON API answers meanwhile, e.g. api/runs under this plugin's URL.";
  box.append(title, text, cmd, api);
  document.body.append(box);
}
"""

#: Where an HTML asset may load from: TensorBoard's own rules for plugin pages.
_HTML_CSP = ("default-src 'self'; script-src 'self' 'unsafe-eval'; style-src 'self' "
             "'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'")


def content_type(name: str) -> str:
    """The Content-Type of a file, by its extension."""
    return CONTENT_TYPES.get(os.path.splitext(name)[1].lower(), "application/octet-stream")


class StaticFiles:
    """The files under one directory, by their ``/``-separated relative names."""

    def __init__(self, directory: str | Path = STATIC_DIR, relist_interval_s: float = 2.0) -> None:
        self.directory = Path(directory)
        self.relist_interval_s = relist_interval_s
        self._lock = threading.Lock()
        self._listed_at_s: float | None = None
        self._files: dict[str, str] = {}
        self._bodies: dict[str, tuple[tuple[int, int, int], Payload]] = {}
        self._fallback = Payload(NOT_BUILT_JS.encode("utf-8"), CONTENT_TYPES[".js"])

    def _listing(self) -> dict[str, str]:
        now_s = time.monotonic()
        if self._listed_at_s is not None and now_s - self._listed_at_s < self.relist_interval_s:
            return self._files
        with self._lock:
            files: dict[str, str] = {}
            root = os.path.realpath(self.directory)
            for base, dirs, names in os.walk(root):  # os.walk does not follow directory links
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                for n in names:
                    path = os.path.join(base, n)
                    if n.startswith(".") or not os.path.isfile(path):
                        continue
                    if not os.path.realpath(path).startswith(root + os.sep):
                        continue  # a file link pointing out of the directory
                    files[os.path.relpath(path, root).replace(os.sep, "/")] = path
            self._files = files
            self._listed_at_s = now_s
        return files

    def names(self) -> list[str]:
        """The ``/``-separated names of every file served, sorted."""
        return sorted(self._listing())

    def get(self, name: str) -> Payload | None:
        """The payload of file ``name`` (relative, ``/``-separated), or None when absent."""
        path = self._listing().get(name)
        if path is None:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        ident = (st.st_ino, st.st_mtime_ns, st.st_size)
        cached = self._bodies.get(name)
        if cached is not None and cached[0] == ident:
            return cached[1]
        try:
            body = Path(path).read_bytes()
        except OSError:
            return None
        cache = IMMUTABLE if _HASHED.search(name) else "no-cache"
        ctype = content_type(name)
        # An HTML asset gets TensorBoard's own rules for plugin pages.
        headers = (("Content-Security-Policy", _HTML_CSP),) if ctype.startswith("text/html") \
            else ()
        payload = Payload(body, ctype, cache_control=cache, headers=headers)
        self._bodies[name] = (ident, payload)
        return payload

    def index_js(self) -> Payload:
        """``index.js``, or the "frontend not built" module when it is missing."""
        payload = self.get("index.js")
        return self._fallback if payload is None else payload
