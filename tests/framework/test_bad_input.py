"""The project-wide bad-input test.

Every public callable of every implemented room (its ``__all__``) is fed bad input —
NaN, ±inf, empty input, a wrong shape or dtype, an out-of-range hyperparameter — by the cases in
``tests/bad_input/<slug>.py``, and must raise ``ValueError``/``TypeError`` whose message names the
argument; or it is listed in that module's ``EXEMPT`` with a reason.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from pathlib import Path

import pytest

from iclr26 import catalog

CASES_DIR = Path(__file__).resolve().parents[1] / "bad_input"
KINDS = {"nan", "inf", "empty", "shape", "dtype", "range", "type", "other"}


def _load_cases(slug: str):
    path = CASES_DIR / f"{slug}.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(f"bad_input_{slug}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _public_callables(paper: catalog.Paper) -> list[str]:
    module = importlib.import_module(paper.module)
    names = getattr(module, "__all__", [])
    return [
        n
        for n in names
        if callable(getattr(module, n, None))
        and not (
            inspect.isclass(getattr(module, n)) and issubclass(getattr(module, n), BaseException)
        )
    ]


IMPLEMENTED = [p for p in catalog.PAPERS if p.implemented]


def coverage() -> dict[str, dict[str, list[str]]]:
    """Per room: covered, exempt and missing public callables."""
    out = {}
    for paper in IMPLEMENTED:
        cases = _load_cases(paper.slug)
        names = _public_callables(paper)
        covered = {c[0] for c in getattr(cases, "CASES", [])} if cases else set()
        exempt = dict(getattr(cases, "EXEMPT", {})) if cases else {}
        out[paper.slug] = {
            "covered": sorted(n for n in names if n in covered),
            "exempt": sorted(n for n in names if n in exempt and n not in covered),
            "missing": sorted(n for n in names if n not in covered and n not in exempt),
        }
    return out


def _all_cases():
    for paper in IMPLEMENTED:
        cases = _load_cases(paper.slug)
        if cases is None:
            continue
        for i, case in enumerate(cases.CASES):
            name, kind = case[0], case[1]
            yield pytest.param(paper.slug, case, id=f"{paper.slug}-{name}-{kind}-{i}")


@pytest.mark.parametrize("slug, case", list(_all_cases()))
def test_bad_input_is_refused_with_a_named_error(slug, case):
    name, kind, call, exc, match = case
    assert kind in KINDS, f"unknown kind {kind!r}"
    module = importlib.import_module(catalog.get(slug).module)
    assert name in getattr(module, "__all__", []), f"{name} is not public in {slug}"
    with pytest.raises(exc, match=match):
        call()


def test_every_public_callable_is_covered_or_exempt_with_a_reason():
    table = coverage()
    n_cov = sum(len(v["covered"]) for v in table.values())
    n_ex = sum(len(v["exempt"]) for v in table.values())
    missing = {slug: v["missing"] for slug, v in table.items() if v["missing"]}
    print(f"bad-input coverage: {n_cov} public callables covered, {n_ex} exempt with a reason")
    for paper in IMPLEMENTED:
        cases = _load_cases(paper.slug)
        for n, why in (getattr(cases, "EXEMPT", {}) if cases else {}).items():
            assert isinstance(why, str) and why.strip(), f"{paper.slug}.{n}: exempt with no reason"
    assert not missing, f"public callables with no bad-input case and no exemption: {missing}"
