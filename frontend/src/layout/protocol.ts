// Messages between the panel and the layout worker (static/layout_worker.js).
//
//   main -> worker: LayoutRequest   (one at a time per id; later ids supersede earlier ones)
//   worker -> main: LayoutResult | LayoutError
//
// Everything is plain JSON-cloneable data; keys are the hierarchy's namespaced keys.

export interface LayoutLeaf {
  key: string;
  w: number;
  h: number;
}

export interface LayoutContainer {
  key: string;
  /** Visible children (leaves or containers). */
  children: string[];
  /** Minimum width for the header text. */
  headerW: number;
}

export interface LayoutEdgeIn {
  id: string;
  from: string;
  to: string;
  count: number;
}

export interface LayoutRequest {
  type: "layout";
  id: number;
  /** Containers with parents before children; the first is the root (the scene). */
  containers: LayoutContainer[];
  leaves: LayoutLeaf[];
  edges: LayoutEdgeIn[];
}

export interface LayoutBox {
  key: string;
  /** Absolute top-left corner and size. */
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface LayoutEdgeOut {
  id: string;
  /** Polyline, flattened [x0, y0, x1, y1, ...], absolute. */
  points: number[];
  /** Where to put the edge's label (middle of the part routed at the common ancestor). */
  labelX: number;
  labelY: number;
}

export interface LayoutStats {
  totalMs: number;
  engineMs: number;
  containers: number;
  cached: number;
  leaves: number;
  edges: number;
}

export interface LayoutResult {
  type: "layout";
  id: number;
  boxes: LayoutBox[];
  edges: LayoutEdgeOut[];
  width: number;
  height: number;
  stats: LayoutStats;
}

export interface LayoutError {
  type: "error";
  id: number;
  message: string;
}

export type WorkerReply = LayoutResult | LayoutError;
