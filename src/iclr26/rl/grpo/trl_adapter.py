"""An adapter that plugs a ``batch_selector`` (e.g. ReVisual-R1's PAD) into Hugging Face TRL's
``GRPOTrainer``, for users training real models with TRL. ``trl`` is optional: importing this
module never needs it; calling :func:`trl_trainer_with_selector` does.

TRL computes group advantages inside ``_generate_and_score_completions`` and returns a dict of
per-completion tensors (``advantages [B]``, ``completion_mask [B, T]``, ids, masks, old
log-probs). The subclass re-indexes every per-completion entry of that dict with the rows the
selector picks, so the loss runs on the selected (possibly duplicated) rows."""

from __future__ import annotations

from collections.abc import Callable

import torch


def _reindex(output: dict, index: torch.Tensor, n: int) -> dict:
    out = {}
    for key, value in output.items():
        if isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[0] == n:
            out[key] = value[index.to(value.device)]
        elif isinstance(value, list) and len(value) == n:
            out[key] = [value[i] for i in index.tolist()]
        else:
            out[key] = value
    return out


def trl_trainer_with_selector(batch_selector: Callable, base: type | None = None) -> type:
    """A subclass of ``trl.GRPOTrainer`` (or of ``base``) whose training batches are the rows
    ``batch_selector(token_advantages, completion_mask, generator)`` returns.

    It relies only on the ``advantages`` and ``completion_mask`` entries TRL's trainer produces;
    the tests run one real step of TRL's trainer through it (``trl`` is in the ``trl`` extra)."""
    if not callable(batch_selector):
        raise TypeError(f"batch_selector must be callable, got {type(batch_selector).__name__}")
    if base is None:
        try:
            from trl import GRPOTrainer as base  # type: ignore[no-redef]
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("trl_trainer_with_selector needs `pip install trl`") from exc

    class SelectorGRPOTrainer(base):  # type: ignore[misc, valid-type]
        selector = staticmethod(batch_selector)

        def _generate_and_score_completions(self, inputs):
            output = super()._generate_and_score_completions(inputs)
            adv, mask = output.get("advantages"), output.get("completion_mask")
            if adv is None or mask is None:
                return output
            n = adv.shape[0]
            token_adv = adv.reshape(n, -1)[:, :1].float().cpu() * mask.float().cpu()
            if not hasattr(self, "_selector_rng"):
                self._selector_rng = torch.Generator().manual_seed(int(self.args.seed))
            index, info = self.selector(token_adv, mask.float().cpu(), self._selector_rng)
            index = torch.as_tensor(index, dtype=torch.long).reshape(-1)
            if index.numel() and (int(index.min()) < 0 or int(index.max()) >= n):
                raise ValueError("batch_selector returned an index outside the batch")
            # TRL splits the generation batch into ``steps_per_generation`` equal chunks and
            # silently drops the remainder; trim it here instead, and count it
            chunks = int(getattr(self.args, "steps_per_generation", None) or 1)
            if index.numel() < chunks:
                raise ValueError(
                    f"batch_selector returned {index.numel()} rows, fewer than "
                    f"steps_per_generation ({chunks}): every step needs at least one row"
                )
            trimmed = index.numel() % chunks
            if trimmed:
                index = index[: index.numel() - trimmed]
            info = dict(info)
            info["trimmed_for_split"] = trimmed
            self._selector_info = info
            return _reindex(output, index, n)

    SelectorGRPOTrainer.__name__ = f"Selector{base.__name__}"
    return SelectorGRPOTrainer
