"""Protein data: the residue alphabet, a NeRF backbone builder, ``ProtoFold`` (protein-like
families with held-out novel families, our offline stand-in for the paper's PDB + AFDB
pretraining set with its <= 40 % identity split) and a biotite reader for PDB/mmCIF files."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from iclr26 import validation as V

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
UNKNOWN = 20  # "X"
MASK = 21
VOCAB = 22
_AA_INDEX = {a: i for i, a in enumerate(AMINO_ACIDS)}
THREE_TO_ONE = {
    "ALA": "A", "CYS": "C", "ASP": "D", "GLU": "E", "PHE": "F", "GLY": "G", "HIS": "H",
    "ILE": "I", "LYS": "K", "LEU": "L", "MET": "M", "ASN": "N", "PRO": "P", "GLN": "Q",
    "ARG": "R", "SER": "S", "THR": "T", "VAL": "V", "TRP": "W", "TYR": "Y",
}  # fmt: skip

HELIX, STRAND, LOOP = 0, 1, 2
# Secondary-structure propensities (the spec's formers; every residue keeps a small floor).
_FORMERS = {HELIX: "ALEMQKR", STRAND: "VIYFWT", LOOP: "GPNDS"}
PROPENSITY = np.full((3, 20), 0.02)
for _ss, _letters in _FORMERS.items():
    for _a in _letters:
        PROPENSITY[_ss, _AA_INDEX[_a]] = 1.0
PROPENSITY /= PROPENSITY.sum(1, keepdims=True)
IDEAL_PHI_PSI = {HELIX: (-57.0, -47.0), STRAND: (-120.0, 130.0)}
# Ideal backbone geometry (Engh & Huber): bond lengths in Å, bond angles in degrees.
BOND = {"N-CA": 1.458, "CA-C": 1.525, "C-N": 1.329}
ANGLE = {"N-CA-C": 111.2, "CA-C-N": 116.2, "C-N-CA": 121.7}


def encode_sequence(seq: str) -> np.ndarray:
    """One-letter sequence -> int tokens (0..19; "X" -> 20). Other letters are refused."""
    if not isinstance(seq, str):
        raise TypeError(f"seq must be a string, got {type(seq).__name__}")
    if not seq:
        raise ValueError("seq is empty")
    bad = sorted({c for c in seq.upper() if c not in _AA_INDEX and c != "X"})
    if bad:
        raise ValueError(f"seq contains unknown residue letters {bad}; use 'X' for unknown")
    return np.array([_AA_INDEX.get(c, UNKNOWN) for c in seq.upper()], dtype=np.int64)


def decode_tokens(tokens) -> str:
    """Int tokens -> one-letter string ("X" for unknown, "-" for MASK)."""
    t = V.check_array(tokens, "tokens", ndim=1, dtype=None)
    if t.dtype.kind not in "iu":
        raise TypeError(f"tokens must be integers, got {t.dtype}")
    if t.min() < 0 or t.max() >= VOCAB:
        raise ValueError(f"tokens must be in [0, {VOCAB - 1}], got {t.min()}..{t.max()}")
    return "".join((AMINO_ACIDS + "X-")[i] for i in t)


def _place(a, b, c, bond, angle, torsion):
    """NeRF: the next atoms ``(B, 3)`` from the previous three, a bond length, bond angle and
    torsions ``(B,)`` (batched over chains)."""
    bc = c - b
    bc /= np.linalg.norm(bc, axis=-1, keepdims=True)
    n = np.cross(b - a, bc)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    m = np.stack([bc, np.cross(n, bc), n], axis=-1)
    d2 = np.stack(
        [
            np.full_like(torsion, -bond * np.cos(angle)),
            bond * np.sin(angle) * np.cos(torsion),
            bond * np.sin(angle) * np.sin(torsion),
        ],
        axis=-1,
    )
    return c + np.einsum("bij,bj->bi", m, d2)


def nerf_backbone(phi, psi, omega=None) -> np.ndarray:
    """Backbone N, Cα, C coordinates ``(L, 3, 3)`` in Å from torsions ``(L,)`` in degrees, or
    ``(B, L, 3, 3)`` from ``(B, L)`` (NeRF with ideal bond lengths and angles; ``omega``
    defaults to 180°, trans peptides)."""
    phi = V.check_array(phi, "phi", ndim=(1, 2), dtype=np.float64)
    psi = V.check_array(psi, "psi", ndim=phi.ndim, dtype=np.float64)
    if psi.shape != phi.shape:
        raise ValueError(f"psi must have the shape of phi {phi.shape}, got {psi.shape}")
    omega = np.full(phi.shape, 180.0) if omega is None else omega
    omega = V.check_array(omega, "omega", ndim=phi.ndim, dtype=np.float64)
    if omega.shape != phi.shape:
        raise ValueError(f"omega must have the shape of phi {phi.shape}, got {omega.shape}")
    single = phi.ndim == 1
    phi, psi, omega = (np.radians(np.atleast_2d(t)) for t in (phi, psi, omega))
    nb, length = phi.shape
    a_nca, a_cac, a_cn = (np.radians(ANGLE[k]) for k in ("N-CA-C", "CA-C-N", "C-N-CA"))
    n0 = np.zeros((nb, 3))
    ca0 = np.tile([BOND["N-CA"], 0.0, 0.0], (nb, 1))
    c0 = ca0 + BOND["CA-C"] * np.array([-np.cos(a_nca), np.sin(a_nca), 0.0])
    atoms = [n0, ca0, c0]
    for i in range(1, length):
        n = _place(atoms[-3], atoms[-2], atoms[-1], BOND["C-N"], a_cac, psi[:, i - 1])
        ca = _place(atoms[-2], atoms[-1], n, BOND["N-CA"], a_cn, omega[:, i - 1])
        c = _place(atoms[-1], n, ca, BOND["CA-C"], a_nca, phi[:, i])
        atoms += [n, ca, c]
    out = np.stack(atoms, axis=1).reshape(nb, length, 3, 3)
    return out[0] if single else out


def _sample_propensity(rng: np.random.Generator, ss: np.ndarray) -> np.ndarray:
    """One residue per SS label, drawn from its propensity row (vectorised inverse CDF)."""
    cdf = np.cumsum(PROPENSITY, axis=1)[ss]
    u = rng.random(ss.shape + (1,))
    return np.minimum((u > cdf).sum(-1), 19)


@dataclass
class ProteinSet:
    """Chains of equal length: tokens ``(n, L)``, Cα coordinates ``(n, L, 3)`` in Å, secondary
    structure ``(n, L)``, family id ``(n,)``, per-residue confidence ``plddt`` ``(n, L)`` in
    [0, 100] (100 for experimental / generated structures)."""

    tokens: np.ndarray
    coords: np.ndarray
    ss: np.ndarray
    family: np.ndarray
    plddt: np.ndarray = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.tokens = V.check_array(self.tokens, "tokens", ndim=2, dtype=None, min_rows=0)
        if self.tokens.size and (
            self.tokens.dtype.kind not in "iu" or self.tokens.min() < 0 or self.tokens.max() > 20
        ):
            raise ValueError("tokens must be integers in [0, 20] (20 = unknown)")
        n, length = self.tokens.shape
        self.coords = V.check_array(
            self.coords, "coords", shape=(n, length, 3), dtype=np.float64, min_rows=0
        )
        self.ss = V.check_array(self.ss, "ss", shape=(n, length), dtype=None, min_rows=0)
        self.family = V.check_array(self.family, "family", shape=(n,), dtype=None, min_rows=0)
        if self.plddt is None:
            self.plddt = np.full(self.tokens.shape, 100.0)
        self.plddt = V.check_array(
            self.plddt,
            "plddt",
            shape=(n, length),
            dtype=np.float64,
            low=0.0,
            high=100.0,
            min_rows=0,
        )

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def seqs(self) -> list[str]:
        return [decode_tokens(t) for t in self.tokens]

    def subset(self, idx) -> ProteinSet:
        idx = np.asarray(idx)
        return ProteinSet(
            self.tokens[idx], self.coords[idx], self.ss[idx], self.family[idx], self.plddt[idx]
        )


def sequence_identity(a, b) -> np.ndarray:
    """Fraction of identical positions between every row of ``a`` ``(n, L)`` and every row of
    ``b`` ``(m, L)`` (equal-length Hamming identity): an ``(n, m)`` matrix."""
    a = V.check_array(a, "a", ndim=2, dtype=None)
    b = V.check_array(b, "b", ndim=2, dtype=None)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b must have the same length, got {a.shape[1]} and {b.shape[1]}")
    out = np.zeros((len(a), len(b)))
    for j in range(0, len(b), 256):  # chunks keep the (n, chunk, L) comparison small
        out[:, j : j + 256] = (a[:, None, :] == b[None, j : j + 256, :]).mean(-1)
    return out


class ProtoFold:
    """Protein-like families (the paper's pretraining data replaced by a generator).

    A family is a secondary-structure layout (helix 8–14, strand 5–8, loop 2–5 residues),
    family-specific loop (φ, ψ), a consensus sequence drawn from SS propensities and 20 %
    conserved positions. Members mutate each non-conserved position with probability ``rho``
    (a resample from its SS propensity: structure kept, homology destroyed) and jitter the
    torsions by ``torsion_noise`` degrees. ``train`` holds ``members`` chains of each of
    ``n_families`` families at ``rho``; ``test_in_family[r]`` new members at each of
    ``test_rhos``; ``test_novel`` members of ``n_novel`` held-out families, each of which is
    checked to be below ``max_identity`` to every training sequence (the paper's split rule)."""

    def __init__(
        self,
        n_families: int = 60,
        length: int = 48,
        *,
        members: int = 40,
        rho: float = 0.2,
        test_rhos: tuple[float, ...] = (0.1, 0.3, 0.6),
        test_per_family: int = 2,
        n_novel: int = 10,
        novel_members: int = 4,
        conserved_frac: float = 0.2,
        torsion_noise: float = 5.0,
        max_identity: float = 0.4,
        seed: int = 0,
    ) -> None:
        self.n_families = V.check_int(n_families, "n_families", low=1)
        self.length = V.check_int(length, "length", low=12)
        self.members = V.check_int(members, "members", low=1)
        self.rho = V.check_probability(rho, "rho")
        self.test_rhos = tuple(V.check_probability(r, "test_rhos") for r in test_rhos)
        self.test_per_family = V.check_int(test_per_family, "test_per_family", low=0)
        self.n_novel = V.check_int(n_novel, "n_novel", low=0)
        self.novel_members = V.check_int(novel_members, "novel_members", low=1)
        self.conserved_frac = V.check_probability(conserved_frac, "conserved_frac")
        self.torsion_noise = V.check_scalar(torsion_noise, "torsion_noise", low=0.0)
        self.max_identity = V.check_probability(max_identity, "max_identity", open_low=True)
        self.seed = V.check_int(seed, "seed", low=0)
        rng = np.random.default_rng(self.seed)
        self.families = [self._family(rng) for _ in range(self.n_families)]
        fam_ids = np.arange(self.n_families)
        self.train = self._members(rng, fam_ids, self.members, self.rho)
        self.test_in_family = {
            r: self._members(rng, fam_ids, self.test_per_family, r) for r in self.test_rhos
        }
        self.novel_families, novel = [], []
        tries = 0
        while len(novel) < self.n_novel:
            tries += 1
            if tries > 50 * max(self.n_novel, 1):
                raise RuntimeError("could not draw novel families below max_identity")
            fam = self._family(rng)
            self.families.append(fam)
            cand = self._members(
                rng, np.array([len(self.families) - 1]), self.novel_members, self.rho
            )
            if sequence_identity(cand.tokens, self.train.tokens).max() < self.max_identity:
                novel.append(cand)
                self.novel_families.append(len(self.families) - 1)
            else:
                self.families.pop()
        self.test_novel = _concat(novel) if novel else None
        self.novel_identity_max = (
            float(sequence_identity(self.test_novel.tokens, self.train.tokens).max())
            if novel
            else 0.0
        )

    def _family(self, rng: np.random.Generator) -> dict:
        ss = []
        while len(ss) < self.length:
            ss += [LOOP] * int(rng.integers(2, 6))
            if rng.random() < 0.5:
                ss += [HELIX] * int(rng.integers(8, 15))
            else:
                ss += [STRAND] * int(rng.integers(5, 9))
        ss = np.array(ss[: self.length])
        phi = np.empty(self.length)
        psi = np.empty(self.length)
        for kind, (p, s) in IDEAL_PHI_PSI.items():
            phi[ss == kind], psi[ss == kind] = p, s
        loops = ss == LOOP
        phi[loops] = rng.uniform(-160.0, -60.0, loops.sum())
        psi[loops] = rng.uniform(-60.0, 170.0, loops.sum())
        consensus = _sample_propensity(rng, ss)
        conserved = rng.random(self.length) < self.conserved_frac
        return dict(ss=ss, phi=phi, psi=psi, consensus=consensus, conserved=conserved)

    def _members(self, rng, fam_ids, n: int, rho: float) -> ProteinSet:
        fams = np.repeat(np.asarray(fam_ids, dtype=np.int64), n)
        if len(fams) == 0:
            e = np.zeros((0, self.length), dtype=np.int64)
            return ProteinSet(e, np.zeros((0, self.length, 3)), e.copy(), np.zeros(0, np.int64))
        ss = np.stack([self.families[f]["ss"] for f in fams])
        seq = np.stack([self.families[f]["consensus"] for f in fams])
        conserved = np.stack([self.families[f]["conserved"] for f in fams])
        mutate = (rng.random(seq.shape) < rho) & ~conserved
        seq = np.where(mutate, _sample_propensity(rng, ss), seq)
        phi = np.stack([self.families[f]["phi"] for f in fams])
        psi = np.stack([self.families[f]["psi"] for f in fams])
        jitter = rng.normal(0.0, self.torsion_noise, (2,) + phi.shape)
        ca = nerf_backbone(phi + jitter[0], psi + jitter[1])[:, :, 1]
        return ProteinSet(seq, ca - ca.mean(1, keepdims=True), ss, fams)


def _concat(sets: list[ProteinSet]) -> ProteinSet:
    return ProteinSet(
        *(
            np.concatenate([getattr(s, k) for s in sets])
            for k in ("tokens", "coords", "ss", "family", "plddt")
        )
    )


@dataclass
class Structures:
    """Chains read from PDB/mmCIF files: ``seqs`` (one-letter), ``coords`` (list of ``(L, 3)``
    Cα in Å, centred), ``plddt`` (B-factor column, for AFDB files), ``names`` ("file:chain") and
    ``counts`` of what was handled (unknown residues mapped to X, amino-acid residues read from
    HETATM records, residues dropped for a missing Cα, chains skipped as too short)."""

    seqs: list[str]
    coords: list[np.ndarray]
    plddt: list[np.ndarray]
    names: list[str]
    counts: dict[str, int]

    def to_protein_set(self, length: int) -> ProteinSet:
        """Crop every chain of at least ``length`` residues to its first ``length`` (the
        equal-length set the trainer and baselines take)."""
        length = V.check_int(length, "length", low=3)
        keep = [i for i, s in enumerate(self.seqs) if len(s) >= length]
        if not keep:
            raise ValueError(f"length {length} is longer than every chain")
        toks = np.array([encode_sequence(self.seqs[i][:length]) for i in keep])
        xyz = np.array([self.coords[i][:length] - self.coords[i][:length].mean(0) for i in keep])
        pl = np.array([self.plddt[i][:length] for i in keep])
        return ProteinSet(toks, xyz, np.full(toks.shape, LOOP), np.arange(len(keep)), pl)


def load_structures(
    paths,
    *,
    on_missing: str = "error",
    on_unknown: str = "x",
    min_length: int = 3,
    plddt_from_bfactor: bool = False,
) -> Structures:
    """Read protein chains from PDB (``.pdb``/``.ent``) or mmCIF (``.cif``) files with biotite.

    Residues are the amino-acid residues of the first model, HETATM ones (modified residues
    such as MSE) included and counted in ``counts["hetero_residues"]``. ``on_unknown="x"`` maps a
    non-standard amino acid to X and counts it (``"error"`` refuses it); ``on_missing="error"``
    refuses a residue without a Cα atom (``"drop"`` drops it and counts it). With
    ``plddt_from_bfactor`` the Cα B-factor is read as pLDDT (AlphaFold DB files); otherwise
    pLDDT is 100 (an experimental structure, weight 1)."""
    import biotite.structure as struc
    import biotite.structure.io.pdb as pdb
    import biotite.structure.io.pdbx as pdbx

    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("paths is empty")
    on_missing = V.check_choice(on_missing, "on_missing", ("error", "drop"))
    on_unknown = V.check_choice(on_unknown, "on_unknown", ("x", "error"))
    min_length = V.check_int(min_length, "min_length", low=1)
    plddt_from_bfactor = V.check_bool(plddt_from_bfactor, "plddt_from_bfactor")
    counts = {
        "unknown_residues": 0,
        "hetero_residues": 0,
        "dropped_missing_ca": 0,
        "skipped_short_chains": 0,
    }
    out = Structures([], [], [], [], counts)
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"paths: no such file {path}")
        suffix = path.suffix.lower()
        if suffix in (".pdb", ".ent"):
            arr = pdb.PDBFile.read(str(path)).get_structure(model=1, extra_fields=["b_factor"])
        elif suffix in (".cif", ".mmcif"):
            arr = pdbx.get_structure(
                pdbx.CIFFile.read(str(path)), model=1, extra_fields=["b_factor"]
            )
        else:
            raise ValueError(f"paths: unsupported file type {suffix!r} (use .pdb, .ent or .cif)")
        # modified residues of a chain (MSE, ...) are HETATM records: kept, as X, and counted
        arr = arr[struc.filter_amino_acids(arr)]
        for chain in np.unique(arr.chain_id):
            ch = arr[arr.chain_id == chain]
            seq, xyz, pl = [], [], []
            for res in struc.residue_iter(ch):
                name, rid = res.res_name[0], res.res_id[0]
                ca = res[res.atom_name == "CA"]
                if len(ca) == 0:
                    if on_missing == "error":
                        raise ValueError(
                            f"paths: {path.name} chain {chain} residue {name}{rid} has no CA "
                            "coordinates (missing atoms); pass on_missing='drop' to skip it"
                        )
                    counts["dropped_missing_ca"] += 1
                    continue
                if res.hetero[0]:
                    counts["hetero_residues"] += 1
                letter = THREE_TO_ONE.get(name)
                if letter is None:
                    if on_unknown == "error":
                        raise ValueError(
                            f"paths: {path.name} chain {chain} has unknown residue {name}{rid}"
                        )
                    counts["unknown_residues"] += 1
                    letter = "X"
                seq.append(letter)
                xyz.append(ca.coord[0])
                pl.append(ca.b_factor[0] if plddt_from_bfactor else 100.0)
            if len(seq) < min_length:
                counts["skipped_short_chains"] += 1
                continue
            xyz = np.array(xyz, dtype=np.float64)
            if not np.isfinite(xyz).all():
                raise ValueError(f"paths: {path.name} chain {chain} has non-finite coordinates")
            if not np.isfinite(pl).all():  # plddt_from_bfactor on a file without B-factors
                raise ValueError(
                    f"paths: {path.name} chain {chain} has missing B-factors, which "
                    "plddt_from_bfactor=True reads as pLDDT"
                )
            out.seqs.append("".join(seq))
            out.coords.append(xyz - xyz.mean(0))
            out.plddt.append(np.clip(np.array(pl, dtype=np.float64), 0.0, 100.0))
            out.names.append(f"{path.name}:{chain}")
    return out
