"""``identity_toxicity``: a synthetic toxicity set with demographic subgroups and biased labels.

A stand-in for Civil Comments / Berkeley hate speech. Each comment names exactly one of four
invented groups; it is toxic (y = 1) iff an *attack* template carries a *hostile* word. Training
labels carry the identity-term false-positive bias the paper studies (for groups 3 and 4, 20 %
of benign comments are labelled toxic) plus 3 % symmetric noise; validation and test labels are
clean and their groups balanced, so every test group is well populated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclr26 import validation as V

GROUP_NAMES = ("Aruvians", "Belenese", "Corvani", "Dastrians", "Elorites", "Fenmari")
TRAIN_SHARES = {2: (0.7, 0.3), 3: (0.6, 0.28, 0.12), 4: (0.55, 0.25, 0.12, 0.08)}
BASE_RATES = (0.25, 0.35, 0.45, 0.55, 0.4, 0.3)

HOSTILE = (
    "vile", "filthy", "worthless", "disgusting", "pathetic", "rotten", "stupid", "useless",
    "dirty", "hateful", "moronic", "evil", "lazy", "ugly", "dumb", "savage", "toxic",
    "cowardly", "greedy", "idiotic", "corrupt", "nasty", "wicked", "vicious",
)  # fmt: skip
BENIGN = (
    "kind", "friendly", "honest", "clever", "helpful", "gentle", "brave", "careful", "polite",
    "creative", "generous", "patient", "cheerful", "calm", "curious", "loyal", "modest",
    "talented", "thoughtful", "warm", "skilled", "quiet", "busy", "proud",
)  # fmt: skip
# "attack" templates judge the group; "neutral" templates only mention it
ATTACK = (
    "the {g} are {w}",
    "all {g} are so {w}",
    "every one of the {g} is {w}",
    "honestly the {g} are {w} people",
    "i think {g} are {w}",
    "those {g} are {w} and always will be",
    "{g} are just {w}",
    "my neighbours are {g} and they are {w}",
    "why are the {g} so {w}",
    "typical {g}, {w} as ever",
    "never trust the {g}, they are {w}",
    "people say the {g} are {w} and it is true",
    "the {g} team was {w} today",
    "you {g} are {w}",
    "what a {w} bunch the {g} are",
    "the {g} in this town are {w}",
    "{g} men are {w}",
    "{g} women are {w}",
    "the {g} always act {w}",
    "face it, the {g} are {w}",
)
NEUTRAL = (
    "i met some {g} at the market, the weather was {w}",
    "the {g} festival starts next week and the food is {w}",
    "a {w} article about {g} history came out",
    "my teacher told us about the {g} and a {w} story",
    "the {g} language has a {w} word for rain",
    "we visited a {g} village, the bus driver was {w}",
    "there is a {g} restaurant near the {w} park",
    "the museum shows {g} art from a {w} period",
    "my friend is learning about {g} music, the teacher is {w}",
    "the {g} delegation arrived after a {w} trip",
    "a documentary on {g} farming was {w}",
    "the {g} football club hired a {w} coach",
    "i read a {w} novel by a {g} writer",
    "the {g} quarter hosts a {w} book fair",
    "{g} recipes use a lot of rice, the cook was {w}",
    "our {g} guide told a {w} joke",
    "the {g} newspaper had a {w} headline",
    "a {g} scientist gave a {w} talk",
    "the {g} market sells {w} pottery",
    "we learned a {g} dance from a {w} instructor",
)


@dataclass(frozen=True)
class Split:
    """One split: ``text`` (list of str), clean labels ``y_true``, observed labels ``y`` (biased
    and noisy in train, equal to ``y_true`` elsewhere) and integer ``group`` ids."""

    text: list[str]
    y: np.ndarray
    y_true: np.ndarray
    group: np.ndarray


@dataclass(frozen=True)
class IdentityToxicity:
    train: Split
    val: Split
    test: Split
    group_names: tuple[str, ...]


def _sample(n: int, shares, rates, rng: np.random.Generator, names) -> tuple:
    group = rng.choice(len(shares), size=n, p=np.asarray(shares) / np.sum(shares))
    y = (rng.random(n) < np.asarray(rates)[group]).astype(np.int64)
    # y = 0 comments are spread over the three benign (template, word) combinations
    kind = np.where(y == 1, 0, rng.integers(1, 4, size=n))  # 0 attack+hostile, 1 attack+benign,
    attack = kind <= 1  # 2 neutral+hostile, 3 neutral+benign
    hostile = (kind == 0) | (kind == 2)
    tmpl = rng.integers(0, len(ATTACK), size=n)
    word = rng.integers(0, len(HOSTILE), size=n)
    text = [
        (ATTACK if a else NEUTRAL)[t].format(g=names[g], w=(HOSTILE if h else BENIGN)[w])
        for a, h, t, w, g in zip(attack, hostile, tmpl, word, group)
    ]
    return text, y, group


def identity_toxicity(
    n_train: int = 6000,
    n_val: int = 1500,
    n_test: int = 3000,
    groups: int = 4,
    seed: int = 0,
    annotator_bias: float = 0.2,
    label_noise: float = 0.03,
) -> IdentityToxicity:
    """The synthetic set. Train group shares 55/25/12/8 % (for 4 groups), base rates
    P(y=1 | g) = 0.25, 0.35, 0.45, 0.55; the last two groups (the last one for 2 groups) get
    ``annotator_bias`` of their benign training comments labelled toxic, then every training
    label flips with probability ``label_noise``. Validation and test have balanced groups and
    clean labels."""
    n_train = V.check_int(n_train, "n_train", low=20)
    n_val = V.check_int(n_val, "n_val", low=10)
    n_test = V.check_int(n_test, "n_test", low=10)
    groups = V.check_int(groups, "groups", low=2, high=4)
    annotator_bias = V.check_probability(annotator_bias, "annotator_bias")
    label_noise = V.check_probability(label_noise, "label_noise")
    seed = V.check_int(seed, "seed", low=0)
    rng = np.random.default_rng(seed)
    names = GROUP_NAMES[:groups]
    rates = BASE_RATES[:groups]
    biased = np.arange(groups) >= max(groups - 2, 1)

    text, y_true, g = _sample(n_train, TRAIN_SHARES[groups], rates, rng, names)
    y = y_true.copy()
    flip_bias = biased[g] & (y_true == 0) & (rng.random(n_train) < annotator_bias)
    y[flip_bias] = 1
    noise = rng.random(n_train) < label_noise
    y[noise] = 1 - y[noise]
    train = Split(text, y, y_true, g)

    def clean(n: int) -> Split:
        t, yy, gg = _sample(n, np.ones(groups), rates, rng, names)
        return Split(t, yy, yy.copy(), gg)

    return IdentityToxicity(train, clean(n_val), clean(n_test), names)
