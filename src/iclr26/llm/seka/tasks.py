"""Synthetic passage-conflict QA: the offline stand-in for CounterFact used by the claim checks.

Prompts list short passages (``P1: The code of Zarl is 4 7. P2: ...``) and ask about one
entity. The task fine-tune mixes *relevance QA* (three passages about different entities; the
answer is the asked entity's value) with *conflict QA* (passages give different values for the
same entity; the target is always the **first** passage's value, a prior the model follows like
a memorised fact). Evaluation prompts are conflict prompts whose highlighted passage is a later
one (the "new fact"): steering succeeds when the highlighted value becomes more likely than the
first one (efficacy score, ES). Held-out phrasings give the paraphrase score (PS). Projection
triplets use other attributes (colours, birthplaces) than the evaluation (codes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26.llm.seka.projections import Triplet

COLOURS = ("red", "blue", "green", "black", "white", "pink", "grey", "brown", "gold", "teal")
CITIES = (
    "Lima",
    "Oslo",
    "Cairo",
    "Delhi",
    "Quito",
    "Riga",
    "Sofia",
    "Tunis",
    "Hanoi",
    "Dakar",
    "Accra",
    "Baku",
)
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"

# attribute -> (statement, question) for the training phrasing and the held-out paraphrase
TEMPLATES = {
    "code": (
        ("The code of {e} is {v}.", "What is the code of {e}?"),
        ("{e} has the code {v}.", "Which code does {e} have?"),
    ),
    "colour": (
        ("The colour of {e} is {v}.", "What is the colour of {e}?"),
        ("{e} has the colour {v}.", "Which colour does {e} have?"),
    ),
    "birthplace": (
        ("{e} was born in {v}.", "Where was {e} born?"),
        ("The birthplace of {e} is {v}.", "What is the birthplace of {e}?"),
    ),
}
ATTRIBUTES = tuple(TEMPLATES)


def entity(rng: np.random.Generator) -> str:
    parts = [
        rng.choice(list(_CONSONANTS)).upper(),
        rng.choice(list(_VOWELS)),
        rng.choice(list(_CONSONANTS)),
    ]
    if rng.random() < 0.5:
        parts += [rng.choice(list(_VOWELS)), rng.choice(list(_CONSONANTS))]
    return "".join(parts)


def values(attribute: str, n: int, rng: np.random.Generator) -> list[str]:
    """``n`` distinct values of an attribute."""
    if attribute == "code":
        picked = rng.choice(100, size=n, replace=False)
        return [f"{v // 10} {v % 10}" for v in picked]
    pool = COLOURS if attribute == "colour" else CITIES
    return [str(v) for v in rng.choice(pool, size=n, replace=False)]


def _entities(n: int, rng: np.random.Generator) -> list[str]:
    names: list[str] = []
    while len(names) < n:
        e = entity(rng)
        if e not in names:
            names.append(e)
    return names


def _prompt(passages: list[str], question: str, highlight: int | None = None) -> str:
    shown = []
    for i, text in enumerate(passages):
        piece = f"P{i + 1}: {text}"
        shown.append(f"**{piece}**" if i == highlight else piece)
    return " ".join(shown) + f" Question: {question}\nAnswer:"


def relevance_example(rng: np.random.Generator, attribute: str | None = None) -> tuple[str, str]:
    """(prompt, completion): three passages about different entities, one is asked about."""
    attribute = attribute or str(rng.choice(ATTRIBUTES))
    (stmt, quest), _ = TEMPLATES[attribute]
    names = _entities(3, rng)
    vals = values(attribute, 3, rng)
    asked = int(rng.integers(3))
    passages = [stmt.format(e=e, v=v) for e, v in zip(names, vals)]
    return _prompt(passages, quest.format(e=names[asked])), f" {vals[asked]}"


def conflict_example(rng: np.random.Generator, attribute: str | None = None) -> tuple[str, str]:
    """(prompt, completion): 2-3 passages give different values for one entity; the target is
    the first passage's value."""
    attribute = attribute or str(rng.choice(ATTRIBUTES))
    (stmt, quest), _ = TEMPLATES[attribute]
    name = _entities(1, rng)[0]
    vals = values(attribute, int(rng.integers(2, 4)), rng)
    passages = [stmt.format(e=name, v=v) for v in vals]
    return _prompt(passages, quest.format(e=name)), f" {vals[0]}"


def training_examples(n: int, seed: int = 0, relevance_share: float = 0.6) -> list[tuple[str, str]]:
    """The fine-tune mixture: ``relevance_share`` relevance QA, the rest conflict QA."""
    rng = np.random.default_rng(seed)
    return [
        relevance_example(rng) if rng.random() < relevance_share else conflict_example(rng)
        for _ in range(n)
    ]


@dataclass(frozen=True)
class ConflictPrompt:
    """An evaluation item: the marked prompt, its unmarked twin, new (highlighted) and old
    (first passage) values, the attribute and whether it uses the held-out phrasing."""

    marked: str
    plain: str
    new: str
    old: str
    attribute: str
    paraphrase: bool


def conflict_prompts(
    n: int, seed: int, attributes=("code",), paraphrase: bool = False
) -> list[ConflictPrompt]:
    """``n`` conflict prompts whose highlighted passage is not the first one."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        attribute = attributes[i % len(attributes)]
        stmt, quest = TEMPLATES[attribute][1 if paraphrase else 0]
        name = _entities(1, rng)[0]
        k = int(rng.integers(2, 4))
        vals = values(attribute, k, rng)
        target = int(rng.integers(1, k))
        passages = [stmt.format(e=name, v=v) for v in vals]
        question = quest.format(e=name)
        out.append(
            ConflictPrompt(
                marked=_prompt(passages, question, highlight=target),
                plain=_prompt(passages, question),
                new=f" {vals[target]}",
                old=f" {vals[0]}",
                attribute=attribute,
                paraphrase=paraphrase,
            )
        )
    return out


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
