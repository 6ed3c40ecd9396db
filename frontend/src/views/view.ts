// What a view of the panel is: the instance the app shows (PanelView) and its entry in the table
// of views (ViewEntry, views/table.ts). The app builds its tabs, toolbar, containers, number keys,
// downloads, export, URL keys and test hook from the entries, so a view is added in one place.
import type { Api } from "../api/client";
import type { RunInfo } from "../api/types";
import type { ExportPart } from "../graph/export";
import type { StringKey } from "../i18n";
import type { PanelActions } from "../state/actions";
import type { SideRef } from "../state/hash";
import type { PanelState, Store } from "../state/store";

/** What a view is built with: the data, the store it follows and writes, where it reports. */
export interface ViewContext {
  api: Api;
  store: Store<PanelState>;
  actions: PanelActions;
  onError(e: unknown): void;
  /** The view's status line (shown under the panel while the view is). */
  onStatus(line: string): void;
}

/** What the current view exports as one SVG or PNG: a part per pane and the file name's parts. */
export interface ViewExport {
  parts: ExportPart[];
  /** Puts the screen back as it was (export builds what level of detail left out). */
  restore: () => void;
  name: (string | number)[];
}

/** A view as the app sees it. */
export interface PanelView {
  /** Its container, shown while it is the current view. */
  readonly el: HTMLElement;
  /**
   * Renders from the store: called on every change, shown or not (a hidden view notes what it
   * will have to load; most wait until they are shown).
   */
  follow(st: Readonly<PanelState>, changed: ReadonlySet<keyof PanelState>): void;
  /** Its controls in the toolbar's second row, shown with it. */
  readonly toolbarItems?: readonly HTMLElement[];
  /** What it exports; null when it has nothing drawn. */
  exportParts(st: Readonly<PanelState>): ViewExport | null;
  /** Its keys; true when handled. */
  handleKey?(ev: KeyboardEvent): boolean;
  /** Ctrl+F in this view: its search field instead of the browser's. */
  focusSearch?(): void;
  /** Where the panel says that there is nothing to show (no runs): the first view's is used. */
  readonly emptySlot?: HTMLElement;
  /** A load under way that activity tracking does not cover (the test hook's state().busy). */
  busy?(): boolean;
  /** Its fields of the test hook's state(). */
  hookState?(): Record<string, unknown>;
}

/** The panel's choosers in the toolbar's first row that a view shows. */
export type Chooser = "phase" | "run" | "stage" | "layer" | "rank";
/** "rank": shown only for a run of more than one rank (a multi-GPU run). */
export const CHOOSERS: readonly Chooser[] = ["phase", "run", "stage", "layer", "rank"];

/** One piece of a view's own state in the URL: a parameter, or several (a comparison side). */
export interface UrlField<T> {
  /** Its parameter names in the URL (unique across the panel). */
  params: readonly string[];
  /** Its value in the URL (`view`: the view the URL names); undefined when absent or invalid. */
  parse(p: URLSearchParams, view: string | undefined): T | undefined;
  format(v: T): [string, string][];
}

export type UrlFields = Record<string, UrlField<unknown>>;
/** The values of a view's URL fields. */
export type UrlValues<U> = { [K in keyof U]?: U[K] extends UrlField<infer T> ? T : never };

/** A download link of the toolbar. */
export interface Download {
  label: string;
  href: string;
  testid: string;
  title: string;
}

/** A view's row of the table. */
export interface ViewEntry<Id extends string = string, U extends UrlFields = UrlFields, V extends PanelView = PanelView> {
  id: Id;
  /** The strings key of its tab. */
  tab: StringKey;
  /** The number key that shows it ("1" for the first tab). */
  key: string;
  /** The toolbar's choosers shown with it (a view with choosers of its own shows none). */
  choosers: readonly Chooser[];
  /** Whether the converter's doubts about the panel's stage are shown above it (it shows that stage). */
  stageDoubts: boolean;
  /** The URL parameters it owns, written while it is shown. */
  url: U;
  /** Its fields of the URL for the store's state (called while it is the current view). */
  urlOf(st: Readonly<PanelState>): UrlValues<U>;
  /**
   * Its part of the state a URL opens: `next` is the state with the URL's run, stage and layer
   * resolved; `shown`: the URL shows this view.
   */
  fromUrl(vs: UrlValues<U>, next: Readonly<PanelState>, shown: boolean): Partial<PanelState>;
  /** What showing it (a tab, a number key) sets besides the view. */
  onShow?(st: Readonly<PanelState>): Partial<PanelState>;
  /** Its download links for the shown run. */
  downloads(st: Readonly<PanelState>, run: RunInfo): Download[];
  create(ctx: ViewContext): V;
  /** Its functions in the test hook (window.__adLayer). */
  hook(view: V, ctx: ViewContext): Record<string, unknown>;
}

/** An entry with its id and URL fields kept as literal types (the view names and URL state come from them). */
export function defineView<const Id extends string, U extends UrlFields, V extends PanelView>(e: ViewEntry<Id, U, V>): ViewEntry<Id, U, V> {
  return e;
}

// ---------------------------------------------------------------- URL fields

function toInt(v: string | null): number | undefined {
  if (v === null || !/^-?\d+$/.test(v)) return undefined;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** One of `values`. */
export function choiceField<const T extends string>(param: string, values: readonly T[]): UrlField<T> {
  return {
    params: [param],
    parse: (p) => {
      const v = p.get(param);
      return v !== null && (values as readonly string[]).includes(v) ? (v as T) : undefined;
    },
    format: (v) => [[param, v]],
  };
}

/** An integer of at least 0. */
export function indexField(param: string): UrlField<number> {
  return {
    params: [param],
    parse: (p) => {
      const n = toInt(p.get(param));
      return n !== undefined && n >= 0 ? n : undefined;
    },
    format: (v) => [[param, String(v)]],
  };
}

/** A non-empty string; `onlyIn`: read only when the URL shows that view. */
export function textField(param: string, onlyIn?: string): UrlField<string> {
  return {
    params: [param],
    parse: (p, view) => {
      const v = p.get(param);
      return v && (onlyIn === undefined || view === onlyIn) ? v : undefined;
    },
    format: (v) => [[param, v]],
  };
}

/** A (run, stage, layer) side: `<side>run`, `<side>stage`, `<side>layer`, all three or none. */
export function sideField(side: string): UrlField<SideRef> {
  return {
    params: [`${side}run`, `${side}stage`, `${side}layer`],
    parse: (p) => {
      const run = p.get(`${side}run`);
      const stage = toInt(p.get(`${side}stage`));
      const layer = toInt(p.get(`${side}layer`));
      return run && stage !== undefined && stage >= 0 && layer !== undefined && layer >= 0 ? { run, stage, layer } : undefined;
    },
    format: (v) => [[`${side}run`, v.run], [`${side}stage`, String(v.stage)], [`${side}layer`, String(v.layer)]],
  };
}
