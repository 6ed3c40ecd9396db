// Light/dark theme. Inside TensorBoard the panel follows TensorBoard's own dark mode (its settings
// menu, or the browser's when left at its default), at load and whenever it changes; on its own page
// it follows prefers-color-scheme until the user picks one (kept in localStorage). The panel's
// toggle switches for the moment in either case.
import { hostDarkMode, observeHostDarkMode } from "../host/tensorboard";
import type { Theme } from "../model/colors";
import { storageGet, storageSet } from "./storage";

const KEY = "adLayer.theme";

function stored(): Theme | null {
  const v = storageGet(KEY);
  return v === "light" || v === "dark" ? v : null;
}

function system(): Theme {
  return typeof matchMedia === "function" && matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

export class ThemeController {
  private listeners: ((t: Theme) => void)[] = [];
  current: Theme;

  constructor() {
    const host = hostDarkMode();
    this.current = host !== null ? (host ? "dark" : "light") : stored() ?? system();
    this.apply();
    if (host !== null) {
      observeHostDarkMode((dark) => this.set(dark ? "dark" : "light", false));
      return;
    }
    if (typeof matchMedia === "function") {
      const mq = matchMedia("(prefers-color-scheme: dark)");
      const onChange = () => {
        if (stored() === null) this.set(system(), false);
      };
      mq.addEventListener?.("change", onChange);
    }
  }

  onChange(fn: (t: Theme) => void): void {
    this.listeners.push(fn);
  }

  toggle(): void {
    this.set(this.current === "dark" ? "light" : "dark", true);
  }

  set(theme: Theme, remember: boolean): void {
    if (remember) storageSet(KEY, theme);
    if (theme === this.current) return;
    this.current = theme;
    this.apply();
    for (const fn of this.listeners) fn(theme);
  }

  private apply(): void {
    document.documentElement.dataset.theme = this.current;
    document.documentElement.style.colorScheme = this.current;
  }
}
