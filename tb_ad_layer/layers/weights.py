"""What a weight/buffer name says: which layer owns it, and what role it plays there.

Weight names are module paths with ``.`` replaced by ``_`` (``model_layers_5_self_attn_q_a_proj_weight``):
the layer path in such a name is a strong hint of ownership, which dataflow checks (a block that
several layers share is named after one of them).

Weights that AutoDeploy's transforms register are named by running counters, not by modules
(DESIGN.md, "Later stages"): ``fuse_gemms`` registers ``fused_weight_{idx}`` (idx counts the groups
it fused, in graph order; scale buffers ``fused_weight_{idx}_{scale}``), ``fuse_moe``
``fused_moe_w3_w1_stacked_{k}`` / ``fused_moe_w2_stacked_{k}`` (k counts MoE ops), the Llama-4
matcher ``bmm_moe_w1_expert_{P}_{E}``. Older dumps name fused weights ``fused_gate_up_5_weight``,
where the number happens to be a layer. None of these numbers is trusted as a layer: such a weight
is :data:`UNNAMED`, and the node applying it gets its layer from the graph.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from tb_ad_layer.errors import InputError

_LAYER = re.compile(r"(?:^|[_.])(?:layers|layer|h|blocks)[_.](\d+)(?=[_.]|$)")
# A weight a transform registered: the number in it counts transform matches.
_FUSED = re.compile(r"^_?fused_(?:[A-Za-z]\w*?_)?(\d+)(?=_|$)")
_TRANSFORM_MADE = re.compile(r"^_?fused_|^bmm_moe_|_stacked_\d")
_COUNTERS = re.compile(r"_\d+(?=_|$)")
_TRAILING_COUNTER = re.compile(r"_\d+$")
# _LAYER, and the role after the layer's number (what weight_role gives): one match gives both.
_LAYER_ROLE = re.compile(_LAYER.pattern + r"[_.]*(.*)", re.DOTALL)
# The same patterns for ASCII names (every real one): there `\w` and `\d` mean what they mean
# in Unicode text, without the Unicode tables the matcher reads for every character otherwise.
_LAYER_ROLE_ASCII = re.compile(_LAYER_ROLE.pattern, re.DOTALL | re.ASCII)
_FUSED_ASCII = re.compile(_FUSED.pattern, re.ASCII)
# Layer indices are stored as 32-bit integers and shown by the panel; a larger one is a damaged
# or hostile name, not a model.
MAX_LAYER_INDEX = (1 << 31) - 1
# The layer of a model-level weight (embedding, final norm, lm head, buffers) in
# node_weight_facts.
MODEL_LEVEL = -1
# The layer of a weight a transform registered under a counter (fused_weight_3): its name says
# neither a layer nor that it is model-level.
UNNAMED = -2
_BUFFER_HINT = re.compile(r"(?:^_|cos|sin|rotary|rope|inv_freq|freqs|cache|mask|_buffer)",
                          re.IGNORECASE)


@lru_cache(maxsize=1 << 18)
def layer_of_weight(name: str) -> int | None:
    """The decoder layer whose module path a weight's name holds (``layers_N_``, ``layers.N.``,
    ``h_N_``, ``blocks_N_``), or None (model-level or :func:`is_transform_made`)."""
    m = _LAYER.search(name)
    if m:
        return _index(name, m.group(1))
    return None


def is_transform_made(name: str) -> bool:
    """Whether ``name`` is one a transform registered under a counter (``fused_weight_0``,
    ``fused_moe_w2_stacked_3``, ``bmm_moe_w1_expert_0_5``, ``dsv3_router_weight_2``) rather
    than a module path: a transform's prefix, or a counter at the end of a name that no layer
    path holds (a module path ends in a parameter name; AutoDeploy's RoPE buffers
    ``_ad_rotary_cos_sin_0`` are model-level buffers)."""
    return _TRANSFORM_MADE.search(name) is not None or (
        _TRAILING_COUNTER.search(name) is not None and not is_buffer_like(name))


def _index(name: str, digits: str) -> int:
    index = int(digits) if len(digits) <= 10 else MAX_LAYER_INDEX + 1
    if index > MAX_LAYER_INDEX:
        raise InputError(f"layer index {digits[:40]} in the weight name {name[:120]!r} is out of "
                         f"range (at most {MAX_LAYER_INDEX})")
    return index


def node_weight_facts(node_weights: Iterable[tuple[str, ...]]
                      ) -> tuple[list[tuple[int, ...]], list[tuple[str, ...]]]:
    """``(layers, roles)``: per entry of ``node_weights`` (the weight names of each node of a
    graph, ``node.weights``), the :func:`layer_of_weight` of each of its names
    (:data:`UNNAMED` for a :func:`is_transform_made` name, else :data:`MODEL_LEVEL` where that is
    None) and its :func:`weight_role`, as tuples parallel to the names, from one search per name.

    The rules read a weight's layer and role through the nodes that read it, so they are kept
    per node rather than in name-keyed tables: a MoE dump has one weight per expert and
    projection (400k on a 256-layer model), and every look-up of one in a table that large is
    a cache miss. A model-level weight's role is its name, so ``role != name`` is
    ``layer != MODEL_LEVEL`` (a transform-made name with no counter in it aside).

    Raises:
        InputError: a layer index beyond :data:`MAX_LAYER_INDEX` (no file named: the caller
            knows it).
    """
    layers: list[tuple[int, ...]] = []
    roles: list[tuple[str, ...]] = []
    no_layers: tuple[int, ...] = ()
    no_roles: tuple[str, ...] = ()
    # One string per distinct role: every layer of a model has the same ones (its experts'
    # projections included), and whoever reads the roles hashes and compares the strings.
    shared: dict[str, str] = {}
    shared_layers: dict[tuple[int, ...], tuple[int, ...]] = {}
    shared_roles: dict[tuple[str, ...], tuple[str, ...]] = {}
    node_layers: list[int] = []
    node_roles: list[str] = []
    # The last layer path found, up to and including the separator after its number
    # (``model_layers_5_``), and its layer: the weights of one layer come one after another,
    # and a name that starts with that text names the same layer there. (No layer path can
    # start earlier in it: one would have to end within the text, and then the name the text
    # came from would have had it.)
    prefix = ""
    prefix_layer = MODEL_LEVEL
    for names in node_weights:
        if not names:
            layers.append(no_layers)
            roles.append(no_roles)
            continue
        node_layers.clear()
        node_roles.clear()
        for name in names:
            if prefix and name.startswith(prefix):
                role = name[len(prefix):].lstrip("_.")
                node_layers.append(prefix_layer)
                node_roles.append(shared.setdefault(role, role))
                continue
            ascii_name = name.isascii()
            m = (_LAYER_ROLE_ASCII if ascii_name else _LAYER_ROLE).search(name)
            if m:
                digits, role = m.group(1, 2)
                layer = _index(name, digits)
                node_layers.append(layer)
                node_roles.append(shared.setdefault(role, role))
                end = m.end(1)
                if end < len(name) and name[end] != "\n":  # "$" matches before a final newline
                    prefix = name[:end + 1]
                    prefix_layer = layer
                continue
            if is_transform_made(name):
                node_layers.append(UNNAMED)
                role = _counted_role(name, ascii_name)
                node_roles.append(shared.setdefault(role, role))
            else:
                node_layers.append(MODEL_LEVEL)
                node_roles.append(name)
        # One tuple per distinct value too: the nodes of a layer share one of layers, and the
        # same expert's weights in every layer one of roles, so the rules that read them again
        # find them in the cache.
        node_layer_tuple = tuple(node_layers)
        layers.append(shared_layers.setdefault(node_layer_tuple, node_layer_tuple))
        node_role_tuple = tuple(node_roles)
        roles.append(shared_roles.setdefault(node_role_tuple, node_role_tuple))
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
    if is_transform_made(name):
        return _counted_role(name, name.isascii())
    return name


def _counted_role(name: str, ascii_name: bool) -> str:
    """The role of a transform-made weight: its name with the counter as ``N``
    (``fused_weight_3_input_scale`` -> ``fused_weight_N_input_scale``), so that the same fused
    weight of two layers or runs matches."""
    m = (_FUSED_ASCII if ascii_name else _FUSED).match(name)
    if m:
        return name[:m.start(1)] + "N" + name[m.end(1):]
    return _COUNTERS.sub("_N", name)
