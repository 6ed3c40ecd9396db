// The Timing view's CSS (appended to the panel's, ui/styles.ts), and the report's marks in the
// layer view: the p99 marker on a node and the critical-path legend of the timeline.
export const TIMING_CSS = `
.adl-tbody { flex: 1; overflow: auto; padding: 4px 14px 30px; font-size: 12px; }
.adl-tbody .trow { display: flex; flex-wrap: wrap; gap: 0 28px; }
.adl-tbody .trow > .tsec { flex: 1 1 420px; min-width: 0; }
.adl-tbody h3 { font-size: 11px; text-transform: uppercase; letter-spacing: 0.04em; color: var(--muted); margin: 14px 0 6px; }
.adl-tbody h4 { font-size: 12px; margin: 10px 0 4px; font-weight: 600; }
.adl-tbody .hint, .adl-tbody .dim { color: var(--muted); }
.adl-tbody .sub { margin: 4px 0; }
.adl-tbody dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 3px 10px; margin: 0; }
.adl-tbody dt { color: var(--muted); }
.adl-tbody dd { margin: 0; font-variant-numeric: tabular-nums; }
.adl-tbody table.tbl { border-collapse: collapse; font-size: 12px; }
.adl-tbody table.tbl th { text-align: left; font-weight: 600; color: var(--muted); padding: 2px 8px 2px 0; border-bottom: 1px solid var(--border); white-space: nowrap; }
.adl-tbody table.tbl th.num { text-align: right; }
.adl-tbody table.tbl td { padding: 2px 8px 2px 0; border-bottom: 1px solid var(--border); vertical-align: top; }
.adl-tbody td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.adl-tbody td.why { max-width: 420px; }
.adl-tbody .twide { overflow-x: auto; max-width: 100%; }
.adl-tbody .link { background: none; border: none; padding: 0; color: var(--accent); cursor: pointer; font: inherit; text-align: left; word-break: break-all; }
.adl-tbody .link:hover { text-decoration: underline; }
.adl-tbody .bars { display: grid; grid-template-columns: max-content minmax(80px, 1fr) max-content; gap: 3px 8px; align-items: center; max-width: 560px; }
.adl-tbody .barrow { display: contents; }
.adl-tbody .bar { display: inline-block; width: 100%; height: 8px; background: var(--tl-lane); border: 1px solid var(--border); border-radius: 4px; overflow: hidden; }
.adl-tbody .bar .fill { display: block; height: 100%; }
.adl-tbody .bval { color: var(--muted); font-variant-numeric: tabular-nums; }
.adl-tbody ol.findings { margin: 0; padding-left: 26px; max-height: 360px; overflow: auto; }
.adl-tbody ol.findings li { padding: 2px 0; }
.adl-tbody ol.findings .stake { display: inline-block; min-width: 64px; font-weight: 600; font-variant-numeric: tabular-nums; }
.adl-tbody ol.findings .kind { display: inline-block; font-size: 11px; color: var(--muted); border: 1px solid var(--border); border-radius: 8px; padding: 0 6px; margin-right: 6px; }
.adl-tbody .tchart { min-height: 0; height: 220px; }
.adl-tbody .adl-olegend .sw { display: inline-block; width: 10px; height: 10px; border-radius: 2px; }
.adl-tbody .verdict { display: inline-block; font-weight: 700; padding: 1px 10px; border-radius: 10px; color: #fff; background: var(--diff-badge); }
.adl-tbody .verdict.regression { background: var(--slower); }
.adl-tbody .verdict.improvement { background: var(--faster); }
.adl-tbody td.slower { color: var(--slower); }
.adl-tbody td.faster { color: var(--faster); }
.adl-details [data-testid=details-breakdown] h4 { font-size: 11px; color: var(--muted); font-weight: 600; margin: 8px 0 4px; }
.adl-svg .tailmark rect { fill: #7a3fd1; }
.adl-svg .tailmark text { fill: #fff !important; font-weight: 700; font-size: 9.5px; text-anchor: middle; }
.adl-svg.lod-min .tailmark text { display: none; }
.adl-tl-bar .cplegend { display: inline-flex; gap: 10px; align-items: center; color: var(--muted); }
.adl-tl-bar .cplegend .sw { display: inline-block; width: 14px; height: 8px; border-radius: 2px; vertical-align: -1px; margin-right: 4px; }
.adl-tl-bar .cplegend .sw.path { background: transparent; border: 2px solid #e0245e; height: 6px; }
.adl-tl-bar .cplegend .sw.exposed { background: repeating-linear-gradient(45deg, #e0245e, #e0245e 2px, transparent 2px, transparent 4px); }
.adl-tl-bar button[aria-pressed="true"] { background: var(--accent-bg); border-color: var(--accent); }
`;
