// Entry of static/layout_worker.js (a classic worker script loaded from a same-origin URL).
import { layoutGraph } from "./engine";
import type { LayoutRequest, WorkerReply } from "./protocol";

const ctx = self as unknown as { onmessage: ((ev: MessageEvent<LayoutRequest>) => void) | null; postMessage: (m: WorkerReply) => void };

ctx.onmessage = (ev: MessageEvent<LayoutRequest>) => {
  const req = ev.data;
  try {
    ctx.postMessage(layoutGraph(req));
  } catch (e) {
    ctx.postMessage({ type: "error", id: req?.id ?? -1, message: String((e as Error)?.message ?? e) });
  }
};
