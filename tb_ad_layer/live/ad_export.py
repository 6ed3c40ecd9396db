"""Export a model the way AutoDeploy does, and run AutoDeploy's post-export clean-ups.

What AutoDeploy's ``export_to_gm`` transform does (``export/export.py``:
``run_forward_for_capture`` and ``torch_export_to_gm``), reproduced here on plain torch:

1. move parameters, buffers and inputs to the ``meta`` device, tied and shared weights staying
   one tensor (AutoDeploy builds its model on ``meta``; ``lift_to_meta``);
2. under ``torch.inference_mode()``, ``torch.export.export(model, (), kwargs, strict=False,
   dynamic_shapes=...)`` with the keyword inputs ``input_ids`` and ``position_ids``, the
   forward's signature set to exactly those (``set_exact_signature``) and ``Dim.DYNAMIC`` for
   their batch and sequence dims (``FullModelExportInfo``), then ``ep.module()``;
3. put the model's own tensors back into the exported module (``load_buffers_and_params``), so
   that a weight several modules share is one tensor again; de-duplicate ``get_attr`` nodes
   that read the same tensor (a shared block's weights keep the first name), replace ``meta``
   device arguments by the parameters' device (``meta`` here as in AutoDeploy, so they print
   ``meta``), and erase unused ``aten._assert_*`` / ``sym_constrain_range*`` nodes, each
   followed by AutoDeploy's ``canonicalize_graph`` (dead-code elimination that keeps impure
   nodes such as ``_guards_fn``, recompile, unused-submodule removal, lint).

The file ``001_export_export_to_gm.txt`` is printed after step 3. The ``post_export`` stage then
runs ``cleanup_noop_slice`` (a 4-argument ``aten.slice`` from 0 to ``2**63 - 1`` is replaced by
its input) and ``cleanup_noop_add`` (an ``aten.add`` with an ``aten.zeros`` operand is replaced by
the other operand), each followed by the canonicalisation AutoDeploy runs after a transform that
changed the graph. Neither creates nodes, so every surviving node keeps its export metadata.
"""

from __future__ import annotations

import inspect
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import fx
from torch.export import Dim

_INT64_MAX = torch.iinfo(torch.long).max
_CHECK_OPS = (torch.ops.aten._assert_scalar, torch.ops.aten.sym_constrain_range,
              torch.ops.aten.sym_constrain_range_for_size, torch.ops.aten._assert_tensor_metadata)


def _is_op(node: fx.Node, packets: tuple[object, ...]) -> bool:
    """True when ``node`` calls one of the overload packets (any overload)."""
    if node.op != "call_function":
        return False
    packet = getattr(node.target, "overloadpacket", None)
    return any(node.target is p or packet is p for p in packets)


def _is_impure(node: fx.Node) -> bool:
    """fx's purity test without its RNG rule (random ops are kept only when used)."""
    target = node.target
    seeded = getattr(target, "_nondeterministic_seeded", False)
    if seeded:
        target._nondeterministic_seeded = False
    try:
        return bool(node.is_impure())
    finally:
        if seeded:
            target._nondeterministic_seeded = True


def canonicalize(gm: fx.GraphModule) -> None:
    """Dead-code elimination, recompile, removal of unused submodules, lint."""
    gm.graph.eliminate_dead_code(is_impure_node=_is_impure)
    gm.recompile()
    gm.delete_all_unused_submodules()
    gm.graph.lint()


def to_meta_keeping_ties(model: torch.nn.Module) -> None:
    """Move every parameter and buffer to ``meta``; a tensor shared by several modules stays shared.

    (``Module.to("meta")`` would give each module its own copy.) AutoDeploy builds its model on
    ``meta`` from the start, where tied and shared weights are one tensor.
    """
    memo: dict[int, torch.Tensor] = {}
    for mod in model.modules():
        for name, param in list(mod._parameters.items()):
            if param is not None:
                if id(param) not in memo:
                    memo[id(param)] = torch.nn.Parameter(param.to("meta"),
                                                         requires_grad=param.requires_grad)
                mod._parameters[name] = memo[id(param)]
        for name, buf in list(mod._buffers.items()):
            if buf is not None:
                if id(buf) not in memo:
                    memo[id(buf)] = buf.to("meta")
                mod._buffers[name] = memo[id(buf)]


def _params_and_buffers(mod: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter and buffer by name, aliases included (tied weights under each name)."""
    found = dict(mod.named_buffers(remove_duplicate=False))
    found.update(mod.named_parameters(remove_duplicate=False))
    return found


def _load_params_and_buffers(gm: fx.GraphModule, state: dict[str, torch.Tensor]) -> None:
    """Put the model's own tensors back into the exported module (``load_buffers_and_params``).

    Tied weights thereby become one tensor again under several names, which the de-duplication
    then folds into one ``get_attr`` node (the first name).
    """
    expected = _params_and_buffers(gm)
    missing = sorted(set(expected) - set(state))
    if missing:
        raise RuntimeError(f"exported module has tensors the model lacks: {missing[:5]}")
    for key in expected:
        owner, _, name = key.rpartition(".")
        setattr(gm.get_submodule(owner), name, state[key])


def _dedup_params(gm: fx.GraphModule) -> None:
    by_tensor: dict[int, list[fx.Node]] = defaultdict(list)
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            owner, _, name = str(node.target).rpartition(".")
            by_tensor[id(getattr(gm.get_submodule(owner), name))].append(node)
    for nodes in by_tensor.values():
        for dup in nodes[1:]:
            dup.replace_all_uses_with(nodes[0])
            gm.graph.erase_node(dup)
            owner, _, name = str(dup.target).rpartition(".")
            delattr(gm.get_submodule(owner), name)
    canonicalize(gm)


def _clean_up_device_info(gm: fx.GraphModule) -> None:
    devices = {t.device for _, t in gm.named_parameters()}
    if len(devices) == 1:
        device, meta = devices.pop(), torch.device("meta")
        for node in gm.graph.nodes:
            if any(a == meta for a in node.args):
                node.args = tuple(device if a == meta else a for a in node.args)
            if any(v == meta for v in node.kwargs.values()):
                node.kwargs = {k: device if v == meta else v for k, v in node.kwargs.items()}
    canonicalize(gm)


def _clean_up_assertions(gm: fx.GraphModule) -> None:
    for node in reversed(list(gm.graph.nodes)):
        if not node.users and _is_op(node, _CHECK_OPS):
            gm.graph.erase_node(node)
    canonicalize(gm)


@contextmanager
def _exact_signature(model: torch.nn.Module, names: list[str]) -> Iterator[None]:
    """Make ``forward`` take exactly ``names`` as keyword-only arguments while exporting.

    AutoDeploy's ``set_exact_signature``: without it, a model whose ``forward`` takes
    ``position_ids`` only through ``**kwargs`` cannot be given dynamic shapes by name.
    """
    func = model.forward.__func__
    had = "__signature__" in func.__dict__
    saved = func.__dict__.get("__signature__")
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=torch.Tensor)
               for n in names]
    func.__signature__ = inspect.Signature(params)
    try:
        yield
    finally:
        if had:
            func.__signature__ = saved
        else:
            del func.__signature__


def example_inputs(batch: int, seq: int, vocab: int, seed: int) -> dict[str, torch.Tensor]:
    """``input_ids`` (random tokens) and ``position_ids`` (``0..seq-1`` per sequence)."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (batch, seq), generator=gen)
    pos = torch.arange(seq).unsqueeze(0).expand(batch, seq).contiguous()
    return {"input_ids": ids, "position_ids": pos}


def export_to_gm(model: torch.nn.Module, inputs: dict[str, torch.Tensor],
                 dynamic_batch: bool = True, dynamic_seq: bool = True,
                 on_meta: bool = True) -> fx.GraphModule:
    """AutoDeploy's export of ``model`` called with ``inputs`` as keyword arguments.

    ``dynamic_batch=False`` / ``dynamic_seq=False`` let export specialise that dim
    (``Dim.AUTO``) for models whose code fixes it (a Python loop over the sequence);
    ``on_meta=False`` exports with the real CPU tensors (for models whose code cannot run on
    ``meta``). The model is moved to ``meta`` when ``on_meta`` is set and left there.
    """
    dims: dict[int, object] = {0: Dim.DYNAMIC if dynamic_batch else Dim.AUTO,
                               1: Dim.DYNAMIC if dynamic_seq else Dim.AUTO}
    dynamic_shapes = {k: dict(dims) for k in inputs}
    if on_meta:
        to_meta_keeping_ties(model)
        inputs = {k: v.to("meta") for k, v in inputs.items()}
    state = _params_and_buffers(model)
    with torch.inference_mode(), _exact_signature(model, list(inputs)):
        ep = torch.export.export(model, (), inputs, dynamic_shapes=dynamic_shapes, strict=False)
    gm = ep.module()
    assert isinstance(gm, fx.GraphModule)
    _load_params_and_buffers(gm, state)
    _dedup_params(gm)
    _clean_up_device_info(gm)
    _clean_up_assertions(gm)
    return gm


def cleanup_noop_slice(gm: fx.GraphModule) -> int:
    """AutoDeploy's ``cleanup_noop_slice``; returns the number of slices removed."""
    matches = 0
    for node in list(gm.graph.nodes):
        if not _is_op(node, (torch.ops.aten.slice,)) or len(node.args) != 4 or node.kwargs:
            continue
        if not isinstance(node.args[1], int) or node.args[2] != 0 or node.args[3] != _INT64_MAX:
            continue
        node.replace_all_uses_with(node.args[0])
        gm.graph.erase_node(node)
        matches += 1
    if matches:
        canonicalize(gm)
    return matches


def cleanup_noop_add(gm: fx.GraphModule) -> int:
    """AutoDeploy's ``cleanup_noop_add``; returns the number of adds removed."""
    matches = 0
    zeros = (torch.ops.aten.zeros,)
    for node in list(gm.graph.nodes):
        if not _is_op(node, (torch.ops.aten.add,)) or len(node.all_input_nodes) != 2:
            continue
        first, second = node.all_input_nodes
        if _is_op(first, zeros):
            kept = second
        elif _is_op(second, zeros):
            kept = first
        else:
            continue
        node.replace_all_uses_with(kept)
        gm.graph.erase_node(node)
        matches += 1
    if matches:
        canonicalize(gm)
    return matches
