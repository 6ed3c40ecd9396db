"""A layering the converter doubts is never shown as if it were right: a run converted from a
real export whose weight names were broken shows a warning on its stage and on the doubtful
layer, as text, in both themes and both languages; a plausible run shows none.

Screenshots: test-artifacts/e2e/doubts_*.png.
"""
from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import DUMPS, REPO
from tests.doubtful import oversized_dump
from tests.e2e.conftest import TensorBoard, _start_tensorboard
from tests.e2e.panel import drawn, open_panel, ready, seq, shot

RUN = "doubtful"
STAGE = "[data-testid=stage-doubts]"
LAYER = "[data-testid=layer-doubts]"


@pytest.fixture(scope="module")
def doubtful(tmp_path_factory: pytest.TempPathFactory, panel_built: None) -> Iterator[TensorBoard]:
    """A TensorBoard of its own over runs ``doubtful`` (the 61-layer DeepSeek-V3 export with
    layers 11-15's weights named after layer 10: no layers 11-15, an oversized layer 10),
    converted with the command line as a user does, and ``plain`` (a plausible layering)."""
    base = tmp_path_factory.mktemp("doubts_e2e")
    logdir = base / "logs"
    for run, src in ((RUN, oversized_dump(base / "dumps")), ("plain", DUMPS / "ad_llama")):
        r = subprocess.run([sys.executable, "-m", "tb_ad_layer.cli", "convert", str(src),
                            "--logdir", str(logdir), "--run", run, "-q"],
                           cwd=REPO, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert len(r.stderr.splitlines()) == (2 if run == RUN else 0), r.stderr
    gen = _start_tensorboard(logdir, base, "")
    yield next(gen)
    gen.close()


def notice(page: Any, selector: str) -> dict[str, Any]:
    """What a notice shows: visible or not, its heading, its lines (kind, message) and role."""
    return page.eval_on_selector(selector, """(el) => ({
        visible: !el.hidden && el.getBoundingClientRect().height > 0,
        role: el.getAttribute('role'),
        head: el.querySelector('.head')?.textContent ?? null,
        items: [...el.querySelectorAll('li')].map((li) => [
            li.querySelector('.kind').textContent, li.querySelector('.msg').textContent]),
        icon_hidden: el.querySelector('.icon')?.getAttribute('aria-hidden') ?? null,
        background: getComputedStyle(el).backgroundColor,
        color: getComputedStyle(el).color,
        top: el.getBoundingClientRect().top,
        bottom: el.getBoundingClientRect().bottom,
    })""")


def test_a_doubtful_stage_and_layer_show_their_notices(page: Any, doubtful: TensorBoard) -> None:
    tb = doubtful
    info = next(r for r in tb.api("runs")["runs"] if r["run"] == RUN)
    stage_doubts = info["stages"][0]["doubts"]
    assert [(d["kind"], d["layer"]) for d in stage_doubts] == [("index_gap", None),
                                                                ("oversized_layer", 10)]
    layer_doubts = tb.api("layer", run=RUN, layer=10)["doubts"]
    assert layer_doubts == [stage_doubts[1]]

    open_panel(page, tb, run=RUN, layer=10)
    stage = notice(page, STAGE)
    assert stage["visible"] and stage["role"] == "status" and stage["icon_hidden"] == "true"
    assert stage["head"] == "The layers found in 002_post_export_cleanup_noop_slice may be wrong:"
    assert stage["items"] == [["gap in layer numbers", stage_doubts[0]["message"]],
                              ["oversized layer", stage_doubts[1]["message"]]]
    layer = notice(page, LAYER)
    assert layer["visible"] and layer["role"] == "status"
    assert layer["head"] == "Layer 10 may be wrong: its nodes may belong to other layers."
    assert layer["items"] == [["oversized layer", layer_doubts[0]["message"]]]
    # Both on screen, above the graph: the stage's under the toolbar, the layer's on the layer.
    graph_top = page.eval_on_selector("[data-testid=graph]", "(el) => el.getBoundingClientRect().top")
    assert 0 < stage["top"] < stage["bottom"] <= layer["top"] < layer["bottom"] <= graph_top + 1
    # The layer's box in the graph and its entry in the chooser are marked too.
    assert page.locator("[data-testid=graph] text", has_text="⚠ Layer 10").count() >= 1
    option = page.locator("[data-testid=layer-select] option[value='10']")
    assert option.get_attribute("data-doubtful") == "true"
    assert (option.text_content() or "").startswith("⚠ doubtful · 10 · ")
    assert option.get_attribute("title") == layer_doubts[0]["message"]
    assert page.locator("[data-testid=layer-select] option[data-doubtful]").count() == 1
    shot(page, "doubts_layer_light")
    light = (stage["background"], stage["color"])

    # Dark theme: the same notices in the dark palette.
    page.click("[data-testid=theme-toggle]")
    ready(page)
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    dark = notice(page, STAGE)
    assert dark["visible"] and (dark["background"], dark["color"]) != light
    shot(page, "doubts_layer_dark")
    page.click("[data-testid=theme-toggle]")
    ready(page)

    # A layer without doubts in the doubtful stage: the stage's notice stays, the layer's goes.
    s = seq(page)
    page.select_option("[data-testid=layer-select]", "9")
    drawn(page, s)
    assert notice(page, STAGE)["visible"] and not notice(page, LAYER)["visible"]
    assert page.locator("[data-testid=graph] text", has_text="⚠").count() == 0
    # The overview shows the panel's stage: its notice too.
    page.click("[data-testid=view-overview]")
    ready(page)
    assert notice(page, STAGE)["visible"]
    shot(page, "doubts_overview")


def test_the_notices_speak_chinese(page: Any, doubtful: TensorBoard) -> None:
    page.goto(doubtful.url("/"))
    page.evaluate("localStorage.setItem('adLayer.lang', 'zh')")
    open_panel(page, doubtful, run=RUN, layer=10)
    stage, layer = notice(page, STAGE), notice(page, LAYER)
    assert stage["head"] == "002_post_export_cleanup_noop_slice 中识别出的层可能有误:"
    assert [k for k, _ in stage["items"]] == ["层编号有缺口", "层过大"]
    assert layer["head"] == "第 10 层可能有误:其中的节点可能属于其他层。"
    shot(page, "doubts_layer_zh")
    page.evaluate("localStorage.removeItem('adLayer.lang')")


def test_a_plausible_run_shows_no_notice(page: Any, doubtful: TensorBoard) -> None:
    open_panel(page, doubtful, run="plain", layer=1)
    assert not notice(page, STAGE)["visible"] and not notice(page, LAYER)["visible"]
    assert page.locator("[data-testid=layer-select] option[data-doubtful]").count() == 0
    # Switching from a doubtful run to it clears them.
    open_panel(page, doubtful, run=RUN, layer=10)
    assert notice(page, STAGE)["visible"]
    s = seq(page)
    page.select_option("[data-testid=run-select]", "plain")
    drawn(page, s)
    assert not notice(page, STAGE)["visible"] and not notice(page, LAYER)["visible"]

