"""VPT-shallow: prompts inserted once before the first block and carried through every block,
checked against a hand-written forward pass."""

import torch

from iclr26.models.vision import TinyViT
from iclr26.models.vision.protocol import attention_qkv, embed_tokens
from iclr26.vision.ivpt import VPTDeep, VPTShallow, evaluate, fit


def _vit():
    torch.manual_seed(0)
    return TinyViT(img_size=32, patch=8, dim=32, depth=3, heads=2).eval()


@torch.no_grad()
def test_vpt_shallow_matches_a_hand_forward_pass():
    vit = _vit()
    torch.manual_seed(1)
    model = VPTShallow(vit, 4, n_prompts=3).eval()
    torch.nn.init.normal_(model.head.weight)
    x = torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    tokens = embed_tokens(vit, x)
    n_tok = tokens.shape[1]
    tokens = torch.cat([tokens, model.prompts[0].expand(2, -1, -1)], 1)  # once, before block 0
    for block in vit.blocks[:-1]:
        tokens = block(tokens)
    q, k, _ = attention_qkv(vit.blocks[-1].attn, vit.blocks[-1].norm1(tokens))
    attn = torch.softmax(q[:, :, n_tok:] @ k.transpose(-2, -1) * q.shape[-1] ** -0.5, -1)
    maps = attn[..., vit.num_prefix_tokens : n_tok].mean(1).reshape(2, 3, 4, 4)
    tokens = vit.norm(vit.blocks[-1](tokens))
    out = model(x, return_attention=True)
    torch.testing.assert_close(out["logits"], model.head(tokens[:, 0]))
    torch.testing.assert_close(out["part_maps"], maps)
    assert model.param_count() == 3 * 32 + 32 * 4 + 4  # one prompt set and the head
    # not VPT-deep: fresh prompts at every block give another output
    deep = VPTDeep(vit, 4, n_prompts=3, layers=(0, 1, 2)).eval()
    deep.prompts.copy_(model.prompts.expand(3, -1, -1))
    deep.head.load_state_dict(model.head.state_dict())
    assert not torch.allclose(deep(x)["logits"], out["logits"])


def test_vpt_shallow_trains_and_evaluates():
    vit = _vit()
    from iclr26.data.vision import make_part_objects

    X, y, parts = make_part_objects(32, n_classes=4, size=32, seed=0)
    model = VPTShallow(vit, 4, n_prompts=4)
    before = model.prompts.detach().clone()
    fit(model, X, y, epochs=1, batch_size=16)
    assert not torch.equal(before, model.prompts.detach())
    scores = evaluate(model, X, y, parts)
    assert 0.0 <= scores["accuracy"] <= 100.0 and scores["part_ids"].shape == (32, 32, 32)
