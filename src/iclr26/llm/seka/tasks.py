"""SEKA's tasks: the synthetic passage-conflict QA (it lives in the shared
:mod:`iclr26.data.synth`, module ``passages``, and is re-exported here), the projection
triplets built from it and the passage-QA fine-tune of the tiny LM.
"""

from __future__ import annotations

import numpy as np

from iclr26.data.synth.passages import (  # noqa: F401
    _CONSONANTS,
    _VOWELS,
    ATTRIBUTES,
    CITIES,
    COLOURS,
    TEMPLATES,
    ConflictPrompt,
    _entities,
    _prompt,
    conflict_example,
    conflict_prompts,
    entity,
    relevance_example,
    training_examples,
    values,
)
from iclr26.llm.seka.projections import Triplet


def projection_triplets(
    n_items: int, seed: int, attributes=("colour", "birthplace")
) -> list[Triplet]:
    """The builder's pair items: two contexts, each with its own question and answer span; each
    item yields two triplets (context, its question, its answer, the other's question)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_items):
        sides = []
        for side in range(2):
            attribute = attributes[(i + side) % len(attributes)]
            (stmt, quest), _ = TEMPLATES[attribute]
            names = _entities(2, rng)
            vals = values(attribute, 2, rng)
            asked = int(rng.integers(2))
            context = " ".join(
                f"P{j + 1}: {stmt.format(e=e, v=v)}" for j, (e, v) in enumerate(zip(names, vals))
            )
            sides.append((context, quest.format(e=names[asked]), vals[asked]))
        (c1, q1, a1), (c2, q2, a2) = sides
        out.append(Triplet(c1, q1, a1, q2))
        out.append(Triplet(c2, q2, a2, q1))
    return out


FINETUNE = {  # scale -> (steps per round, batch, lr, distinct examples per round, rounds)
    "smoke": (8, 8, 3e-3, 200, 1),
    "quick": (800, 16, 2e-3, 12800, 2),
    "full": (1500, 32, 1e-3, 48000, 2),
}


def base_size(scale: str) -> str:
    """The pretrained tiny LM a scale fine-tunes: ``quick`` uses the cached ``quick`` model
    when it is in the cache and otherwise the ``test`` one (pretraining ``quick`` takes far
    longer than a claim may); ``full`` uses ``full``."""
    from iclr26.models.tinylm import pretrain_dir

    if scale == "full":
        return "full"
    if scale == "quick":
        return "quick" if (pretrain_dir("quick") / "meta.json").exists() else "test"
    return "random-test"


def passage_qa_model(scale: str = "quick", seed: int = 0):
    """``(model, tok, base)``: the tiny LM fine-tuned on the passage-QA mixture, cached as
    ``tinylm-<base>+passage-qa``. ``smoke`` starts from a random ``test``-size Llama (seconds,
    for tests); ``quick``/``full`` fine-tune a pretrained tiny LM (see :func:`base_size`)."""
    import torch

    from iclr26.models.tinylm import finetune_lm, get_tokenizer, load_causal_lm, tiny_llama_config

    if scale not in FINETUNE:
        raise ValueError(f"scale must be one of {', '.join(FINETUNE)}; got {scale!r}")
    steps, batch, lr, n, rounds = FINETUNE[scale]
    base = base_size(scale)
    if base == "random-test":
        from transformers import LlamaForCausalLM

        tok = get_tokenizer(max_files=40)
        torch.manual_seed(seed)
        model = LlamaForCausalLM(tiny_llama_config("test")).eval()
    else:
        model, tok = load_causal_lm(base)
    # rounds of fresh examples, each cached (a round resumes from the previous one's weights)
    for r in range(rounds):
        model = finetune_lm(
            model,
            tok,
            training_examples(n, seed=seed + r),
            steps=steps,
            lr=lr,
            batch=batch,
            seed=seed + r,
            cache_name=f"tinylm-{base}+passage-qa" + (f"-round{r + 1}" if r else ""),
        )
    return model.eval(), tok, base
