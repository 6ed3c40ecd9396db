"""AutoDeploy's DeepSeek MoE export patch: routed experts as per-expert weight lists.

AutoDeploy (``models/patches/deepseek.py``, ``deepseek_v3_moe``) replaces the forward of
``DeepseekV3MoE`` so that the routed experts are one ``auto_deploy::torch_moe`` call taking the
router's choices and three lists of per-expert weights (gate, down, up), the checkpoint's
``mlp.experts.<e>.{gate,up,down}_proj.weight`` layout. transformers 5 stores those experts as
two stacked 3-D tensors, so :func:`split_experts` re-lays them out per expert first. The op is a
stand-in registered here under AutoDeploy's name, with a reference implementation, so that the
patched model computes the same logits (checked by the caller) and prints as AutoDeploy's does.
"""

from __future__ import annotations

import torch
import torch.nn as nn

_REGISTERED = False


def register_torch_moe() -> None:
    """Define ``torch.ops.auto_deploy.torch_moe`` once per process."""
    global _REGISTERED
    if _REGISTERED:
        return

    @torch.library.custom_op("auto_deploy::torch_moe", mutates_args=())
    def torch_moe(x: torch.Tensor, selected_experts: torch.Tensor, routing_weights: torch.Tensor,
                  w1_weight: list[torch.Tensor], w2_weight: list[torch.Tensor],
                  w3_weight: list[torch.Tensor]) -> torch.Tensor:
        """Unfused gated-MLP MoE: w1 = gate, w2 = down, w3 = up, per expert."""
        flat = x.reshape(-1, x.shape[-1])
        out = torch.zeros_like(flat)
        sel = selected_experts.reshape(flat.shape[0], -1)
        weights = routing_weights.reshape(flat.shape[0], -1)
        for e in range(len(w1_weight)):
            share = (weights * (sel == e).to(weights.dtype)).sum(-1, keepdim=True)
            h = torch.nn.functional.silu(flat @ w1_weight[e].t()) * (flat @ w3_weight[e].t())
            out = out + (h @ w2_weight[e].t()) * share.to(flat.dtype)
        return out.reshape(x.shape)

    @torch_moe.register_fake
    def _(x: torch.Tensor, selected_experts: torch.Tensor, routing_weights: torch.Tensor,
          w1_weight: list[torch.Tensor], w2_weight: list[torch.Tensor],
          w3_weight: list[torch.Tensor]) -> torch.Tensor:
        return torch.empty_like(x)

    _REGISTERED = True


class _Expert(nn.Module):
    def __init__(self, gate: torch.Tensor, up: torch.Tensor, down: torch.Tensor) -> None:
        super().__init__()
        inter, hidden = gate.shape
        self.gate_proj = nn.Linear(hidden, inter, bias=False, dtype=gate.dtype, device=gate.device)
        self.up_proj = nn.Linear(hidden, inter, bias=False, dtype=gate.dtype, device=gate.device)
        self.down_proj = nn.Linear(inter, hidden, bias=False, dtype=gate.dtype, device=gate.device)
        if gate.device.type != "meta":
            with torch.no_grad():
                self.gate_proj.weight.copy_(gate)
                self.up_proj.weight.copy_(up)
                self.down_proj.weight.copy_(down)


class PerExpertExperts(nn.ModuleList):
    """Drop-in for transformers' stacked experts: same call, one module per expert."""

    def forward(self, hidden_states: torch.Tensor, top_k_index: torch.Tensor,
                top_k_weights: torch.Tensor) -> torch.Tensor:
        return torch.ops.auto_deploy.torch_moe(
            hidden_states, top_k_index, top_k_weights,
            [e.gate_proj.weight for e in self],
            [e.down_proj.weight for e in self],
            [e.up_proj.weight for e in self])


def split_experts(stacked: nn.Module) -> PerExpertExperts:
    """Per-expert modules from transformers' ``gate_up_proj`` [E, 2I, H] / ``down_proj`` [E, H, I]."""
    register_torch_moe()
    gate_up, down = stacked.gate_up_proj.data, stacked.down_proj.data
    inter = gate_up.shape[1] // 2
    return PerExpertExperts([_Expert(gate_up[e, :inter], gate_up[e, inter:], down[e])
                             for e in range(gate_up.shape[0])])
