// The table of the panel's views, in tab order: everything the app needs to know of a view (its
// tab, number key, toolbar, URL keys, downloads, how it is built, its test hook) is its entry here.
// Adding a view: its module, its entry and its tab's strings (i18n.ts).
import { downloadUrl } from "../api/client";
import type { RunInfo } from "../api/types";
import { CompareView, comparePaneFields, comparePanesOf, comparePanesUrl } from "../compare/view";
import { defaultPair, type SideChoice } from "../compare/model";
import { t } from "../i18n";
import { LayerView } from "../layer/view";
import { OverviewView } from "../overview/view";
import { RanksView } from "../ranks/view";
import { singleLayer, type PanelState } from "../state/store";
import { StageView } from "../stages/view";
import { TimingView } from "../timing/view";
import { choiceField, defineView, indexField, sideField, textField, type Download, type PanelView, type UrlFields, type ViewContext, type ViewEntry } from "./view";

function layerDownloads(p: { run: string; stage: number; layer: number }): Download[] {
  return [
    { label: t("dlJson"), href: downloadUrl("layer.json", p), testid: "download-json", title: t("dlJsonTitle") },
    { label: t("dlDot"), href: downloadUrl("layer.dot", p), testid: "download-dot", title: t("dlDotTitle") },
  ];
}

function traceDownload(run: RunInfo): Download[] {
  return run.trace ? [{ label: t("dlTrace"), href: downloadUrl("trace.json", { run: run.run }), testid: "download-trace", title: t("dlTraceTitle") }] : [];
}

/** The comparison a view opens on when none is asked for: a useful pair around the shown layer. */
function defaultComparison(st: Readonly<PanelState>): PanelState["compare"] {
  if (!st.run) return null;
  const pair = defaultPair({ run: st.run, stage: st.stage, layer: singleLayer(st) }, st.runs);
  return { a: pair.a, b: pair.b, mp: "" };
}

const layer = defineView({
  id: "layer",
  tab: "viewLayer",
  key: "1",
  choosers: ["phase", "run", "stage", "layer", "rank"],
  stageDoubts: true,
  // The open groups and the view's place (layer/view.ts says how they are written).
  url: { open: textField("open"), at: textField("at") },
  urlOf: (st: Readonly<PanelState>) => ({ open: st.open ?? undefined, at: st.at ?? undefined }),
  fromUrl: (vs): Partial<PanelState> => ({ open: vs.open ?? null, at: vs.at ?? null }),
  downloads: (st: Readonly<PanelState>, run: RunInfo): Download[] => [
    ...(st.layer !== "all" ? layerDownloads({ run: run.run, stage: st.stage, layer: st.layer }) : []),
    ...traceDownload(run),
  ],
  create: (ctx: ViewContext): LayerView => new LayerView(ctx.api, ctx.store, { onError: ctx.onError, onStatus: ctx.onStatus }),
  hook: (v: LayerView): Record<string, unknown> => v.testHook(),
});

const compare = defineView({
  id: "compare",
  tab: "viewCompare",
  key: "2",
  choosers: [],
  stageDoubts: false,
  // mp first: links keep the order of parameters they had (the pairs matched by hand, then the sides).
  // Then each pane's open groups and place (compare/view.ts says how they are written).
  url: { mp: textField("mp", "compare"), a: sideField("a"), b: sideField("b"), ...comparePaneFields() },
  urlOf: (st: Readonly<PanelState>) => ({ a: st.compare?.a, b: st.compare?.b, mp: st.compare?.mp || undefined, ...comparePanesUrl(st.compare?.panes) }),
  fromUrl: (vs, next: Readonly<PanelState>, shown: boolean): Partial<PanelState> =>
    shown ? { compare: vs.a && vs.b ? { a: vs.a, b: vs.b, mp: vs.mp ?? "", panes: comparePanesOf(vs) } : next.compare ?? defaultComparison(next) } : {},
  onShow: (st: Readonly<PanelState>): Partial<PanelState> => (st.compare ? {} : { compare: defaultComparison(st) }),
  downloads: (st: Readonly<PanelState>): Download[] => {
    const out: Download[] = [];
    for (const side of ["a", "b"] as const) {
      const c = st.compare?.[side];
      if (c) out.push({ label: `${side.toUpperCase()} ${t("dlJson")}`, href: downloadUrl("layer.json", { run: c.run, stage: c.stage, layer: c.layer }), testid: `download-json-${side}`, title: t("dlJsonTitle") });
    }
    return out;
  },
  create: (ctx: ViewContext): CompareView => new CompareView(ctx.api, ctx.store, { onError: ctx.onError }),
  hook: (v: CompareView, ctx: ViewContext): Record<string, unknown> => ({
    compare: () => v.testState(),
    openCompare: (a: SideChoice, b: SideChoice) => ctx.actions.openCompare(a, b),
    compareJump: (side: "a" | "b", id: string) => v.jumpTo(side, id),
  }),
});

const stages = defineView({
  id: "stages",
  tab: "viewStages",
  key: "3",
  // The stage view steps through the stages itself.
  choosers: ["phase", "run", "layer"],
  stageDoubts: false,
  url: { sv: choiceField("sv", ["before", "after"]), ss: indexField("ss") },
  urlOf: (st: Readonly<PanelState>) => ({
    sv: st.stageSide === "before" ? ("before" as const) : undefined,
    ss: st.stageShown !== null && st.stageShown !== st.stage ? st.stageShown : undefined,
  }),
  // Also when the URL shows another view: the stage view's stage and side go with the URL.
  fromUrl: (vs): Partial<PanelState> => ({ stageSide: vs.sv ?? "after", stageShown: vs.ss ?? null }),
  downloads: (st: Readonly<PanelState>, run: RunInfo): Download[] => [
    ...(st.layer !== "all" ? layerDownloads({ run: run.run, stage: st.stageShown ?? st.stage, layer: singleLayer(st) }) : []),
    ...traceDownload(run),
  ],
  create: (ctx: ViewContext): StageView => new StageView(ctx.api, ctx.store, { onError: ctx.onError }),
  hook: (v: StageView): Record<string, unknown> => ({ stages: () => v.testState() }),
});

const overview = defineView({
  id: "overview",
  tab: "viewOverview",
  key: "4",
  choosers: ["phase", "run", "stage", "layer"],
  stageDoubts: true,
  url: {},
  urlOf: () => ({}),
  fromUrl: (): Partial<PanelState> => ({}),
  downloads: (_st: Readonly<PanelState>, run: RunInfo): Download[] => traceDownload(run),
  create: (ctx: ViewContext): OverviewView => new OverviewView(ctx.api, ctx.store, { onError: ctx.onError }),
  hook: (v: OverviewView): Record<string, unknown> => ({ overview: () => v.testState() }),
});

const timing = defineView({
  id: "timing",
  tab: "viewTiming",
  key: "5",
  // The report is of the run's traced step: no stage or layer to choose.
  choosers: ["phase", "run"],
  stageDoubts: false,
  // The run diffed against: the comparison's B run, when it is another run.
  url: { versus: textField("vs", "timing") },
  urlOf: (st: Readonly<PanelState>) => ({ versus: st.compare && st.compare.b.run !== st.run ? st.compare.b.run : undefined }),
  fromUrl: (vs, next: Readonly<PanelState>, shown: boolean): Partial<PanelState> => {
    if (!shown || !vs.versus || !next.run) return {};
    const layer = singleLayer(next);
    const b = next.runs.find((r) => r.run === vs.versus);
    return { compare: { a: { run: next.run, stage: next.stage, layer }, b: { run: vs.versus, stage: b ? b.default_stage : next.stage, layer }, mp: "" } };
  },
  downloads: (_st: Readonly<PanelState>, run: RunInfo): Download[] => traceDownload(run),
  create: (ctx: ViewContext): TimingView => new TimingView(ctx.api, ctx.store, ctx.actions, { onError: ctx.onError }),
  hook: (v: TimingView): Record<string, unknown> => ({ timingView: () => v.testState(), openFinding: (i: number) => v.openFinding(i) }),
});

const ranks = defineView({
  id: "ranks",
  tab: "viewRanks",
  key: "6",
  // Every rank of the run's traced step: no stage, layer or rank to choose (a cell opens one).
  choosers: ["phase", "run"],
  stageDoubts: false,
  url: {},
  urlOf: () => ({}),
  fromUrl: (): Partial<PanelState> => ({}),
  downloads: (_st: Readonly<PanelState>, run: RunInfo): Download[] => traceDownload(run),
  create: (ctx: ViewContext): RanksView => new RanksView(ctx.api, ctx.store, ctx.actions, { onError: ctx.onError }),
  hook: (v: RanksView): Record<string, unknown> => ({ ranks: () => v.testState() }),
});

/** The views in tab order; the first is the default view (the one a URL without `view` shows). */
export const VIEW_TABLE = [layer, compare, stages, overview, timing, ranks] as const;

export type ViewTable = typeof VIEW_TABLE;
export type ViewId = ViewTable[number]["id"];
/** An entry as the app handles every view: its view's own type forgotten. */
export type AnyViewEntry = ViewEntry<ViewId, UrlFields, PanelView>;

export const DEFAULT_VIEW: ViewId = VIEW_TABLE[0].id;

/**
 * The table as the app walks it. Each entry's create() and hook() go together (hook gets what
 * create made), which is why forgetting the view's type is safe.
 */
export function viewEntries(): readonly AnyViewEntry[] {
  return VIEW_TABLE as unknown as readonly AnyViewEntry[];
}

/** The entry of a view, or undefined for a name that is none. */
export function viewEntry(id: string): AnyViewEntry | undefined {
  return viewEntries().find((e) => e.id === id);
}
