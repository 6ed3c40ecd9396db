// Types of the plugin's JSON API (docs/API.md). Names from dumps and traces are plain strings and
// must only ever be rendered as text.

export interface StageInfo {
  index: number;
  file: string;
  stage: string;
  transform: string;
  module: string;
  node_count: number;
}

export interface LayerSummary {
  layer: number;
  kind: string;
  node_count: number;
  gpu_time_us: number | null;
  /** GPU time per group (api/overview; "unmapped" for kernels no node claimed). */
  groups?: Record<string, number>;
  /** Node count per group (api/overview). */
  group_counts?: Record<string, number>;
  attention?: string;
}

export interface TraceInfo {
  source: string;
  phase: string;
  kernel_count: number;
  num_streams: number;
  devices: number[];
  graph_id: number | null;
  replays: number | null;
  mapped_share: number | null;
}

export interface RunInfo {
  run: string;
  model: string;
  source_dir: string;
  created: string;
  converter_version: string;
  schema_version: number;
  stages: StageInfo[];
  default_stage: number;
  layers: LayerSummary[];
  trace: TraceInfo | null;
}

export interface RunsResponse {
  runs: RunInfo[];
}

export interface KernelStats {
  count: number;
  median_us: number;
  min_us: number;
  max_us: number;
}

export interface NodeKernel {
  kernel: string;
  name: string;
  duration_us: number;
  stream: string;
  start_us: number;
  stats?: KernelStats | null;
}

export interface WeightRef {
  name: string;
  shape: string;
  dtype: string;
}

export type NodeKind = "call" | "placeholder" | "output";

export interface LayerNode {
  id: string;
  op: string;
  label: string;
  node_kind: NodeKind;
  shape: string;
  dtype: string;
  group: string;
  sub_group: string | null;
  inputs: string[];
  weights: WeightRef[];
  kernels: NodeKernel[];
  time_us: number;
  /** Optional extras some backends send: CUDA stream role ("main"/"aux"), printed args, dump line. */
  stream?: string | null;
  args?: string | null;
  line?: number | null;
}

export interface LayerEdge {
  from: string;
  to: string;
  shape: string;
}

export interface ExternalInput {
  id: string;
  label: string;
  shape: string;
  dtype: string;
  kind: string;
  /** Layer that produced it, when it is another layer's output. */
  layer?: number | null;
}

export interface StreamSummary {
  stream: string;
  busy_us: number;
  span_us: number;
  gaps_us: number;
}

export interface UnmappedKernel {
  kernel: string;
  duration_us: number;
  reason: string;
}

export interface TraceSummary {
  total_duration_us: number;
  kernel_count: number;
  num_streams: number;
  groups: Record<string, number>;
  streams: StreamSummary[];
  unmapped: UnmappedKernel[];
}

export interface LayerResponse {
  run: string;
  stage: number;
  layer: number;
  kind: string;
  attention: string;
  nodes: LayerNode[];
  edges: LayerEdge[];
  external_inputs: ExternalInput[];
  trace_summary: TraceSummary | null;
}

export interface OverviewResponse {
  run?: string;
  stage?: number;
  layers: LayerSummary[];
  none_node_count: number;
}

export interface StageDiff {
  index: number;
  file: string;
  transform: string;
  node_count: number;
  added: string[];
  removed: string[];
  changed: string[];
}

export interface StagesResponse {
  run?: string;
  layer?: number;
  stages: StageDiff[];
}

export type MatchStatus = "same" | "changed";

export interface CompareMatch {
  a: string;
  b: string;
  status: MatchStatus;
  /** What differs for a changed pair: "op", "shape", "dtype", "weights", "inputs". */
  changes?: string[];
  op?: string;
  group?: string;
  a_time_us: number;
  b_time_us: number;
  delta_us: number;
  /** Set by the panel for a pair the user matched by hand. */
  manual?: boolean;
}

export interface CompareSide {
  run: string;
  stage: number;
  layer: number;
  time_us: number | null;
}

export interface DeltaEntry {
  a_us: number;
  b_us: number;
  delta_us: number;
  /** null when the A side is 0 (no trace, or a group that only B has). */
  delta_pct: number | null;
}

export interface GroupDelta extends DeltaEntry {
  group: string;
}

export interface CompareCounts {
  same: number;
  changed: number;
  only_a: number;
  only_b: number;
}

export interface CompareResponse {
  a: CompareSide;
  b: CompareSide;
  matches: CompareMatch[];
  only_a: string[];
  only_b: string[];
  counts: CompareCounts;
  groups: GroupDelta[];
  layer: DeltaEntry;
}

/** One side of a comparison as the panel asks for it. */
export interface CompareRef {
  run: string;
  stage: number;
  layer: number;
}

export interface TimelineKernel {
  id: number;
  kernel: string;
  name: string;
  start_us: number;
  duration_us: number;
  layer: number | null;
  node: string | null;
}

export interface TimelineBucket {
  start_us: number;
  end_us: number;
  count: number;
  busy_us: number;
}

export interface TimelineStream {
  stream: string;
  label: string;
  device: number;
  busy_us: number;
  busy_share: number;
  kernels: TimelineKernel[];
  buckets: TimelineBucket[];
}

export interface TimelineResponse {
  start_us: number;
  end_us: number;
  lod: boolean;
  streams: TimelineStream[];
}

export interface ApiErrorBody {
  error: string;
  known?: unknown[];
}
