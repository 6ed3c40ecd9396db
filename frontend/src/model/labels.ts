// What each box of the graph says, and how big it is. Boxes use a monospace font so that sizes can
// be computed from character counts (in the worker too) without measuring text. Pure.
import { kernelsText, nodesText, t, type StringKey } from "../i18n";
import type { TreeItem } from "./hierarchy";
import { ellipsize, ellipsizeMiddle, fmtPct, fmtUs, shortDtype } from "./format";

export const FONT_PX = 11;
/** Advance width of one monospace character at FONT_PX (0.6 em, plus slack for wider fonts). */
export const CHAR_W = 6.75;
export const LINE_H = 14;
export const PAD_X = 8;
export const PAD_Y = 6;
export const MAX_CHARS = 46;
export const MAX_WEIGHT_LINES = 3;
export const MAX_KERNEL_LINES = 4;
export const HEADER_H = 20;
export const MIN_W = 80;

export type LineKind = "title" | "sub" | "weight" | "kernel" | "more" | "time";

export interface BoxLine {
  kind: LineKind;
  text: string;
  /** Full text when `text` was shortened (shown as a tooltip). */
  full?: string;
}

export interface BoxLabel {
  lines: BoxLine[];
  width: number;
  height: number;
}

function line(kind: LineKind, s: string): BoxLine {
  const text = ellipsize(s, MAX_CHARS);
  return text === s ? { kind, text } : { kind, text, full: s };
}

/**
 * A kernel line of a node card: the name elided in its middle (both ends of a C++ kernel name
 * tell kernels apart) so that the duration at the end always fits.
 */
export function kernelLine(kernel: string, fullName: string, durationUs: number): BoxLine {
  const dur = ` ${fmtUs(durationUs)}`;
  const room = MAX_CHARS - 2 - dur.length;
  const shown = ellipsizeMiddle(kernel, room);
  const l: BoxLine = { kind: "kernel", text: `⚡ ${shown}${dur}` };
  l.full = `${fullName || kernel} (${fmtUs(durationUs)})`;
  return l;
}

export function groupTitle(it: TreeItem): string {
  if (it.depth === 1 && it.name === "layer" && it.layer !== null) return `${it.doubtful ? "⚠ " : ""}${t("layerTitle", { n: it.layer })}`;
  if (it.repeat) return t("repeatTitle", { name: it.name, n: it.repeat.count, p: it.repeat.period });
  return it.phase ? `${it.name} (${it.phase + 1})` : it.name;
}

/**
 * Lines of a visible leaf: an op node, an external input or a collapsed group. `traced`: a trace
 * was mapped onto the layer, so a collapsed group's kernel count means something (without a trace
 * it is unknown, not zero, and is left out).
 */
export function leafLabel(it: TreeItem, layerTimeUs?: number, traced = true): BoxLabel {
  const lines: BoxLine[] = [];
  if (it.kind === "op" && it.node) {
    const n = it.node;
    lines.push(line("title", n.label || n.op));
    const shape = n.shape && n.shape !== "?" ? ` · ${n.shape}` : "";
    lines.push(line("sub", `%${n.id}${shape}`));
    const ws = n.weights ?? [];
    ws.slice(0, MAX_WEIGHT_LINES).forEach((w) => lines.push(line("weight", `▪ ${w.role} ${w.shape}`)));
    if (ws.length > MAX_WEIGHT_LINES) lines.push(line("more", `  +${ws.length - MAX_WEIGHT_LINES} …`));
    const ks = n.kernels ?? [];
    ks.slice(0, MAX_KERNEL_LINES).forEach((k) => lines.push(kernelLine(k.kernel, k.name, k.stats?.median_us ?? k.duration_us)));
    if (ks.length > MAX_KERNEL_LINES) lines.push(line("more", `  +${ks.length - MAX_KERNEL_LINES} ⚡ …`));
  } else if (it.kind === "input" && it.inputs) {
    // Inputs of one kind folded into one: the kind and how many.
    lines.push(line("title", inputCaption(it.input!.label)));
    lines.push(line("sub", t("foldedInputs", { n: it.inputs.length, kind: it.inputs.map((x) => x.shape).filter((v, i, a) => a.indexOf(v) === i).slice(0, 3).join(", ") })));
  } else if (it.kind === "input" && it.input) {
    const x = it.input;
    lines.push(line("title", x.label ? inputCaption(x.label) : x.id));
    const shape = x.shape ? ` · ${x.shape}` : "";
    const dt = x.dtype ? ` ${shortDtype(x.dtype)}` : "";
    lines.push(line("sub", `%${x.id}${shape}${dt}`));
  } else {
    lines.push(line("title", `▸ ${groupTitle(it)}`));
    lines.push(line("sub", traced ? `${nodesText(it.nodeCount)} · ${kernelsText(it.kernelCount)}` : nodesText(it.nodeCount)));
    if (it.timeUs > 0) {
      const share = layerTimeUs && layerTimeUs > 0 && it.depth > 1 ? ` (${fmtPct(it.timeUs / layerTimeUs)})` : "";
      lines.push(line("time", `GPU ${fmtUs(it.timeUs)}${share}`));
    }
  }
  return sized(lines);
}

function sized(lines: BoxLine[]): BoxLabel {
  let maxc = 0;
  for (const l of lines) maxc = Math.max(maxc, l.text.length);
  const width = Math.max(MIN_W, Math.ceil(maxc * CHAR_W + 2 * PAD_X));
  const height = Math.ceil(lines.length * LINE_H + 2 * PAD_Y);
  return { lines, width, height };
}

/** Header of an expanded group: "▾ moe · 104 nodes · 300 µs". */
export function containerHeader(it: TreeItem, layerTimeUs?: number): { text: string; short: string; width: number } {
  const parts = [`▾ ${groupTitle(it)}`, nodesText(it.nodeCount)];
  let short = groupTitle(it);
  if (it.timeUs > 0) {
    const share = layerTimeUs && layerTimeUs > 0 && it.depth > 1 ? ` (${fmtPct(it.timeUs / layerTimeUs)})` : "";
    parts.push(`${fmtUs(it.timeUs)}${share}`);
    short += ` · ${fmtUs(it.timeUs)}`;
  }
  const text = parts.join(" · ");
  return { text, short, width: Math.ceil(text.length * CHAR_W + 2 * PAD_X) };
}

/** The converter's captions of external inputs (and their kinds, which name folded inputs). */
const INPUT_CAPTIONS: Record<string, StringKey> = {
  "KV cache": "inKv", kv_cache: "inKv", "batch metadata": "inMeta", batch_metadata: "inMeta", "RoPE cache": "inRope", rope: "inRope",
  "attention mask": "inMask", mask: "inMask", "shape value": "inShape", shape: "inShape", "position ids": "inPos", position: "inPos",
  "input ids": "inIds", input_ids: "inIds", "token embedding": "inEmbed", embedding: "inEmbed", "model-level value": "inModel",
  model: "inModel", "model buffer": "inBuffer", buffer: "inBuffer", residual: "inResidual", layer_output: "inLayerOut",
};

/** An external input's caption in the panel's language (a name the converter did not make stays as it is). */
export function inputCaption(label: string): string {
  const m = /^Layer (\d+) (residual output|output)$/.exec(label);
  if (m) return t(m[2] === "output" ? "inOutputOf" : "inResidualOf", { n: m[1] });
  const key = INPUT_CAPTIONS[label];
  return key ? t(key) : label;
}
