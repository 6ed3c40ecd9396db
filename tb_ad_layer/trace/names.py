"""Shorten demangled C++ kernel names to a readable family name.

``void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, ...>(int, ...)``
becomes ``vectorized_elementwise_kernel<FillFunctor>``; ``void cutlass::Kernel<cutlass_80_tensorop_
s1688gemm_256x128_32x3_nn_align4>(Params)`` becomes ``cutlass::Kernel<cutlass_80_tensorop_s1688gemm_
256x128_32x3_nn_align4>``; names without templates (``nvjet_tst_64x8_...``, ``triton_poi_...``) stay.
"""
from __future__ import annotations

import re
from functools import lru_cache

#: Function names that say nothing on their own: the interesting part is a template argument.
_GENERIC = frozenset({
    "Kernel", "Kernel2", "device_kernel", "kernel", "elementwise_kernel", "vectorized_elementwise_kernel",
    "unrolled_elementwise_kernel", "elementwise_kernel_with_index", "reduce_kernel", "launch_kernel",
    "kernel_entry", "generic_kernel", "index_elementwise_kernel",
})
#: Wrapper functors that hide the real operation one template level deeper.
_WRAPPERS = frozenset({
    "BinaryFunctor", "AUnaryFunctor", "BUnaryFunctor", "UnaryFunctor", "gpu_kernel_impl_nocast",
    "gpu_kernel_impl", "gpu_kernel", "ReduceOp", "launch_vectorized_kernel", "launch_legacy_kernel",
    "opmath_gpu_kernel_with_scalars", "opmath_symmetric_gpu_kernel_with_scalars",
})
_FUNCTOR = re.compile(r"[A-Za-z_]\w*(?:[Ff]unctor\w*|Ops|_kernel_cuda|_kernel|_impl)\b")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_BUILTIN = frozenset({"int", "long", "short", "char", "bool", "float", "double", "unsigned", "signed",
                      "Half", "BFloat16", "__half", "__nv_bfloat16", "size_t", "int64_t", "int32_t"})
_MAX_LEN = 120


def _strip_params(s: str) -> str:
    """Remove the trailing parameter list ``(...)`` (and a trailing ``const``)."""
    s = s.rstrip()
    if s.endswith(" const"):
        s = s[:-6].rstrip()
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        c = s[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return s[:i].rstrip()
    return s


def _split_depth0(s: str, sep: str) -> list[str]:
    """Split ``s`` on ``sep`` where not inside <>, () or []."""
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    n = len(sep)
    while i < len(s):
        c = s[i]
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth = max(0, depth - 1)
        elif depth == 0 and s.startswith(sep, i):
            parts.append(s[start:i])
            i += n
            start = i
            continue
        i += 1
    parts.append(s[start:])
    return parts


def _name_and_targs(component: str) -> tuple[str, str]:
    """``foo<a, b<c>>`` -> (``foo``, ``a, b<c>``); no template -> (``foo``, "")."""
    lt = component.find("<")
    if lt <= 0:
        return component, ""
    gt = component.rfind(">")
    return component[:lt], component[lt + 1:gt if gt > lt else len(component)]


def _functor(targs: str) -> str | None:
    """The most specific operation name inside an at::native wrapper's template arguments."""
    for m in _FUNCTOR.finditer(targs):
        word = m.group(0)
        if word not in _WRAPPERS and word not in _GENERIC:
            return word
    return None


def _depth0_text(s: str) -> str:
    """``s`` without anything nested in <>, () or []."""
    out = []
    depth = 0
    for c in s:
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(c)
    return "".join(out)


_NOISE = frozenset({"at", "native", "std", "c10", "detail", "anon", "operator", "const", "void",
                    "lambda", "instance", "unsigned", "signed", "struct", "class"})


def _first_arg_ident(targs: str) -> str | None:
    """Most telling identifier of the first non-numeric, non-builtin template argument."""
    for arg in _split_depth0(targs, ","):
        arg = arg.strip()
        if not arg or arg[0].isdigit() or arg.startswith("("):
            continue
        words: list[str] = [w for w in _IDENT.findall(_depth0_text(arg))
                 if w not in _NOISE and w not in _BUILTIN]
        if words:
            return words[-1]
    return None


@lru_cache(maxsize=65536)
def shorten(full: str, hint: str | None = None) -> str:
    """Family name of a kernel.

    ``hint`` is the trace's own short name (nsys ``shortName``); it is used as is unless it is a
    generic wrapper (``Kernel``, ``vectorized_elementwise_kernel``...), which gets the telling
    template argument appended. Never returns an empty string.
    """
    text = (full or "").strip()
    if not text:
        return hint or "?"
    s = text.replace("(anonymous namespace)", "anon").replace("<unnamed>", "anon")
    s = _strip_params(s)
    tokens = [t for t in _split_depth0(s, " ") if t]
    token = tokens[-1] if tokens else s
    comps = [c for c in _split_depth0(token, "::") if c]
    if not comps:
        return hint or text[:_MAX_LEN]
    base, targs = _name_and_targs(comps[-1])
    base = base or comps[-1]
    if hint and hint not in _GENERIC:
        return hint[:_MAX_LEN]
    if base not in _GENERIC or not targs:
        return (hint or base)[:_MAX_LEN]
    detail = _functor(targs) if "elementwise" in base or "reduce" in base else None
    detail = detail or _first_arg_ident(targs) or _functor(targs)
    prefix = f"{comps[0]}::" if len(comps) > 1 and comps[0] not in ("at", "anon", "void") else ""
    short = f"{prefix}{base}<{detail}>" if detail else f"{prefix}{base}"
    return short[:_MAX_LEN]
