// Client of the plugin's JSON API. Always relative URLs ("api/..."): the iframe document has
// <base href="plugin/ad_layer/">, so they resolve under --path_prefix and through forwarded ports.
import { t } from "../i18n";
import type {
  ApiErrorBody,
  CompareRef,
  CompareResponse,
  Diff,
  LayerResponse,
  OverviewResponse,
  Report,
  RanksResponse,
  RunsResponse,
  StageGraphResponse,
  StagesResponse,
  TimelineResponse,
} from "./types";

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly known?: unknown[],
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export type Params = Record<string, string | number | undefined | null>;

export function apiUrl(path: string, params: Params = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === "") continue;
    q.set(k, String(v));
  }
  const qs = q.toString();
  return `api/${path}${qs ? `?${qs}` : ""}`;
}

export type Fetcher = (url: string, init?: RequestInit) => Promise<Response>;

export class Api {
  /** Requests in flight, shared by callers asking for the same URL at the same time. */
  private inflight = new Map<string, Promise<unknown>>();

  constructor(private readonly fetcher: Fetcher = (u, i) => fetch(u, i)) {}

  /**
   * GETs a route. Nothing is kept for the life of the tab: every call asks the server again,
   * revalidating the browser's copy by its ETag (an unchanged answer comes back as 304 without a
   * body), so a run converted again while the tab is open shows its new data on the next choice.
   */
  async get<T>(path: string, params: Params = {}, opts: { signal?: AbortSignal } = {}): Promise<T> {
    const url = apiUrl(path, params);
    if (opts.signal) return this.fetchJson<T>(url, opts.signal);
    const hit = this.inflight.get(url);
    if (hit) return hit as Promise<T>;
    const p = this.fetchJson<T>(url);
    this.inflight.set(url, p);
    const drop = () => this.inflight.delete(url);
    p.then(drop, drop);
    return p;
  }

  private async fetchJson<T>(url: string, signal?: AbortSignal): Promise<T> {
    let res: Response;
    try {
      res = await this.fetcher(url, { credentials: "same-origin", cache: "no-cache", signal });
    } catch (e) {
      if ((e as Error)?.name === "AbortError") throw e;
      throw new ApiError(t("requestFailed", { url, msg: String((e as Error)?.message ?? e) }), 0);
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      throw new ApiError(t("requestFailed", { url, msg: t("notJson", { status: res.status }) }), res.status);
    }
    if (!res.ok) {
      const b = body as ApiErrorBody | null;
      const msg = b && typeof b.error === "string" ? b.error : `HTTP ${res.status}`;
      throw new ApiError(msg, res.status, b?.known);
    }
    return body as T;
  }

  runs(): Promise<RunsResponse> {
    return this.get<RunsResponse>("runs");
  }

  /** A layer document; `rank`: a rank of a multi-GPU run (null or absent: the run's first). */
  layer(run: string, stage: number, layer: number, signal?: AbortSignal, rank?: number | null): Promise<LayerResponse> {
    return this.get<LayerResponse>("layer", { run, stage, layer, rank: rank ?? undefined }, { signal });
  }

  /** Every rank of a multi-GPU run with its GPU time per layer and the stragglers (api/ranks). */
  ranks(run: string): Promise<RanksResponse> {
    return this.get<RanksResponse>("ranks", { run });
  }

  overview(run: string, stage: number): Promise<OverviewResponse> {
    return this.get<OverviewResponse>("overview", { run, stage });
  }

  /** The whole stage as layer boxes, folds, the nodes outside the layers and the shared inputs. */
  stageGraph(run: string, stage: number): Promise<StageGraphResponse> {
    return this.get<StageGraphResponse>("stage_graph", { run, stage });
  }

  stages(run: string, layer: number): Promise<StagesResponse> {
    return this.get<StagesResponse>("stages", { run, layer });
  }

  compare(a: CompareRef, b: CompareRef): Promise<CompareResponse> {
    return this.get<CompareResponse>(
      "compare",
      { a_run: a.run, a_stage: a.stage, a_layer: a.layer, b_run: b.run, b_stage: b.stage, b_layer: b.layer },
    );
  }

  timeline(
    run: string,
    opts: { layer?: number; startUs?: number; endUs?: number; maxItems?: number; rank?: number | null } = {},
    signal?: AbortSignal,
  ): Promise<TimelineResponse> {
    return this.get<TimelineResponse>(
      "timeline",
      { run, layer: opts.layer, start_us: opts.startUs, end_us: opts.endUs, max_items: opts.maxItems, rank: opts.rank ?? undefined },
      { signal },
    );
  }

  /** Where a step's time goes (api/report): the records `tb-ad-layer report RUN --format json` prints. */
  report(run: string, opts: ReportOptions = {}): Promise<Report> {
    return this.get<Report>("report", { run, dim: opts.dim, gpu: opts.gpu });
  }

  /** Run B against run A (api/diff): the records of `tb-ad-layer diff A B --format json`. */
  diff(aRun: string, bRun: string, gate?: number): Promise<Diff> {
    return this.get<Diff>("diff", { a_run: aRun, b_run: bRun, gate });
  }
}

export interface ReportOptions {
  /** Symbolic sizes, "s70=1024,kv_len=4096". */
  dim?: string;
  gpu?: string;
}

export function downloadUrl(kind: "layer.json" | "layer.dot" | "trace.json", params: Params): string {
  return apiUrl(`download/${kind}`, params);
}
