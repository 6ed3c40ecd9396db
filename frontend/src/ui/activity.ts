// What the panel is busy with (fetches, layouts, view animations), shown as data-state="busy" or
// "ready" on an element: "ready" is set only once nothing is pending and the browser has painted,
// so that a person (or a browser test) can wait on the state instead of on a timer.

export class Activity {
  private pending = 0;
  private epoch = 0;
  private el: HTMLElement | null = null;
  private listeners: (() => void)[] = [];

  /** The element that carries data-state. */
  attach(el: HTMLElement): void {
    this.el = el;
    this.update();
  }

  /** Starts one piece of work; call the returned function (once) when it ends, however it ends. */
  begin(): () => void {
    this.pending++;
    this.epoch++;
    this.update();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.pending--;
      this.epoch++;
      this.update();
    };
  }

  /** Runs `work`, counted as busy until its promise settles. */
  async track<T>(work: Promise<T>): Promise<T> {
    const end = this.begin();
    try {
      return await work;
    } finally {
      end();
    }
  }

  isBusy(): boolean {
    return this.pending > 0;
  }

  /** Calls `fn` every time the panel becomes ready. */
  onReady(fn: () => void): void {
    this.listeners.push(fn);
  }

  private update(): void {
    if (this.pending > 0) {
      if (this.el) this.el.dataset.state = "busy";
      return;
    }
    // Ready after the next painted frame, unless new work started meanwhile. A hidden page gets no
    // frames: a timer stands in.
    const epoch = this.epoch;
    let done = false;
    const fire = () => {
      if (done) return;
      done = true;
      if (epoch !== this.epoch || this.pending > 0) return;
      if (this.el) this.el.dataset.state = "ready";
      for (const fn of this.listeners) fn();
    };
    requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(fire, 0)));
    setTimeout(fire, 300);
  }
}

/** The panel's one activity tracker. */
export const activity = new Activity();
