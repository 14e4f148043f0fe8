"""``HFViTAdapter``: a Hugging Face ``ViTModel`` or ``Dinov2Model`` on the timm protocol.

The adapter reads the Hugging Face modules once and rebuilds them with timm's names: the patch
projection and the class token are shared with the source model; each layer becomes a
:class:`~iclr26.models.vision.vit.Block` whose ``attn.qkv`` fuses the separate query, key and
value projections (a copy), and whose norms, output projection, MLP and DINOv2 layer scales
are copies too. The adapter therefore computes the same ``last_hidden_state`` as the source
model at its configured image size (tested to 1e-5) and may be changed (tokens inserted,
attention forwards replaced) without touching the source model. Both the pre-5 module names
(``attention.attention.query``, ``intermediate.dense``) and the later ones (``q_proj``,
``mlp.fc1``) are read. Position embeddings are resampled bicubically for other image sizes
(the source models' own interpolation differs slightly, so outputs then agree only roughly).
"""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.models.vision.vit import Block, LayerScale

_ACTS = {"gelu": nn.GELU, "gelu_new": lambda: nn.GELU("tanh"), "relu": nn.ReLU, "silu": nn.SiLU}


def _first(obj, *paths: str):
    """The first attribute path (dotted) that exists on ``obj``."""
    for path in paths:
        cur = obj
        for part in path.split("."):
            cur = getattr(cur, part, None)
            if cur is None:
                break
        else:
            return cur
    raise TypeError(f"model layer has none of the attributes {', '.join(paths)}")


class _HFPatchEmbed(nn.Module):
    def __init__(self, projection: nn.Conv2d):
        super().__init__()
        self.proj = projection
        self.patch_size = tuple(projection.kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).flatten(2).transpose(1, 2)


def _copy_linear(dst: nn.Linear, src: nn.Linear) -> None:
    dst.weight.data.copy_(src.weight.data)
    if dst.bias is not None:
        if src.bias is not None:
            dst.bias.data.copy_(src.bias.data)
        else:
            dst.bias.data.zero_()


class HFViTAdapter(nn.Module):
    """Wrap ``transformers.ViTModel`` / ``Dinov2Model`` (e.g. from ``from_pretrained``) so that
    it exposes ``patch_embed``, ``pos_embed``, ``cls_token``, ``reg_token``,
    ``num_prefix_tokens``, ``blocks``, ``norm`` and ``embed_dim``.

    ``forward(x)`` returns the class-token feature (B, D); ``forward_features(x)`` all
    normalised tokens (B, 1 + N, D), equal to the source's ``last_hidden_state``."""

    def __init__(self, model: nn.Module):
        super().__init__()
        if not isinstance(model, nn.Module):
            raise TypeError(
                f"model must be a transformers ViTModel or Dinov2Model, got {type(model).__name__}"
            )
        V.check_module_attrs(model, "model", ("config", "embeddings"))
        config = model.config
        kind = getattr(config, "model_type", None)
        if kind not in ("vit", "dinov2"):
            raise TypeError(f"model must be a ViTModel or Dinov2Model, got model_type {kind!r}")
        emb = model.embeddings
        V.check_module_attrs(
            emb, "model.embeddings", ("patch_embeddings", "cls_token", "position_embeddings")
        )
        layers = _first(model, "encoder.layer", "encoder.layers", "layers")
        dim = int(config.hidden_size)
        heads = int(config.num_attention_heads)
        eps = float(config.layer_norm_eps)
        self.model_type = kind
        self.embed_dim = self.num_features = dim
        self.patch_embed = _HFPatchEmbed(emb.patch_embeddings.projection)
        self.cls_token = emb.cls_token
        self.reg_token = None
        self.num_prefix_tokens = 1
        self.no_embed_class = False
        self.pos_embed = emb.position_embeddings
        self.global_pool = "token"
        act = _ACTS.get(str(config.hidden_act))
        if act is None:
            raise ValueError(f"model.config.hidden_act {config.hidden_act!r} is not supported")
        blocks = []
        for layer in layers:
            hidden = _first(layer, "mlp.fc1", "intermediate.dense").out_features
            block = Block(dim, heads, mlp_ratio=hidden / dim, eps=eps)
            block.mlp.act = act()
            block.norm1.load_state_dict(_first(layer, "layernorm_before", "norm1").state_dict())
            block.norm2.load_state_dict(_first(layer, "layernorm_after", "norm2").state_dict())
            q = _first(layer, "attention.q_proj", "attention.attention.query")
            k = _first(layer, "attention.k_proj", "attention.attention.key")
            v = _first(layer, "attention.v_proj", "attention.attention.value")
            with torch.no_grad():
                block.attn.qkv.weight.copy_(torch.cat([q.weight, k.weight, v.weight], 0))
                biases = [p.bias if p.bias is not None else torch.zeros(dim) for p in (q, k, v)]
                block.attn.qkv.bias.copy_(torch.cat(biases, 0))
            _copy_linear(
                block.attn.proj, _first(layer, "attention.o_proj", "attention.output.dense")
            )
            _copy_linear(block.mlp.fc1, _first(layer, "mlp.fc1", "intermediate.dense"))
            _copy_linear(block.mlp.fc2, _first(layer, "mlp.fc2", "output.dense"))
            for name in ("1", "2"):
                scale = getattr(layer, f"layer_scale{name}", None)
                if scale is not None:
                    ls = LayerScale(dim)
                    ls.gamma.data.copy_(_first(scale, "lambda1", "gamma").data)
                    setattr(block, f"ls{name}", ls)
            blocks.append(block)
        self.blocks = nn.ModuleList(blocks)
        self.norm = nn.LayerNorm(dim, eps=eps)
        self.norm.load_state_dict(_first(model, "layernorm", "norm").state_dict())

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        from iclr26.models.vision.protocol import forward_tokens

        return forward_tokens(self, x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_features(x)[:, 0]
