// Export of what a view shows as one self-contained SVG or PNG file: the layer graph, both
// comparison panes side by side, the stage view's graph, or the overview chart.
import type { RunInfo } from "./api/types";
import type { CompareView } from "./compare/view";
import { exportFileName, exportSvg, saveBlob, svgToPng, type ExportPart } from "./graph/export";
import type { GraphView } from "./graph/renderer";
import { t } from "./i18n";
import type { OverviewView } from "./overview/view";
import type { ViewName } from "./state/hash";
import type { StageView } from "./stages/view";

export interface ExportSources {
  view: ViewName;
  run: RunInfo | null;
  stage: number;
  layer: number | "all";
  layerGraph: GraphView;
  compare: CompareView;
  stages: StageView;
  overview: OverviewView;
}

/** The parts (one per pane) of the current view, a function that restores the screen, a file name. */
export function exportParts(src: ExportSources): { parts: ExportPart[]; restore: () => void; name: (string | number)[] } | null {
  const { run, stage, layer } = src;
  const restores: (() => void)[] = [];
  const restore = () => restores.forEach((f) => f());
  if (src.view === "layer") {
    const p = src.layerGraph.prepareExport();
    if (!p || !run) return null;
    restores.push(p.restore);
    const st = run.stages.find((x) => x.index === stage);
    const title = `${run.run} · ${st?.file.replace(/\.txt$/, "") ?? stage} · ${layer === "all" ? t("allLayers") : t("layerTitle", { n: layer })}`;
    return { parts: [{ svg: p.svg, width: p.width, height: p.height, title }], restore, name: [run.run, `stage${stage}`, layer === "all" ? "all" : `layer${layer}`] };
  }
  if (src.view === "compare") {
    const cur = src.compare.current();
    if (!cur) return null;
    const parts: ExportPart[] = [];
    for (const side of ["a", "b"] as const) {
      const p = src.compare.panes[side].graph.prepareExport();
      if (!p) continue;
      restores.push(p.restore);
      const c = cur[side];
      parts.push({ svg: p.svg, width: p.width, height: p.height, title: `${side.toUpperCase()} · ${c.run} · ${t("stage")} ${c.stage} · ${t("layerTitle", { n: c.layer })}` });
    }
    if (!parts.length) return null;
    return { parts, restore, name: ["compare", cur.a.run, `s${cur.a.stage}`, `L${cur.a.layer}`, "vs", cur.b.run, `s${cur.b.stage}`, `L${cur.b.layer}`] };
  }
  if (src.view === "stages") {
    const p = src.stages.pane.graph.prepareExport();
    const c = src.stages.current();
    if (!p || !run) return null;
    restores.push(p.restore);
    const st = run.stages.find((x) => x.index === c.stage);
    return {
      parts: [{ svg: p.svg, width: p.width, height: p.height, title: `${run.run} · ${t("layerTitle", { n: c.layer })} · ${st?.transform ?? c.stage} (${t(c.side === "after" ? "showAfter" : "showBefore")})` }],
      restore, name: [run.run, `layer${c.layer}`, `stage${c.stage}`, c.side],
    };
  }
  const p = src.overview.exportPart();
  if (!p || !run) return null;
  return { parts: [{ ...p, title: `${t("overview")} · ${run.run}` }], restore, name: [run.run, "overview", `stage${stage}`] };
}

/** Exports the current view; returns the file name and a status line, or an error message. */
export async function exportView(kind: "svg" | "png", src: ExportSources): Promise<{ name: string | null; status: string; error?: string }> {
  const ex = exportParts(src);
  if (!ex) return { name: null, status: t("exportNothing") };
  const css = getComputedStyle(document.documentElement);
  const bg = css.getPropertyValue("--bg").trim() || "#ffffff";
  const fg = css.getPropertyValue("--fg").trim() || "#1d2329";
  const font = css.getPropertyValue("--sans").trim() || "sans-serif";
  let res;
  try {
    res = exportSvg(ex.parts, { background: bg, foreground: fg, font });
  } finally {
    ex.restore();
  }
  const name = exportFileName(ex.name, kind);
  try {
    if (kind === "svg") saveBlob(new Blob([res.svg], { type: "image/svg+xml;charset=utf-8" }), name);
    else saveBlob(await svgToPng(res.svg, res.width, res.height, bg), name);
  } catch (e) {
    return { name: null, status: "", error: t("exportFailed", { msg: String((e as Error)?.message ?? e) }) };
  }
  return { name, status: t("exported", { name, w: res.width, h: res.height }) };
}
