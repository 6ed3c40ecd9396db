// The notice that the layers shown may be wrong: the converter's doubts about a layering
// (api/runs stages[].doubts for a stage, api/layer doubts for a layer) as a warning banner, so
// an implausible layering is never shown as if it were right. Text only (textContent).
import type { LayeringDoubt, RunInfo } from "../api/types";
import { t, type StringKey } from "../i18n";
import { clear, h, text } from "./dom";

/** The words for each kind of doubt the converter gives; another kind is shown as it is named. */
const KINDS: Record<string, StringKey> = {
  index_gap: "doubtIndexGap",
  oversized_layer: "doubtOversized",
  layer_count: "doubtLayerCount",
  unordered: "doubtUnordered",
};

/** A doubt's kind in the panel's language ("gap in layer numbers"), or its name ("index gap"). */
export function doubtKind(kind: string): string {
  const key = KINDS[kind];
  return key ? t(key) : kind.replace(/_/g, " ");
}

/** The doubts about stage `stage` of `run` (the stage's, then each layer's); none when unknown. */
export function stageDoubts(run: RunInfo | null, stage: number): LayeringDoubt[] {
  return run?.stages.find((s) => s.index === stage)?.doubts ?? [];
}

/** The layers that stage doubts concern, for marking them (the layer chooser). */
export function doubtfulLayers(doubts: readonly LayeringDoubt[]): Set<number> {
  return new Set(doubts.flatMap((d) => (d.layer === null ? [] : [d.layer])));
}

/**
 * A warning banner: a heading and one line per doubt (its kind, then the converter's message,
 * which names the evidence). Hidden while there is no doubt. It is a polite live region, so a
 * screen reader says so when a doubtful stage or layer is opened.
 */
export class DoubtNotice {
  readonly el: HTMLDivElement;

  constructor(testid: string) {
    this.el = h("div", { class: "adl-doubts", role: "status", "data-testid": testid, hidden: true });
  }

  /** Shows `doubts` under `heading`; hides the notice when there are none. */
  show(heading: string, doubts: readonly LayeringDoubt[]): void {
    clear(this.el);
    this.el.hidden = doubts.length === 0;
    this.el.dataset.count = String(doubts.length);
    if (!doubts.length) return;
    const list = h("ul");
    for (const d of doubts) {
      const item = h("li", { "data-kind": d.kind, "data-layer": d.layer ?? "" });
      item.append(text("span", doubtKind(d.kind), { class: "kind" }), " ", text("span", d.message, { class: "msg" }));
      list.appendChild(item);
    }
    this.el.append(h("span", { class: "icon", "aria-hidden": "true" }, "⚠"), h("div", { class: "body" }, text("div", heading, { class: "head" }), list));
  }

  hide(): void {
    this.show("", []);
  }

  /** The messages shown (none while hidden). */
  messages(): string[] {
    return Array.from(this.el.querySelectorAll(".msg"), (e) => e.textContent ?? "");
  }
}
