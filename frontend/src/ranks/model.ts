// The ranks view's model: api/ranks as a layers x ranks grid, each cell's value (GPU time or
// communication) against the layer's median across the ranks, stragglers marked. Pure.
import type { RanksResponse, Straggler } from "../api/types";

export type RankMetric = "gpu" | "comm";

export interface RankCell {
  rank: number;
  layer: number;
  /** The value shown: the layer's GPU time on the rank, or its communication (null: none mapped). */
  value: number | null;
  /** The value over the median of the ranks' values at that layer (1 = as the others). */
  ratio: number | null;
  /** The straggler record when the rank is one at that layer. */
  straggler: Straggler | null;
  gpuUs: number;
  computeUs: number;
  noiseUs: number;
  commUs: number | null;
}

export interface RanksGrid {
  ranks: number[];
  layers: number[];
  /** Rows by layer, cells by rank (in `ranks` order). */
  rows: RankCell[][];
  /** Each rank's whole-step figures, in `ranks` order. */
  totals: { rank: number; device: number | null; gpuUs: number; commUs: number | null }[];
  hasComm: boolean;
}

function median(xs: number[]): number {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function ranksGrid(res: RanksResponse, metric: RankMetric): RanksGrid {
  const ranks = res.ranks.map((r) => r.rank);
  const strag = new Map(res.stragglers.map((s) => [`${s.layer}/${s.rank}`, s]));
  const byRank = new Map(res.ranks.map((r) => [r.rank, new Map(r.layers.map((l) => [l.layer, l]))]));
  const rows: RankCell[][] = [];
  for (const layer of res.layers) {
    const cells: RankCell[] = ranks.map((rank) => {
      const l = byRank.get(rank)?.get(layer);
      const value = !l ? null : metric === "gpu" ? l.gpu_time_us : l.communication_us;
      return {
        rank, layer, value, ratio: null, straggler: strag.get(`${layer}/${rank}`) ?? null,
        gpuUs: l?.gpu_time_us ?? 0, computeUs: l?.compute_us ?? 0, noiseUs: l?.noise_us ?? 0, commUs: l?.communication_us ?? null,
      };
    });
    const med = median(cells.map((c) => c.value).filter((v): v is number => v !== null));
    for (const c of cells) c.ratio = c.value !== null && med > 0 ? c.value / med : null;
    rows.push(cells);
  }
  return {
    ranks, layers: res.layers, rows,
    totals: res.ranks.map((r) => ({ rank: r.rank, device: r.device, gpuUs: r.gpu_time_us, commUs: r.communication_us })),
    hasComm: res.ranks.some((r) => r.communication_us !== null),
  };
}

/**
 * A cell's background: slower than the layer's median in red, faster in blue, stronger the
 * further off (full at +-30 %); transparent at the median.
 */
export function heatColor(ratio: number | null, dark: boolean): string {
  if (ratio === null) return "transparent";
  const d = Math.max(-1, Math.min(1, (ratio - 1) / 0.3));
  const a = Math.abs(d) * (dark ? 0.75 : 0.65);
  if (a < 0.02) return "transparent";
  return d > 0 ? `rgba(220, 60, 40, ${a.toFixed(3)})` : `rgba(40, 110, 220, ${a.toFixed(3)})`;
}
