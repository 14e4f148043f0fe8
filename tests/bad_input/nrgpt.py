"""Bad-input cases of the NRGPT room (tiny models and states; each call fails up front)."""

import torch

from iclr26.nn.nrgpt import (
    GPT,
    NRGPT,
    CharCorpus,
    GPTRecParallel,
    NRGPTConfig,
    attention_energy,
    attention_energy_grad,
    char_corpus,
    ff1_energy,
    ff1_energy_grad,
    ff2w_energy,
    ff2w_energy_grad,
    listops,
    listops_accuracy,
    n_params,
    train_listops,
    train_lm,
)

NAN, INF = float("nan"), float("inf")
CFG = dict(vocab_size=10, d_model=8, n_heads=2, steps=2, context=16)
MODEL = NRGPT(NRGPTConfig(**CFG))
IDX = torch.randint(0, 10, (2, 6))
G = torch.randn(2, 5, 8)
G_NAN = G.clone()
G_NAN[0, 1, 2] = NAN
G_INF = G.clone()
G_INF[1, 0, 0] = -INF
WQ, WK, ALPHA = torch.randn(2, 4, 8), torch.randn(2, 4, 8), torch.ones(2)
W1, W2 = torch.randn(16, 8), torch.randn(8, 16)
VOCAB = ("\n", "?", "a", "b")
IDS = torch.randint(0, 10, (200,))
TASK = listops.encode(listops.generate(8, seed=0))
TASK_MODEL = GPTRecParallel(len(listops.TOKENS), 8, 2, 1, context=TASK.tokens.shape[1])

CASES = [
    # configuration and models
    ("NRGPTConfig", "range", lambda: NRGPTConfig(beta=0.0), ValueError, "beta"),
    ("NRGPTConfig", "range", lambda: NRGPTConfig(beta=-1.0), ValueError, "beta"),
    ("NRGPTConfig", "nan", lambda: NRGPTConfig(beta=NAN), ValueError, "beta"),
    ("NRGPTConfig", "range", lambda: NRGPTConfig(steps=-1), ValueError, "steps"),
    ("NRGPTConfig", "range", lambda: NRGPTConfig(steps=2.5), TypeError, "steps"),
    ("NRGPTConfig", "range", lambda: NRGPTConfig(eta_init=NAN), ValueError, "eta_init"),
    ("NRGPTConfig", "range", lambda: NRGPTConfig(ff="ff3"), ValueError, "ff must"),
    ("NRGPTConfig", "range", lambda: NRGPTConfig(act="swish"), ValueError, "act must"),
    ("NRGPTConfig", "range", lambda: NRGPTConfig(vocab_size=1), ValueError, "vocab_size"),
    ("NRGPTConfig", "type", lambda: NRGPTConfig(include_self=1), TypeError, "include_self"),
    ("NRGPT", "type", lambda: NRGPT(CFG), TypeError, "cfg must be"),
    ("NRGPT", "range", lambda: MODEL(IDX, steps=-1), ValueError, "steps must be >= 0"),
    ("NRGPT", "range", lambda: MODEL.energy_trace(IDX, steps=-3), ValueError, "steps"),
    ("NRGPT", "dtype", lambda: MODEL(IDX.float()), TypeError, "idx must be an integer"),
    ("NRGPT", "shape", lambda: MODEL(IDX[0]), ValueError, "idx must have 2"),
    ("NRGPT", "empty", lambda: MODEL(IDX[:, :0]), ValueError, "idx is empty"),
    ("NRGPT", "range", lambda: MODEL(IDX + 10), ValueError, "idx must hold token ids"),
    ("NRGPT", "shape", lambda: MODEL(torch.zeros(1, 17, dtype=torch.long)), ValueError, "idx"),
    ("GPTRecParallel", "range", lambda: GPTRecParallel(10, 8, 2, steps=0), ValueError, "steps"),
    ("GPTRecParallel", "range", lambda: GPTRecParallel(10, 8, 3), ValueError, "n_heads"),
    ("GPTRecParallel", "empty", lambda: GPTRecParallel(10, 8, 2)(IDX[:0]), ValueError, "idx"),
    ("GPT", "range", lambda: GPT(10, 8, 2, n_layers=0), ValueError, "n_layers"),
    ("GPT", "range", lambda: GPT(10, 8, 2, context=0), ValueError, "context"),
    ("GPT", "dtype", lambda: GPT(10, 8, 2)(IDX.double()), TypeError, "idx"),
    ("GPT", "dtype", lambda: GPT(10, 8, 2)(IDX.to(torch.uint8)), TypeError, "idx must be an int64"),
    # energies
    (
        "attention_energy",
        "nan",
        lambda: attention_energy(G_NAN, WQ, WK, ALPHA, 0.5),
        ValueError,
        "g contains NaN",
    ),
    (
        "attention_energy",
        "inf",
        lambda: attention_energy(G_INF, WQ, WK, ALPHA, 0.5),
        ValueError,
        "g contains inf",
    ),
    (
        "attention_energy",
        "range",
        lambda: attention_energy(G, WQ, WK, ALPHA, 0.0),
        ValueError,
        "beta",
    ),
    (
        "attention_energy",
        "shape",
        lambda: attention_energy(G, WQ[..., :4], WK, ALPHA, 0.5),
        ValueError,
        "w_q",
    ),
    (
        "attention_energy",
        "empty",
        lambda: attention_energy(G[:, :0], WQ, WK, ALPHA, 0.5),
        ValueError,
        "g is empty",
    ),
    (
        "attention_energy_grad",
        "range",
        lambda: attention_energy_grad(G, WQ, WK, ALPHA, NAN),
        ValueError,
        "beta",
    ),
    (
        "attention_energy_grad",
        "shape",
        lambda: attention_energy_grad(G, WQ, WK, ALPHA[:1], 1.0),
        ValueError,
        "alpha",
    ),
    (
        "attention_energy_grad",
        "nan",
        lambda: attention_energy_grad(G, WQ, WK * NAN, ALPHA, 1.0),
        ValueError,
        "w_k",
    ),
    ("ff1_energy", "nan", lambda: ff1_energy(G_NAN, W1), ValueError, "g contains NaN"),
    ("ff1_energy", "shape", lambda: ff1_energy(G, W1[:, :4]), ValueError, "w must"),
    ("ff1_energy", "range", lambda: ff1_energy(G, W1, act="elu"), ValueError, "act"),
    ("ff1_energy_grad", "inf", lambda: ff1_energy_grad(G_INF, W1), ValueError, "g contains"),
    ("ff2w_energy", "shape", lambda: ff2w_energy(G, W1, W2.T), ValueError, "w2 must"),
    ("ff2w_energy", "empty", lambda: ff2w_energy(G[:0], W1, W2), ValueError, "g is empty"),
    (
        "ff2w_energy_grad",
        "nan",
        lambda: ff2w_energy_grad(G, W1 * NAN, W2),
        ValueError,
        "w1 contains",
    ),
    # data and training
    ("CharCorpus", "empty", lambda: CharCorpus("", VOCAB), ValueError, "text is empty"),
    ("CharCorpus", "other", lambda: CharCorpus("ab", ("a", "b")), ValueError, "vocab must hold"),
    ("CharCorpus", "type", lambda: CharCorpus(b"ab", VOCAB), TypeError, "text must be"),
    (
        "CharCorpus",
        "range",
        lambda: CharCorpus("abab" * 5, VOCAB).split(1, 5),
        ValueError,
        "n_train",
    ),
    ("char_corpus", "range", lambda: char_corpus(max_vocab=0), ValueError, "max_vocab"),
    (
        "char_corpus",
        "other",
        lambda: char_corpus("/nonexistent/input.txt"),
        FileNotFoundError,
        "path",
    ),
    ("train_lm", "range", lambda: train_lm(MODEL, IDS, IDS, steps=-1), ValueError, "steps"),
    ("train_lm", "range", lambda: train_lm(MODEL, IDS, IDS, 1, lr=NAN), ValueError, "lr"),
    ("train_lm", "dtype", lambda: train_lm(MODEL, IDS.float(), IDS, 1), TypeError, "train_ids"),
    (
        "train_lm",
        "empty",
        lambda: train_lm(MODEL, IDS[:0], IDS, 1),
        ValueError,
        "train_ids is empty",
    ),
    (
        "train_lm",
        "shape",
        lambda: train_lm(MODEL, IDS[:10], IDS, 1, context=12),
        ValueError,
        "train_ids has",
    ),
    ("train_lm", "type", lambda: train_lm("gpt", IDS, IDS, 1), TypeError, "model must be"),
    (
        "train_listops",
        "range",
        lambda: train_listops(TASK_MODEL, TASK, steps=0),
        ValueError,
        "steps",
    ),
    (
        "train_listops",
        "range",
        lambda: train_listops(TASK_MODEL, TASK, 1, lr=-1.0),
        ValueError,
        "lr",
    ),
    (
        "train_listops",
        "type",
        lambda: train_listops(TASK_MODEL, TASK.tokens, 1),
        TypeError,
        "train must",
    ),
    (
        "listops_accuracy",
        "range",
        lambda: listops_accuracy(TASK_MODEL, TASK, batch=0),
        ValueError,
        "batch",
    ),
    ("listops_accuracy", "type", lambda: listops_accuracy(None, TASK), TypeError, "model must"),
    ("n_params", "type", lambda: n_params([1, 2]), TypeError, "model must"),
]

EXEMPT = {}
