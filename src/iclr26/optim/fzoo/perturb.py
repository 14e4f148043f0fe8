"""Seeded perturbations: regenerated from an integer seed instead of being stored.

A perturbation direction u is never kept in memory; it is drawn again from the same seed, in
the same parameter order and with the same shapes, whenever it is needed (MeZO's trick). Only
one parameter tensor's worth of random numbers exists at a time.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

KINDS = ("rademacher", "gaussian")


CHUNK = 1 << 20  # small tensors are drawn together, in chunks of at most this many entries


def _chunks(params: Sequence[torch.Tensor]) -> list[list[torch.Tensor]]:
    """Consecutive parameters grouped so one random draw serves several small tensors."""
    chunks: list[list[torch.Tensor]] = []
    size = 0
    for p in params:
        if (
            chunks
            and size + p.numel() <= CHUNK
            and chunks[-1][0].device == p.device
            and chunks[-1][0].dtype == p.dtype
        ):
            chunks[-1].append(p)
            size += p.numel()
        else:
            chunks.append([p])
            size = p.numel()
    return chunks


def directions(params: Sequence[torch.Tensor], seed: int, kind: str) -> Iterator[torch.Tensor]:
    """Yield the direction's block for each parameter, in order, from ``seed``. At most one
    chunk (<= ``CHUNK`` entries, or one large tensor) of random numbers exists at a time."""
    if kind not in KINDS:
        raise ValueError(f"unknown perturbation {kind!r}; valid: {', '.join(KINDS)}")
    generators: dict[torch.device, torch.Generator] = {}
    for chunk in _chunks(params):
        ref = chunk[0]
        gen = generators.get(ref.device)
        if gen is None:
            gen = torch.Generator(device=ref.device).manual_seed(int(seed))
            generators[ref.device] = gen
        n = sum(p.numel() for p in chunk)
        if kind == "rademacher":
            flat = _rademacher(n, ref, gen)
        else:
            flat = torch.randn(n, generator=gen, device=ref.device, dtype=ref.dtype)
        offset = 0
        for p in chunk:
            yield flat[offset : offset + p.numel()].view(p.shape)
            offset += p.numel()


_BITS = 62  # random bits taken from each int64 draw (uniform in [0, 2**62))


def _rademacher(n: int, p: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """``n`` +-1 entries in ``p``'s dtype/device, unpacked from 62 random bits per int64 draw
    (much faster than one Bernoulli draw per entry)."""
    words = torch.randint(0, 2**_BITS, (-(-n // _BITS),), generator=gen, device=p.device)
    shifts = torch.arange(_BITS, device=p.device)
    bits = ((words[:, None] >> shifts) & 1).reshape(-1)[:n]
    return bits.to(p.dtype).mul_(2).sub_(1)


@torch.no_grad()
def add_direction(params: Sequence[torch.Tensor], seed: int, kind: str, scale: float) -> None:
    """In place: params += scale * u(seed)."""
    for p, u in zip(params, directions(params, seed, kind)):
        p.add_(u, alpha=scale)


def direction_vector(params: Sequence[torch.Tensor], seed: int, kind: str) -> torch.Tensor:
    """The whole direction as one flat vector (tests and the batched path only)."""
    return torch.cat([u.reshape(-1) for u in directions(params, seed, kind)])
