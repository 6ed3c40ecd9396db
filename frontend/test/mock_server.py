#!/usr/bin/env python3
"""Mock of the tb-ad-layer plugin backend for looking at / benchmarking the panel without TensorBoard.

Serves, like TensorBoard 2.x does:
  <prefix>/data/plugin_entry.html?name=ad_layer   the iframe page (same HTML and CSP as TensorBoard)
  <prefix>/data/plugin/ad_layer/index.js           the panel module (es_module_path "/index.js")
  <prefix>/data/plugin/ad_layer/static/<file>      the built panel (tb_ad_layer/plugin/static/)
  <prefix>/data/plugin/ad_layer/api/...            the JSON API of docs/API.md, from fixture files:
      <fixtures>/runs.json, <fixtures>/<run>/layer_<N>.json, overview.json, stages_<N>.json, timeline.json

  python3 test/mock_server.py [--fixtures DIR] [--port 0] [--prefix /some/prefix]
prints "READY http://127.0.0.1:<port><prefix>/data/plugin_entry.html?name=ad_layer" when listening.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import mimetypes
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_STATIC = os.path.normpath(os.path.join(HERE, "..", "..", "tb_ad_layer", "plugin", "static"))
DEFAULT_FIXTURES = os.path.join(HERE, "fixtures")
PLUGIN = "ad_layer"


def entry_page(module_path: str = "/index.js") -> tuple[str, str]:
    script = 'import({}).then((m) => void m.render());'.format(json.dumps("." + module_path))
    sha = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    html = (
        "\n<!DOCTYPE html>\n"
        f'<head><base href="plugin/{PLUGIN}/" /></head>\n'
        f'<body><script type="module">{script}</script></body>\n'
    )
    csp = (
        "default-src 'self'; font-src 'self' data:; frame-ancestors *; frame-src 'self'; "
        "img-src 'self' data: blob:; object-src 'none'; style-src 'self' data: 'unsafe-inline'; "
        f"connect-src 'self'; script-src 'self' 'unsafe-eval' 'sha256-{sha}'"
    )
    return html, csp


class Store:
    def __init__(self, root: str):
        self.root = root
        self._lock = threading.Lock()
        self._cache: dict[str, object] = {}

    def load(self, *parts: str):
        path = os.path.join(self.root, *parts)
        with self._lock:
            if path in self._cache:
                return self._cache[path]
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        with self._lock:
            self._cache[path] = data
        return data

    def runs(self) -> list[dict]:
        return (self.load("runs.json") or {"runs": []})["runs"]


class ApiError(Exception):
    def __init__(self, status: int, msg: str, known=None):
        super().__init__(msg)
        self.status, self.msg, self.known = status, msg, known or []


def compare_response(doc_a: dict, doc_b: dict, a: dict, b: dict) -> dict:
    """A simplified api/compare: nodes paired by (op, position among nodes of that op); a pair is
    changed when shape or dtype differ. Enough to drive the panel without the real backend."""
    by_op: dict[str, list[dict]] = {}
    for n in doc_b["nodes"]:
        by_op.setdefault(n["op"], []).append(n)
    used: dict[str, int] = {}
    matches, only_a = [], []
    matched_b = set()
    for n in doc_a["nodes"]:
        cands = by_op.get(n["op"], [])
        i = used.get(n["op"], 0)
        if i < len(cands):
            m = cands[i]
            used[n["op"]] = i + 1
            matched_b.add(m["id"])
            changes = [f for f in ("shape", "dtype") if n.get(f) != m.get(f)]
            ta, tb = float(n.get("time_us") or 0), float(m.get("time_us") or 0)
            matches.append({"a": n["id"], "b": m["id"], "status": "changed" if changes else "same",
                            "changes": changes, "op": n["op"], "group": n["group"], "a_time_us": ta,
                            "b_time_us": tb, "delta_us": round(tb - ta, 3)})
        else:
            only_a.append(n["id"])
    only_b = [n["id"] for n in doc_b["nodes"] if n["id"] not in matched_b]
    counts = {"same": sum(m["status"] == "same" for m in matches),
              "changed": sum(m["status"] == "changed" for m in matches),
              "only_a": len(only_a), "only_b": len(only_b)}

    def gsum(doc):
        out: dict[str, float] = {}
        for n in doc["nodes"]:
            out[n["group"]] = out.get(n["group"], 0.0) + float(n.get("time_us") or 0)
        return out

    ga, gb = gsum(doc_a), gsum(doc_b)

    def delta(x, y):
        return {"a_us": round(x, 3), "b_us": round(y, 3), "delta_us": round(y - x, 3),
                "delta_pct": round(100 * (y - x) / x, 1) if x > 0 else None}

    groups = [{"group": g, **delta(ga.get(g, 0.0), gb.get(g, 0.0))} for g in sorted(set(ga) | set(gb))]
    ta, tb = sum(ga.values()), sum(gb.values())
    return {"a": {**a, "time_us": ta}, "b": {**b, "time_us": tb}, "matches": matches, "only_a": only_a,
            "only_b": only_b, "counts": counts, "groups": groups, "layer": delta(ta, tb)}


def timeline_response(tl: dict, layer, start, end, max_items: int) -> dict:
    streams = []
    lod = False
    t0 = tl["start_us"] if start is None else start
    t1 = tl["end_us"] if end is None else end
    for s in tl["streams"]:
        ks = [k for k in s["kernels"] if (layer is None or k.get("layer") == layer)
              and k["start_us"] + k["duration_us"] >= t0 and k["start_us"] <= t1]
        out = {key: s[key] for key in ("stream", "label", "device", "busy_us", "busy_share")}
        if layer is not None and ks:
            busy = sum(k["duration_us"] for k in ks)
            span = max(k["start_us"] + k["duration_us"] for k in ks) - min(k["start_us"] for k in ks)
            out["busy_us"] = round(busy, 3)
            out["busy_share"] = round(busy / span, 4) if span > 0 else 0
        if len(ks) > max_items:
            lod = True
            n = 2000
            width = (t1 - t0) / n if t1 > t0 else 1
            buckets = [{"start_us": t0 + i * width, "end_us": t0 + (i + 1) * width, "count": 0,
                        "busy_us": 0.0} for i in range(n)]

            for k in ks:
                i = min(n - 1, max(0, int((k["start_us"] - t0) / width)))
                buckets[i]["count"] += 1
                buckets[i]["busy_us"] += k["duration_us"]
            out["kernels"] = []
            out["buckets"] = [b for b in buckets if b["count"]]
        else:
            out["kernels"] = ks
            out["buckets"] = []
        if layer is None or ks:
            streams.append(out)
    return {"start_us": t0, "end_us": t1, "lod": lod, "streams": streams}


class Handler(BaseHTTPRequestHandler):
    store: Store
    static_dir: str
    prefix: str
    quiet = True
    max_items_cap = 0  # > 0: clamp the timeline's max_items (exercises the server-side LOD path)

    def log_message(self, fmt, *args):  # noqa: D401
        if not self.quiet:
            sys.stderr.write(f"{self.address_string()} - {fmt % args}\n")

    def _send(self, status: int, body: bytes, ctype: str, extra: dict | None = None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the page went away (e.g. a benchmark closed it mid-request)

    def _json(self, obj, status: int = 200):
        self._send(status, json.dumps(obj).encode(), "application/json; charset=utf-8")

    def do_GET(self):  # noqa: N802
        url = urlparse(self.path)
        path = url.path
        if self.prefix:
            if not path.startswith(self.prefix):
                return self._send(404, b"not found", "text/plain")
            path = path[len(self.prefix):] or "/"
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if path in ("/", "/index.html"):
            self.send_response(302)
            self.send_header("Location", f"{self.prefix}/data/plugin_entry.html?name={PLUGIN}")
            self.end_headers()
            return
        if path == "/data/plugin_entry.html":
            if q.get("name") != PLUGIN:
                return self._send(404, b"unknown plugin", "text/plain")
            html, csp = entry_page()
            return self._send(200, html.encode(), "text/html; charset=utf-8",
                              {"Content-Security-Policy": csp})
        base = f"/data/plugin/{PLUGIN}/"
        if not path.startswith(base):
            return self._send(404, b"not found", "text/plain")
        rest = path[len(base):]
        if rest == "index.js":  # the plugin's es_module_path, like the real backend
            rest = "static/index.js"
        if rest.startswith("static/"):
            name = rest[len("static/"):]
            full = os.path.normpath(os.path.join(self.static_dir, name))
            if not full.startswith(self.static_dir + os.sep) or not os.path.isfile(full):
                return self._send(404, b"not found", "text/plain")
            ctype = mimetypes.guess_type(full)[0] or "application/octet-stream"
            if full.endswith(".js"):
                ctype = "text/javascript; charset=utf-8"
            with open(full, "rb") as f:
                return self._send(200, f.read(), ctype)
        if rest.startswith("api/"):
            try:
                return self._api(rest[len("api/"):], q)
            except ApiError as e:
                return self._json({"error": e.msg, "known": e.known}, e.status)
        return self._send(404, b"not found", "text/plain")

    # --- API -----------------------------------------------------------------------------------
    def _run(self, q) -> dict:
        name = q.get("run")
        runs = self.store.runs()
        if not name:
            raise ApiError(400, "missing parameter: run", [r["run"] for r in runs])
        for r in runs:
            if r["run"] == name:
                return r
        raise ApiError(404, f"unknown run: {name}", [r["run"] for r in runs])

    def _stage(self, run: dict, q) -> int:
        s = q.get("stage", "last")
        known = [st["index"] for st in run["stages"]]
        if s == "last":
            return run["default_stage"]
        if not s.lstrip("-").isdigit() or int(s) not in known:
            raise ApiError(404 if s.lstrip("-").isdigit() else 400, f"unknown stage: {s}", known)
        return int(s)

    def _layer(self, run: dict, q, required=True):
        s = q.get("layer")
        known = [layer["layer"] for layer in run["layers"]]
        if s is None:
            if required:
                raise ApiError(400, "missing parameter: layer", known)
            return None
        if not s.isdigit():
            raise ApiError(400, f"bad layer: {s}", known)
        if int(s) not in known:
            raise ApiError(404, f"unknown layer: {s}", known)
        return int(s)

    def _api(self, route: str, q):
        if route == "runs":
            return self._json({"runs": self.store.runs()})
        if route == "compare":
            sides = {}
            for side in ("a", "b"):
                sq = {"run": q.get(f"{side}_run", ""), "stage": q.get(f"{side}_stage", "last"),
                      "layer": q.get(f"{side}_layer")}
                r = self._run(sq)
                st = self._stage(r, sq)
                ly = self._layer(r, sq)
                sides[side] = (r["run"], {"run": r["run"], "stage": st, "layer": ly})
            doc_a = self.store.load(sides["a"][0], f"layer_{sides['a'][1]['layer']}.json")
            doc_b = self.store.load(sides["b"][0], f"layer_{sides['b'][1]['layer']}.json")
            return self._json(compare_response(doc_a, doc_b, sides["a"][1], sides["b"][1]))
        run = self._run(q)
        rd = run["run"]
        if route == "layer":
            stage = self._stage(run, q)
            layer = self._layer(run, q)
            data = dict(self.store.load(rd, f"layer_{layer}.json"))
            data["stage"] = stage
            return self._json(data)
        if route == "overview":
            self._stage(run, q)
            return self._json(self.store.load(rd, "overview.json"))
        if route == "stages":
            layer = self._layer(run, q)
            return self._json(self.store.load(rd, f"stages_{layer}.json"))
        if route == "timeline":
            tl = self.store.load(rd, "timeline.json")
            if tl is None:
                raise ApiError(404, f"run {rd} has no trace", [])
            layer = self._layer(run, q, required=False)
            try:
                start = float(q["start_us"]) if "start_us" in q else None
                end = float(q["end_us"]) if "end_us" in q else None
                max_items = int(q.get("max_items", 4000))
                if self.max_items_cap:
                    max_items = min(max_items, self.max_items_cap)
            except ValueError as e:
                raise ApiError(400, f"bad number: {e}") from e
            return self._json(timeline_response(tl, layer, start, end, max_items))
        if route.startswith("download/"):
            kind = route[len("download/"):]
            if kind == "layer.json":
                layer = self._layer(run, q)
                body = json.dumps(self.store.load(rd, f"layer_{layer}.json"), indent=1).encode()
                return self._send(200, body, "application/json", attachment(f"{rd}_layer{layer}.json"))
            if kind == "layer.dot":
                layer = self._layer(run, q)
                return self._send(200, b"digraph layer {}\n", "text/vnd.graphviz",
                                  attachment(f"{rd}_layer{layer}.dot"))
            if kind == "trace.json":
                return self._send(200, b'{"traceEvents": []}', "application/json", attachment("trace.json"))
        raise ApiError(404, f"unknown route: api/{route}",
                       ["runs", "layer", "overview", "stages", "timeline", "compare"])


def attachment(filename: str) -> dict[str, str]:
    """The header that makes a browser save a response as ``filename``."""
    return {"Content-Disposition": f'attachment; filename="{filename}"'}


def serve(fixtures: str, static_dir: str, port: int = 0, prefix: str = "", verbose: bool = False,
          max_items_cap: int = 0) -> ThreadingHTTPServer:
    handler = type("H", (Handler,), {
        "store": Store(os.path.abspath(fixtures)), "static_dir": os.path.abspath(static_dir),
        "prefix": prefix.rstrip("/"), "quiet": not verbose, "max_items_cap": max_items_cap,
    })
    httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
    httpd.daemon_threads = True
    return httpd


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fixtures", default=DEFAULT_FIXTURES)
    ap.add_argument("--static", default=DEFAULT_STATIC)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--prefix", default="")
    ap.add_argument("--max-items-cap", type=int, default=0,
                    help="clamp timeline max_items (forces merged buckets)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    httpd = serve(a.fixtures, a.static, a.port, a.prefix, a.verbose, a.max_items_cap)
    host, port = httpd.server_address[:2]
    url = f"http://{host}:{port}{a.prefix.rstrip('/')}/data/plugin_entry.html?name={PLUGIN}"
    print(f"READY {url}", flush=True)

    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
