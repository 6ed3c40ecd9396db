"""What a weight/buffer name says: which layer owns it, and what role it plays there.

Weight names are module paths with ``.`` replaced by ``_`` (``model_layers_5_self_attn_q_a_proj_weight``),
or fused names such as ``fused_gate_up_5_weight``. They are the ground truth for layer ownership.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from tb_ad_layer.errors import InputError

_LAYER = re.compile(r"(?:^|[_.])(?:layers|layer|h|blocks)[_.](\d+)(?=[_.]|$)")
_FUSED = re.compile(r"^_?fused_(?:[A-Za-z]\w*?_)?(\d+)(?=_|$)")
# _LAYER, and the role after the layer's number (what weight_role gives): one match gives both.
_LAYER_ROLE = re.compile(_LAYER.pattern + r"[_.]*(.*)", re.DOTALL)
# The same patterns for ASCII names (every real one): there `\w` and `\d` mean what they mean
# in Unicode text, without the Unicode tables the matcher reads for every character otherwise.
_LAYER_ROLE_ASCII = re.compile(_LAYER_ROLE.pattern, re.DOTALL | re.ASCII)
_FUSED_ASCII = re.compile(_FUSED.pattern, re.ASCII)
# Layer indices are stored as 32-bit integers and shown by the panel; a larger one is a damaged
# or hostile name, not a model.
MAX_LAYER_INDEX = (1 << 31) - 1
_BUFFER_HINT = re.compile(r"(?:^_|cos|sin|rotary|rope|inv_freq|freqs|cache|mask|_buffer)",
                          re.IGNORECASE)


@lru_cache(maxsize=1 << 18)
def layer_of_weight(name: str) -> int | None:
    """The decoder layer a weight belongs to (``layers_N_``, ``layers.N.``, ``fused_*_N_*``), or None."""
    m = _LAYER.search(name)
    if m:
        return _index(name, m.group(1))
    m = _FUSED.match(name)
    if m:
        return _index(name, m.group(1))
    return None


def _index(name: str, digits: str) -> int:
    index = int(digits) if len(digits) <= 10 else MAX_LAYER_INDEX + 1
    if index > MAX_LAYER_INDEX:
        raise InputError(f"layer index {digits[:40]} in the weight name {name[:120]!r} is out of "
                         f"range (at most {MAX_LAYER_INDEX})")
    return index


def weight_layers(names: Iterable[str]) -> dict[str, int | None]:
    """:func:`layer_of_weight` of every name, computed once for a whole graph.

    A graph has one entry per distinct weight (400k on a 256-layer MoE dump), more than any
    bounded cache holds, so per-call caching stops hitting exactly when it matters.
    """
    return weight_table(names)[0]


def weight_table(names: Iterable[str]) -> tuple[dict[str, int | None], dict[str, str]]:
    """``(layers, roles)``: :func:`layer_of_weight` and :func:`weight_role` of every name, from
    one search per name (a MoE dump has one weight per expert and projection).

    Raises:
        InputError: a layer index beyond :data:`MAX_LAYER_INDEX` (no file named: the caller
            knows it).
    """
    layers: dict[str, int | None] = {}
    roles: dict[str, str] = {}
    # One string per distinct role: every layer of a model has the same ones (its experts'
    # projections included), and whoever reads the roles hashes each string it is given.
    shared: dict[str, str] = {}
    for name in names:
        ascii_name = name.isascii()
        m = (_LAYER_ROLE_ASCII if ascii_name else _LAYER_ROLE).search(name)
        if m:
            digits, role = m.group(1, 2)
            layers[name] = _index(name, digits)
            roles[name] = shared.setdefault(role, role)
            continue
        m = (_FUSED_ASCII if ascii_name else _FUSED).match(name)
        if m:
            layers[name] = _index(name, m.group(1))
            roles[name] = name[:m.start(1)] + "N" + name[m.end(1):]
        else:
            layers[name] = None
            roles[name] = name
    return layers, roles


def is_buffer_like(name: str) -> bool:
    """A model-level buffer (RoPE caches, masks, AutoDeploy's ``_ad_*`` buffers) rather than a
    parameter. Such buffers are consumed inside layers without making the consumer model-level."""
    return bool(_BUFFER_HINT.search(name))


@lru_cache(maxsize=1 << 16)
def weight_role(name: str) -> str:
    """The weight's path inside its layer: ``model_layers_5_mlp_gate_weight`` -> ``mlp_gate_weight``.

    Used to match nodes of two different layers or runs; model-level names are returned as is.
    """
    m = _LAYER.search(name)
    if m:
        return name[m.end():].lstrip("_.")
    m = _FUSED.match(name)
    if m:
        return name[:m.start(1)] + "N" + name[m.end(1):]
    return name
