"""HTTP handlers through TensorBoard's own WSGI app (routing, path prefix, middlewares)."""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import msgspec
import pytest
from werkzeug.test import Client

from tb_ad_layer.contract.api import (
    CompareResponse,
    ErrorBody,
    LayerResponse,
    OverviewResponse,
    StageGraphResponse,
    StagesResponse,
    TimelineResponse,
    decode_runs,
)
from tb_ad_layer.plugin.data import PluginData
from tb_ad_layer.plugin.static_files import StaticFiles
from tests.plugin.conftest import BASE, make_client

ENDPOINTS = [
    "api/runs",
    "api/layer?run=dsv3&layer=3",
    "api/layer?run=traced/decode&stage=last&layer=2",
    "api/overview?run=dsv3&stage=1",
    "api/stage_graph?run=dsv3&stage=1",
    "api/stage_graph?run=traced/decode",
    "api/stages?run=dsv3&layer=2",
    "api/timeline?run=traced/decode&layer=2",
    "api/timeline?run=traced/decode&start_us=0&end_us=50&max_items=5",
    "api/compare?a_run=traced/decode&a_layer=2&b_run=traced/faster&b_layer=3",
    "api/download/layer.json?run=dsv3&layer=3",
    "api/download/layer.dot?run=dsv3&layer=3",
    "api/download/trace.json?run=traced/decode",
]


def get_json(client: Client, url: str, status: int = 200) -> object:
    r = client.get(url)
    assert r.status_code == status, r.get_data(as_text=True)
    ours = BASE in url
    assert r.headers["Content-Type"] == ("application/json; charset=utf-8" if ours
                                         else "application/json")
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    return json.loads(r.get_data())


@pytest.mark.parametrize("prefix", ["", "/tb", "/a/b"])
@pytest.mark.parametrize("url", ENDPOINTS)
def test_every_endpoint_answers(logdir: Path, prefix: str, url: str) -> None:
    client, _ = make_client(logdir, prefix)
    r = client.get(f"{prefix}{BASE}/{url}")
    assert r.status_code == 200, r.get_data(as_text=True)
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    if "download" in url:
        assert r.headers["Content-Disposition"].startswith('attachment; filename="')
    if not url.endswith(".dot") and "layer.dot" not in url:
        json.loads(r.get_data())


#: The record each API route answers with.
RECORDS = {"api/layer": LayerResponse, "api/overview": OverviewResponse,
           "api/stage_graph": StageGraphResponse,
           "api/stages": StagesResponse, "api/timeline": TimelineResponse,
           "api/compare": CompareResponse}


@pytest.mark.parametrize("url", [u for u in ENDPOINTS if "download" not in u]
                         + ["api/timeline?run=dsv3", "api/compare?a_run=dsv3&a_layer=1&b_layer=3"])
def test_every_answer_is_a_record_of_the_contract(client: Client, url: str) -> None:
    body = client.get(f"{BASE}/{url}").get_data()
    path = url.split("?", 1)[0]
    if path == "api/runs":
        runs = decode_runs(body).runs
        assert len(runs) == 4 and all(r.error is None for r in runs)
    else:
        msgspec.json.decode(body, type=RECORDS[path])


def test_errors_are_records_of_the_contract(client: Client) -> None:
    for url in ("api/layer?run=nope&layer=1", "api/nope", "api/download/x.png",
                "api/timeline?run=dsv3&max_items=0"):
        r = client.get(f"{BASE}/{url}")
        assert r.status_code in (400, 404)
        msgspec.json.decode(r.get_data(), type=ErrorBody)


def test_api_layer_matches_contract(client: Client) -> None:
    doc = get_json(client, f"{BASE}/api/layer?run=traced/decode&layer=3")
    assert isinstance(doc, dict)
    assert {"run", "stage", "layer", "kind", "attention", "nodes", "edges", "external_inputs",
            "trace_summary"} <= set(doc)
    assert doc["run"] == "traced/decode" and doc["stage"] == 0 and doc["layer"] == 3


@pytest.mark.parametrize("url, status, known", [
    ("api/layer?run=nope&layer=1", 404, ["dsv3", "llama", "traced/decode", "traced/faster"]),
    ("api/layer?layer=1", 400, ["dsv3", "llama", "traced/decode", "traced/faster"]),
    ("api/layer?run=dsv3", 400, [0, 1, 2, 3, 4]),
    ("api/layer?run=dsv3&layer=abc", 400, [0, 1, 2, 3, 4]),
    ("api/layer?run=dsv3&layer=12", 404, [0, 1, 2, 3, 4]),
    ("api/layer?run=dsv3&stage=12&layer=1", 404, [0, 1, 2, 3]),
    ("api/layer?run=dsv3&stage=-1&layer=1", 404, [0, 1, 2, 3]),
    ("api/overview?run=dsv3&stage=x", 400, [0, 1, 2, 3]),
    ("api/stage_graph?run=dsv3&stage=9", 404, [0, 1, 2, 3]),
    ("api/stages?run=dsv3", 400, [0, 1, 2, 3, 4]),
    ("api/timeline?run=traced/decode&max_items=-3", 400, []),
    ("api/timeline?run=traced/decode&start_us=1&end_us=0", 400, []),
    ("api/compare?a_run=dsv3&a_layer=1", 400, [0, 1, 2, 3, 4]),
    ("api/download/trace.json?run=dsv3", 404, []),
    ("api/download/layer.svg?run=dsv3&layer=1", 404, ["layer.json", "layer.dot", "trace.json"]),
    ("api/download/../layer.json?run=dsv3&layer=1", 404, None),
    ("api/nope", 404, ["api/runs", "api/layer", "api/overview", "api/stage_graph", "api/stages",
                       "api/timeline", "api/compare", "api/download/layer.json",
                       "api/download/layer.dot", "api/download/trace.json", "api/report",
                       "api/ranks", "api/diff"]),
])
def test_errors_are_json_with_known_values(client: Client, url: str, status: int,
                                           known: list | None) -> None:
    r = client.get(f"{BASE}/{url}")
    assert r.status_code == status
    if known is not None:
        body = json.loads(r.get_data())
        assert set(body) == {"error", "known"} and body["known"] == known
        assert isinstance(body["error"], str) and "\n" not in body["error"]


@pytest.mark.parametrize("run", [
    "..", "../..", "..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "/etc/passwd",
    "dsv3%2F..%2Fllama", "dsv3/../llama", "traced%5Cdecode", "traced%252Fdecode",
    "dsv3%00", "~root", "dsv3/plugins/ad_layer/run.sqlite",
])
def test_traversal_attempts_are_unknown_runs(client: Client, run: str) -> None:
    body = get_json(client, f"{BASE}/api/layer?run={run}&layer=1", 404)
    assert body["known"] == ["dsv3", "llama", "traced/decode", "traced/faster"]


def test_encoded_separator_names_a_listed_run(client: Client) -> None:
    # %2F decodes to "/", which is simply part of the nested run name as listed.
    doc = get_json(client, f"{BASE}/api/layer?run=traced%2Fdecode&layer=1")
    assert doc["run"] == "traced/decode"


@pytest.mark.parametrize("path", [
    "static/../plugin.py", "static/..%2Fplugin.py", "static/%2e%2e/plugin.py",
    "static/%2e%2e%2f%2e%2e%2fconvert.py", "static//etc/passwd", "static/",
    "static/..%5Cplugin.py", "static/.hidden",
])
def test_static_traversal(client: Client, path: str) -> None:
    assert client.get(f"{BASE}/{path}").status_code == 404


def test_gzip_etag_head_and_methods(client: Client) -> None:
    url = f"{BASE}/api/layer?run=dsv3&layer=3"
    plain = client.get(url)
    assert "Content-Encoding" not in plain.headers
    zipped = client.get(url, headers={"Accept-Encoding": "gzip, deflate, br"})
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert zipped.headers["Vary"] == "Accept-Encoding"
    assert gzip.decompress(zipped.get_data()) == plain.get_data()
    assert int(zipped.headers["Content-Length"]) == len(zipped.get_data())
    refused = client.get(url, headers={"Accept-Encoding": "gzip;q=0, identity"})
    assert "Content-Encoding" not in refused.headers
    etag = plain.headers["ETag"]
    assert plain.headers["Cache-Control"] == "no-cache"
    again = client.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.get_data() == b""
    # TensorBoard's security middleware warns on every response without a Content-Type.
    assert again.headers["Content-Type"] == plain.headers["Content-Type"]
    assert again.headers["X-Content-Type-Options"] == "nosniff"
    head = client.head(url)
    assert head.status_code == 200 and head.get_data() == b""
    assert head.headers["Content-Length"] == plain.headers["Content-Length"]
    post = client.post(url)
    assert post.status_code == 405 and json.loads(post.get_data())["known"] == ["GET", "HEAD"]
    small = client.get(f"{BASE}/api/layer?run=nope&layer=1", headers={"Accept-Encoding": "gzip"})
    assert "Content-Encoding" not in small.headers  # tiny bodies are not worth compressing


def test_unexpected_failure_is_a_json_500(logdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = PluginData(logdir)

    def boom(*_args: object) -> None:
        raise RuntimeError("secret detail")
    monkeypatch.setattr(data, "runs_payload", boom)
    client, _ = make_client(logdir, data=data)
    r = client.get(f"{BASE}/api/runs")
    assert r.status_code == 500
    assert json.loads(r.get_data()) == {"error": "internal error: RuntimeError", "known": []}


def test_plugins_listing(logdir: Path, tmp_path: Path) -> None:
    for prefix in ("", "/tb"):
        client, _ = make_client(logdir, prefix)
        listing = get_json(client, f"{prefix}/data/plugins_listing")
        entry = listing["ad_layer"]
        assert entry["enabled"] is True and entry["tab_name"] == "AD Layers"
        assert entry["disable_reload"] is True
        assert entry["loading_mechanism"] == {"type": "IFRAME",
                                              "module_path": f"{prefix}{BASE}/index.js"}
    empty = tmp_path / "empty"
    (empty / "run" / "plugins" / "profile").mkdir(parents=True)
    for inactive in (empty, tmp_path / "missing", None):
        client, plugin = make_client(inactive)
        assert plugin.is_active() is False
        assert get_json(client, "/data/plugins_listing")["ad_layer"]["enabled"] is False
        assert get_json(client, f"{BASE}/api/runs") == {"runs": []}


def test_plugin_entry_page_imports_index_js(client: Client) -> None:
    r = client.get("/data/plugin_entry.html?name=ad_layer")
    assert r.status_code == 200
    assert b'<base href="plugin/ad_layer/" />' in r.get_data()
    assert b'import("./index.js")' in r.get_data()


def test_index_js_fallback_when_frontend_not_built(logdir: Path, tmp_path: Path) -> None:
    client, _ = make_client(logdir, static=StaticFiles(tmp_path / "no_static"))
    r = client.get(f"{BASE}/index.js")
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert r.headers["Cache-Control"] == "no-cache"
    js = r.get_data(as_text=True)
    assert "export function render()" in js and "cd frontend && npm ci && npm run build" in js
    assert "innerHTML" not in js
    assert client.get(f"{BASE}/static/index.js").status_code == 404


def test_static_files(logdir: Path, tmp_path: Path) -> None:
    static = tmp_path / "static"
    (static / "assets").mkdir(parents=True)
    (static / "index.js").write_text("export function render() {}\n" + "//x\n" * 400)
    (static / "layout_worker.js").write_text("self.onmessage = () => {};\n")
    (static / "assets" / "panel.0123abcd89.css").write_text("body{}")
    (static / "assets" / "icon.svg").write_text("<svg/>")
    (static / "data.json").write_text(json.dumps({"x": list(range(2000))}))
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    os.symlink(outside, static / "leak.txt")
    client, _ = make_client(logdir, static=StaticFiles(static))
    index = client.get(f"{BASE}/index.js", headers={"Accept-Encoding": "gzip"})
    assert index.status_code == 200 and index.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(index.get_data()).startswith(b"export function render()")
    assert index.headers["Cache-Control"] == "no-cache"
    cases = {
        "static/layout_worker.js": ("text/javascript; charset=utf-8", "no-cache"),
        "static/index.js": ("text/javascript; charset=utf-8", "no-cache"),
        "static/assets/panel.0123abcd89.css": ("text/css; charset=utf-8",
                                               "public, max-age=31536000, immutable"),
        "static/assets/icon.svg": ("image/svg+xml", "no-cache"),
        "static/data.json": ("application/json; charset=utf-8", "no-cache"),
    }
    for url, (ctype, cache) in cases.items():
        r = client.get(f"{BASE}/{url}")
        assert r.status_code == 200, url
        assert r.headers["Content-Type"] == ctype and r.headers["Cache-Control"] == cache
        assert r.headers["X-Content-Type-Options"] == "nosniff"
    big = client.get(f"{BASE}/static/data.json", headers={"Accept-Encoding": "gzip"})
    assert big.headers["Content-Encoding"] == "gzip"
    assert client.get(f"{BASE}/static/leak.txt").status_code == 404
    assert client.get(f"{BASE}/static/assets").status_code == 404
