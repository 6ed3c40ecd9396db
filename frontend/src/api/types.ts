// Types of the plugin's JSON API. The wire shapes are generated from the backend's contract
// (tb_ad_layer/contract/) into ./contract.ts; this file adds the few types that exist only in
// the panel. Names from dumps and traces are plain strings and must only ever be rendered as text.
import type * as wire from "./contract";

export type * from "./contract";

/** A node of a layer document. */
export type LayerNode = wire.LayerNode;

/** The body of every error response. */
export type ApiErrorBody = wire.ErrorBody;

/** A layer as the panel lists it: a run's layer row, with the overview's figures once loaded. */
export type LayerSummary = wire.LayerRow & Partial<Pick<wire.OverviewLayer, "groups" | "group_counts">>;

/**
 * A match as the panel shows it: one from api/compare, or one the user made by hand (whose op
 * and group are unknown when a side has no such node, and whose changes the panel works out).
 */
export interface CompareMatch extends Omit<wire.CompareMatch, "op" | "group" | "changes"> {
  op?: string;
  group?: string;
  changes?: string[];
  /** Set by the panel for a pair the user matched by hand. */
  manual?: boolean;
}

/** api/compare with the panel's own matches. */
export interface CompareResponse extends Omit<wire.CompareResponse, "matches"> {
  matches: CompareMatch[];
}

/** One side of a comparison as the panel asks for it. */
export interface CompareRef {
  run: string;
  stage: number;
  layer: number;
}
