// Every UI string of the panel, in English and Chinese. Lookup: t("key", {param: value}).
// The language follows localStorage "adLayer.lang", else the browser; a switch can call setLang().

export type Lang = "en" | "zh";

const STRINGS = {
  appTitle: { en: "AutoDeploy layer", zh: "AutoDeploy 层" },
  run: { en: "Run", zh: "运行" },
  stage: { en: "Stage", zh: "阶段" },
  layer: { en: "Layer", zh: "层" },
  allLayers: { en: "All layers (whole stage)", zh: "所有层(整个阶段)" },
  layerOption: { en: "Layer {n} · {kind}", zh: "第 {n} 层 · {kind}" },
  layerTitle: { en: "Layer {n}", zh: "第 {n} 层" },
  stageFinal: { en: "final", zh: "最终" },
  nodes: { en: "{n} nodes", zh: "{n} 个节点" },
  kernels: { en: "{n} kernels", zh: "{n} 个内核" },
  nodeCount: { en: "Nodes", zh: "节点数" },
  edgesN: { en: "{n} edges", zh: "{n} 条边" },
  depth: { en: "Expand depth", zh: "展开深度" },
  depthAll: { en: "all", zh: "全部" },
  depthLayers: { en: "{d} · layers", zh: "{d} · 层" },
  depthGroups: { en: "{d} · groups", zh: "{d} · 分组" },
  depthSub: { en: "{d} · sub-groups", zh: "{d} · 子分组" },
  depthCustom: { en: "custom", zh: "自定义" },
  topK: { en: "top {k}", zh: "前 {k}" },
  statusLine: { en: "{nodes} · {drawn} drawn · {edges} · fetch {fetch} ms · layout {layout} ms (worker {worker} ms, {cached}/{groups} groups cached) · draw {draw} ms · total {total} ms", zh: "{nodes} · 已绘制 {drawn} · {edges} · 获取 {fetch} ms · 布局 {layout} ms(worker {worker} ms,缓存 {cached}/{groups} 个分组)· 绘制 {draw} ms · 总计 {total} ms" },
  needsTrace: { en: "needs a trace", zh: "需要 trace" },
  depthTitle: { en: "Collapse every group below this depth (1 = layers, 2 = groups, 3 = sub-groups)", zh: "折叠此深度以下的所有分组(1 = 层,2 = 分组,3 = 子分组)" },
  fit: { en: "Fit", zh: "适应窗口" },
  copyLink: { en: "Link", zh: "链接" },
  copyLinkTitle: { en: "Copy a link to this view (opens the panel on its own, with the same run, stage, layer and node)", zh: "复制此视图的链接(单独打开面板,保留运行、阶段、层和节点)" },
  copied: { en: "Copied", zh: "已复制" },
  copyFailed: { en: "See status bar", zh: "见状态栏" },
  fitTitle: { en: "Fit the graph to the view (F)", zh: "将图缩放至适应视图 (F)" },
  colorBy: { en: "Colour", zh: "着色" },
  colorGroup: { en: "by group", zh: "按分组" },
  colorTime: { en: "by GPU time", zh: "按 GPU 时间" },
  hotspots: { en: "Hotspots", zh: "热点" },
  hotspotsTitle: { en: "Mark the {k} nodes with the most GPU time", zh: "标记 GPU 时间最多的 {k} 个节点" },
  legendTime: { en: "GPU time per node", zh: "每个节点的 GPU 时间" },
  noTime: { en: "no kernels", zh: "无内核" },
  searchPlaceholder: { en: "Search node id, op or kernel…", zh: "搜索节点 ID、算子或内核…" },
  searchPrev: { en: "Previous hit (Shift+Enter)", zh: "上一个结果 (Shift+Enter)" },
  searchNext: { en: "Next hit (Enter)", zh: "下一个结果 (Enter)" },
  searchCount: { en: "{i} / {n}", zh: "{i} / {n}" },
  searchNone: { en: "no match", zh: "无匹配" },
  themeToggle: { en: "Toggle light/dark theme", zh: "切换浅色/深色主题" },
  langToggle: { en: "中文", zh: "English" },
  langToggleTitle: { en: "Switch language", zh: "切换语言" },
  loading: { en: "Loading…", zh: "加载中…" },
  layingOut: { en: "Laying out {n} nodes…", zh: "正在布局 {n} 个节点…" },
  noRuns: { en: "No runs found. Convert a dump directory with `tb-ad-layer convert` into the logdir.", zh: "未找到运行。请用 `tb-ad-layer convert` 将转储目录转换到 logdir 中。" },
  error: { en: "Error: {msg}", zh: "错误:{msg}" },
  requestFailed: { en: "{url} failed: {msg}", zh: "{url} 请求失败:{msg}" },
  notJson: { en: "the server did not answer with JSON (HTTP {status})", zh: "服务器未返回 JSON(HTTP {status})" },
  layoutFailed: { en: "Layout failed: {msg}", zh: "布局失败:{msg}" },
  // Details panel
  details: { en: "Details", zh: "详情" },
  layerSummary: { en: "Layer summary", zh: "层概览" },
  stageSummary: { en: "Stage summary", zh: "阶段概览" },
  selectHint: { en: "Click a node or a kernel to see its details. Double-click a group to expand or collapse it.", zh: "单击节点或内核查看详情。双击分组可展开或折叠。" },
  opTarget: { en: "Op target", zh: "算子目标" },
  nodeKind: { en: "Node kind", zh: "节点类型" },
  group: { en: "Group", zh: "分组" },
  subGroup: { en: "Sub-group", zh: "子分组" },
  output: { en: "Output", zh: "输出" },
  inputs: { en: "Inputs", zh: "输入" },
  outputsTo: { en: "Used by", zh: "被使用于" },
  weights: { en: "Weights", zh: "权重" },
  kernelsTitle: { en: "Kernels", zh: "内核" },
  shareOfLayer: { en: "Share of layer GPU time", zh: "占该层 GPU 时间比例" },
  gpuTime: { en: "GPU time", zh: "GPU 时间" },
  median: { en: "median", zh: "中位数" },
  min: { en: "min", zh: "最小" },
  max: { en: "max", zh: "最大" },
  count: { en: "count", zh: "次数" },
  stream: { en: "stream", zh: "流" },
  start: { en: "start", zh: "开始" },
  duration: { en: "duration", zh: "时长" },
  none: { en: "none", zh: "无" },
  externalInput: { en: "External input", zh: "外部输入" },
  inputKind: { en: "Kind", zh: "类型" },
  producedBy: { en: "Produced by", zh: "产生于" },
  streamRole: { en: "CUDA stream", zh: "CUDA 流" },
  dumpLine: { en: "Dump line", zh: "转储行号" },
  args: { en: "Args", zh: "参数" },
  consumers: { en: "Consumers", zh: "使用者" },
  groupDetails: { en: "Group", zh: "分组" },
  children: { en: "Children", zh: "子项" },
  totalDuration: { en: "Span of the layer's kernels", zh: "该层内核的时间跨度" },
  kernelCount: { en: "Kernels", zh: "内核数" },
  streams: { en: "Streams", zh: "流" },
  busy: { en: "busy {pct}", zh: "繁忙 {pct}" },
  idle: { en: "idle {us}", zh: "空闲 {us}" },
  perGroup: { en: "GPU time by group", zh: "各分组 GPU 时间" },
  unmapped: { en: "Kernels not mapped to a node", zh: "未映射到节点的内核" },
  noTrace: { en: "This run has no trace: no kernels or durations.", zh: "此运行没有 trace:无内核和时长数据。" },
  expand: { en: "Expand", zh: "展开" },
  collapse: { en: "Collapse", zh: "折叠" },
  copyId: { en: "Copy id", zh: "复制 ID" },
  showInGraph: { en: "Show in graph", zh: "在图中显示" },
  otherLayer: { en: "in layer {n}", zh: "位于第 {n} 层" },
  // Timeline
  timeline: { en: "Kernel timeline", zh: "内核时间线" },
  scopeLayer: { en: "this layer", zh: "本层" },
  scopeAll: { en: "whole pass", zh: "整个前向" },
  timelineHint: { en: "wheel: zoom · drag: pan · click: select", zh: "滚轮:缩放 · 拖动:平移 · 单击:选择" },
  timelineReset: { en: "Reset zoom", zh: "重置缩放" },
  timelineEmpty: { en: "No kernels in this run's trace.", zh: "此运行的 trace 中没有内核。" },
  laneBusy: { en: "{pct} busy", zh: "繁忙 {pct}" },
  laneBusyView: { en: "{busy} · view {win}", zh: "{busy} · 视图内 {win}" },
  kernelsMerged: { en: "{n} kernels · {busy} busy", zh: "{n} 个内核 · 繁忙 {busy}" },
  idleGap: { en: "idle gap {us}", zh: "空闲间隙 {us}" },
  unmappedKernel: { en: "not mapped to a node", zh: "未映射到节点" },
  lodNote: { en: "merged into buckets by the server; zoom in for kernels", zh: "服务器已合并为区间;放大可查看内核" },
  // Downloads
  download: { en: "Download", zh: "下载" },
  dlJson: { en: "layer JSON", zh: "层 JSON" },
  dlDot: { en: "DOT", zh: "DOT" },
  dlTrace: { en: "Chrome trace", zh: "Chrome trace" },
  // Stage diff annotations
  stageDiff: { en: "+{a} −{r} ~{c}", zh: "+{a} −{r} ~{c}" },
  traceInfo: { en: "{phase} trace · {k} kernels · {s} streams · {m} mapped", zh: "{phase} trace · {k} 个内核 · {s} 个流 · 已映射 {m}" },
  noTraceShort: { en: "no trace", zh: "无 trace" },
  inputLabel: { en: "input", zh: "输入" },
  layerKindDense: { en: "dense", zh: "稠密" },
} as const satisfies Record<string, Record<Lang, string>>;

export type StringKey = keyof typeof STRINGS;

let current: Lang = "en";

export function detectLang(stored: string | null, navLang: string | undefined): Lang {
  if (stored === "en" || stored === "zh") return stored;
  return navLang && navLang.toLowerCase().startsWith("zh") ? "zh" : "en";
}

export function setLang(lang: Lang): void {
  current = lang;
}

export function getLang(): Lang {
  return current;
}

/** Looks up a string and fills {param} placeholders (values are inserted as text by callers). */
export function t(key: StringKey, params?: Record<string, string | number>, lang: Lang = current): string {
  const entry = STRINGS[key];
  let s: string = entry[lang] ?? entry.en;
  if (params) {
    s = s.replace(/\{(\w+)\}/g, (m, p: string) => (p in params ? String(params[p]) : m));
  }
  return s;
}

/** For tests: every key with both languages present and the same placeholders. */
export function allKeys(): StringKey[] {
  return Object.keys(STRINGS) as StringKey[];
}

export function rawEntry(key: StringKey): Record<Lang, string> {
  return STRINGS[key];
}
