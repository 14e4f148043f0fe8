"""FlexUlysses' sequence-parallel attention over a group of workers (``torch.distributed``,
gloo on CPU): a long sequence is cut into contiguous chunks, one per group member; Q/K/V are
computed locally and exchanged so attention is exact for every chunk.

``sp_mode="allgather"``: every member all-gathers the group's K/V and attends its own queries
over all earlier keys (global positions, causal mask). ``sp_mode="ulysses"``: head-parallel
attention as in DeepSpeed-Ulysses: each member gets the whole sequence for ``H / k`` heads,
attends, and the outputs go back to their chunk's owner. The exchanges use an all-gather with
autograd (its backward all-reduces the gradients and keeps each member's slice), so training
back-propagates through the group."""

from __future__ import annotations

import torch
import torch.distributed as dist

from iclr26 import validation as V
from iclr26.rl.flexrl.model import _causal_attention as causal_attention

SP_MODES = ("allgather", "ulysses")


class _GatherWithGrad(torch.autograd.Function):
    """All-gather of equal-shaped tensors; backward: sum the gradient of every member's copy
    (an all-reduce) and keep this member's slice (gloo has no reduce-scatter)."""

    @staticmethod
    def forward(ctx, tensor, group, index, size):
        ctx.group, ctx.index = group, index
        out = [torch.empty_like(tensor) for _ in range(size)]
        dist.all_gather(out, tensor.contiguous(), group=group)
        return torch.stack(out)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        dist.all_reduce(grad, group=ctx.group)
        return grad[ctx.index], None, None, None


class SequenceParallelGroup:
    """The exchange for one sequence split over ``len(lengths)`` members.

    ``group``: the ``torch.distributed`` process group of the members (in chunk order);
    ``lengths``: chunk lengths in sequence order; ``index``: this member's chunk."""

    def __init__(self, group, lengths: list[int], index: int, mode: str = "allgather"):
        V.check_choice(mode, "sp_mode", SP_MODES)
        lengths = V.check_array(lengths, "lengths", ndim=1, dtype="int64", low=1).tolist()
        V.check_int(index, "index", low=0, high=len(lengths) - 1)
        self.group, self.lengths, self.index, self.mode = group, list(lengths), index, mode
        self.size = len(self.lengths)
        self.max_len = max(self.lengths)
        self.bytes_sent = 0

    def gather_seq(self, x: torch.Tensor, dim: int) -> list[torch.Tensor]:
        """Every member's ``x`` (its own chunk along ``dim``), trimmed to its length."""
        pad = self.max_len - x.shape[dim]
        if pad:
            shape = list(x.shape)
            shape[dim] = pad
            x = torch.cat([x, x.new_zeros(shape)], dim=dim)
        self.bytes_sent += x.numel() * x.element_size()
        stacked = _GatherWithGrad.apply(x, self.group, self.index, self.size)
        return [stacked[j].narrow(dim, 0, n) for j, n in enumerate(self.lengths)]

    def attention(self, q, k, v, start: int):
        """Attention output ``[G, H, n, dh]`` of this member's queries and the full-sequence
        ``(K, V)`` (``[G, H, L, dh]``)."""
        n = q.shape[2]
        if self.mode == "allgather":
            parts = self.gather_seq(torch.stack([k, v]), dim=3)
            full = torch.cat(parts, dim=3)
            end = start + n
            att = causal_attention(q, full[0][:, :, :end], full[1][:, :, :end], start)
            return att, full[0], full[1]
        heads = q.shape[1]
        if heads % self.size:
            raise ValueError(
                f"sp_mode='ulysses' needs the head count ({heads}) divisible by the group "
                f"size ({self.size})"
            )
        h = heads // self.size
        parts = self.gather_seq(torch.stack([q, k, v]), dim=3)
        full = torch.cat(parts, dim=3)  # [3, G, H, L, dh]
        mine = slice(self.index * h, (self.index + 1) * h)
        att_heads = causal_attention(full[0][:, mine], full[1][:, mine], full[2][:, mine], 0)
        # second exchange: every member's heads for the whole sequence -> own chunk, all heads
        outs = self.gather_seq_heads(att_heads)
        att_full = torch.cat(outs, dim=1)
        offset = sum(self.lengths[: self.index])
        return att_full[:, :, offset : offset + n], full[1], full[2]

    def gather_seq_heads(self, x: torch.Tensor) -> list[torch.Tensor]:
        self.bytes_sent += x.numel() * x.element_size()
        stacked = _GatherWithGrad.apply(x.contiguous(), self.group, self.index, self.size)
        return list(stacked.unbind(0))


def contiguous_windows(world: int) -> list[tuple[int, ...]]:
    """The sequence-parallel groups set up once per run: every contiguous window of ranks of
    size 2..world (``world * (world - 1) / 2`` groups), created in the same order by all."""
    return [tuple(range(r, r + k)) for k in range(2, world + 1) for r in range(world - k + 1)]
