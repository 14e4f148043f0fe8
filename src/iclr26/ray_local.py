"""Starting a local Ray the same way everywhere in the package.

Ray starts its worker processes at niceness 15 unless ``RAY_worker_niceness`` says otherwise
(it keeps the driver responsive). Beside any other CPU load at the default niceness those
workers get almost no CPU: in a claim run next to two busy processes on two cores, FlexRL's
rollout workers received about 4 % of a core each and the claim stalled for more than 15
minutes. Work that the package sends to Ray is the computation itself, so a local Ray started
here runs its workers at the niceness of the process that started it; a user who set
``RAY_worker_niceness`` keeps that value. A Ray cluster joined through ``RAY_ADDRESS`` keeps
its own settings."""

from __future__ import annotations

import os
from typing import Any

NICENESS_ENV = "RAY_worker_niceness"


def init_ray(num_cpus: int | None = None, **kwargs: Any) -> bool:
    """``ray.init`` unless Ray is already initialised: ``RAY_ADDRESS`` when set, else a local
    Ray with ``num_cpus`` CPUs, no dashboard and no driver logs, its workers not niced.
    Returns whether this call started (or joined) Ray."""
    import ray

    if ray.is_initialized():
        return False
    address = os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, log_to_driver=False, **kwargs)
        return True
    os.environ.setdefault(NICENESS_ENV, "0")
    kwargs.setdefault("include_dashboard", False)
    kwargs.setdefault("log_to_driver", False)
    ray.init(num_cpus=num_cpus, **kwargs)
    return True
