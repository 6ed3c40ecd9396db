"""Honest comparison, view state that survives a reload of TensorBoard, TensorBoard's dark mode,
fresh data after a run is converted again, search, and the wording of labels (headless Chromium
against a real tensorboard)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from tests.e2e.conftest import HOSTILE_RUN, LARGE_RUN, NOTRACE_RUN, REPO, TensorBoard, _start_tensorboard
from tests.e2e.panel import compare_hash, drawn, open_panel, panel_frame, ready, seq, shot, wait_compare

# ----------------------------------------------------------------------------- honest compare

def test_compare_with_a_side_without_a_trace_shows_no_trace_and_no_deltas(page: Any, tb: TensorBoard) -> None:
    runs = {r["run"]: r for r in tb.api("runs")["runs"]}
    assert runs[HOSTILE_RUN]["trace"] and runs[NOTRACE_RUN]["trace"] is None
    a = (HOSTILE_RUN, runs[HOSTILE_RUN]["default_stage"], 1)
    b = (NOTRACE_RUN, runs[NOTRACE_RUN]["default_stage"], 1)
    page.goto(tb.panel_url + compare_hash(a, b))
    st = wait_compare(page)
    shot(page, "compare_no_trace_side")
    assert st["timed"] == {"a": True, "b": False}
    # The side without a trace says so; the other shows its time.
    assert page.inner_text("[data-testid=compare-notrace-b]") == "no trace"
    assert page.locator("[data-testid=compare-notrace-a]").count() == 0
    # No deltas anywhere: not on nodes, not in the layer total, not in the table.
    assert page.locator("[data-testid^=compare-pane] g[data-testid=graph-node] .mbadge").count() == 0
    total = page.inner_text("[data-testid=compare-layer-delta]")
    assert "no trace" in total and "%" not in total and "−" not in total, total
    assert page.get_attribute("[data-testid=compare-layer-delta]", "data-missing") == f"B ({NOTRACE_RUN})"
    assert f"B ({NOTRACE_RUN}) has no trace" in page.inner_text("[data-testid=compare-missing]")
    table = (page.inner_text("[data-testid=delta-table] tbody")
             + page.inner_text("[data-testid=delta-table] tfoot"))
    assert "%" not in table and "-100" not in table and "−100" not in table, table
    rows = page.eval_on_selector_all("[data-testid=delta-row], [data-testid=delta-layer]",
                                     "els => els.map((e) => [e.dataset.delta ?? null, e.dataset.missing])")
    assert rows and all(d is None and m == f"B ({NOTRACE_RUN})" for d, m in rows), rows
    assert page.locator("[data-testid=top-deltas]").count() == 0
    # A matched node: both ids, its A time, "no trace" for B, no delta line.
    res = tb.api("compare", a_run=a[0], a_stage=a[1], a_layer=a[2], b_run=b[0], b_stage=b[1], b_layer=b[2])
    m = next(x for x in res["matches"] if x["a_time_us"] > 0)
    page.evaluate("(id) => window.__adLayer.compareJump('a', id)", m["a"])
    ready(page)
    sel = page.inner_text("[data-testid=compare-selection]")
    assert "no trace" in sel and page.locator("[data-testid=compare-selection-delta]").count() == 0


# ----------------------------------------------------------------------------- state in TensorBoard

def test_reloading_tensorboard_restores_the_view_and_link_opens_tensorboard(page: Any,
                                                                             tb: TensorBoard) -> None:
    run, layer = "dsv3_prefill", 5
    doc = tb.api("layer", run=run, layer=layer)
    node = next(n for n in doc["nodes"] if n["kernels"])
    stages = next(r for r in tb.api("runs")["runs"] if r["run"] == run)["stages"]
    stage = next(s["index"] for s in stages if any(
        n["id"] == node["id"] for n in tb.api("layer", run=run, layer=layer, stage=s["index"])["nodes"]))
    page.goto(tb.url("/#ad_layer"))
    frame = panel_frame(page)
    # Choose run, stage and layer with the choosers, then select a node and colour by time.
    frame.select_option("[data-testid=run-select]", run)
    ready(frame)
    frame.select_option("[data-testid=stage-select]", str(stage))
    ready(frame)
    s = seq(frame)
    frame.select_option("[data-testid=layer-select]", str(layer))
    drawn(frame, s)
    assert frame.evaluate("(id) => window.__adLayer.selectNode(id)", node["id"])
    frame.click("[data-testid=color-time]")
    ready(frame)
    want = {"run": run, "stage": stage, "layer": layer, "selected": node["id"], "colorMode": "time"}

    def state(f: Any) -> dict[str, Any]:
        st = f.evaluate("window.__adLayer.state()")
        return {k: st[k] for k in want}

    assert state(frame) == want
    # TensorBoard's own URL carries the view, as URL plugin data of the tab.
    top = unquote(page.url)
    parts = ("#ad_layer&", f"p.ad_layer.run={run}", f"p.ad_layer.node={node['id']}")
    assert all(part in top for part in parts), top

    page.reload()
    frame = panel_frame(page)
    assert state(frame) == want, unquote(page.url)
    assert frame.locator(f"[data-node-id='{node['id']}'].sel").count() == 1
    shot(page, "tensorboard_reload_restored")
    # The view itself: the comparison view survives a reload too.
    frame.click("[data-testid=view-compare]")
    wait_compare(frame)
    page.reload()
    frame = panel_frame(page)
    assert frame.evaluate("window.__adLayer.view()") == "compare"
    # Link: a URL of TensorBoard itself (not the bare panel) that opens on this view.
    frame.click("[data-testid=view-layer]")
    ready(frame)
    frame.click("[data-testid=copy-link]")
    link = frame.get_attribute("[data-testid=copy-link]", "data-url")
    assert link and link.startswith(tb.url("/")) and "plugin_entry" not in link and "#ad_layer&" in link, link
    other = page.context.new_page()
    other.goto(link)
    f2 = panel_frame(other)
    assert state(f2) == want
    other.close()


def test_panel_follows_tensorboards_dark_mode(page: Any, tb: TensorBoard) -> None:
    # TensorBoard's settings menu keeps the user's choice in localStorage; dark here.
    page.goto(tb.url("/#ad_layer"))
    panel_frame(page)
    page.evaluate("localStorage.setItem('_tb_global_settings', JSON.stringify({theme: 'dark'}))")
    page.reload()
    frame = panel_frame(page)
    page.wait_for_function("() => document.body.classList.contains('dark-mode')")
    assert frame.evaluate("document.documentElement.dataset.theme") == "dark"
    shot(page, "tensorboard_dark_mode")
    # Switching TensorBoard back to light (its class on its body) switches the panel at once.
    page.evaluate("document.body.classList.remove('dark-mode')")
    frame.wait_for_function("() => document.documentElement.dataset.theme === 'light'")
    page.evaluate("document.body.classList.add('dark-mode')")
    frame.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")


# ----------------------------------------------------------------------------- fresh data

def convert(dump: Path, logdir: Path, run: str) -> None:
    """Converts ``dump`` into run ``run`` of ``logdir`` with the command line, as a user does."""
    subprocess.run([sys.executable, "-m", "tb_ad_layer.cli", "convert", str(dump), "--logdir", str(logdir),
                    "--run", run, "-q"], cwd=REPO, check=True)



@pytest.fixture
def fresh(tmp_path: Path, panel_built: None) -> Any:
    """A TensorBoard of its own over a logdir with runs ``fresh`` and ``other``."""
    from tests.conftest import DUMPS

    logdir = tmp_path / "logs"
    for run, src in (("fresh", DUMPS / "ad_llama"), ("other", DUMPS / "ad_llama")):
        convert(src, logdir, run)
    gen = _start_tensorboard(logdir, tmp_path, "")
    t = next(gen)
    yield t, logdir
    gen.close()


def test_a_run_converted_again_shows_fresh_data_on_the_next_choice(page: Any, fresh: Any) -> None:
    from tests.conftest import DUMPS

    tb, logdir = fresh
    before = tb.api("layer", run="fresh", layer=0)
    open_panel(page, tb, run="fresh", layer=0, depth=9)
    assert page.evaluate("window.__adLayer.timing().nodes") == len(before["nodes"])
    # Converted again from another dump while the tab is open.
    convert(DUMPS / "ad_dsv3", logdir, "fresh")
    after = tb.api("layer", run="fresh", layer=0)
    assert len(after["nodes"]) != len(before["nodes"])
    s = seq(page)
    page.select_option("[data-testid=run-select]", "other")
    drawn(page, s)
    s = seq(page)
    page.select_option("[data-testid=run-select]", "fresh")
    t = drawn(page, s)
    assert t["nodes"] == len(after["nodes"])
    layers = page.eval_on_selector_all("[data-testid=layer-select] option", "os => os.map((o) => o.value)")
    fresh_run = next(r for r in tb.api("runs")["runs"] if r["run"] == "fresh")
    assert layers[:-1] == [str(L["layer"]) for L in fresh_run["layers"]]


# ----------------------------------------------------------------------------- runs that cannot be read

@pytest.fixture
def damaged(tmp_path: Path, panel_built: None) -> Any:
    """A TensorBoard of its own over a logdir with a run ``good`` and a run ``broken`` whose store
    file is not SQLite at all."""
    from tb_ad_layer.metadata import STORE_DIR, STORE_FILE
    from tests.conftest import DUMPS

    logdir = tmp_path / "logs"
    convert(DUMPS / "ad_llama", logdir, "good")
    store = logdir.joinpath("broken", *STORE_DIR, STORE_FILE)
    store.parent.mkdir(parents=True)
    store.write_bytes(b"this is not a run store, nor any SQLite file\n" * 64)
    gen = _start_tensorboard(logdir, tmp_path, "")
    yield next(gen)
    gen.close()


def test_runs_that_cannot_be_read_are_listed_disabled_with_their_reason(page: Any,
                                                                        damaged: TensorBoard) -> None:
    tb = damaged
    bad = next(r for r in tb.api("runs")["runs"] if r["run"] == "broken")
    assert "not a database" in bad["error"], bad
    open_panel(page, tb)
    # The readable run is shown; the other is in the run chooser, disabled, with its reason.
    assert page.input_value("[data-testid=run-select]") == "good"
    entry = page.locator("[data-testid=run-select] option[data-testid=run-unreadable]")
    assert entry.count() == 1
    assert entry.get_attribute("value") == "broken" and entry.is_disabled()
    assert entry.get_attribute("title") == bad["error"]
    label = entry.text_content() or ""
    assert label.startswith("broken — ") and "not a database" in label, label
    assert page.get_attribute("[data-testid=runs-unreadable]", "label") == "Cannot be read"
    # A link that names it says why, and opens the readable run instead.
    page.goto("about:blank")
    page.goto(tb.panel(run="broken"))
    drawn(page)
    err = page.inner_text("[data-testid=error]")
    assert "run broken cannot be read" in err and "not a database" in err, err
    assert page.input_value("[data-testid=run-select]") == "good"
    shot(page, "run_chooser_unreadable_run")


# ----------------------------------------------------------------------------- search, labels

def test_search_highlights_while_typing_and_enter_steps_through_hits(page: Any, tb: TensorBoard) -> None:
    run, layer = "dsv3_decode", 3
    doc = tb.api("layer", run=run, layer=layer)
    open_panel(page, tb, run=run, layer=layer, depth=4)
    v0 = page.evaluate("window.__adLayer.graphView()")
    page.type("[data-testid=search-input]", "getitem", delay=20)
    ready(page)
    hits = page.evaluate("window.__adLayer.searchHits()")
    assert len(hits) >= 2
    # Highlighted, nothing selected, the view did not move.
    assert page.locator("[data-testid=graph] .hit").count() >= 2
    assert page.evaluate("window.__adLayer.state().selected") is None
    assert page.evaluate("window.__adLayer.graphView()") == v0
    page.press("[data-testid=search-input]", "Enter")
    page.wait_for_function("(id) => window.__adLayer.state().selected === id", arg=hits[0])
    page.press("[data-testid=search-input]", "Enter")
    page.wait_for_function("(id) => window.__adLayer.state().selected === id", arg=hits[1])
    ready(page)
    assert page.inner_text("[data-testid=search-count]").startswith("2 /")
    # An exact id ranks first, before the ids it is a prefix of; so does an exact op.
    ids = sorted((n["id"] for n in doc["nodes"]), key=len)
    short = next(i for i in ids if any(o != i and o.startswith(i) for o in ids))
    page.fill("[data-testid=search-input]", short)
    ready(page)
    assert page.evaluate("window.__adLayer.searchHits()")[0] == short
    op = next(n["op"] for n in doc["nodes"] if n["op"].startswith(("auto_deploy.", "trtllm.")))
    page.fill("[data-testid=search-input]", op)
    ready(page)
    first = page.evaluate("window.__adLayer.searchHits()")[0]
    assert next(n for n in doc["nodes"] if n["id"] == first)["op"] == op


NULL = re.compile(r"\b(null|undefined|NaN)\b")

#: The id of an op node drawn wholly inside the graph pane.
NODE_ON_SCREEN = """() => { const p = document.querySelector('[data-testid=graph]').getBoundingClientRect();
  const inside = (r) => r.left >= p.left && r.right <= p.right && r.top >= p.top && r.bottom <= p.bottom;
  const n = [...document.querySelectorAll('[data-testid=graph-node]')]
    .find((e) => inside(e.getBoundingClientRect()));
  return n ? n.dataset.nodeId : null; }"""


def node_on_screen(page: Any) -> str:
    node = page.evaluate(NODE_ON_SCREEN)
    assert node, "no node on screen"
    return str(node)


def visible_text(target: Any) -> str:
    return target.evaluate("""() => [document.body.innerText,
        ...[...document.querySelectorAll('svg text')].map((t) => t.textContent),
        ...[...document.querySelectorAll('option')].map((o) => o.textContent)].join('\\n')""")


def test_no_null_in_any_label(page: Any, tb: TensorBoard) -> None:
    runs = {r["run"]: r for r in tb.api("runs")["runs"]}
    # A gated-delta-net layer (no attention) too: its kind names its mixer.
    for run, layer in ((NOTRACE_RUN, 1), ("llama_decode", 1), (LARGE_RUN, 0)):
        open_panel(page, tb, run=run, layer=layer, depth=9)
        page.click(f"[data-testid=graph-node][data-node-id='{node_on_screen(page)}']")
        ready(page)
        found = NULL.findall(visible_text(page))
        assert not found, (run, found)
        for view in ("compare", "stages", "overview"):
            page.click(f"[data-testid=view-{view}]")
            ready(page)
            assert not NULL.findall(visible_text(page)), (run, view)
    s = runs[NOTRACE_RUN]["default_stage"]
    page.goto(tb.panel_url + compare_hash((NOTRACE_RUN, s, 1), (HOSTILE_RUN, s, 1)))
    wait_compare(page)
    assert not NULL.findall(visible_text(page))


KERNEL_WORDS = re.compile(r"\bkernels?\b", re.I)

#: The text of each box (of `sel`), its lines joined by " | ".
BOX_TEXTS = "els => els.map((e) => [...e.querySelectorAll('text')].map((t) => t.textContent).join(' | '))"


def test_runs_without_a_trace_say_nothing_about_kernels(page: Any, tb: TensorBoard) -> None:
    """Without a trace the kernel count is unknown, not zero: collapsed groups, summary cards and
    a group's details say nothing about kernels, and the layer summary says "no trace" once. The
    same graph with a trace counts them."""
    open_panel(page, tb, run=NOTRACE_RUN, layer=3, depth=2)
    shot(page, "notrace_collapsed_groups")
    groups = page.eval_on_selector_all("[data-testid=group-box][data-collapsed=true]", BOX_TEXTS)
    assert len(groups) >= 3 and all("nodes" in g for g in groups), groups
    assert not [g for g in groups if KERNEL_WORDS.search(g)], groups
    assert page.evaluate("(g) => window.__adLayer.selectNode(g)", "L3/moe")
    ready(page)
    details = page.inner_text("[data-testid=details]")
    assert "Nodes" in details and not KERNEL_WORDS.search(details), details
    page.keyboard.press("Escape")
    ready(page)
    summary = page.inner_text("[data-testid=details]")
    assert summary.count("no trace") == 1, summary
    page.evaluate("window.__adLayer.setGraphScale(0.3)")
    ready(page)
    shot(page, "notrace_summary_cards")
    cards = page.eval_on_selector_all("[data-testid=group-summary]", BOX_TEXTS)
    assert cards and not [c for c in cards if KERNEL_WORDS.search(c)], cards
    # The same dump with a trace: its collapsed groups count their kernels.
    open_panel(page, tb, run=HOSTILE_RUN, layer=3, depth=2)
    groups = page.eval_on_selector_all("[data-testid=group-box][data-collapsed=true]", BOX_TEXTS)
    assert groups and all(KERNEL_WORDS.search(g) for g in groups), groups


def test_phase_and_stage_have_different_words_in_chinese(page: Any, tb: TensorBoard) -> None:
    page.goto(tb.url("/"))
    page.evaluate("localStorage.setItem('adLayer.lang', 'zh')")
    open_panel(page, tb, run="dsv3_decode", layer=1)
    labels = page.eval_on_selector_all("[data-testid=toolbar] .grp > label",
                                       "els => els.map((e) => e.textContent)")
    phase = page.get_attribute("[data-testid=phase-select]", "aria-label")
    stage = page.get_attribute("[data-testid=stage-select]", "aria-label")
    assert phase in labels and stage in labels
    assert phase != stage and phase not in stage and stage not in phase, (phase, stage)
    page.evaluate("localStorage.removeItem('adLayer.lang')")
