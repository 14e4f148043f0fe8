"""Shared test settings: headless plotting, a private model cache, few threads."""

import os

import matplotlib
import pytest

matplotlib.use("Agg")
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Models trained by tests go to a throwaway cache, never the user's."""
    if "ICLR26_CACHE" not in os.environ or os.environ.get("CI"):
        os.environ["ICLR26_CACHE"] = str(tmp_path_factory.mktemp("iclr26-cache"))
    yield
