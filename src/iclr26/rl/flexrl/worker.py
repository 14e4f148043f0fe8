"""The worker of both RL pipelines: one Ray actor per device slot holding a policy replica, its
frozen reference and optimizer, joined to the others by a gloo process group (data-parallel
gradient all-reduce; fixed sequence-parallel groups over contiguous rank windows).

It runs the GRPO stages on the work items a plan gives it: rollout (prefill + sampled decode of
``G`` responses), old/reference log-prob inference and the policy update, each on whole
sequences or on its chunk of a split sequence. As a ShadowLoader it decodes and preprocesses its
own samples from metadata in a background thread, prefetching the next step's while the current
one computes; in the baseline it receives materialised tensors through the object store."""

from __future__ import annotations

import copy
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

from iclr26.rl.flexrl.data import EOS_ID, PAD_ID, Decoded, MediaSample, preprocess_sample
from iclr26.rl.flexrl.model import full_sequence_ids, sample_tokens, token_logprobs_chunk
from iclr26.rl.flexrl.parallel import SequenceParallelGroup, contiguous_windows
from iclr26.rl.grpo.losses import k3_kl, masked_mean, policy_loss, token_entropy


def _free_address() -> tuple[str, int]:
    import socket

    import ray

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        port = s.getsockname()[1]
    return ray.util.get_node_ip_address(), int(port)


class PipelineWorker:
    """Plain class; the pipelines wrap it with ``ray.remote``."""

    def __init__(self, rank, world, model_fn, config, seed, sp_mode, threads, max_new_tokens,
                 temperature):  # fmt: skip
        torch.set_num_threads(int(threads))
        self.rank, self.world = int(rank), int(world)
        self.model_fn, self.config, self.seed = model_fn, config, int(seed)
        self.sp_mode, self.T, self.temperature = sp_mode, int(max_new_tokens), float(temperature)
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="shadow-loader")
        self.data: dict[int, Future | Decoded] = {}
        self.cache: dict[tuple[int, int, int], dict] = {}
        self.fault: tuple[str, int] | None = None
        self.updates = 0

    # ------------------------------------------------------------------ setup
    def address(self) -> tuple[str, int]:
        return _free_address()

    def setup(self, addr: str, port: int, state=None) -> bool:
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://{addr}:{port}",
            rank=self.rank,
            world_size=self.world,
            timeout=timedelta(seconds=120),
        )
        self.groups = {r: dist.new_group(list(r)) for r in contiguous_windows(self.world)}
        self.policy = self.model_fn()
        if state is None:
            for p in self.policy.parameters():  # identical replicas: rank 0's weights
                dist.broadcast(p.data, src=0)
            self.ref = copy.deepcopy(self.policy)
        else:
            self.policy.load_state_dict(state["policy"])
            self.ref = copy.deepcopy(self.policy)
            self.ref.load_state_dict(state["ref"])
            self.updates = int(state["updates"])
        self.ref.eval()
        for p in self.ref.parameters():
            p.requires_grad_(False)
        cfg = self.config
        self.optimizer = torch.optim.AdamW(
            self.policy.parameters(), lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay
        )
        if state is not None:
            self.optimizer.load_state_dict(state["optimizer"])
        return True

    def state(self) -> dict:
        return {
            "policy": copy.deepcopy(self.policy.state_dict()),
            "ref": copy.deepcopy(self.ref.state_dict()),
            "optimizer": copy.deepcopy(self.optimizer.state_dict()),
            "updates": self.updates,
        }

    def set_sp_mode(self, mode: str) -> bool:
        self.sp_mode = mode
        return True

    def inject_fault(self, stage: str, step: int) -> bool:
        """Testing hook: the process exits (as a crashed worker does) when ``stage`` of
        ``step`` begins."""
        self.fault = (stage, int(step))
        return True

    def _maybe_die(self, stage: str, step: int) -> None:
        if self.fault == (stage, int(step)):
            os._exit(1)

    # ------------------------------------------------------------------ data
    def load_metadata(self, step: int, samples: list[MediaSample]) -> int:
        """ShadowLoader: queue decode/preprocess of ``samples`` (this and, for prefetch, the
        next step's) in the background thread; returns immediately."""
        self._maybe_die("load", step)
        for s in samples:
            if s.sample_id not in self.data:
                self.data[s.sample_id] = self.pool.submit(preprocess_sample, s)
        return len(samples)

    def load_tensors(self, step: int, refs: list) -> int:
        """Baseline: fetch the controller's materialised tensors from the object store."""
        import ray

        self._maybe_die("load", step)
        for d in ray.get(list(refs)):
            self.data[d.sample_id] = d
        return len(refs)

    def _decoded(self, sid: int) -> tuple[torch.Tensor, torch.Tensor, float]:
        t0 = time.perf_counter()
        d = self.data[sid]
        if isinstance(d, Future):
            d = d.result()
            self.data[sid] = d
        return torch.from_numpy(d.patches), torch.from_numpy(d.prompt_ids), time.perf_counter() - t0

    def _comm(self, sid: int, splits: dict, start: int):
        if sid not in splits:
            return None, True
        ranks, bounds = splits[sid]
        index = ranks.index(self.rank)
        lengths = [bounds[j + 1] - bounds[j] for j in range(len(ranks))]
        comm = SequenceParallelGroup(self.groups[tuple(ranks)], lengths, index, self.sp_mode)
        return comm, index == len(ranks) - 1

    @staticmethod
    def _ordered(items: list, splits: dict) -> list:
        """Split items first in sample order (every group member meets them in the same
        order, so collectives never deadlock), then whole sequences."""
        return sorted(items, key=lambda it: (it[0] not in splits, it[0] if it[0] in splits else 0))

    # ------------------------------------------------------------------ stages
    @torch.no_grad()
    def rollout(self, step: int, items: list, splits: dict, group_size: int) -> dict:
        """Prefill each prompt (whole or this worker's chunk) and, where this worker owns the
        prompt's last chunk, sample ``group_size`` responses of at most ``T`` tokens."""
        self._maybe_die("rollout", step)
        cpu0, wall0, wait = time.thread_time(), time.perf_counter(), 0.0
        self.policy.eval()
        responses = {}
        for sid, start, end in self._ordered(items, splits):
            patches, prompt, w = self._decoded(sid)
            wait += w
            n_prompt = patches.shape[0] + prompt.shape[0]
            stop = min(end, n_prompt)
            comm, owner = self._comm(sid, splits, start)
            if comm is not None:
                comm.lengths[-1] = n_prompt - sum(comm.lengths[:-1])  # drop response slots
                comm.max_len = max(comm.lengths)
            logits, kv = self.policy.forward_chunk(patches, prompt[None], start, stop, comm)
            if not owner:
                continue
            gen = torch.Generator().manual_seed(self.seed * 1_000_003 + step * 10_007 + sid)
            cache = [(k.expand(group_size, -1, -1, -1), v.expand(group_size, -1, -1, -1))
                     for k, v in kv]  # fmt: skip
            out = torch.full((group_size, self.T), PAD_ID, dtype=torch.long)
            done = torch.zeros(group_size, dtype=torch.bool)
            last = logits[:, -1].expand(group_size, -1).clone()
            for t in range(self.T):
                last[:, PAD_ID] = float("-inf")  # padding is never a sampled token
                tok = sample_tokens(last, self.temperature, gen)
                tok = torch.where(done, torch.full_like(tok, PAD_ID), tok)
                out[:, t] = tok
                done |= tok == EOS_ID
                if bool(done.all()) or t == self.T - 1:
                    break
                last, cache = self.policy.decode_step(tok, n_prompt + t, cache)
            responses[sid] = out.numpy().astype(np.int8)
        return {"responses": responses, "busy": time.thread_time() - cpu0, "wait": wait,
                "busy_wall": time.perf_counter() - wall0}  # fmt: skip

    def _targets(self, sid, start, end, responses):
        patches, prompt, _ = self._decoded(sid)
        resp = torch.from_numpy(np.asarray(responses[sid], dtype=np.int64))
        ids = full_sequence_ids(prompt, resp)
        n_prompt = patches.shape[0] + prompt.shape[0]
        # position t predicts token t + 1; responses sit at n_prompt .. n_prompt + T - 1
        lo, hi = max(start, n_prompt - 1), min(end, n_prompt + self.T - 1)
        mask = None
        if hi > lo:
            valid = response_mask(resp)
            mask = valid[:, lo + 1 - n_prompt : hi + 1 - n_prompt]
        return patches, ids, n_prompt, lo, hi, mask

    def _chunk_logp(self, model, patches, ids, start, end, lo, hi, comm, entropy=False):
        logits, _ = model.forward_chunk(patches, ids, start, end, comm)
        if hi <= lo:
            return None, logits, None
        n_p = patches.shape[0]
        targets = ids[:, lo + 1 - n_p : hi + 1 - n_p]  # ids start at position n_p
        sel = logits[:, lo - start : hi - start]
        ent = token_entropy(sel) if entropy else None
        return token_logprobs_chunk(sel, targets), logits, ent

    @torch.no_grad()
    def infer(self, step: int, items: list, splits: dict, responses: dict) -> dict:
        """Old-policy and reference log-probs of the response tokens in this worker's chunks
        (kept here for the update; nothing goes back but timings)."""
        self._maybe_die("infer", step)
        cpu0, wall0 = time.thread_time(), time.perf_counter()
        self.policy.eval()
        self.cache = {}
        for sid, start, end in self._ordered(items, splits):
            patches, ids, n_prompt, lo, hi, mask = self._targets(sid, start, end, responses)
            comm, _ = self._comm(sid, splits, start)
            old, _, _ = self._chunk_logp(self.policy, patches, ids, start, end, lo, hi, comm)
            comm, _ = self._comm(sid, splits, start)
            ref, _, _ = self._chunk_logp(self.ref, patches, ids, start, end, lo, hi, comm)
            self.cache[(sid, start, end)] = {"old": old, "ref": ref, "mask": mask}
        return {"busy": time.thread_time() - cpu0, "busy_wall": time.perf_counter() - wall0}

    def logprobs(self) -> dict:
        """The cached old-policy log-probs by item (for checks)."""
        return {k: (None if v["old"] is None else v["old"].numpy()) for k, v in self.cache.items()}

    def update(self, step: int, items: list, splits: dict, responses: dict, advantages: dict,
               global_tokens: int) -> dict:  # fmt: skip
        """One policy update: the token-mean GRPO loss over the whole global batch (this
        worker's share of it), backward through the sequence-parallel exchanges, gradients
        all-reduced over all workers, then AdamW (the same step on every replica)."""
        self._maybe_die("update", step)
        cpu0, wall0 = time.thread_time(), time.perf_counter()
        cfg = self.config
        self.policy.train()
        self.optimizer.zero_grad(set_to_none=False)
        ent_coef = cfg.entropy_coef_at(self.updates)
        sums = {"pg_loss": 0.0, "kl_ref": 0.0, "tokens": 0.0}
        for sid, start, end in self._ordered(items, splits):
            patches, ids, n_prompt, lo, hi, mask = self._targets(sid, start, end, responses)
            comm, _ = self._comm(sid, splits, start)
            logp, logits, ent = self._chunk_logp(
                self.policy, patches, ids, start, end, lo, hi, comm, entropy=ent_coef > 0
            )
            cached = self.cache[(sid, start, end)]
            if logp is None or mask.sum() == 0:
                loss = logits.sum() * 0.0  # still runs the group's backward exchanges
            else:
                m = mask.float()
                share = float(m.sum()) / float(global_tokens)
                adv = torch.as_tensor(advantages[sid], dtype=torch.float32)
                pg, _ = policy_loss(logp, cached["old"], adv, m, cfg.clip_low, cfg.clip_high,
                                    cfg.dual_clip)  # fmt: skip
                loss = pg * share
                sums["pg_loss"] += float(pg) * share
                if cfg.kl_coef > 0:
                    kl = masked_mean(k3_kl(logp, cached["ref"], cfg.kl_clamp), m)
                    loss = loss + cfg.kl_coef * kl * share
                    sums["kl_ref"] += float(kl) * share
                if ent is not None:
                    loss = loss - ent_coef * masked_mean(ent, m) * share
                sums["tokens"] += float(m.sum())
            loss.backward()
        params = list(self.policy.parameters())
        for p in params:  # a parameter no local item touched (e.g. patch embedding, text only)
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        if self.world > 1:
            dist.all_reduce(flat)
        offset = 0
        for p in params:
            p.grad.copy_(flat[offset : offset + p.numel()].view_as(p))
            offset += p.numel()
        grad_norm = float(flat.norm())
        if cfg.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
        self.optimizer.step()
        self.updates += 1
        return {
            "busy": time.thread_time() - cpu0,
            "busy_wall": time.perf_counter() - wall0,
            "grad_norm": grad_norm,
            **sums,
        }

    def finish_step(self, keep: list[int]) -> int:
        """Drop decoded samples not in ``keep`` (the next step's prefetched ones)."""
        keep = set(keep)
        for sid in [s for s in self.data if s not in keep]:
            del self.data[sid]
        return len(self.data)

    def parameters_digest(self) -> np.ndarray:
        return torch.cat([p.detach().reshape(-1) for p in self.policy.parameters()]).numpy()


def response_mask(responses: torch.Tensor) -> torch.Tensor:
    """1 on response tokens up to and including the first end-of-sequence token."""
    is_eos = responses == EOS_ID
    after = (is_eos.long().cumsum(-1) - is_eos.long()) > 0
    return (~after & (responses != PAD_ID)) | is_eos
