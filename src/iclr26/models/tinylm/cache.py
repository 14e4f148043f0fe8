"""Where the shared tiny LM keeps what it trains, and how cache keys are made.

The cache lives in ``$ICLR26_CACHE`` (default ``~/.cache/iclr26``). Every key hashes everything
that changes the result: the configuration, the training settings, the corpus fingerprint and
the torch/transformers major.minor versions, so a stale checkpoint is never reused silently.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    """The package cache folder, created on first use."""
    root = os.environ.get("ICLR26_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "iclr26"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def tinylm_dir() -> Path:
    path = cache_dir() / "tinylm"
    path.mkdir(parents=True, exist_ok=True)
    return path


def stable_hash(payload: Any, length: int = 16) -> str:
    """A short sha256 of a JSON-serialisable payload (keys sorted, so order does not matter)."""
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def version_tag() -> dict[str, str]:
    """torch and transformers major.minor: CPU kernels and model code change numerics."""
    import torch
    import transformers

    return {
        "torch": ".".join(torch.__version__.split("+")[0].split(".")[:2]),
        "transformers": ".".join(transformers.__version__.split(".")[:2]),
    }


def write_json(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1, sort_keys=True, default=str))
    tmp.replace(path)
