"""Seeded perturbations: regenerated from an integer seed instead of being stored.

A perturbation direction u is never kept in memory; it is drawn again from the same seed, in
the same parameter order and with the same shapes, whenever it is needed (MeZO's trick). The
random numbers are drawn in chunks of at most ``CHUNK`` entries: small tensors share a chunk,
and a large tensor is covered by several chunks, so that the transient memory of one
perturbation is bounded by one chunk whatever the size of the model.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from iclr26 import validation as V

KINDS = ("rademacher", "gaussian")


CHUNK = 1 << 20  # at most this many random entries exist at a time


def _pieces(params: Sequence[torch.Tensor]) -> list[list[tuple[int, int, int]]]:
    """Chunks of ``(param index, start, stop)`` flat slices, each chunk at most ``CHUNK``
    entries on one device and dtype; consecutive small tensors share a chunk, a large tensor
    is split over several."""
    chunks: list[list[tuple[int, int, int]]] = []
    size = 0
    key = None
    for j, p in enumerate(params):
        n = p.numel()
        start = 0
        while start < n:
            here = (p.device, p.dtype)
            if not chunks or size >= CHUNK or key != here:
                chunks.append([])
                size, key = 0, here
            take = min(n - start, CHUNK - size)
            chunks[-1].append((j, start, start + take))
            size += take
            start += take
    return chunks


def _draw(n: int, ref: torch.Tensor, gen: torch.Generator, kind: str) -> torch.Tensor:
    if kind == "rademacher":
        return _rademacher(n, ref, gen)
    return torch.randn(n, generator=gen, device=ref.device, dtype=ref.dtype)


def direction_pieces(
    params: Sequence[torch.Tensor], seed: int, kind: str
) -> Iterator[tuple[int, int, int, torch.Tensor]]:
    """Yield ``(param index, start, stop, flat piece of u)`` in a fixed order from ``seed``;
    only one chunk (<= ``CHUNK`` entries) of random numbers exists at a time."""
    V.check_choice(kind, "kind", KINDS)
    seed = V.check_int(seed, "seed")
    generators: dict[torch.device, torch.Generator] = {}
    for chunk in _pieces(params):
        ref = params[chunk[0][0]]
        gen = generators.get(ref.device)
        if gen is None:
            gen = torch.Generator(device=ref.device).manual_seed(seed)
            generators[ref.device] = gen
        flat = _draw(sum(b - a for _, a, b in chunk), ref, gen, kind)
        offset = 0
        for j, a, b in chunk:
            yield j, a, b, flat[offset : offset + b - a]
            offset += b - a
        del flat


def directions(params: Sequence[torch.Tensor], seed: int, kind: str) -> Iterator[torch.Tensor]:
    """Yield the direction's block for each parameter, in order, from ``seed`` (a whole
    parameter's block at a time: for tests and the batched path; in-place updates use
    :func:`direction_pieces` and stay within one chunk). Arguments are checked at the call."""
    params = _check_params(params)
    V.check_choice(kind, "kind", KINDS)
    V.check_int(seed, "seed")
    return _directions(params, seed, kind)


def _directions(params: list[torch.Tensor], seed: int, kind: str) -> Iterator[torch.Tensor]:
    current, parts = 0, []
    for j, _, _, piece in direction_pieces(params, seed, kind):
        if j != current:
            yield _assemble(parts, params[current])
            current, parts = j, []
        parts.append(piece)
    if parts:
        yield _assemble(parts, params[current])


def _assemble(parts: list[torch.Tensor], p: torch.Tensor) -> torch.Tensor:
    flat = parts[0] if len(parts) == 1 else torch.cat(parts)
    return flat.view(p.shape)


_BITS = 62  # random bits taken from each int64 draw (uniform in [0, 2**62))


def _rademacher(n: int, p: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """``n`` +-1 entries in ``p``'s dtype/device, unpacked from 62 random bits per int64 draw
    (much faster than one Bernoulli draw per entry)."""
    words = torch.randint(0, 2**_BITS, (-(-n // _BITS),), generator=gen, device=p.device)
    shifts = torch.arange(_BITS, device=p.device)
    bits = (words[:, None] >> shifts).bitwise_and_(1).reshape(-1)[:n]
    del words
    return bits.to(p.dtype).mul_(2).sub_(1)


def _check_params(params) -> list[torch.Tensor]:
    if isinstance(params, torch.Tensor):
        raise TypeError("params must be a sequence of tensors, got a single tensor")
    params = list(params)
    if not params:
        raise ValueError("params is empty")
    for p in params:
        if not isinstance(p, torch.Tensor):
            raise TypeError(f"params must hold tensors, got {type(p).__name__}")
        if not p.is_floating_point():
            raise TypeError(f"params must be floating-point tensors, got {p.dtype}")
    return params


@torch.no_grad()
def add_direction(params: Sequence[torch.Tensor], seed: int, kind: str, scale: float) -> None:
    """In place: params += scale * u(seed), one chunk at a time."""
    pending: dict[int, list[torch.Tensor]] = {}
    for j, a, b, piece in direction_pieces(params, seed, kind):
        p = params[j]
        if p.is_contiguous():
            p.view(-1)[a:b].add_(piece, alpha=scale)
            del piece  # the next chunk is drawn only after this one is released
            continue
        # a non-contiguous tensor has no flat view: gather its pieces and add them at once
        pending.setdefault(j, []).append(piece.clone())
        if b == p.numel():
            p.add_(_assemble(pending.pop(j), p), alpha=scale)


def direction_vector(params: Sequence[torch.Tensor], seed: int, kind: str) -> torch.Tensor:
    """The whole direction as one flat vector (tests and the batched path only)."""
    params = _check_params(params)
    return torch.cat([u.reshape(-1) for u in directions(params, seed, kind)])
