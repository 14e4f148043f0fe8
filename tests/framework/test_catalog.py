import re
from pathlib import Path

import pytest

from iclr26 import catalog


def test_catalog_has_all_57_papers_with_valid_areas():
    assert len(catalog.PAPERS) == 57
    assert len({p.slug for p in catalog.PAPERS}) == 57
    assert all(p.area in catalog.AREAS for p in catalog.PAPERS)
    assert all(re.fullmatch(r"\d{3}_[0-9a-f]{16}\.txt", p.seed_file) for p in catalog.PAPERS)


def test_catalog_matches_the_index_when_available():
    index = Path(__file__).resolve().parents[3] / "shared" / "papers" / "INDEX.md"
    if not index.exists():
        pytest.skip("the papers index is not next to this checkout")
    rows = re.findall(r"\| `(\w+)` \| `iclr26\.(\w+)\.\w+` \| .+? \| (\S+) \|", index.read_text())
    assert {(s, a, f) for s, a, f in rows} == {
        (p.slug, p.area, p.seed_file) for p in catalog.PAPERS
    }


def test_select_by_area_and_slug_and_close_matches():
    classic = catalog.select(["classic"])
    assert {p.area for p in classic} == {"classic"} and len(classic) >= 4
    assert [p.slug for p in catalog.select(["cda", "cda"])] == ["cda"]
    assert len(catalog.select([])) == 57
    with pytest.raises(KeyError, match="cda"):
        catalog.get("cdb")


def test_module_paths():
    paper = catalog.get("cda")
    assert paper.module == "iclr26.classic.cda"
    assert paper.claims_module == "iclr26.classic.cda.claims"
    assert catalog.get("obscuro").implemented in (True, False)
