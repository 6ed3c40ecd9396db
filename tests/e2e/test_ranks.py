"""Browser tests of a multi-GPU run: the Ranks view (a layers x ranks heat map with the stragglers
marked) and the rank chooser of the layer view and its timeline, on the demo's 4-rank run
``dsv3_tp4`` (see tools/make_demo.py for the planted stragglers), against a real tensorboard (see
conftest.py). Every figure is checked against ``api/ranks`` and ``api/timeline``.

Screenshots go to test-artifacts/e2e/.
"""
from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.panel import drawn, ready, shot

RUN = "dsv3_tp4"


def open_ranks(page: Any, tb: Any, **state: Any) -> dict:
    """Opens the Ranks view on a run and waits until its grid is shown."""
    page.goto(tb.panel(view="ranks", **state))
    ready(page)
    page.wait_for_function(
        "() => { const h = window.__adLayer; if (!h || !h.ranks) return false;"
        " const s = h.ranks(); return !s.loading && s.run !== null && s.ranks.length > 0; }")
    ready(page)
    return page.evaluate("window.__adLayer.ranks()")


@pytest.mark.parametrize("size", [(1280, 800), (1600, 1000)])
def test_ranks_view_marks_the_stragglers(page: Any, tb: Any, size: tuple[int, int]) -> None:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    body = tb.api("ranks", run=RUN)
    st = open_ranks(page, tb, run=RUN)
    ranks = [r["rank"] for r in body["ranks"]]
    assert st["ranks"] == ranks == [0, 1, 2, 3] and st["layers"] == body["layers"]
    assert st["cells"] == len(ranks) * len(body["layers"])
    # The planted stragglers (rank 2 at layer 4, rank 1 at layer 5), and not the noisy rank 3.
    assert sorted(map(tuple, st["stragglers"])) == [(1, 5), (2, 4)]
    assert sorted(st["marked"]) == sorted(f"rank-cell-{s['layer']}-{s['rank']}"
                                          for s in body["stragglers"])
    # Each cell shows the rank's GPU time at the layer; the straggler's is coloured slower.
    cell = page.locator("[data-testid=rank-cell-4-2]")
    assert cell.text_content().startswith("▲")
    assert "rgba(220, 60, 40" in cell.evaluate("e => e.style.background")
    assert page.locator("[data-testid=ranks-stragglers] tr.clickable").count() == 2
    assert page.locator("[data-testid=ranks-rule]").text_content() == body["rule"]
    # The whole grid is on screen, without a horizontal scroll bar.
    grid = page.locator("[data-testid=ranks-grid]")
    assert grid.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    box = page.locator("[data-testid=ranks-table]").bounding_box()
    assert box is not None and box["x"] + box["width"] <= size[0]
    # Communication per rank where collectives are mapped.
    page.click("[data-testid=ranks-metric-comm]")
    ready(page)
    assert page.evaluate("window.__adLayer.ranks().metric") == "comm"
    comm = {r["rank"]: r["communication_us"] for r in body["ranks"]}
    assert all(v and v > 0 for v in comm.values())
    assert page.locator("[data-testid=ranks-comm] tr").count() == len(ranks) + 1
    page.click("[data-testid=ranks-metric-gpu]")
    ready(page)
    shot(page, f"ranks_view_{size[0]}x{size[1]}")


def test_cell_opens_the_layer_at_that_rank(page: Any, tb: Any) -> None:
    open_ranks(page, tb, run=RUN)
    page.click("[data-testid=rank-cell-4-2]")
    drawn(page)
    st = page.evaluate("window.__adLayer.state()")
    assert st["view"] is None or st["view"] == "layer"
    assert st["layer"] == 4 and st["rank"] == 2
    assert "rank=2" in page.url and "layer=4" in page.url
    # The rank chooser shows the rank; the timeline holds that rank's streams.
    chooser = page.locator("[data-testid=rank-chooser]")
    assert chooser.is_visible() and page.input_value("[data-testid=rank-select]") == "2"
    timeline = tb.api("timeline", run=RUN, layer=4, rank=2)
    page.wait_for_function("() => window.__adLayer.timelineLanes().length > 0")
    lanes = page.evaluate("window.__adLayer.timelineLanes()")
    assert [x["label"] for x in lanes] == [s["label"] for s in timeline["streams"]]
    assert all(x["label"].startswith("GPU 2") for x in lanes)
    # The report's figures (tails, breakdowns, critical path) are the first rank's: not shown here.
    assert page.is_disabled("[data-testid=timeline-critpath]")
    shot(page, "ranks_layer_at_rank_2")
    # Back to the first rank through the chooser: it leaves the URL.
    page.select_option("[data-testid=rank-select]", "0")
    drawn(page)
    page.wait_for_function("() => window.__adLayer.timelineLanes().every(l => l.label.startsWith('GPU 0'))")
    assert "rank=" not in page.url
    page.wait_for_function("() => !document.querySelector('[data-testid=timeline-critpath]').disabled")
    # A reload of a URL with a rank opens that rank.
    page.goto(tb.panel(run=RUN, layer=5, rank=1))
    drawn(page)
    assert page.evaluate("window.__adLayer.state().rank") == 1
    assert page.input_value("[data-testid=rank-select]") == "1"


def test_rank_chooser_only_for_several_ranks(page: Any, tb: Any) -> None:
    page.goto(tb.panel(run="dsv3_decode", layer=3))
    drawn(page)
    assert not page.locator("[data-testid=rank-chooser]").is_visible()
    # The Ranks tab too, for a run of one rank; opened by URL, it shows and says why it is empty.
    assert not page.locator("[data-testid=view-ranks]").is_visible()
    st = open_ranks(page, tb, run="dsv3_decode")
    assert st["ranks"] == [0] and st["stragglers"] == []
    assert page.locator("[data-testid=ranks-note]").is_visible()
    assert page.locator("[data-testid=view-ranks]").is_visible()
    page.goto(tb.panel(run=RUN, layer=3))
    drawn(page)
    assert page.locator("[data-testid=view-ranks]").is_visible()
