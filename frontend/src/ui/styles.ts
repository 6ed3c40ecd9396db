// The panel's CSS, injected from JS (constructable stylesheet, or a <style> element as fallback).
import { TIMING_CSS } from "../timing/styles";

export const CSS = `
:root {
  --bg: #ffffff; --fg: #1d2329; --muted: #5f6b77; --panel: #f7f8fa; --border: #d9dee4;
  --accent: #1a66e0; --accent-bg: rgba(26,102,224,0.10); --edge: #8d99a6; --edge-act: #1a66e0;
  --hl: #ffb000; --hl-stroke: #6b4a00; --hit: #f5c400; --hot: #d7263d; --btn: #ffffff; --btn-hover: #eef1f5;
  --tl-lane: #f4f6f9; --tl-hatch: #e1e5eb; --tl-grid: #e3e7ec; --tl-merged: #6c7d92; --tl-unmapped: #a5adb8;
  --err-bg: #fdecec; --err-fg: #9b1c1c; --shadow: 0 2px 10px rgba(0,0,0,0.12);
  --warn-bg: #fff4d6; --warn-fg: #5a3a00; --warn-border: #e3b341; --warn-icon: #b26b00;
  --slower: #c93636; --faster: #1f8a50; --diff-badge: #4a5563; --side-a: #7a4fd1; --side-b: #0f8a8a;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace;
  --sans: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans CJK SC", "PingFang SC", "Microsoft YaHei", sans-serif;
}
:root[data-theme="dark"] {
  --bg: #15181c; --fg: #e6e9ed; --muted: #98a2ad; --panel: #1b1f24; --border: #323941;
  --accent: #6ea8ff; --accent-bg: rgba(110,168,255,0.14); --edge: #6c7784; --edge-act: #8cbcff;
  --hl: #ffd54a; --hl-stroke: #fff3c4; --hit: #ffd54a; --hot: #ff5c6c; --btn: #22272e; --btn-hover: #2b313a;
  --tl-lane: #1d2127; --tl-hatch: #2c323a; --tl-grid: #2f353d; --tl-merged: #7f8fa3; --tl-unmapped: #5b6470;
  --err-bg: #3a1d1f; --err-fg: #ffb4b4; --shadow: 0 2px 12px rgba(0,0,0,0.5);
  --warn-bg: #33290f; --warn-fg: #ffe2a0; --warn-border: #8a6a1e; --warn-icon: #ffc24d;
  --slower: #ff7b7b; --faster: #5ad38e; --diff-badge: #5b6675; --side-a: #b18cf5; --side-b: #4fd1d1;
}
html, body { margin: 0; padding: 0; height: 100%; background: var(--bg); color: var(--fg); }
body { font: 13px/1.4 var(--sans); overflow: hidden; }
.adl-root { display: flex; flex-direction: column; height: 100vh; }
.adl-toolbar { display: flex; flex-wrap: wrap; align-items: center; gap: 6px 12px; padding: 6px 10px; border-bottom: 1px solid var(--border); background: var(--panel); }
.adl-toolbar > .break { flex-basis: 100%; height: 0; }
.adl-toolbar > [hidden] { display: none; }
.adl-toolbar .grp { display: flex; align-items: center; gap: 5px; }
.adl-toolbar label { color: var(--muted); font-size: 12px; }
.adl-toolbar .title { font-weight: 600; margin-right: 4px; }
.adl-toolbar .spacer { flex: 1; }
select, input[type=search], .btn, .seg button {
  font: inherit; color: var(--fg); background: var(--btn); border: 1px solid var(--border); border-radius: 5px; padding: 3px 7px; height: 26px; box-sizing: border-box;
}
select { max-width: 320px; }
.adl-toolbar select { max-width: 250px; }
/* run, stage and layer choosers are as wide as their chosen entry (ui/dom.ts fitToChoice) */
.adl-toolbar select[data-testid=layer-select], .adl-toolbar select#adl-run, .adl-toolbar select[data-testid=stage-select] { max-width: 60vw; min-width: 0; }
.btn, .seg button { cursor: pointer; }
.btn:hover, .seg button:hover { background: var(--btn-hover); }
.btn:focus-visible, select:focus-visible, input:focus-visible, .seg button:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
.seg { display: inline-flex; }
.seg button { border-radius: 0; margin-left: -1px; }
.seg button:first-child { border-radius: 5px 0 0 5px; margin-left: 0; }
.seg button:last-child { border-radius: 0 5px 5px 0; }
.seg button:disabled, .btn:disabled, select:disabled { opacity: 0.45; cursor: not-allowed; }
.seg button[aria-pressed="true"] { background: var(--accent-bg); border-color: var(--accent); color: var(--accent); position: relative; z-index: 1; }
input[type=search] { width: 200px; }
.search .count { color: var(--muted); font-size: 12px; min-width: 52px; font-variant-numeric: tabular-nums; }
.iconbtn { width: 28px; padding: 0; text-align: center; }
.adl-error { display: none; padding: 6px 12px; background: var(--err-bg); color: var(--err-fg); border-bottom: 1px solid var(--border); white-space: pre-wrap; }
.adl-error.on { display: block; }
/* doubts about a layering: a warning banner on the stage and on the layer */
.adl-doubts { display: flex; gap: 8px; align-items: flex-start; padding: 5px 12px; background: var(--warn-bg); color: var(--warn-fg); border-bottom: 1px solid var(--warn-border); font-size: 12px; }
.adl-doubts .icon { color: var(--warn-icon); font-size: 15px; line-height: 17px; }
.adl-doubts .body { min-width: 0; flex: 1; }
.adl-doubts .head { font-weight: 600; }
.adl-doubts ul { list-style: none; margin: 1px 0 0; padding: 0; max-height: 6.2em; overflow-y: auto; }
.adl-doubts li { overflow-wrap: anywhere; }
.adl-doubts .kind { display: inline-block; font-size: 11px; font-weight: 600; padding: 0 5px; border: 1px solid var(--warn-border); border-radius: 8px; margin-right: 2px; }
.adl-doubts .msg { font-family: var(--mono); font-size: 11.5px; }
.adl-main { flex: 1; display: flex; min-height: 120px; position: relative; }
.adl-graph { flex: 1; position: relative; overflow: hidden; outline: none; cursor: grab; background: var(--bg); }
.adl-graph.panning { cursor: grabbing; }
.adl-svg { width: 100%; height: 100%; display: block; user-select: none; -webkit-user-select: none; }
.adl-side { width: 380px; min-width: 260px; border-left: 1px solid var(--border); overflow: auto; background: var(--panel); }
.adl-busy { position: absolute; left: 50%; top: 40%; transform: translate(-50%, -50%); padding: 8px 14px; background: var(--panel); border: 1px solid var(--border); border-radius: 6px; box-shadow: var(--shadow); display: none; color: var(--muted); z-index: 5; }
.adl-busy.on { display: block; }
.adl-empty { position: absolute; inset: 0; display: none; align-items: center; justify-content: center; color: var(--muted); padding: 40px; text-align: center; }
.adl-empty.on { display: flex; }
.adl-legend { position: absolute; left: 10px; bottom: 10px; background: var(--panel); border: 1px solid var(--border); border-radius: 6px; padding: 6px 8px; font-size: 11px; box-shadow: var(--shadow); max-width: 60%; display: flex; flex-wrap: wrap; gap: 4px 10px; align-items: center; z-index: 3; }
.adl-legend .sw { display: inline-block; width: 12px; height: 12px; border-radius: 3px; border: 1px solid; vertical-align: -2px; margin-right: 4px; }
.adl-legend .grad { width: 180px; height: 10px; border-radius: 3px; border: 1px solid var(--border); }
.adl-legend .ticks { display: flex; justify-content: space-between; width: 180px; color: var(--muted); font-variant-numeric: tabular-nums; }
.adl-legend .hotsw { display: inline-block; width: 12px; height: 12px; border-radius: 3px; border: 2.5px solid var(--hot); vertical-align: -3px; margin-right: 4px; box-sizing: border-box; }
.adl-zoom { position: absolute; right: 10px; bottom: 10px; display: flex; flex-direction: column; gap: 4px; z-index: 3; }
.adl-status { padding: 2px 10px; font-size: 11px; color: var(--muted); border-top: 1px solid var(--border); background: var(--panel); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
/* graph */
.adl-svg text { font-family: var(--mono); font-size: 11px; fill: var(--fg); }
.adl-svg .n { cursor: pointer; }
.adl-svg .n .box { stroke-width: 1.2; }
.adl-svg .n.inp .box { stroke-dasharray: 4 3; stroke-width: 1.4; }
.adl-svg .n.grp .box { stroke-width: 1.6; }
.adl-svg .n.grp .stack { opacity: 0.55; stroke-width: 1; }
.adl-svg .l.title { font-weight: 700; }
.adl-svg .l.sub, .adl-svg .l.more { fill: var(--muted); }
.adl-svg .l.weight { fill: var(--muted); }
.adl-svg .l.kernel { fill: #7a3d00; }
:root[data-theme="dark"] .adl-svg .l.kernel { fill: #ffc27a; }
.adl-svg .l.time { font-weight: 600; }
.adl-svg .n[data-tc="light"] text { fill: #ffffff; }
.adl-svg .n[data-tc="dark"] text { fill: #1b1b1b; }
.adl-svg .c .cbox { stroke-width: 1.2; }
.adl-svg .c.d1 .cbox { stroke-width: 1.6; }
.adl-svg .c.d3 .cbox, .adl-svg .c.d4 .cbox { stroke-dasharray: 5 3; }
.adl-svg .chead { font-weight: 700; fill: var(--muted); cursor: pointer; paint-order: stroke; stroke: var(--bg); stroke-width: 3px; stroke-linejoin: round; stroke-opacity: 0.85; }
.adl-svg .c.d1 > .chead { fill: var(--fg); }
.adl-svg .e { fill: none; stroke: var(--edge); stroke-width: 1.2; }
.adl-svg .e.agg { stroke-dasharray: 6 3; }
.adl-svg .e.act { stroke: var(--edge-act); stroke-width: 2.4; }
.adl-svg .arrow { fill: var(--edge); }
.adl-svg .arrow-act { fill: var(--edge-act); }
.adl-svg .el { font-size: 9.5px; fill: var(--muted); paint-order: stroke; stroke: var(--bg); stroke-width: 3px; stroke-linejoin: round; pointer-events: none; }
.adl-svg .n.hov .box { stroke: var(--accent) !important; stroke-width: 2.2; }
.adl-svg .n.sel .box, .adl-svg .c.sel .cbox { stroke: var(--accent) !important; stroke-width: 3.2; }
.adl-svg .n.hot .box { stroke: var(--hot) !important; stroke-width: 3; }
.adl-svg .n.hot.sel .box { stroke: var(--accent) !important; }
.adl-svg .n.hit .box { stroke: var(--hit) !important; stroke-width: 3; }
.adl-svg .n.hit-cur .box { stroke: var(--hit) !important; stroke-width: 5; }
.adl-svg .badge { display: none; pointer-events: none; }
.adl-svg .n.hot .badge { display: inline; }
.adl-svg .badge rect { fill: var(--hot); }
.adl-svg .badge text { fill: #fff !important; font-weight: 700; font-size: 10px; text-anchor: middle; }
.adl-svg.lod-mid .el { display: none; }
.adl-svg.lod-far .l:not(.title), .adl-svg.lod-far .el { display: none; }
.adl-svg.lod-min .l, .adl-svg.lod-min .el, .adl-svg.lod-min .badge text { display: none; }
/* semantic zoom: groups as summary cards, their insides hidden */
.adl-svg .summaries { display: none; }
.adl-svg.lod-sum .summaries { display: inline; }
.adl-svg.lod-sum .deep, .adl-svg.lod-sum .c.d2 > .chead, .adl-svg.lod-sum .n.grp .l, .adl-svg.lod-sum .el { display: none; }
.adl-svg .sumcard { pointer-events: none; }
.adl-svg .sumcard .sumbox { fill: var(--panel); fill-opacity: 0.78; stroke: none; }
.adl-svg .sumcard.hit .sumbox { stroke: var(--hit); stroke-width: 3; }
.adl-svg .sumcard text { font-family: var(--sans); font-size: 12px; fill: var(--fg); }
.adl-svg .sumcard .title { font-weight: 700; font-size: 13px; }
.adl-svg .sumcard .sub, .adl-svg .sumcard .kernel { fill: var(--muted); font-family: var(--mono); font-size: 11.5px; }
.adl-svg .sumcard .time { font-weight: 600; }
/* details */
.adl-details { padding: 10px 12px 30px; }
.adl-details .dhead { margin-bottom: 8px; }
.adl-details h2 { font-size: 15px; margin: 4px 0 2px; word-break: break-all; }
.adl-details h3 { font-size: 11px; text-transform: uppercase; letter-spacing: 0.04em; color: var(--muted); margin: 14px 0 6px; }
.adl-details .sub { font-size: 12px; word-break: break-all; }
.adl-details .chip { display: inline-block; font-size: 11px; padding: 0 6px; border: 1px solid; border-radius: 8px; color: var(--fg); }
.adl-details .hint { color: var(--muted); font-size: 12px; }
.adl-details dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 3px 10px; margin: 0; font-size: 12px; }
.adl-details dt { color: var(--muted); }
.adl-details dd { margin: 0; word-break: break-all; }
.adl-details code, .mono { font-family: var(--mono); font-size: 11.5px; }
.adl-details .wrap { white-space: pre-wrap; word-break: break-all; }
.adl-details code.args { display: block; max-height: 8em; overflow: auto; font-size: 11px; color: var(--muted); }
.adl-details .dim { color: var(--muted); }
.adl-details ul.links, .adl-details ul.plain { list-style: none; padding: 0; margin: 0; font-size: 12px; }
.adl-details ul.links li, .adl-details ul.plain li { padding: 2px 0; }
.adl-details .link { background: none; border: none; padding: 0; color: var(--accent); cursor: pointer; font: inherit; text-align: left; }
.adl-details .link:hover { text-decoration: underline; }
.adl-details .link .dim { color: var(--muted); }
.adl-details .tag { font-size: 11px; color: var(--muted); font-variant-numeric: tabular-nums; }
.adl-details table.tbl { border-collapse: collapse; font-size: 12px; width: 100%; }
.adl-details table.tbl td { padding: 2px 6px 2px 0; border-bottom: 1px solid var(--border); vertical-align: top; }
.adl-details .kcard { border: 1px solid var(--border); border-radius: 6px; padding: 6px 8px; margin-bottom: 8px; background: var(--bg); }
.adl-details .khead { font-weight: 600; margin-bottom: 4px; }
.adl-details .kname { display: block; font-size: 11px; color: var(--muted); margin-bottom: 6px; max-height: 9em; overflow: auto; }
.adl-details .sharebar, .adl-details .bar { display: inline-block; height: 8px; background: var(--tl-lane); border: 1px solid var(--border); border-radius: 4px; overflow: hidden; }
.adl-details .sharebar { display: block; width: 100%; height: 10px; }
.adl-details .sharebar .fill, .adl-details .bar .fill { display: block; height: 100%; background: var(--hot); }
.adl-details .bar .fill.stream { background: var(--accent); }
.adl-details .sharelbl { font-size: 12px; margin-top: 4px; }
.adl-details .bars { display: grid; grid-template-columns: max-content 1fr max-content; gap: 4px 8px; align-items: center; font-size: 12px; }
.adl-details .barrow { display: contents; }
.adl-details .bar { width: 100%; }
.adl-details .bval { color: var(--muted); font-variant-numeric: tabular-nums; font-size: 11px; }
/* timeline */
.adl-split { height: 6px; cursor: row-resize; background: var(--panel); border-top: 1px solid var(--border); border-bottom: 1px solid var(--border); }
.adl-split:hover { background: var(--accent-bg); }
.adl-timeline { display: flex; flex-direction: column; background: var(--bg); overflow: hidden; }
.adl-tl-bar { display: flex; align-items: center; gap: 10px; padding: 3px 10px; font-size: 12px; }
.adl-tl-bar .title { font-weight: 600; }
.adl-tl-bar .hint, .adl-tl-bar .info { color: var(--muted); }
.adl-tl-body { position: relative; flex: 1; overflow-y: auto; overflow-x: hidden; }
.adl-tl-canvas { display: block; cursor: crosshair; }
.adl-tl-canvas.panning { cursor: grabbing; }
.adl-layerview.notrace .adl-timeline { height: auto !important; }
.adl-layerview.notrace .adl-split, .adl-layerview.notrace .adl-tl-body, .adl-layerview.notrace .adl-tl-bar .seg,
.adl-layerview.notrace .adl-tl-bar .btn, .adl-layerview.notrace .adl-tl-bar .hint { display: none; }
.adl-tl-msg { position: absolute; inset: 0; display: none; align-items: center; justify-content: center; color: var(--muted); background: var(--bg); }
.adl-tip { position: absolute; display: none; pointer-events: none; background: var(--panel); color: var(--fg); border: 1px solid var(--border); border-radius: 5px; padding: 4px 7px; font: 11px/1.35 var(--mono); max-width: 560px; word-break: break-all; box-shadow: var(--shadow); z-index: 10; }
.adl-tip div:first-child { font-weight: 600; }

/* views */
[hidden] { display: none !important; }
a.btn { display: inline-block; line-height: 18px; text-decoration: none; }
.adl-toolbar .tabs button { font-weight: 600; }
.adl-view { flex: 1; display: flex; flex-direction: column; min-height: 0; }
.adl-layerview .adl-main { flex: 1; }
.adl-vbar { display: flex; flex-wrap: wrap; align-items: center; gap: 6px 12px; padding: 6px 10px; border-bottom: 1px solid var(--border); background: var(--panel); }
.adl-vbar .spacer, .adl-clegend .spacer { flex: 1; }
.adl-vbar .title { font-weight: 600; }
.adl-vbar .grp { display: flex; align-items: center; gap: 5px; }
.adl-compare .adl-vbar select { max-width: 40vw; min-width: 0; }
.adl-compare .adl-vbar .side { gap: 4px; }
.adl-vbar .chk { display: inline-flex; align-items: center; gap: 4px; color: var(--muted); font-size: 12px; cursor: pointer; }
.adl-vmain { flex: 1; display: flex; min-height: 0; position: relative; }
.sidetag { display: inline-block; min-width: 18px; text-align: center; font-weight: 700; font-size: 11px; color: #fff; border-radius: 4px; padding: 1px 4px; }
.sidetag.a { background: var(--side-a); }
.sidetag.b { background: var(--side-b); }
.adl-clegend { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 14px; padding: 4px 10px; border-bottom: 1px solid var(--border); font-size: 12px; background: var(--bg); }
.adl-clegend .item, .adl-clegend .legend .item { display: inline-flex; align-items: center; gap: 4px; }
.adl-clegend .legend { display: inline-flex; flex-wrap: wrap; gap: 4px 14px; align-items: center; }
.adl-clegend .sw, .adl-olegend .sw { display: inline-block; width: 12px; height: 12px; border-radius: 3px; border: 1.5px solid transparent; box-sizing: border-box; }
.adl-clegend .sep, .adl-olegend .sep { width: 1px; height: 16px; background: var(--border); }
.adl-clegend .total { margin-left: auto; }
.pill { display: inline-block; padding: 0 6px; border-radius: 8px; color: #fff; font: 700 10px/15px var(--mono); }
.pill.slower { background: var(--slower); }
.pill.faster { background: var(--faster); }
.pill.diff { background: var(--diff-badge); }
.slower { color: var(--slower); }
.faster { color: var(--faster); }
/* The two panes share their rows: a head that wraps on one side is as tall on the other, so the
   graphs start at one height and synchronised views match on screen. */
.adl-cpanes { flex: 1; display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); grid-template-rows: auto minmax(0, 1fr); min-width: 0; }
.adl-cpane { display: grid; grid-row: 1 / span 2; grid-template-rows: subgrid; min-width: 0; min-height: 0; }
.adl-cpane + .adl-cpane { border-left: 2px solid var(--border); }
.adl-phead { display: flex; flex-wrap: wrap; align-items: center; gap: 2px 8px; padding: 4px 10px; font-size: 12px; border-bottom: 1px solid var(--border); background: var(--panel); min-height: 22px; }
.adl-phead .run { font-weight: 600; }
.adl-phead .dim { color: var(--muted); }
.adl-phead .time { margin-left: auto; font-weight: 600; font-variant-numeric: tabular-nums; }
.adl-pane { flex: 1; }
/* status marks */
.adl-svg .mark { pointer-events: none; }
.adl-svg .mbadge rect { fill: var(--diff-badge); }
.adl-svg .mbadge.slower rect { fill: var(--slower); }
.adl-svg .mbadge.faster rect { fill: var(--faster); }
.adl-svg .mbadge text { fill: #fff !important; font-weight: 700; font-size: 10px; text-anchor: middle; }
.adl-svg .n[data-status="changed"] .box, .adl-svg .n[data-status="only_a"] .box, .adl-svg .n[data-status="only_b"] .box,
.adl-svg .n[data-status="added"] .box, .adl-svg .n[data-status="removed"] .box { stroke-width: 2.2; }
.adl-svg.lod-min .mbadge text { display: none; }
/* side panels of the views */
:is(.adl-cside, .adl-sside, .adl-oside) { padding: 4px 12px 30px; font-size: 12px; box-sizing: border-box; }
:is(.adl-cside, .adl-sside, .adl-oside) h3 { font-size: 11px; text-transform: uppercase; letter-spacing: 0.04em; color: var(--muted); margin: 14px 0 6px; }
:is(.adl-cside, .adl-sside, .adl-oside) .hint { color: var(--muted); font-size: 12px; }
:is(.adl-cside, .adl-sside, .adl-oside) .dim { color: var(--muted); }
:is(.adl-cside, .adl-sside, .adl-oside) .sub { font-size: 12px; margin-top: 4px; word-break: break-all; }
:is(.adl-cside, .adl-sside, .adl-oside) .big { font-size: 14px; font-weight: 600; word-break: break-all; }
:is(.adl-cside, .adl-sside, .adl-oside) .chip { display: inline-block; font-size: 11px; padding: 0 7px; border: 1px solid; border-radius: 8px; margin-bottom: 6px; }
:is(.adl-cside, .adl-sside, .adl-oside) .mono { font-family: var(--mono); font-size: 11.5px; }
:is(.adl-cside, .adl-sside, .adl-oside) .wrap { word-break: break-all; white-space: pre-wrap; }
:is(.adl-cside, .adl-sside, .adl-oside) table.tbl { border-collapse: collapse; width: 100%; font-size: 12px; }
:is(.adl-cside, .adl-sside, .adl-oside) table.tbl th { text-align: left; font-weight: 600; color: var(--muted); padding: 2px 6px 2px 0; border-bottom: 1px solid var(--border); }
:is(.adl-cside, .adl-sside, .adl-oside) table.tbl td { padding: 3px 6px 3px 0; border-bottom: 1px solid var(--border); vertical-align: top; }
:is(.adl-cside, .adl-sside, .adl-oside) td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
:is(.adl-cside, .adl-sside, .adl-oside) tfoot td { font-weight: 700; border-top: 2px solid var(--border); }
:is(.adl-cside, .adl-sside, .adl-oside) .dot { display: inline-block; width: 9px; height: 9px; border-radius: 50%; margin-right: 5px; vertical-align: 0; flex: none; }
:is(.adl-cside, .adl-sside, .adl-oside) ul.links { list-style: none; padding: 0; margin: 0; }
:is(.adl-cside, .adl-sside, .adl-oside) ul.links li { padding: 2px 0; }
:is(.adl-cside, .adl-sside, .adl-oside) ul.nodelist { max-height: 260px; overflow: auto; border: 1px solid var(--border); border-radius: 5px; padding: 3px 6px; background: var(--bg); }
:is(.adl-cside, .adl-sside, .adl-oside) .link { background: none; border: none; padding: 0; color: var(--accent); cursor: pointer; font: inherit; text-align: left; word-break: break-all; }
:is(.adl-cside, .adl-sside, .adl-oside) .link:hover { text-decoration: underline; }
:is(.adl-cside, .adl-sside, .adl-oside) .link .dim { color: var(--muted); }
:is(.adl-cside, .adl-sside, .adl-oside) .tag { font-size: 11px; font-variant-numeric: tabular-nums; }
:is(.adl-cside, .adl-sside, .adl-oside) .seg { margin-bottom: 6px; }
:is(.adl-cside, .adl-sside, .adl-oside) .seg button { font-size: 11.5px; padding: 2px 6px; height: 24px; }
.sortbtn { background: none; border: none; padding: 0; font: inherit; font-weight: 600; color: var(--muted); cursor: pointer; }
.sortbtn:hover { color: var(--accent); }
th[aria-sort="ascending"] .sortbtn, th[aria-sort="descending"] .sortbtn { color: var(--fg); }
.dbar { display: block; height: 4px; margin-top: 2px; background: var(--tl-lane); border-radius: 2px; overflow: hidden; }
.dbar .fill { display: block; height: 100%; margin-left: auto; }
.dbar .fill.slower { background: var(--slower); }
.dbar .fill.faster { background: var(--faster); }
table.pair td:first-child { white-space: nowrap; }
table.pair tr.diffrow td { background: var(--accent-bg); }
table.pair tr.diffrow td:first-child { font-weight: 700; color: var(--fg); }
td.pre { white-space: pre-wrap; }
.adl-cside .manual { border: 1px dashed var(--accent); border-radius: 6px; padding: 6px 8px; background: var(--accent-bg); }
.adl-cside .manual .pairline { margin: 4px 0; word-break: break-all; }
.adl-cside .manual .btn { margin-top: 6px; }
.btn.xs { height: 20px; padding: 0 6px; font-size: 11px; line-height: 18px; }
/* stage strip */
.stagebar { flex-wrap: nowrap; }
.adl-strip { flex: 1; display: flex; gap: 6px; overflow-x: auto; padding: 2px 2px 4px; scrollbar-width: thin; }
.scard { flex: none; display: flex; flex-direction: column; align-items: flex-start; gap: 2px; max-width: 260px; padding: 4px 8px; border: 1px solid var(--border); border-radius: 6px; background: var(--btn); color: var(--fg); font: inherit; font-size: 12px; cursor: pointer; text-align: left; }
.scard:hover { background: var(--btn-hover); }
.scard.cur { border-color: var(--accent); background: var(--accent-bg); box-shadow: inset 0 0 0 1px var(--accent); }
.scard.quiet { opacity: 0.62; }
.scard .st { font-weight: 600; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; max-width: 240px; }
.scard .sm { display: flex; gap: 6px; color: var(--muted); font-size: 11px; font-variant-numeric: tabular-nums; }
.scard .d.added { color: var(--faster); font-weight: 700; }
.scard .d.removed { color: var(--slower); font-weight: 700; }
.scard .d.changed { color: #b07a00; font-weight: 700; }
:root[data-theme="dark"] .scard .d.changed { color: #f2b632; }
/* overview */
.adl-ochart { flex: 1; display: flex; flex-direction: column; min-width: 0; padding: 8px 8px 4px; }
.adl-ochart .hint { color: var(--muted); font-size: 12px; padding: 2px 8px; }
.adl-rgrid { flex: 1; min-width: 0; overflow: auto; padding: 8px 10px; }
.adl-rgrid .hint, .adl-rside .hint { color: var(--muted); font-size: 12px; padding: 4px 0; }
.adl-rtable { border-collapse: collapse; font-size: 12px; font-variant-numeric: tabular-nums; }
.adl-rtable th { position: sticky; top: 0; background: var(--panel); color: var(--muted); font-weight: 600; padding: 3px 8px; text-align: right; border-bottom: 1px solid var(--border); white-space: nowrap; }
.adl-rtable tbody th { position: static; text-align: right; border-bottom: none; }
.adl-rtable tr.step td { font-weight: 600; border-bottom: 2px solid var(--border); }
.adl-rtable td { padding: 3px 8px; text-align: right; white-space: nowrap; border: 1px solid var(--border); }
.adl-rtable td.cell { cursor: pointer; }
.adl-rtable td.cell:hover, .adl-rtable td.cell:focus { outline: 2px solid var(--accent); outline-offset: -2px; }
.adl-rtable td.strag { font-weight: 700; box-shadow: inset 0 0 0 2px var(--fg); }
.adl-rside { padding: 8px 10px; }
.adl-rside h3 { font-size: 13px; margin: 6px 0; }
.adl-rside table.tbl { border-collapse: collapse; width: 100%; font-size: 12px; }
.adl-rside table.tbl th { text-align: left; color: var(--muted); font-weight: 600; border-bottom: 1px solid var(--border); padding: 2px 6px 2px 0; }
.adl-rside table.tbl td { padding: 3px 6px 3px 0; border-bottom: 1px solid var(--border); }
.adl-rside tr.clickable { cursor: pointer; }
.adl-rside tr.clickable:hover td { background: var(--accent-bg); }
.adl-rlegend { display: inline-flex; align-items: center; gap: 5px; color: var(--muted); font-size: 12px; }
.adl-rlegend .sw { display: inline-block; width: 12px; height: 12px; border: 1px solid var(--border); margin-left: 6px; }
.adl-rlegend .sw.slow { background: rgba(220, 60, 40, 0.6); }
.adl-rlegend .sw.fast { background: rgba(40, 110, 220, 0.6); }
.adl-rlegend .sw.strag { box-shadow: inset 0 0 0 2px var(--fg); }
.adl-sgraph { flex: 1; position: relative; overflow: hidden; outline: none; cursor: grab; background: var(--bg); min-height: 200px; }
.adl-sgraph.panning { cursor: grabbing; }
.adl-sgraph canvas { position: absolute; left: 0; top: 0; display: block; }
.adl-oside .shared li { margin: 2px 0; }
.adl-osvg { flex: 1; width: 100%; min-height: 200px; display: block; }
.adl-osvg text { font-family: var(--sans); }
.adl-osvg .obar { cursor: pointer; outline: none; }
.adl-osvg .obar:hover .seg, .adl-osvg .obar:focus .seg { opacity: 0.8; }
.adl-osvg .obar:focus-visible .hit { stroke: var(--accent); stroke-width: 1.5; }
.adl-olegend { display: flex; flex-wrap: wrap; gap: 4px 12px; align-items: center; font-size: 12px; }
.adl-olegend .item { display: inline-flex; align-items: center; gap: 4px; }
.adl-olegend .kind { display: inline-block; width: 14px; height: 6px; border-radius: 2px; }
.adl-oside .bar { display: inline-block; width: 70px; height: 8px; background: var(--tl-lane); border: 1px solid var(--border); border-radius: 4px; overflow: hidden; }
.adl-oside .bar .fill { display: block; height: 100%; }
.adl-oside .btn { margin-top: 10px; }
.adl-oside dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 3px 10px; margin: 0; }
.adl-oside dt { color: var(--muted); }
.adl-oside dd { margin: 0; }
/* minimap */
.adl-maps { display: flex; gap: 6px; flex-wrap: wrap; padding: 8px 12px 0; }
.adl-maps:not(:has(.adl-minimap.on)) { display: none; }
.adl-minimap { display: none; background: var(--bg); border: 1px solid var(--border); border-radius: 6px; padding: 3px; }
.adl-minimap.on { display: block; }
.adl-minimap-canvas { display: block; cursor: pointer; }
/* keyboard help */
.adl-help { position: fixed; inset: 0; z-index: 50; background: rgba(10, 14, 20, 0.45); display: flex; align-items: center; justify-content: center; }
.adl-help-box { background: var(--panel); color: var(--fg); border: 1px solid var(--border); border-radius: 10px; box-shadow: var(--shadow); padding: 14px 18px 18px; max-width: min(900px, 92vw); max-height: 86vh; overflow: auto; outline: none; }
.adl-help-head { display: flex; align-items: center; justify-content: space-between; gap: 20px; }
.adl-help-head h2 { margin: 0; font-size: 16px; }
.adl-help-grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 6px 28px; }
.adl-help-grid h3 { font-size: 11px; text-transform: uppercase; letter-spacing: 0.04em; color: var(--muted); margin: 14px 0 6px; }
.adl-help-grid dl { display: grid; grid-template-columns: max-content 1fr; gap: 5px 12px; margin: 0; font-size: 12.5px; align-items: baseline; }
.adl-help-grid dd { margin: 0; }
kbd { display: inline-block; min-width: 16px; text-align: center; font: 11px/16px var(--mono); padding: 1px 5px; border: 1px solid var(--border); border-bottom-width: 2px; border-radius: 4px; background: var(--bg); }
` + TIMING_CSS;

export function injectCss(doc: Document = document): void {
  if (doc.getElementById("adl-style")) return;
  try {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, sheet];
    const marker = doc.createElement("meta");
    marker.id = "adl-style";
    doc.head.appendChild(marker);
  } catch {
    const st = doc.createElement("style");
    st.id = "adl-style";
    st.textContent = CSS;
    doc.head.appendChild(st);
  }
}
