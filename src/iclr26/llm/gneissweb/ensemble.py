"""The category-aware ensemble keep-rule of the recipe.

FT  = dclm > t_dclm  OR  cosmo > t_cosmo
CAT = any category label is its category (not "cc")
R   = (CAT AND eflaw < r_cat) OR (NOT CAT AND eflaw < r_other)
ET  = (CAT AND lo_cat <= tok/char <= hi_cat) OR (NOT CAT AND lo <= tok/char <= hi)
KEEP = FT AND (R OR ET)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from iclr26 import validation as V

CATEGORIES = ("medical", "education", "technology_computing", "science")


@dataclass
class EnsembleFilter:
    dclm_threshold: float = 0.002
    cosmo_threshold: float = 0.03
    readability_category: float = 70.0
    readability_other: float = 30.0
    extreme_category: tuple[float, float] = (0.1, 0.5)
    extreme_other: tuple[float, float] = (0.22, 0.28)
    categories: tuple[str, ...] = CATEGORIES

    def __post_init__(self) -> None:
        self.dclm_threshold = V.check_scalar(self.dclm_threshold, "dclm_threshold")
        self.cosmo_threshold = V.check_scalar(self.cosmo_threshold, "cosmo_threshold")
        self.readability_category = V.check_scalar(
            self.readability_category, "readability_category"
        )
        self.readability_other = V.check_scalar(self.readability_other, "readability_other")
        for name in ("extreme_category", "extreme_other"):
            bounds = V.check_array(getattr(self, name), name, ndim=1, shape=(2,), low=0.0)
            if bounds[0] > bounds[1]:
                raise ValueError(f"{name} must be (low, high) with low <= high, got {bounds}")
            setattr(self, name, (float(bounds[0]), float(bounds[1])))
        if isinstance(self.categories, str):
            raise TypeError("categories must be a tuple of category names, not one string")
        self.categories = tuple(self.categories)

    def components(self, columns: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The boolean signals FT, CAT, R, ET and KEEP for annotated documents."""
        need = [
            "dclm_fastText_score",
            "cosmo_fastText_score",
            "mcalpine_eflaw_textstat",
            "tokens_per_doc_num_chars",
        ]
        V.check_module_attrs(columns, "columns", ("__getitem__", "__contains__", "get"))
        missing = [c for c in need if c not in columns]
        if missing:
            raise KeyError(f"columns lacks the annotation columns {missing}")
        dclm = V.check_array(columns["dclm_fastText_score"], "dclm_fastText_score", ndim=1)
        n = dclm.shape[0]
        cosmo = V.check_array(columns["cosmo_fastText_score"], "cosmo_fastText_score", n_rows=n)
        eflaw = V.check_array(
            columns["mcalpine_eflaw_textstat"], "mcalpine_eflaw_textstat", n_rows=n
        )
        ratio = V.check_array(
            columns["tokens_per_doc_num_chars"], "tokens_per_doc_num_chars", n_rows=n
        )
        cat = np.zeros(len(dclm), dtype=bool)
        for name in self.categories:
            col = columns.get(f"{name}_label")
            if col is not None:
                cat |= np.asarray(col, dtype=object) == name
        ft = (dclm > self.dclm_threshold) | (cosmo > self.cosmo_threshold)
        r = (cat & (eflaw < self.readability_category)) | (~cat & (eflaw < self.readability_other))
        lo_c, hi_c = self.extreme_category
        lo_o, hi_o = self.extreme_other
        et = (cat & (ratio >= lo_c) & (ratio <= hi_c)) | (~cat & (ratio >= lo_o) & (ratio <= hi_o))
        return {"FT": ft, "CAT": cat, "R": r, "ET": et, "KEEP": ft & (r | et)}

    def keep(self, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        return self.components(columns)["KEEP"]
