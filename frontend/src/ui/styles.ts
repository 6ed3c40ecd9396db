// The panel's CSS, injected from JS (constructable stylesheet, or a <style> element as fallback).

export const CSS = `
:root {
  --bg: #ffffff; --fg: #1d2329; --muted: #5f6b77; --panel: #f7f8fa; --border: #d9dee4;
  --accent: #1a66e0; --accent-bg: rgba(26,102,224,0.10); --edge: #8d99a6; --edge-act: #1a66e0;
  --hl: #ffb000; --hl-stroke: #6b4a00; --hit: #f5c400; --hot: #d7263d; --btn: #ffffff; --btn-hover: #eef1f5;
  --tl-lane: #f4f6f9; --tl-hatch: #e1e5eb; --tl-grid: #e3e7ec; --tl-merged: #6c7d92; --tl-unmapped: #a5adb8;
  --err-bg: #fdecec; --err-fg: #9b1c1c; --shadow: 0 2px 10px rgba(0,0,0,0.12);
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace;
  --sans: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans CJK SC", "PingFang SC", "Microsoft YaHei", sans-serif;
}
:root[data-theme="dark"] {
  --bg: #15181c; --fg: #e6e9ed; --muted: #98a2ad; --panel: #1b1f24; --border: #323941;
  --accent: #6ea8ff; --accent-bg: rgba(110,168,255,0.14); --edge: #6c7784; --edge-act: #8cbcff;
  --hl: #ffd54a; --hl-stroke: #fff3c4; --hit: #ffd54a; --hot: #ff5c6c; --btn: #22272e; --btn-hover: #2b313a;
  --tl-lane: #1d2127; --tl-hatch: #2c323a; --tl-grid: #2f353d; --tl-merged: #7f8fa3; --tl-unmapped: #5b6470;
  --err-bg: #3a1d1f; --err-fg: #ffb4b4; --shadow: 0 2px 12px rgba(0,0,0,0.5);
}
html, body { margin: 0; padding: 0; height: 100%; background: var(--bg); color: var(--fg); }
body { font: 13px/1.4 var(--sans); overflow: hidden; }
.adl-root { display: flex; flex-direction: column; height: 100vh; }
.adl-toolbar { display: flex; flex-wrap: wrap; align-items: center; gap: 6px 12px; padding: 6px 10px; border-bottom: 1px solid var(--border); background: var(--panel); }
.adl-toolbar .grp { display: flex; align-items: center; gap: 5px; }
.adl-toolbar label { color: var(--muted); font-size: 12px; }
.adl-toolbar .title { font-weight: 600; margin-right: 4px; }
.adl-toolbar .spacer { flex: 1; }
select, input[type=search], .btn, .seg button {
  font: inherit; color: var(--fg); background: var(--btn); border: 1px solid var(--border); border-radius: 5px; padding: 3px 7px; height: 26px; box-sizing: border-box;
}
select { max-width: 320px; }
select#adl-run { max-width: 220px; }
.btn, .seg button { cursor: pointer; }
.btn:hover, .seg button:hover { background: var(--btn-hover); }
.btn:focus-visible, select:focus-visible, input:focus-visible, .seg button:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
.seg { display: inline-flex; }
.seg button { border-radius: 0; margin-left: -1px; }
.seg button:first-child { border-radius: 5px 0 0 5px; margin-left: 0; }
.seg button:last-child { border-radius: 0 5px 5px 0; }
.seg button:disabled, .btn:disabled, select:disabled { opacity: 0.45; cursor: not-allowed; }
.seg button[aria-pressed="true"] { background: var(--accent-bg); border-color: var(--accent); color: var(--accent); position: relative; z-index: 1; }
input[type=search] { width: 230px; }
.search .count { color: var(--muted); font-size: 12px; min-width: 52px; font-variant-numeric: tabular-nums; }
.iconbtn { width: 28px; padding: 0; text-align: center; }
.adl-error { display: none; padding: 6px 12px; background: var(--err-bg); color: var(--err-fg); border-bottom: 1px solid var(--border); white-space: pre-wrap; }
.adl-error.on { display: block; }
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
.adl-tl-msg { position: absolute; inset: 0; display: none; align-items: center; justify-content: center; color: var(--muted); background: var(--bg); }
.adl-tip { position: absolute; display: none; pointer-events: none; background: var(--panel); color: var(--fg); border: 1px solid var(--border); border-radius: 5px; padding: 4px 7px; font: 11px/1.35 var(--mono); max-width: 560px; word-break: break-all; box-shadow: var(--shadow); z-index: 10; }
.adl-tip div:first-child { font-weight: 600; }
`;

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
