"""The room's data: ``identity_toxicity`` and its records live in the shared
:mod:`iclr26.data.synth` (module ``toxicity``); re-exported here."""

from iclr26.data.synth.toxicity import (  # noqa: F401
    ATTACK,
    BASE_RATES,
    BENIGN,
    GROUP_NAMES,
    HOSTILE,
    NEUTRAL,
    TRAIN_SHARES,
    IdentityToxicity,
    Split,
    _sample,
    identity_toxicity,
)
