// Main-thread side of the layout worker. Only the newest request matters: while one is running,
// a newer request replaces any queued one, and superseded promises reject with Superseded.
import type { LayoutRequest, LayoutResult, WorkerReply } from "./protocol";

export class Superseded extends Error {
  constructor() {
    super("superseded");
    this.name = "Superseded";
  }
}

interface Pending {
  req: LayoutRequest;
  resolve: (r: LayoutResult) => void;
  reject: (e: Error) => void;
}

export class LayoutClient {
  private worker: Worker;
  private running: Pending | null = null;
  private queued: Pending | null = null;

  constructor(url = "static/layout_worker.js") {
    this.worker = new Worker(url);
    this.worker.onmessage = (ev: MessageEvent<WorkerReply>) => this.onReply(ev.data);
    this.worker.onerror = (ev: ErrorEvent) => {
      ev.preventDefault();
      const err = new Error(ev.message || "layout worker failed to load");
      this.running?.reject(err);
      this.running = null;
      this.queued?.reject(err);
      this.queued = null;
    };
  }

  layout(req: LayoutRequest): Promise<LayoutResult> {
    return new Promise((resolve, reject) => {
      const p = { req, resolve, reject };
      if (!this.running) {
        this.running = p;
        this.worker.postMessage(req);
      } else {
        this.queued?.reject(new Superseded());
        this.queued = p;
      }
    });
  }

  private onReply(msg: WorkerReply): void {
    const p = this.running;
    this.running = null;
    if (p && p.req.id === msg.id) {
      if (this.queued) p.reject(new Superseded());
      else if (msg.type === "error") p.reject(new Error(msg.message));
      else p.resolve(msg);
    }
    if (this.queued) {
      this.running = this.queued;
      this.queued = null;
      this.worker.postMessage(this.running.req);
    }
  }

  terminate(): void {
    this.worker.terminate();
  }
}
