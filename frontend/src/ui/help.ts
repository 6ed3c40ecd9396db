// Keyboard help overlay ("?"): every shortcut of the panel, grouped by view. Text only.
import { t, type StringKey } from "../i18n";
import { viewEntries } from "../views/table";
import { h, text } from "./dom";

export interface Shortcut {
  keys: string[];
  what: StringKey;
  /** The placeholders of `what`, filled when the overlay is built (in the panel's language). */
  params?: () => Record<string, string>;
}

export interface ShortcutSection {
  title: StringKey;
  items: Shortcut[];
}

export const SHORTCUTS: ShortcutSection[] = [
  {
    title: "helpGeneral",
    items: [
      { keys: ["?"], what: "keyHelp" },
      {
        keys: viewEntries().map((e) => e.key), what: "keyViews",
        params: () => ({ views: viewEntries().map((e) => t(e.tab).toLowerCase()).join(" / ") }),
      },
      { keys: ["Esc"], what: "keyEscape" },
      { keys: ["/", "Ctrl+F"], what: "keySearch" },
      { keys: ["Enter", "Shift+Enter"], what: "keySearchStep" },
    ],
  },
  {
    title: "helpGraph",
    items: [
      { keys: ["W", "S", "+", "−"], what: "keyZoom" },
      { keys: ["A", "D", "←", "→", "↑", "↓"], what: "keyPan" },
      { keys: ["F"], what: "keyFit" },
      { keys: ["M"], what: "keyMinimap" },
      { keys: ["dblclick", "Enter"], what: "keyToggleGroup" },
      { keys: ["drag", "wheel"], what: "keyMouse" },
    ],
  },
  {
    title: "helpCompare",
    items: [
      { keys: ["N", "Shift+N"], what: "keyNextUnmatched" },
      { keys: ["X"], what: "keySwap" },
    ],
  },
  {
    title: "helpStages",
    items: [
      { keys: ["[", "]"], what: "keyStageStep" },
      { keys: ["B"], what: "keyBeforeAfter" },
    ],
  },
];

export class HelpOverlay {
  readonly el: HTMLDivElement;
  private box: HTMLDivElement;
  private lastFocus: Element | null = null;

  constructor() {
    this.el = h("div", { class: "adl-help", "data-testid": "help-overlay", hidden: true });
    this.box = h("div", { class: "adl-help-box", role: "dialog", "aria-modal": "true", "aria-labelledby": "adl-help-title", tabindex: "-1" });
    const head = h("div", { class: "adl-help-head" });
    head.appendChild(text("h2", t("helpTitle"), { id: "adl-help-title" }));
    const close = h("button", { class: "btn iconbtn", type: "button", title: t("close"), "aria-label": t("close"), "data-testid": "help-close" }, "×");
    close.addEventListener("click", () => this.close());
    head.appendChild(close);
    this.box.appendChild(head);
    const grid = h("div", { class: "adl-help-grid" });
    for (const sec of SHORTCUTS) {
      const col = h("section");
      col.appendChild(text("h3", t(sec.title)));
      const dl = h("dl");
      for (const it of sec.items) {
        const dt = h("dt");
        it.keys.forEach((k, i) => {
          if (i) dt.appendChild(document.createTextNode(" "));
          dt.appendChild(text("kbd", k === "dblclick" ? t("keyDblclick") : k === "drag" ? t("keyDrag") : k === "wheel" ? t("keyWheel") : k));
        });
        dl.append(dt, text("dd", t(it.what, it.params?.())));
      }
      col.appendChild(dl);
      grid.appendChild(col);
    }
    this.box.appendChild(grid);
    this.el.appendChild(this.box);
    this.el.addEventListener("click", (ev) => {
      if (ev.target === this.el) this.close();
    });
    this.el.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" || ev.key === "?") {
        ev.preventDefault();
        ev.stopPropagation();
        this.close();
      }
    });
  }

  get open(): boolean {
    return !this.el.hidden;
  }

  show(): void {
    this.lastFocus = document.activeElement;
    this.el.hidden = false;
    this.box.focus();
  }

  close(): void {
    if (this.el.hidden) return;
    this.el.hidden = true;
    if (this.lastFocus instanceof HTMLElement) this.lastFocus.focus();
  }

  toggle(): void {
    if (this.open) this.close();
    else this.show();
  }
}
