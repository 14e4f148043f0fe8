"""Fixtures shared by the tests of the shared models."""

from contextlib import contextmanager

import pytest


@pytest.fixture
def record_build_lock(monkeypatch):
    """``record_build_lock(module)`` replaces ``module.build_lock`` by one that still locks and
    also records each cache entry it is taken for; returns the list of entries."""

    def install(module):
        taken, real = [], module.build_lock

        @contextmanager
        def recording(entry):
            with real(entry):
                taken.append(entry)
                yield

        monkeypatch.setattr(module, "build_lock", recording)
        return taken

    return install
