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


@pytest.fixture(autouse=True)
def _claim_contract(monkeypatch):
    """Every claim run in a test must honour the claim contract: a judged verdict carries
    metrics, a baseline measured in the same run and at least one required condition."""
    from iclr26.claims import Claim, contract_problems

    original = Claim.run

    def checked_run(self, ctx):
        record = original(self, ctx)
        problems = contract_problems(record)
        assert not problems, f"claim {self.key} breaks the claim contract: {problems}"
        return record

    monkeypatch.setattr(Claim, "run", checked_run)
    yield
