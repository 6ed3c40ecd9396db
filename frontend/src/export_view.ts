// Export of what a view shows as one self-contained SVG or PNG file: the parts come from the view
// (views/view.ts, exportParts), the page's colours and font from the theme.
import { exportFileName, exportSvg, saveBlob, svgToPng } from "./graph/export";
import { t } from "./i18n";
import type { ViewExport } from "./views/view";

/** Exports the current view; returns the file name and a status line, or an error message. */
export async function exportView(kind: "svg" | "png", ex: ViewExport | null): Promise<{ name: string | null; status: string; error?: string }> {
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
