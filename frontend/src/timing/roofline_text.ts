// A node's roofline figures in words: its bound, its achieved rate (a collective's bus
// bandwidth) and where each of its symbolic sizes came from; shared by the Timing view's table and
// a node's details.
import type { NodeRoofline } from "../api/types";
import { t } from "../i18n";

/** A node's roofline bound, in words. */
export function boundText(b: NodeRoofline["bound"]): string {
  return b === "compute" ? t("timingBoundCompute") : b === "memory" ? t("timingBoundMemory") : b === "communication" ? t("timingBoundComm") : "–";
}

/** Where each of a node's symbolic sizes came from: ``s70 = 1024 (--dim)``, one line each. */
export function sizesText(r: NodeRoofline): string {
  return r.sizes.map((s) => {
    const where = s.source === "dim" ? t("roofSizeDim") : s.source === "trace" ? t("roofSizeTrace", { where: s.detail }) : t("roofSizeUnknown", { why: s.detail });
    return `${s.symbol} = ${s.value ?? "?"} (${where})`;
  }).join("\n");
}

/** A node's achieved rate: TB/s, or a collective's bus bandwidth. */
export function rateText(r: NodeRoofline): string {
  if (r.bound === "communication") return r.achieved_bus_gbs !== null ? t("timingBus", { gbs: r.achieved_bus_gbs.toFixed(1) }) : "–";
  return r.achieved_tbs !== null ? r.achieved_tbs.toFixed(3) : "–";
}
