// Light/dark theme: follows prefers-color-scheme until the user picks one (kept in localStorage).
import type { Theme } from "../model/colors";

const KEY = "adLayer.theme";

function stored(): Theme | null {
  try {
    const v = localStorage.getItem(KEY);
    return v === "light" || v === "dark" ? v : null;
  } catch {
    return null;
  }
}

function system(): Theme {
  return typeof matchMedia === "function" && matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

export class ThemeController {
  private listeners: ((t: Theme) => void)[] = [];
  current: Theme;

  constructor() {
    this.current = stored() ?? system();
    this.apply();
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
    if (remember) {
      try {
        localStorage.setItem(KEY, theme);
      } catch {
        /* storage may be unavailable in sandboxed iframes */
      }
    }
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
