"""Tests of DualPrompt-lite, the SMoPE room's DualPrompt baseline: E-prompt selection at
training (the true task) and inference (the nearest learned key), the shared G-prompt, the
gradients reaching only the current task's E-prompt and key, the key-pull loss, the pass and
parameter counts."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from iclr26.models.vision import TinyViT, pooled
from iclr26.vision.smope import ContinualTrainer, DualPromptLite, PassCounter


def _vit(seed=0, dim=32, depth=3, heads=2):
    torch.manual_seed(seed)
    return TinyViT(img_size=32, patch=8, dim=dim, depth=depth, heads=heads)


def _x(n=6, seed=1):
    return torch.rand(n, 3, 32, 32, generator=torch.Generator().manual_seed(seed))


def _dual(vit=None, n_tasks=3, **kw):
    kw = dict(g_layers=(0,), e_layers=(1, 2), g_length=2, e_length=3) | kw
    torch.manual_seed(5)
    return DualPromptLite(vit if vit is not None else _vit(), 6, n_tasks=n_tasks, **kw)


def _open_tasks(m, n):
    """Begin (and end all but the last of) ``n`` tasks of two classes each."""
    for t in range(n):
        if t:
            m.end_task()
        m.begin_task([2 * t, 2 * t + 1])


def _query(m, x):
    with torch.no_grad():
        return pooled(m.backbone, x)


def test_training_uses_the_true_tasks_e_prompt_even_when_another_key_is_nearer():
    m = _dual()
    x = _x()
    q = _query(m, x)
    with torch.no_grad():
        m.e_keys[0] = q.mean(0)  # task 0's key is nearest to every query
        m.e_keys[1] = -q.mean(0)
    _open_tasks(m, 2)
    m.train()
    prompts = m.build_prompts(q)
    assert m.selected.tolist() == [1] * len(x)
    # layer 1 holds only E-prompts: exactly task 1's key and value tokens, for every image
    keys, values = prompts[m.layers.index(1)]
    e1 = m.e_prompts[m.e_layers.index(1), 1]
    torch.testing.assert_close(keys, e1[:3].expand(len(x), -1, -1))
    torch.testing.assert_close(values, e1[3:].expand(len(x), -1, -1))
    m.eval()
    m.build_prompts(q)
    assert m.selected.tolist() == [0] * len(x)  # at inference the nearer key wins


def test_inference_takes_the_nearest_key_among_the_tasks_begun():
    m = _dual()
    x = _x(8)
    q = _query(m, x)
    _open_tasks(m, 3)
    m.eval()
    cos = F.normalize(q, dim=1) @ F.normalize(m.e_keys.detach(), dim=1).t()
    m.build_prompts(q)
    assert m.selected.tolist() == cos.argmax(1).tolist()
    with torch.no_grad():  # keys made equal to single queries: those images pick them
        m.e_keys[0], m.e_keys[1], m.e_keys[2] = q[4], q[1] + 1e-3, q[6]
    m.build_prompts(q)
    assert m.selected[[4, 1, 6]].tolist() == [0, 1, 2]
    # a key of a task not begun yet never competes
    fresh = _dual()
    fresh.e_keys.data[1] = q[0]
    fresh.e_keys.data[0] = -q[0]
    fresh.begin_task([0, 1])
    fresh.eval().build_prompts(q)
    assert fresh.selected.tolist() == [0] * len(x)


def test_inference_prompt_is_the_training_prompt_of_the_selected_task():
    m = _dual()
    x = _x(8)
    q = _query(m, x)
    with torch.no_grad():  # three tasks' keys at three images' queries
        m.e_keys[0], m.e_keys[1], m.e_keys[2] = q[0], q[3], q[5]
    _open_tasks(m, 3)
    m.eval()
    with torch.no_grad():
        feats = m.features(x)
        chosen = m.selected.clone()
        assert len(set(chosen.tolist())) > 1  # several tasks chosen in this batch
        m.train()
        for task in set(chosen.tolist()):
            m._task_index = task  # the forward of training on that task
            rows = chosen == task
            torch.testing.assert_close(m.features(x[rows]), feats[rows])


def test_g_prompt_is_one_for_all_tasks_and_trained_in_every_task():
    m = _dual(g_layers=(0, 1), e_layers=(1, 2))
    assert m.g_prompts.shape == (2, 4, 32)  # no task axis
    x = _x(4)
    q = _query(m, x)
    for t in range(2):
        if t:
            m.end_task()
        m.begin_task([2 * t, 2 * t + 1])
        for train in (True, False):
            m.train(train)
            prompts = m.build_prompts(q)
            keys0, values0 = prompts[m.layers.index(0)]  # a G-only layer
            torch.testing.assert_close(keys0, m.g_prompts[0, :2].expand(4, -1, -1))
            torch.testing.assert_close(values0, m.g_prompts[0, 2:].expand(4, -1, -1))
            keys1, values1 = prompts[m.layers.index(1)]  # both: E tokens, then G tokens
            e = m.e_prompts[0][m.selected]
            torch.testing.assert_close(
                keys1, torch.cat([e[:, :3], m.g_prompts[1, :2].expand(4, -1, -1)], 1)
            )
            torch.testing.assert_close(
                values1, torch.cat([e[:, 3:], m.g_prompts[1, 2:].expand(4, -1, -1)], 1)
            )
        m.train()
        m.zero_grad()
        m(x)[:, 2 * t].sum().backward()
        assert m.g_prompts.grad[0].abs().sum() > 0 and m.g_prompts.grad[1].abs().sum() > 0


def test_only_the_current_tasks_e_prompt_and_key_get_gradients():
    m = _dual()
    x = _x(6)
    y = torch.tensor([2, 3] * 3)
    _open_tasks(m, 2)
    m.train()
    loss = F.cross_entropy(m(x), y) + m.prompt_loss()
    loss.backward()
    grad_e, grad_k = m.e_prompts.grad, m.e_keys.grad
    assert grad_e[:, 1].abs().sum() > 0 and grad_k[1].abs().sum() > 0
    assert grad_e[:, [0, 2]].abs().sum() == 0 and grad_k[[0, 2]].abs().sum() == 0
    assert all(p.grad is None for p in m.backbone.parameters())
    # a whole task of training leaves the other tasks' E-prompts and keys untouched
    m.zero_grad()
    before_e, before_k = m.e_prompts.detach().clone(), m.e_keys.detach().clone()
    m.end_task()
    trainer = ContinualTrainer(m, epochs_per_task=1, batch_size=3)
    trainer.fit_task(x, y + 2, [4, 5], task_id=2)
    torch.testing.assert_close(m.e_prompts.detach()[:, :2], before_e[:, :2])
    torch.testing.assert_close(m.e_keys.detach()[:2], before_k[:2])
    assert (m.e_keys.detach()[2] - before_k[2]).abs().max() > 0


def test_key_pull_loss_is_the_official_formula_and_training_only():
    m = _dual(pull=0.7)
    x = _x(5)
    _open_tasks(m, 2)
    m.train()
    m(x)
    q = _query(m, x).numpy().astype(np.float64)
    k = m.e_keys.detach()[1].numpy().astype(np.float64)
    cos = q @ k / (np.linalg.norm(q, axis=1) * np.linalg.norm(k))
    assert float(m.prompt_loss().detach()) == pytest.approx(0.7 * np.mean(1.0 - cos), rel=1e-5)
    m.eval()
    m(x)
    assert float(m.prompt_loss().detach()) == 0.0
    m0 = _dual(pull=0.0).train()
    m0.begin_task([0, 1])
    m0(x)
    assert float(m0.prompt_loss().detach()) == 0.0


def test_two_backbone_passes_and_parameter_counts_by_hand():
    vit = _vit()
    m = _dual(vit)
    x = _x(5)
    with torch.no_grad(), PassCounter(vit) as counter:
        m.eval()(x)
    assert counter.per_image(len(x)) == 2 == m.backbone_passes_per_image
    # G: 1 layer x (2 + 2) tokens x 32; E: 2 layers x 3 tasks x (3 + 3) x 32; keys: 3 x 32
    assert m.param_count() == 1 * 4 * 32 + 2 * 3 * 6 * 32 + 3 * 32
    assert m.param_count(include_head=True) == m.param_count() + 32 * 6 + 6
    # the official configuration on ViT-B widths: G in layers 0-1, E in 2-4, length 5, 10 tasks
    torch.manual_seed(0)
    vitb = TinyViT(img_size=16, patch=16, dim=768, depth=6, heads=12, mlp_ratio=0.01)
    official = DualPromptLite(vitb, 100, n_tasks=10)
    assert official.param_count() == 2 * 10 * 768 + 3 * 10 * 10 * 768 + 10 * 768 == 253_440
    # the claims' configuration on tinyvit_p4_sup's widths (D = 96, depth 6): G in 0, E in 1-2
    tiny = TinyViT(img_size=32, patch=4, dim=96, depth=6, heads=4, mlp_ratio=0.1)
    claimed = DualPromptLite(tiny, 20, n_tasks=5, g_layers=(0,), e_layers=(1, 2))
    assert claimed.param_count() == 10 * 96 + 2 * 5 * 10 * 96 + 5 * 96 == 11_040


def test_refuses_a_task_beyond_its_pool():
    m = _dual(n_tasks=2)
    _open_tasks(m, 2)
    m.end_task()
    with pytest.raises(ValueError, match="n_tasks"):
        m.begin_task([4, 5])
