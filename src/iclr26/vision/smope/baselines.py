"""The baselines of the SMoPE checks, on the same frozen backbone and prefix attention.

- :class:`SharedPrefix`: SMoPE's experts, all active, no routing and no losses (the dense
  single shared prompt). ``aggregated=False`` (default) is ordinary prefix tuning, each token
  scoring every expert with its own query; ``aggregated=True`` uses SMoPE's aggregated logit.
- :class:`L2PLite`: a pool of prompts with keys; a separate frozen pass gives the query (the
  class-token feature), the top-N prompts by cosine similarity are concatenated as prefix
  key/value tokens (Wang et al., 2022, in the prefix form of the CODA-P code base), with the
  query-key pull loss.
- :class:`CODAPromptLite`: per layer a set of components, keys and attention vectors, a fixed
  number added per task (earlier ones frozen, new ones initialised orthogonal to them); the
  prompt is the sum of components weighted by cos(q ⊙ A_m, K_m) (Smith et al., 2023).
- :class:`DualPromptLite`: a G-prompt shared by every task in the first prompted layers and one
  E-prompt per task in the next ones; training uses the true task's E-prompt and pulls its key
  towards the frozen query, inference takes the E-prompt whose key is nearest to the query
  (Wang et al., ECCV 2022).
- :class:`NCMClassifier`: nearest class mean on the frozen backbone's features.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.models.vision.protocol import check_images, check_vit, pooled
from iclr26.vision.smope.model import _aggregated_scores
from iclr26.vision.smope.prefix import PromptedViT, check_layers, input_channels, uniform_prompt


def _heads(tokens: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Prompt tokens (B, P, D) -> per-head vectors (B, H, P, d_h)."""
    b, p, d = tokens.shape
    return tokens.reshape(b, p, num_heads, d // num_heads).permute(0, 2, 1, 3)


class SharedPrefix(PromptedViT):
    """One shared prefix of ``n_experts`` key/value vectors per layer and head, all active."""

    def __init__(
        self,
        vit: nn.Module,
        num_classes: int,
        layers: Sequence[int] = range(6),
        n_experts: int = 25,
        aggregated: bool = False,
    ):
        super().__init__(vit, num_classes, layers)
        self.n_experts = V.check_int(n_experts, "n_experts", low=1)
        self.aggregated = V.check_bool(aggregated, "aggregated")
        shape = (len(self.layers), self.num_heads, self.n_experts, self.head_dim)
        self.prompt_keys = uniform_prompt(*shape)
        self.prompt_values = uniform_prompt(*shape)

    def _prefix(self, position: int, q: torch.Tensor, scale: float):
        b, h, t, _ = q.shape
        keys = self.prompt_keys[position].to(q.dtype)
        values = self.prompt_values[position].to(q.dtype).unsqueeze(0).expand(b, -1, -1, -1)
        if self.aggregated:
            scores = _aggregated_scores(q, keys)
            return (scores * scale).unsqueeze(2).expand(b, h, t, self.n_experts), values
        return torch.einsum("bhtd,hed->bhte", q, keys) * scale, values


class _QueryPrompted(PromptedViT, abc.ABC):
    """A prompt method whose prompts depend on a query: the class-token feature of a separate
    frozen backbone pass without prompts (the second pass SMoPE avoids)."""

    backbone_passes_per_image = 2

    def _prepare(self, x: torch.Tensor) -> None:
        with torch.no_grad():
            self._query = pooled(self.backbone, x).detach()  # prefixes are not active here
        self._prompts = self.build_prompts(self._query)

    @abc.abstractmethod
    def build_prompts(self, query: torch.Tensor):
        """Per-layer ``(keys, values)`` prompts of a batch from its query features."""

    def _prefix(self, position: int, q: torch.Tensor, scale: float):
        keys, values = self._prompts[position]  # (B, P, D) each
        pk = _heads(keys.to(q.dtype), self.num_heads)
        pv = _heads(values.to(q.dtype), self.num_heads)
        return (q @ pk.transpose(-2, -1)) * scale, pv


class L2PLite(_QueryPrompted):
    """L2P with prefix prompts: ``pool_size`` prompts of ``length`` key and ``length`` value
    tokens per prompted layer, one key per prompt, top-``top_k`` by cosine similarity to the
    frozen query; ``pull`` weights the surrogate loss Σ_selected (1 - cos(q, key))."""

    def __init__(
        self,
        vit: nn.Module,
        num_classes: int,
        layers: Sequence[int] = (0,),
        pool_size: int = 10,
        length: int = 5,
        top_k: int = 5,
        pull: float = 0.1,
    ):
        super().__init__(vit, num_classes, layers)
        self.pool_size = V.check_int(pool_size, "pool_size", low=1)
        self.length = V.check_int(length, "length", low=1)
        self.top_k = V.check_int(top_k, "top_k", low=1, high=self.pool_size)
        self.pull = V.check_scalar(pull, "pull", low=0.0)
        d = self.embed_dim
        self.prompt_tokens = uniform_prompt(len(self.layers), self.pool_size, 2 * self.length, d)
        self.prompt_match_keys = uniform_prompt(self.pool_size, d)

    def build_prompts(self, query: torch.Tensor):
        cos = F.normalize(query, dim=1) @ F.normalize(self.prompt_match_keys, dim=1).t()
        top = cos.topk(self.top_k, dim=1)
        self._pull = (1.0 - top.values).sum(1).mean()
        b = query.shape[0]
        prompts = []
        for position in range(len(self.layers)):
            chosen = self.prompt_tokens[position][top.indices]  # (B, N, 2L, D)
            keys = chosen[:, :, : self.length].reshape(b, -1, self.embed_dim)
            values = chosen[:, :, self.length :].reshape(b, -1, self.embed_dim)
            prompts.append((keys, values))
        return prompts

    def prompt_loss(self) -> torch.Tensor:
        if self.pull > 0 and self.training and hasattr(self, "_pull"):
            return self.pull * self._pull
        return self.head.weight.new_zeros(())


def _orthogonal_rows(new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """Rows of ``new`` made orthonormal to each other and orthogonal to the span of ``old``
    (Gram-Schmidt through QR)."""
    if old.shape[0]:
        basis = torch.linalg.qr(old.t()).Q  # (d, n_old), orthonormal columns
        new = new - (new @ basis) @ basis.t()
    q = torch.linalg.qr(new.t()).Q  # (d, n_new)
    return q.t()


class CODAPromptLite(_QueryPrompted):
    """CODA-Prompt: ``n_tasks`` × ``per_task`` components per prompted layer, each a prompt of
    ``length`` key and ``length`` value tokens with a key and an attention vector. At task t
    the first t·per_task components are frozen and the next per_task ones (re-initialised
    orthogonal to the earlier ones) are trained; inference uses all components learned so far."""

    def __init__(
        self,
        vit: nn.Module,
        num_classes: int,
        n_tasks: int,
        layers: Sequence[int] = (0, 1, 2, 3, 4),
        per_task: int = 4,
        length: int = 4,
    ):
        super().__init__(vit, num_classes, layers)
        self.n_tasks = V.check_int(n_tasks, "n_tasks", low=1)
        self.per_task = V.check_int(per_task, "per_task", low=1)
        self.length = V.check_int(length, "length", low=1)
        total = self.n_tasks * self.per_task
        d, n_layers = self.embed_dim, len(self.layers)
        if total > d:
            raise ValueError(
                f"n_tasks * per_task ({total}) must not exceed vit.embed_dim ({d}): the "
                "components are kept orthogonal"
            )
        self.components = uniform_prompt(n_layers, total, 2 * self.length, d)
        self.component_keys = uniform_prompt(n_layers, total, d)
        self.component_attn = uniform_prompt(n_layers, total, d)
        self._task_index = 0
        self._init_components(0)

    @torch.no_grad()
    def _init_components(self, task: int) -> None:
        start, stop = task * self.per_task, (task + 1) * self.per_task
        for tensor in (self.components, self.component_keys, self.component_attn):
            for position in range(len(self.layers)):
                flat = tensor[position].reshape(tensor.shape[1], -1)
                fresh = torch.randn(stop - start, flat.shape[1], device=flat.device)
                flat[start:stop] = _orthogonal_rows(fresh, flat[:start])

    def begin_task(self, classes) -> None:
        if self.task_count >= self.n_tasks:
            raise ValueError(
                f"CODAPromptLite was built for n_tasks={self.n_tasks}; task {self.task_count + 1} "
                "has no components left"
            )
        super().begin_task(classes)
        self._task_index = self.task_count
        if self._task_index > 0:
            self._init_components(self._task_index)

    def _active(self, tensor: torch.Tensor) -> torch.Tensor:
        """Training: the earlier components (detached) and the current task's; evaluation:
        every component up to the last task begun."""
        start, stop = self._task_index * self.per_task, (self._task_index + 1) * self.per_task
        if self.training:
            return torch.cat([tensor[:, :start].detach(), tensor[:, start:stop]], dim=1)
        return tensor[:, :stop]

    def build_prompts(self, query: torch.Tensor):
        comps = self._active(self.components)  # (L, M, 2Lp, D)
        keys = F.normalize(self._active(self.component_keys), dim=-1)  # (L, M, D)
        attn = self._active(self.component_attn)
        attended = F.normalize(torch.einsum("bd,lmd->lbmd", query, attn), dim=-1)
        alpha = torch.einsum("lbmd,lmd->lbm", attended, keys)  # (L, B, M)
        prompt = torch.einsum("lbm,lmpd->lbpd", alpha, comps)  # (L, B, 2Lp, D)
        return [(p[:, : self.length], p[:, self.length :]) for p in prompt]


class DualPromptLite(_QueryPrompted):
    """DualPrompt with prefix prompts. A G-prompt of ``g_length`` key and ``g_length`` value
    tokens in each of ``g_layers``, one for all tasks; a pool of ``n_tasks`` E-prompts, one per
    task, each ``e_length`` key and ``e_length`` value tokens in each of ``e_layers``, with one
    matching key per E-prompt shared by the E-layers (as in the official code). Training on
    task t uses E-prompt t for every image and adds ``pull`` × mean_b (1 - cos(q_b, k_t)), the
    key-pull loss; inference gives each image the E-prompt whose key is nearest (cosine) to its
    frozen query, among the tasks begun so far. A layer in both sets gets the E-prompt tokens
    followed by the G-prompt tokens. ``selected`` holds the E-prompt index of each image of the
    last forward."""

    def __init__(
        self,
        vit: nn.Module,
        num_classes: int,
        n_tasks: int,
        g_layers: Sequence[int] = (0, 1),
        e_layers: Sequence[int] = (2, 3, 4),
        g_length: int = 5,
        e_length: int = 5,
        pull: float = 1.0,
    ):
        check_vit(vit, "vit")
        depth = len(vit.blocks)
        g = check_layers(g_layers, depth, "g_layers")
        e = check_layers(e_layers, depth, "e_layers")
        super().__init__(vit, num_classes, sorted(set(g) | set(e)))
        self.g_layers, self.e_layers = g, e
        self.n_tasks = V.check_int(n_tasks, "n_tasks", low=1)
        self.g_length = V.check_int(g_length, "g_length", low=1)
        self.e_length = V.check_int(e_length, "e_length", low=1)
        self.pull = V.check_scalar(pull, "pull", low=0.0)
        d = self.embed_dim
        self.g_prompts = uniform_prompt(len(g), 2 * self.g_length, d)
        self.e_prompts = uniform_prompt(len(e), self.n_tasks, 2 * self.e_length, d)
        self.e_keys = uniform_prompt(self.n_tasks, d)
        self._task_index = 0
        self.selected: torch.Tensor | None = None

    def begin_task(self, classes) -> None:
        if self.task_count >= self.n_tasks:
            raise ValueError(
                f"DualPromptLite was built for n_tasks={self.n_tasks}; task {self.task_count + 1} "
                "has no E-prompt left"
            )
        super().begin_task(classes)
        self._task_index = self.task_count

    def key_similarity(self, query: torch.Tensor) -> torch.Tensor:
        """cos(q_b, k_t) (B, tasks begun) between frozen queries and the E-prompt keys."""
        keys = self.e_keys[: self._task_index + 1]
        return F.normalize(query, dim=1) @ F.normalize(keys, dim=1).t()

    def build_prompts(self, query: torch.Tensor):
        b = query.shape[0]
        if self.training:  # the true task's E-prompt (the official task-id bootstrap)
            task = self._task_index
            selected = torch.full((b,), task, dtype=torch.long, device=query.device)
            cos = F.cosine_similarity(query, self.e_keys[task].unsqueeze(0), dim=1)
            self._pull = (1.0 - cos).mean()
        else:
            selected = self.key_similarity(query).argmax(1)
        self.selected = selected.detach()
        prompts = []
        for layer in self.layers:
            keys, values = [], []
            if layer in self.e_layers:
                chosen = self.e_prompts[self.e_layers.index(layer)][selected]  # (B, 2Le, D)
                keys.append(chosen[:, : self.e_length])
                values.append(chosen[:, self.e_length :])
            if layer in self.g_layers:
                shared = self.g_prompts[self.g_layers.index(layer)].expand(b, -1, -1)
                keys.append(shared[:, : self.g_length])
                values.append(shared[:, self.g_length :])
            prompts.append((torch.cat(keys, dim=1), torch.cat(values, dim=1)))
        return prompts

    def prompt_loss(self) -> torch.Tensor:
        if self.pull > 0 and self.training and hasattr(self, "_pull"):
            return self.pull * self._pull
        return self.head.weight.new_zeros(())


class NCMClassifier(nn.Module):
    """Nearest class mean on the frozen backbone's class-token features (cosine by default):
    no learnable parameter, no forgetting by construction, the lower bound of the checks."""

    backbone_passes_per_image = 1
    trained_by_gradient = False

    def __init__(self, vit: nn.Module, num_classes: int, metric: str = "cosine"):
        super().__init__()
        from iclr26.models.vision.protocol import check_vit

        check_vit(vit, "vit")
        self.num_classes = V.check_int(num_classes, "num_classes", low=2)
        self.metric = V.check_choice(metric, "metric", ("cosine", "euclidean"))
        for p in vit.parameters():
            p.requires_grad_(False)
        self.backbone = vit.eval()
        self.in_chans = input_channels(vit)
        dim = int(vit.embed_dim)
        self.register_buffer("sums", torch.zeros(self.num_classes, dim))
        self.register_buffer("counts", torch.zeros(self.num_classes))
        self.task_count = 0

    def train(self, mode: bool = True) -> NCMClassifier:
        super().train(mode)
        self.backbone.eval()
        return self

    def features(self, x: torch.Tensor) -> torch.Tensor:
        check_images(x, "x", channels=self.in_chans)
        with torch.no_grad():
            f = pooled(self.backbone, x)
        return F.normalize(f, dim=1) if self.metric == "cosine" else f

    def begin_task(self, classes) -> None:
        pass

    @torch.no_grad()
    def observe(self, x: torch.Tensor, y: torch.Tensor, batch_size: int = 256) -> None:
        """Add images ``x`` with labels ``y`` to the class means."""
        check_images(x, "x", channels=self.in_chans)
        batch_size = V.check_int(batch_size, "batch_size", low=1)
        V.check_tensor(y, "y", ndim=1, integer=True, shape=(x.shape[0],))
        if int(y.min()) < 0 or int(y.max()) >= self.num_classes:
            raise ValueError(f"y must lie in [0, {self.num_classes - 1}]")
        for start in range(0, len(x), batch_size):
            f = self.features(x[start : start + batch_size])
            yb = y[start : start + batch_size].to(f.device)
            self.sums.index_add_(0, yb, f)
            self.counts.index_add_(0, yb, torch.ones_like(yb, dtype=f.dtype))

    def end_task(self, x: torch.Tensor | None = None) -> None:
        self.task_count += 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Scores (B, num_classes): minus the squared distance to each seen class mean
        (cosine: the cosine similarity); unseen classes are -inf."""
        f = self.features(x)
        seen = self.counts > 0
        means = self.sums / self.counts.clamp(min=1).unsqueeze(1)
        if self.metric == "cosine":
            scores = f @ F.normalize(means, dim=1).t()
        else:
            scores = -torch.cdist(f, means).pow(2)
        return scores.masked_fill(~seen, float("-inf")) if bool(seen.any()) else scores

    def prompt_loss(self) -> torch.Tensor:
        return self.sums.new_zeros(())

    def param_count(self, include_head: bool = False) -> int:
        V.check_bool(include_head, "include_head")
        return 0
