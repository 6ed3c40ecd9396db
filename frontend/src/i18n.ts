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
  repeatTitle: { en: "{name} … ×{n} ({p} nodes each)", zh: "{name} … ×{n}(每块 {p} 个节点)" },
  foldedInputs: { en: "{n} inputs · {kind}", zh: "{n} 个输入 · {kind}" },
  sameAs: { en: "≡ layer {n}", zh: "≡ 第 {n} 层" },
  inKv: { en: "KV cache", zh: "KV 缓存" },
  inMeta: { en: "batch metadata", zh: "批次元数据" },
  inRope: { en: "RoPE cache", zh: "RoPE 缓存" },
  inMask: { en: "attention mask", zh: "注意力掩码" },
  inShape: { en: "shape value", zh: "形状值" },
  inPos: { en: "position ids", zh: "位置 id" },
  inIds: { en: "input ids", zh: "输入 id" },
  inEmbed: { en: "token embedding", zh: "词嵌入" },
  inModel: { en: "model-level value", zh: "模型级数值" },
  inBuffer: { en: "model buffer", zh: "模型缓冲区" },
  inResidual: { en: "residual", zh: "残差" },
  inLayerOut: { en: "layer output", zh: "层输出" },
  inResidualOf: { en: "Layer {n} residual output", zh: "第 {n} 层残差输出" },
  inOutputOf: { en: "Layer {n} output", zh: "第 {n} 层输出" },
  topKernels: { en: "top kernels", zh: "主要内核" },
  stageFinal: { en: "final", zh: "最终" },
  nodes: { en: "{n} nodes", zh: "{n} 个节点" },
  node1: { en: "1 node", zh: "1 个节点" },
  kernels: { en: "{n} kernels", zh: "{n} 个内核" },
  kernel1: { en: "1 kernel", zh: "1 个内核" },
  nodeCount: { en: "Nodes", zh: "节点数" },
  edgesN: { en: "{n} edges", zh: "{n} 条边" },
  depth: { en: "Depth", zh: "展开深度" },
  depthAll: { en: "all", zh: "全部" },
  depthLayers: { en: "{d} · layers", zh: "{d} · 层" },
  depthGroups: { en: "{d} · groups", zh: "{d} · 分组" },
  depthSub: { en: "{d} · sub-groups", zh: "{d} · 子分组" },
  depthCustom: { en: "custom", zh: "自定义" },
  topK: { en: "top {k}", zh: "前 {k}" },
  statusLine: { en: "{nodes} · {drawn} drawn · {edges} · fetch {fetch} ms · layout {layout} ms (worker {worker} ms, {cached}/{groups} groups cached) · draw {draw} ms · total {total} ms", zh: "{nodes} · 已绘制 {drawn} · {edges} · 获取 {fetch} ms · 布局 {layout} ms(worker {worker} ms,缓存 {cached}/{groups} 个分组)· 绘制 {draw} ms · 总计 {total} ms" },
  needsTrace: { en: "needs a trace", zh: "需要 trace" },
  depthTitle: { en: "Collapse every group below this depth (1 = layers, 2 = groups, 3 = sub-groups)", zh: "折叠此深度以下的所有分组(1 = 层,2 = 分组,3 = 子分组)" },
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
  runsUnreadable: { en: "Cannot be read", zh: "无法读取" },
  runUnreadable: { en: "run {run} cannot be read: {error}", zh: "运行 {run} 无法读取:{error}" },
  noReadableRuns: { en: "No run can be read: {runs}", zh: "没有可读取的运行:{runs}" },
  noRuns: { en: "No runs found. Convert a dump directory with `tb-ad-layer convert` into the logdir.", zh: "未找到运行。请用 `tb-ad-layer convert` 将转储目录转换到 logdir 中。" },
  error: { en: "Error: {msg}", zh: "错误:{msg}" },
  requestFailed: { en: "{url} failed: {msg}", zh: "{url} 请求失败:{msg}" },
  notJson: { en: "the server did not answer with JSON (HTTP {status})", zh: "服务器未返回 JSON(HTTP {status})" },
  layoutFailed: { en: "Layout failed: {msg}", zh: "布局失败:{msg}" },
  // Doubts about a layering (api/runs stages[].doubts, api/layer doubts)
  doubtsStage: { en: "The layers found in {stage} may be wrong:", zh: "{stage} 中识别出的层可能有误:" },
  doubtsLayer: { en: "Layer {n} may be wrong: its nodes may belong to other layers.", zh: "第 {n} 层可能有误:其中的节点可能属于其他层。" },
  doubtsOption: { en: "doubtful", zh: "存疑" },
  doubtIndexGap: { en: "gap in layer numbers", zh: "层编号有缺口" },
  doubtOversized: { en: "oversized layer", zh: "层过大" },
  doubtLayerCount: { en: "layer count", zh: "层数" },
  doubtUnordered: { en: "layers out of order", zh: "层顺序错乱" },
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
  totalDuration: { en: "GPU time (sum of its kernels)", zh: "GPU 时间(其内核时长之和)" },
  busyOfLayer: { en: "busy {pct} of the layer's span", zh: "占该层时间跨度的 {pct} 繁忙" },
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
  laneBusy: { en: "{pct} of span busy", zh: "跨度内繁忙 {pct}" },
  laneBusyView: { en: "{busy} · view {win}", zh: "{busy} · 视图内 {win}" },
  kernelsMerged: { en: "{n} kernels · {busy} busy", zh: "{n} 个内核 · 繁忙 {busy}" },
  idleGap: { en: "idle gap {us}", zh: "空闲间隙 {us}" },
  unmappedKernel: { en: "not mapped to a node", zh: "未映射到节点" },
  lodNote: { en: "merged into buckets by the server; zoom in for kernels", zh: "服务器已合并为区间;放大可查看内核" },
  // Downloads
  download: { en: "Download", zh: "下载" },
  dlJson: { en: "JSON", zh: "层 JSON" },
  dlDot: { en: "DOT", zh: "DOT" },
  dlTrace: { en: "Trace", zh: "Trace" },
  // Stage diff annotations
  stageDiff: { en: "+{a} −{r} ~{c}", zh: "+{a} −{r} ~{c}" },
  // "Phase" (prefill / decode, what a trace recorded) and "stage" (a transform of the graph) are
  // different things: in Chinese too they have different words (推理类型 / 阶段).
  phase: { en: "Phase", zh: "推理类型" },
  phaseAll: { en: "all phases", zh: "全部类型" },
  phaseDecode: { en: "decode", zh: "解码 (decode)" },
  phasePrefill: { en: "prefill", zh: "预填充 (prefill)" },
  phaseNone: { en: "no trace", zh: "无 trace" },
  traceInfo: { en: "{phase} trace · {k} kernels · {s} streams · {m} mapped", zh: "{phase} trace · {k} 个内核 · {s} 个流 · 已映射 {m}" },
  noTraceShort: { en: "no trace", zh: "无 trace" },
  inputLabel: { en: "input", zh: "输入" },
  layerKindDense: { en: "dense", zh: "稠密" },
  // Views (tabs)
  views: { en: "Views", zh: "视图" },
  viewLayer: { en: "Layer", zh: "层" },
  viewCompare: { en: "Compare", zh: "对比" },
  viewStages: { en: "Stages", zh: "阶段" },
  viewOverview: { en: "Overview", zh: "总览" },
  zoomIn: { en: "Zoom in (W)", zh: "放大 (W)" },
  zoomOut: { en: "Zoom out (S)", zh: "缩小 (S)" },
  close: { en: "Close", zh: "关闭" },
  prev: { en: "Prev", zh: "上一个" },
  next: { en: "Next", zh: "下一个" },
  show: { en: "Show", zh: "显示" },
  // Difference statuses
  statusSame: { en: "same", zh: "相同" },
  statusChanged: { en: "changed", zh: "已改变" },
  statusOnlyA: { en: "only left (A)", zh: "仅左侧 (A)" },
  statusOnlyB: { en: "only right (B)", zh: "仅右侧 (B)" },
  statusAdded: { en: "added", zh: "新增" },
  statusRemoved: { en: "removed", zh: "删除" },
  statusUnchanged: { en: "unchanged", zh: "未变" },
  // Compare view
  sideA: { en: "Left (A)", zh: "左侧 (A)" },
  sideB: { en: "Right (B)", zh: "右侧 (B)" },
  swapSides: { en: "Swap left and right", zh: "交换左右两侧" },
  syncPanes: { en: "Sync", zh: "同步" },
  syncTitle: { en: "Expand, collapse, pan and zoom both panes together", zh: "两侧同步展开、折叠、平移和缩放" },
  expandAll: { en: "Expand all", zh: "全部展开" },
  collapseToGroups: { en: "Groups only", zh: "仅显示分组" },
  collapseToGroupsTitle: { en: "Collapse every group; collapsed groups show how many nodes of each status they hold", zh: "折叠所有分组;折叠的分组显示其中各状态节点的数量" },
  slowerInB: { en: "slower in B", zh: "B 中更慢" },
  fasterInB: { en: "faster in B", zh: "B 中更快" },
  countsOnGroups: { en: "statuses inside a group", zh: "分组内的状态计数" },
  layerTime: { en: "Layer GPU time", zh: "层 GPU 时间" },
  deltaTable: { en: "GPU time: B − A", zh: "GPU 时间:B − A" },
  compareNoTraceSide: { en: "{side} has no trace: no GPU times there, so no deltas.", zh: "{side} 没有 trace:该侧没有 GPU 时间,因此没有差值。" },
  compareNoTrace: { en: "Neither side has a trace: there are no times to compare.", zh: "两侧均无 trace:没有可对比的时间。" },
  sortBy: { en: "Sort by this column (again: reverse)", zh: "按此列排序(再次点击:反向)" },
  wholeLayer: { en: "whole layer", zh: "整层" },
  topNodeDeltas: { en: "Largest node changes", zh: "变化最大的节点" },
  unmatchedTitle: { en: "Unmatched and changed nodes", zh: "未匹配和已改变的节点" },
  unmatchedHint: { en: "Click a node to show it; N / Shift+N step through the unmatched ones.", zh: "单击节点以显示它;N / Shift+N 逐个浏览未匹配节点。" },
  compareSelection: { en: "Selected", zh: "已选择" },
  compareHint: { en: "Click a node: its match on the other side is selected and centred too.", zh: "单击节点:另一侧与之匹配的节点也会被选中并居中。" },
  nodeId: { en: "Node", zh: "节点" },
  whatChanged: { en: "What changed", zh: "变化内容" },
  manualPairTitle: { en: "Two unmatched nodes are selected:", zh: "已选择两个未匹配的节点:" },
  manualMatch: { en: "Match these two by hand", zh: "手动匹配这两个节点" },
  manualHint: { en: "To match it by hand, also select an unmatched node on the other side.", zh: "要手动匹配,请在另一侧再选择一个未匹配的节点。" },
  manualMatched: { en: "Matched by hand.", zh: "已手动匹配。" },
  manualUnmatch: { en: "Unmatch", zh: "取消匹配" },
  manualPairs: { en: "Matched by hand", zh: "手动匹配" },
  // Stage view
  stages: { en: "Stages", zh: "阶段" },
  prevStage: { en: "Previous stage", zh: "上一阶段" },
  nextStage: { en: "Next stage", zh: "下一阶段" },
  showAfter: { en: "after (this stage)", zh: "之后(本阶段)" },
  showBefore: { en: "before (previous stage)", zh: "之前(上一阶段)" },
  compareWithPrev: { en: "Compare side by side", zh: "并排对比" },
  compareWithPrevTitle: { en: "Open the previous stage and this one in the comparison view", zh: "在对比视图中打开上一阶段和本阶段" },
  noChange: { en: "no change", zh: "无变化" },
  removedNotShown: { en: "{n} removed nodes are not in this stage: see the list, or show the previous stage", zh: "{n} 个被删除的节点不在本阶段中:见列表,或显示上一阶段" },
  transform: { en: "Transform", zh: "变换" },
  stageTransition: { en: "Layer {layer}: {prev} → {cur} nodes", zh: "第 {layer} 层:{prev} → {cur} 个节点" },
  stageFirst: { en: "Layer {layer}: {cur} nodes (first stage)", zh: "第 {layer} 层:{cur} 个节点(第一个阶段)" },
  firstStageHint: { en: "The first stage: there is no previous stage to compare with. Step forward with Next or ].", zh: "这是第一个阶段,没有可对比的上一阶段。用“下一个”或 ] 前进。" },
  listRemoved: { en: "Removed by this transform", zh: "被此变换删除" },
  listAdded: { en: "Added by this transform", zh: "由此变换新增" },
  listChanged: { en: "Changed (op, shape, dtype or inputs)", zh: "已改变(算子、形状、数据类型或输入)" },
  stagesUnavailable: { en: "No stage history for this layer.", zh: "此层没有阶段历史。" },
  layerNotInStage: { en: "This layer does not exist in this stage.", zh: "此阶段中不存在该层。" },
  // Overview
  overview: { en: "Model overview", zh: "模型总览" },
  overviewHint: { en: "Click a bar to open that layer. Bars are stacked by group; the strip under each bar marks the layer kind.", zh: "单击柱条打开该层。柱条按分组堆叠;柱条下方的色条标示层类型。" },
  overviewPick: { en: "Hover a bar to see its groups.", zh: "将鼠标悬停在柱条上查看其分组。" },
  metricTime: { en: "GPU time", zh: "GPU 时间" },
  metricNodes: { en: "nodes", zh: "节点数" },
  axisTime: { en: "GPU time per layer", zh: "每层 GPU 时间" },
  axisNodes: { en: "nodes per layer", zh: "每层节点数" },
  groupTotalsTitle: { en: "Per-group totals", zh: "各分组合计" },
  openLayer: { en: "Open layer {n}", zh: "打开第 {n} 层" },
  noGroupData: { en: "The store has no per-group figures for this layer.", zh: "存储中没有该层的分组数据。" },
  modelSummary: { en: "Model", zh: "模型" },
  layersN: { en: "Decoder layers", zh: "解码层" },
  gpuTimeAllLayers: { en: "GPU time, all layers", zh: "所有层 GPU 时间" },
  outsideLayers: { en: "Outside the layers", zh: "层外" },
  outsideBar: { en: "outside", zh: "层外" },
  outsideWhat: { en: "Embedding, final norm, lm head, sampling: the GPU time of the kernels outside every decoder layer.", zh: "嵌入、最终归一化、lm head、采样:所有解码层之外的内核的 GPU 时间。" },
  shareOfGpuTime: { en: "{pct} of the GPU time", zh: "占 GPU 时间 {pct}" },
  gpuTimeTotal: { en: "GPU time, total", zh: "GPU 时间合计" },
  // Export
  exportSvgTitle: { en: "Export the current view as a self-contained SVG file", zh: "将当前视图导出为独立的 SVG 文件" },
  exportPngTitle: { en: "Export the current view as a PNG image", zh: "将当前视图导出为 PNG 图像" },
  exported: { en: "Saved {name} ({w} × {h})", zh: "已保存 {name}({w} × {h})" },
  exportNothing: { en: "Nothing drawn to export yet.", zh: "尚无可导出的内容。" },
  exportFailed: { en: "Export failed: {msg}", zh: "导出失败:{msg}" },
  dlJsonTitle: { en: "The layer in the seed JSON schema", zh: "种子 JSON 格式的层数据" },
  dlDotTitle: { en: "The layer as a Graphviz DOT file", zh: "Graphviz DOT 格式的层" },
  dlTraceTitle: { en: "The run's kernels as a Chrome trace (opens in Perfetto)", zh: "该运行的内核,Chrome trace 格式(可用 Perfetto 打开)" },
  // Keyboard help
  helpTitle: { en: "Keyboard shortcuts", zh: "键盘快捷键" },
  helpGeneral: { en: "Everywhere", zh: "通用" },
  helpGraph: { en: "Graph", zh: "图" },
  helpCompare: { en: "Compare view", zh: "对比视图" },
  helpStages: { en: "Stage view", zh: "阶段视图" },
  keyHelp: { en: "show or hide this help", zh: "显示或隐藏此帮助" },
  keyViews: { en: "{views} view", zh: "{views}视图" },
  keyEscape: { en: "clear the selection, close this help", zh: "取消选择,关闭此帮助" },
  keySearch: { en: "search nodes, ops and kernels (layer view)", zh: "搜索节点、算子和内核(层视图)" },
  keySearchStep: { en: "next / previous search hit", zh: "下一个 / 上一个搜索结果" },
  keyZoom: { en: "zoom in / out", zh: "放大 / 缩小" },
  keyPan: { en: "pan", zh: "平移" },
  keyFit: { en: "fit the graph to the view", zh: "缩放图以适应视图" },
  keyMinimap: { en: "show or hide the minimap", zh: "显示或隐藏小地图" },
  keyToggleGroup: { en: "expand or collapse a group (Enter: the selected one)", zh: "展开或折叠分组（Enter：所选分组）" },
  keyMouse: { en: "pan / zoom", zh: "平移 / 缩放" },
  keyNextUnmatched: { en: "next / previous unmatched node", zh: "下一个 / 上一个未匹配节点" },
  keySwap: { en: "swap left and right", zh: "交换左右两侧" },
  keyStageStep: { en: "previous / next stage", zh: "上一个 / 下一个阶段" },
  keyBeforeAfter: { en: "show the previous stage / this stage", zh: "显示上一阶段 / 本阶段" },
  keyDblclick: { en: "double-click", zh: "双击" },
  keyDrag: { en: "drag", zh: "拖动" },
  keyWheel: { en: "wheel", zh: "滚轮" },
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

/** "1 node", "12 nodes". */
export function nodesText(n: number): string {
  return n === 1 ? t("node1") : t("nodes", { n });
}

export function kernelsText(n: number): string {
  return n === 1 ? t("kernel1") : t("kernels", { n });
}

/** For tests: every key with both languages present and the same placeholders. */
export function allKeys(): StringKey[] {
  return Object.keys(STRINGS) as StringKey[];
}

export function rawEntry(key: StringKey): Record<Lang, string> {
  return STRINGS[key];
}
