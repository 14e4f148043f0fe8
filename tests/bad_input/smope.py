"""Bad-input cases of the SMoPE room (tiny backbones and tensors; each call fails at the public
boundary with a message naming the argument)."""

import numpy as np
import torch
from torch import nn

from iclr26.models.vision import TinyViT
from iclr26.vision.smope import (
    CODAPromptLite,
    ContinualTrainer,
    DualPromptLite,
    L2PLite,
    NCMClassifier,
    PassCounter,
    PromptedViT,
    SharedPrefix,
    SMoPE,
    aggregated_scores,
    average_forgetting,
    class_incremental,
    noisy_selection_scores,
    patch_attention,
    prototype_loss,
    router_loss,
    usage_entropy,
)

NAN, INF = float("nan"), float("inf")
torch.manual_seed(0)
VIT = TinyViT(img_size=16, patch=8, dim=16, depth=2, heads=2)
X = torch.rand(4, 3, 16, 16)
X_NAN = X.clone()
X_NAN[0, 0, 0, 0] = NAN
X_INF = X.clone()
X_INF[1, 1, 1, 1] = INF
X_RANK3 = torch.rand(4, 16, 16)
X_GREY = torch.rand(4, 1, 16, 16)
Y = np.array([0, 1, 0, 1])
ARR = np.random.default_rng(0).random((8, 3, 4, 4)).astype(np.float32)
LAB = np.arange(8) % 4
Q = torch.randn(2, 2, 5, 8)
KEYS = torch.randn(2, 4, 8)
S = torch.randn(2, 2, 4)
SEL = S.topk(2, -1).indices
K4 = torch.randn(1, 2, 4, 8)
FREQ = torch.ones(1, 2, 4, dtype=torch.bool)


class _NoHeads(nn.Module):
    """A backbone whose attention lacks ``num_heads``."""

    def __init__(self):
        super().__init__()
        vit = TinyViT(img_size=16, patch=8, dim=16, depth=1, heads=2)
        self.patch_embed, self.pos_embed, self.cls_token = vit.patch_embed, vit.pos_embed, None
        self.reg_token, self.num_prefix_tokens, self.embed_dim = None, 0, 16
        self.blocks, self.norm = vit.blocks, vit.norm
        del self.blocks[0].attn.num_heads


def _smope(**kw):
    return SMoPE(VIT, 2, **(dict(layers=(0,), n_experts=4, top_k=2) | kw))


def _trainer(**kw):
    return ContinualTrainer(_smope(), **kw)


CASES = [
    # SMoPE: the backbone protocol, hyperparameters, images
    ("SMoPE", "type", lambda: SMoPE(nn.Linear(2, 2), 2), TypeError, "patch_embed"),
    ("SMoPE", "type", lambda: SMoPE(_NoHeads(), 2, layers=(0,)), TypeError, "num_heads"),
    ("SMoPE", "range", lambda: _smope(top_k=5), ValueError, "top_k"),
    ("SMoPE", "range", lambda: _smope(eps=NAN), ValueError, "eps"),
    ("SMoPE", "range", lambda: _smope(eps=1.5), ValueError, "eps"),
    ("SMoPE", "range", lambda: _smope(alpha_router=-1.0), ValueError, "alpha_router"),
    ("SMoPE", "inf", lambda: _smope(alpha_proto=INF), ValueError, "alpha_proto"),
    ("SMoPE", "range", lambda: _smope(n_experts=0), ValueError, "n_experts"),
    ("SMoPE", "range", lambda: _smope(layers=(0, 7)), ValueError, "layers"),
    ("SMoPE", "empty", lambda: _smope(layers=()), ValueError, "layers"),
    ("SMoPE", "range", lambda: SMoPE(VIT, 1), ValueError, "num_classes"),
    ("SMoPE", "type", lambda: _smope(classifier_alignment=1), TypeError, "classifier_alignment"),
    ("SMoPE", "shape", lambda: _smope()(X_RANK3), ValueError, "x"),
    ("SMoPE", "shape", lambda: _smope()(X_GREY), ValueError, "channels"),
    ("SMoPE", "nan", lambda: _smope()(X_NAN), ValueError, "x"),
    ("SMoPE", "inf", lambda: _smope()(X_INF), ValueError, "x"),
    ("SMoPE", "empty", lambda: _smope()(X[:0]), ValueError, "x"),
    ("SMoPE", "dtype", lambda: _smope()(X.long()), TypeError, "x"),
    ("SMoPE", "range", lambda: _smope().begin_task([0, 5]), ValueError, "classes"),
    ("SMoPE", "empty", lambda: _smope().begin_task([]), ValueError, "classes"),
    ("SMoPE", "nan", lambda: _smope().count_usage(X_NAN), ValueError, "x"),
    ("SMoPE", "type", lambda: _smope().param_count(include_head="yes"), TypeError, "include_head"),
    # baselines
    ("SharedPrefix", "range", lambda: SharedPrefix(VIT, 2, layers=(0,), n_experts=0), ValueError, "n_experts"),
    ("SharedPrefix", "type", lambda: SharedPrefix(VIT, 2, layers=(0,), aggregated=None), TypeError, "aggregated"),
    ("SharedPrefix", "shape", lambda: SharedPrefix(VIT, 2, layers=(0,))(X_GREY), ValueError, "channels"),
    ("L2PLite", "range", lambda: L2PLite(VIT, 2, pool_size=3, top_k=5), ValueError, "top_k"),
    ("L2PLite", "nan", lambda: L2PLite(VIT, 2, pull=NAN), ValueError, "pull"),
    ("L2PLite", "nan", lambda: L2PLite(VIT, 2)(X_NAN), ValueError, "x"),
    ("CODAPromptLite", "range", lambda: CODAPromptLite(VIT, 2, n_tasks=0, layers=(0,)), ValueError, "n_tasks"),
    ("CODAPromptLite", "range", lambda: CODAPromptLite(VIT, 2, n_tasks=5, layers=(0,), per_task=4), ValueError, "n_tasks"),
    ("CODAPromptLite", "shape", lambda: CODAPromptLite(VIT, 2, n_tasks=2, layers=(0,))(X_RANK3), ValueError, "x"),
    ("DualPromptLite", "range", lambda: DualPromptLite(VIT, 2, n_tasks=2), ValueError, "e_layers"),
    ("DualPromptLite", "range", lambda: DualPromptLite(VIT, 2, n_tasks=2, g_layers=(0,), e_layers=(3,)), ValueError, "e_layers"),
    ("DualPromptLite", "empty", lambda: DualPromptLite(VIT, 2, n_tasks=2, g_layers=(), e_layers=(1,)), ValueError, "g_layers"),
    ("DualPromptLite", "range", lambda: DualPromptLite(VIT, 2, n_tasks=0, g_layers=(0,), e_layers=(1,)), ValueError, "n_tasks"),
    ("DualPromptLite", "range", lambda: DualPromptLite(VIT, 2, n_tasks=2, g_layers=(0,), e_layers=(1,), e_length=0), ValueError, "e_length"),
    ("DualPromptLite", "range", lambda: DualPromptLite(VIT, 2, n_tasks=2, g_layers=(0,), e_layers=(1,), g_length=0), ValueError, "g_length"),
    ("DualPromptLite", "nan", lambda: DualPromptLite(VIT, 2, n_tasks=2, g_layers=(0,), e_layers=(1,), pull=NAN), ValueError, "pull"),
    ("DualPromptLite", "type", lambda: DualPromptLite(object(), 2, n_tasks=2), TypeError, "patch_embed"),
    ("DualPromptLite", "type", lambda: DualPromptLite(VIT, 2, n_tasks=2, g_layers=0, e_layers=(1,)), TypeError, "g_layers"),
    ("DualPromptLite", "nan", lambda: DualPromptLite(VIT, 2, n_tasks=2, g_layers=(0,), e_layers=(1,))(X_NAN), ValueError, "x"),
    ("DualPromptLite", "shape", lambda: DualPromptLite(VIT, 2, n_tasks=2, g_layers=(0,), e_layers=(1,))(X_GREY), ValueError, "channels"),
    ("NCMClassifier", "range", lambda: NCMClassifier(VIT, 2, metric="manhattan"), ValueError, "metric"),
    ("NCMClassifier", "type", lambda: NCMClassifier(object(), 2), TypeError, "patch_embed"),
    ("NCMClassifier", "shape", lambda: NCMClassifier(VIT, 2).observe(X, torch.tensor([0, 1])), ValueError, "y"),
    ("NCMClassifier", "nan", lambda: NCMClassifier(VIT, 2).observe(X_NAN, torch.tensor([0, 1, 0, 1])), ValueError, "x"),
    ("NCMClassifier", "range", lambda: NCMClassifier(VIT, 2).observe(X, torch.tensor([0, 1, 0, 3])), ValueError, "y"),
    ("PromptedViT", "type", lambda: PromptedViT(object(), 2, (0,)), TypeError, "patch_embed"),
    ("PromptedViT", "type", lambda: PromptedViT(VIT, 2, 0), TypeError, "layers"),
    # the trainer
    ("ContinualTrainer", "type", lambda: ContinualTrainer(object()), TypeError, "model"),
    ("ContinualTrainer", "range", lambda: _trainer(lr=0.0), ValueError, "lr"),
    ("ContinualTrainer", "nan", lambda: _trainer(lr=NAN), ValueError, "lr"),
    ("ContinualTrainer", "range", lambda: _trainer(epochs_per_task=0), ValueError, "epochs_per_task"),
    ("ContinualTrainer", "range", lambda: _trainer(dense_warmup=1.5), ValueError, "dense_warmup"),
    ("ContinualTrainer", "range", lambda: _trainer(batch_size=0), ValueError, "batch_size"),
    ("ContinualTrainer", "nan", lambda: _trainer().fit_task(X_NAN, Y), ValueError, "x"),
    ("ContinualTrainer", "shape", lambda: _trainer().fit_task(X, Y[:3]), ValueError, "y"),
    ("ContinualTrainer", "shape", lambda: _trainer().fit_task(X_GREY, Y), ValueError, "channels"),
    ("ContinualTrainer", "empty", lambda: _trainer().fit_task(X[:0], Y[:0]), ValueError, "x"),
    ("ContinualTrainer", "other", lambda: _trainer().fit_task(X, Y, classes=[0]), ValueError, "classes"),
    ("ContinualTrainer", "dtype", lambda: _trainer().fit_task(X, np.array([0.5, 1, 0, 1])), TypeError, "y"),
    ("ContinualTrainer", "inf", lambda: _trainer().evaluate(X_INF, Y), ValueError, "x"),
    ("ContinualTrainer", "empty", lambda: _trainer().run([]), ValueError, "tasks"),
    # the stream
    ("class_incremental", "nan", lambda: class_incremental(np.full_like(ARR, NAN), LAB, 2), ValueError, "X"),
    ("class_incremental", "shape", lambda: class_incremental(ARR[:, 0], LAB, 2), ValueError, "X"),
    ("class_incremental", "shape", lambda: class_incremental(ARR, LAB[:5], 2), ValueError, "y"),
    ("class_incremental", "range", lambda: class_incremental(ARR, LAB, 3), ValueError, "n_tasks"),
    ("class_incremental", "range", lambda: class_incremental(ARR, LAB, 0), ValueError, "n_tasks"),
    ("class_incremental", "range", lambda: class_incremental(ARR, -LAB - 1, 2), ValueError, "y"),
    ("class_incremental", "other", lambda: class_incremental(ARR, LAB, 2, X_test=ARR), ValueError, "X_test"),
    ("class_incremental", "other", lambda: class_incremental(ARR, LAB, 2, X_test=ARR, y_test=LAB + 4), ValueError, "y_test"),
    # the routing and loss functions
    ("aggregated_scores", "shape", lambda: aggregated_scores(Q[0], KEYS), ValueError, "q"),
    ("aggregated_scores", "shape", lambda: aggregated_scores(Q, KEYS[:, :, :3]), ValueError, "keys"),
    ("aggregated_scores", "nan", lambda: aggregated_scores(Q * NAN, KEYS), ValueError, "q"),
    ("noisy_selection_scores", "range", lambda: noisy_selection_scores(S, torch.full((2, 4), -1.0)), ValueError, "penalty"),
    ("noisy_selection_scores", "shape", lambda: noisy_selection_scores(S[0], torch.zeros(2, 4)), ValueError, "scores"),
    ("router_loss", "range", lambda: router_loss(S, SEL + 4, 0.4), ValueError, "selected"),
    ("router_loss", "nan", lambda: router_loss(S, SEL, NAN), ValueError, "eps"),
    ("router_loss", "dtype", lambda: router_loss(S, SEL.float(), 0.4), TypeError, "selected"),
    ("prototype_loss", "shape", lambda: prototype_loss(K4, K4[:, :1], FREQ, 2), ValueError, "old_keys"),
    ("prototype_loss", "range", lambda: prototype_loss(K4, K4, FREQ, 5), ValueError, "top_k"),
    ("prototype_loss", "dtype", lambda: prototype_loss(K4, K4, FREQ.float(), 2), TypeError, "frequent"),
    ("prototype_loss", "nan", lambda: prototype_loss(K4 * NAN, K4, FREQ, 2), ValueError, "keys"),
    ("usage_entropy", "range", lambda: usage_entropy(-torch.ones(1, 1, 3)), ValueError, "counts"),
    ("usage_entropy", "shape", lambda: usage_entropy(torch.ones(3)), ValueError, "counts"),
    ("usage_entropy", "nan", lambda: usage_entropy(torch.full((1, 1, 3), NAN)), ValueError, "counts"),
    ("average_forgetting", "shape", lambda: average_forgetting(np.ones(3)), ValueError, "accuracy"),
    ("average_forgetting", "inf", lambda: average_forgetting(np.full((2, 2), INF)), ValueError, "accuracy"),
    ("PassCounter", "type", lambda: PassCounter(nn.Linear(2, 2)), TypeError, "patch_embed"),
    ("patch_attention", "type", lambda: patch_attention(nn.Linear(2, 2), [0]), TypeError, "patch_embed"),
    ("patch_attention", "range", lambda: patch_attention(VIT, [3]), ValueError, "layers"),
]  # fmt: skip

EXEMPT = {
    "ContinualResult": "a record dataclass returned by ContinualTrainer.run; takes no user data",
    "Task": "a record dataclass returned by class_incremental; takes no user data",
}
