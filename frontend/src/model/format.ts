// Formatting helpers (pure).

/** Microseconds to a short human string: 0.85 µs, 9.5 µs, 412 µs, 1.25 ms, 2.1 s. */
export function fmtUs(us: number | null | undefined): string {
  if (us === null || us === undefined || !Number.isFinite(us)) return "–";
  const a = Math.abs(us);
  if (a >= 1e6) return `${trim(us / 1e6, 2)} s`;
  if (a >= 1e3) return `${trim(us / 1e3, 2)} ms`;
  if (a >= 100) return `${Math.round(us)} µs`;
  if (a >= 10) return `${trim(us, 1)} µs`;
  return `${trim(us, 2)} µs`;
}

function trim(v: number, digits: number): string {
  return v.toFixed(digits).replace(/\.?0+$/, "");
}

export function fmtPct(share: number | null | undefined, digits = 1): string {
  if (share === null || share === undefined || !Number.isFinite(share)) return "–";
  return `${(share * 100).toFixed(digits)}%`;
}

const DTYPE_SHORT: Record<string, string> = {
  "torch.bfloat16": "bf16",
  "torch.float16": "f16",
  "torch.float32": "f32",
  "torch.float64": "f64",
  "torch.float8_e4m3fn": "fp8e4m3",
  "torch.float8_e5m2": "fp8e5m2",
  "torch.int8": "i8",
  "torch.uint8": "u8",
  "torch.int32": "i32",
  "torch.int64": "i64",
  "torch.bool": "bool",
};

/** Short dtype: torch.bfloat16 -> bf16; tuples "(a, b)" element-wise; unknown names unchanged. */
export function shortDtype(dtype: string | null | undefined): string {
  if (!dtype) return "";
  const d = dtype.trim();
  if (d.startsWith("(") && d.endsWith(")")) {
    return `(${d.slice(1, -1).split(",").map((x) => shortDtype(x.trim())).join(", ")})`;
  }
  return DTYPE_SHORT[d] ?? d.replace(/^torch\./, "");
}

/** Cuts a string to at most `max` characters with an ellipsis. */
export function ellipsize(s: string, max: number): string {
  if (s.length <= max) return s;
  if (max <= 1) return "…";
  return `${s.slice(0, max - 1)}…`;
}

/** Cuts a string to at most `max` characters by eliding its middle ("fmha_v2…sm90_kernel"). */
export function ellipsizeMiddle(s: string, max: number): string {
  if (s.length <= max) return s;
  if (max <= 1) return "…";
  const tail = Math.floor((max - 1) / 2);
  return `${s.slice(0, max - 1 - tail)}…${s.slice(s.length - tail)}`;
}

/** "dev0/ctx1/s7" -> "s7"; other spellings unchanged. */
export function shortStream(stream: string): string {
  const m = /(?:^|\/)s(\d+)$/.exec(stream);
  return m ? `s${m[1]}` : stream;
}

/**
 * A run as the run chooser lists it: its name, and its model when that says more (the converter
 * takes the directory's name for both by default, and "qwen3_next · qwen3_next" says nothing).
 */
export function runLabel(run: string, model: string | null | undefined): string {
  const m = (model ?? "").trim();
  if (!m) return run;
  const norm = (x: string) => x.toLowerCase().replace(/[^a-z0-9]/g, "");
  const base = run.split("/").pop() ?? run;
  return norm(m) === norm(base) || norm(base).includes(norm(m)) ? run : `${run} · ${m}`;
}
