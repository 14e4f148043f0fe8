"""AdaSEKA (paper Sec. 4): a query-routed mixture of expert relevance subspaces.

Each expert is a set of SEKA projections built (with ``save_svd=True``) from one kind of
contrastive data. Before steering, one extra no-grad forward pass over the prompt records each
selected layer's pre-RoPE query of the last prompt token (``q_proj`` output, ``q_norm`` where
present), averaged over the query heads of each KV group. Expert ``m`` gets, per KV head,
``alpha_m = sum_{j<=top_k} (q^T u_mj) sigma_mj`` with ``q`` normalised, then the alphas are
divided by ``max_m |alpha_m|``; the highlighted keys are edited with
``P_dyn = sum_m alpha_m U_m,:k U_m,:k^T`` as ``k' = k + g P_dyn k``.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch

from iclr26 import validation as V
from iclr26.llm.seka.hooks import check_steer_mask, key_edit_hooks
from iclr26.llm.seka.projections import SEKAProjections, position_ids
from iclr26.llm.seka.sites import attention_sites, kv_geometry
from iclr26.llm.seka.steering import _Highlighter, check_projections

COMBINATIONS = ("weighted_top_k", "all_weighted", "top_k_uniform")


def routing_weights(
    query: torch.Tensor,
    U: torch.Tensor,
    S: torch.Tensor,
    valid: torch.Tensor,
    top_k: int,
    combination: str = "weighted_top_k",
) -> torch.Tensor:
    """Expert weights (B, M, H) from queries (B, H, d), expert bases U (M, H, d, d), singular
    values S (M, H, d) and validity (M, H). Invalid (filtered or non-finite) experts weigh 0;
    a (row, head) where every expert is invalid falls back to uniform 1/M."""
    V.check_tensor(query, "query", ndim=3, floating=True)
    V.check_tensor(U, "U", ndim=4, floating=True, allow_nan=True, allow_inf=True)
    M, H, d, _ = U.shape
    if query.shape[1:] != (H, d):
        raise ValueError(f"query must be (B, {H}, {d}), got {tuple(query.shape)}")
    V.check_tensor(S, "S", shape=(M, H, d), floating=True, allow_nan=True, allow_inf=True)
    V.check_tensor(valid, "valid", shape=(M, H))
    top_k = V.check_int(top_k, "top_k", low=1)
    V.check_choice(combination, "combination", COMBINATIONS)
    valid = valid.bool()
    q = query / query.norm(dim=-1, keepdim=True).clamp_min(1e-8)
    k = min(top_k, U.shape[-1])
    if combination == "all_weighted":
        align = torch.einsum("bhd,mhdj->bmhj", q, U) * S[None]
        alpha = align.sum(-1)
    elif combination == "weighted_top_k":
        align = torch.einsum("bhd,mhdj->bmhj", q, U[..., :k]) * S[None, ..., :k]
        alpha = align.sum(-1)
    else:  # top_k_uniform
        alpha = torch.einsum("bhd,mhdj->bmhj", q, U[..., :k]).mean(-1)
    ok = valid[None] & torch.isfinite(alpha)
    alpha = torch.where(ok, alpha, torch.zeros_like(alpha))
    scale = alpha.abs().amax(dim=1, keepdim=True)
    alpha = torch.where(scale > 0, alpha / scale.clamp_min(1e-12), alpha)
    none_valid = ~ok.any(dim=1, keepdim=True) | (scale == 0)
    uniform = torch.full_like(alpha, 1.0 / U.shape[0])
    return torch.where(none_valid, uniform, alpha)


class AdaSEKA(_Highlighter):
    """``AdaSEKA(model, tok, experts={"name": projections_with_svd, ...}, gain=1.0, top_k=3)``.

    The experts must cover the same layers. :attr:`last_weights` holds the routing weights
    (B, M, L_sel, H_kv) of the latest highlighted call, for inspection."""

    def __init__(
        self,
        model,
        tok,
        experts: dict[str, SEKAProjections],
        gain: float = 1.0,
        top_k: int = 3,
        combination: str = "weighted_top_k",
        marker=("**", "**"),
    ):
        super().__init__(model, tok, marker)
        if not isinstance(experts, dict) or not experts:
            raise ValueError("experts must be a non-empty dict of name -> SEKAProjections")
        layers = None
        for name, proj in experts.items():
            check_projections(proj, model, f"experts[{name!r}]")
            if proj.U_pos is None or proj.S_pos is None:
                raise ValueError(f"experts[{name!r}] has no SVD; build it with save_svd=True")
            V.check_tensor(proj.U_pos, f"experts[{name!r}].U_pos", allow_nan=True)
            if layers is None:
                layers = list(proj.layers)
            elif list(proj.layers) != layers:
                raise ValueError(f"experts[{name!r}] covers layers {proj.layers}, not {layers}")
        self.names = list(experts)
        self.experts = experts
        self.layers = layers
        self.gain = V.check_scalar(gain, "gain", low=0.0)
        self.top_k = V.check_int(top_k, "top_k", low=1)
        self.combination = V.check_choice(combination, "combination", COMBINATIONS)
        g = kv_geometry(model)
        self.geometry = g
        self.U = torch.stack([e.U_pos.float() for e in experts.values()])  # (M, L, H, d, d)
        self.S = torch.stack([e.S_pos.float() for e in experts.values()])  # (M, L, H, d)
        self.valid = torch.stack([e.applied_mask for e in experts.values()])  # (M, L, H)
        self.valid &= torch.isfinite(self.U).flatten(-2).all(-1) & torch.isfinite(self.S).all(-1)
        k = min(self.top_k, g.head_dim)
        Uk = torch.nan_to_num(self.U[..., :k])
        # filtered heads of an expert contribute nothing (the released code skips them)
        self.P_top = (Uk @ Uk.transpose(-1, -2)) * self.valid[..., None, None]  # (M, L, H, d, d)
        self.last_weights: torch.Tensor | None = None

    @torch.no_grad()
    def last_token_queries(self, input_ids, attention_mask=None, prompt_end=None) -> torch.Tensor:
        """(B, L_sel, H_kv, d): pre-RoPE queries of the last prompt token, averaged per KV group
        (one extra forward pass; no hook stays attached)."""
        sites = {s.layer: s for s in attention_sites(self.model)}
        g = self.geometry
        ids = input_ids if input_ids.dim() == 2 else input_ids[None]
        if attention_mask is None:
            attention_mask = torch.ones_like(ids)
        B, T = ids.shape
        end = torch.full((B,), T - 1) if prompt_end is None else torch.as_tensor(prompt_end)
        captured: dict[int, torch.Tensor] = {}
        handles = []
        try:
            for ell in self.layers:
                site = sites[ell]
                module = site.q_norm if isinstance(site.q_norm, torch.nn.Module) else site.q_proj

                def grab(_m, _i, out, ell=ell):
                    q = out.reshape(B, T, g.n_heads, g.head_dim)
                    captured[ell] = q[torch.arange(B), end.to(q.device)].float()

                handles.append(module.register_forward_hook(grab))
            self.model(
                input_ids=ids,
                attention_mask=attention_mask,
                position_ids=position_ids(attention_mask),
                use_cache=False,
            )
        finally:
            for h in handles:
                h.remove()
        q = torch.stack([captured[ell] for ell in self.layers], 1)  # (B, L, Hq, d)
        return q.reshape(B, len(self.layers), g.n_kv_heads, g.group, g.head_dim).mean(3)

    def weights_for(self, queries: torch.Tensor) -> torch.Tensor:
        """Routing weights (B, M, L_sel, H_kv) for queries (B, L_sel, H_kv, d)."""
        out = [
            routing_weights(
                queries[:, li],
                self.U[:, li],
                self.S[:, li],
                self.valid[:, li],
                self.top_k,
                self.combination,
            )
            for li in range(len(self.layers))
        ]
        return torch.stack(out, 2)

    @contextmanager
    def highlight(self, input_ids, steer_mask, attention_mask=None, prompt_end=None):
        mask = check_steer_mask(steer_mask, input_ids)
        if self.gain == 0.0 or not bool(mask.any()):
            yield
            return
        queries = self.last_token_queries(input_ids, attention_mask, prompt_end)
        weights = self.weights_for(queries).cpu()  # (B, M, L, H)
        self.last_weights = weights
        # P_dyn per (row, layer, head): (B, L, H, d, d)
        P_dyn = torch.einsum("bmlh,mlhde->blhde", weights, self.P_top)
        index = {ell: li for li, ell in enumerate(self.layers)}

        def edit(layer, keys, rows):
            P = P_dyn[:, index[layer]].to(keys.device)[rows]  # (N, H, d, d)
            return keys + self.gain * torch.einsum("nhd,nhde->nhe", keys, P)

        with key_edit_hooks(self.model, mask, self.layers, edit):
            yield
