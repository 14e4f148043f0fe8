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

    def components(self, columns: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The boolean signals FT, CAT, R, ET and KEEP for annotated documents."""
        need = [
            "dclm_fastText_score",
            "cosmo_fastText_score",
            "mcalpine_eflaw_textstat",
            "tokens_per_doc_num_chars",
        ]
        missing = [c for c in need if c not in columns]
        if missing:
            raise KeyError(f"the ensemble needs the annotation columns {missing}")
        dclm = np.asarray(columns["dclm_fastText_score"], float)
        cosmo = np.asarray(columns["cosmo_fastText_score"], float)
        eflaw = np.asarray(columns["mcalpine_eflaw_textstat"], float)
        ratio = np.asarray(columns["tokens_per_doc_num_chars"], float)
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
