"""Annotated scientific text: the SPHERE record format, its reader, and SphereLite.

SPHERE (the paper's benchmark) stores one document per jsonl line with ``text``, ``entities``
(``id``, ``name``, ``span`` = [start, end) character offsets, ``type``) and ``relations``
(``source``, ``target``, ``type`` with ``is-a-subconcept-of`` pointing child -> parent,
``related-to``, ``dependent-on``). :func:`load_sphere` reads that format and checks every offset
against the text: a span outside the text, reversed, or whose substring differs from the entity
name is either a clear error (``errors="raise"``) or a counted rejection of the document
(``errors="skip"``, counts in :class:`SphereLoadReport`).

:class:`SphereLite` is an offline analogue of SPHERE's own three-phase construction (knowledge
graph scaffold -> documents generated from sub-graphs -> annotations), with templates instead of an
LLM and four domains whose word pools are disjoint, so a train/test split by domain is a real
vocabulary transfer ("zero-shot" in the paper's sense).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx
import numpy as np

from iclr26 import validation as V

__all__ = [
    "Entity",
    "Relation",
    "Document",
    "SphereLoadReport",
    "load_sphere",
    "SphereLite",
    "RELATION_TYPES",
    "ENTITY_TYPES",
    "DOMAINS",
]

IS_A = "is-a-subconcept-of"
RELATED = "related-to"
DEPENDS = "dependent-on"
RELATION_TYPES = (IS_A, RELATED, DEPENDS)
ENTITY_TYPES = ("Field", "Method", "Concept", "Technique")
SYMMETRIC = frozenset({RELATED})


@dataclass(frozen=True)
class Entity:
    """An entity of one document: every mention's ``[start, end)`` character span."""

    id: str
    name: str
    type: str
    spans: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Relation:
    """A directed relation; ``is-a-subconcept-of`` goes from the child to the parent."""

    source: str
    target: str
    type: str


@dataclass
class Document:
    text: str
    entities: list[Entity]
    relations: list[Relation] = field(default_factory=list)
    domain: str = ""
    doc_id: str = ""

    def mentions(self) -> list[tuple[int, int, str]]:
        """Every entity mention as ``(start, end, type)``, sorted by position."""
        return sorted((s, e, ent.type) for ent in self.entities for s, e in ent.spans)

    def relation_map(self) -> dict[tuple[str, str], str]:
        """``(source id, target id) -> type``; symmetric types are listed in both directions."""
        out: dict[tuple[str, str], str] = {}
        for r in self.relations:
            out[(r.source, r.target)] = r.type
            if r.type in SYMMETRIC:
                out.setdefault((r.target, r.source), r.type)
        return out


def check_documents(docs, name: str = "docs", *, need_entities: bool = True) -> list[Document]:
    """A non-empty list of :class:`Document` (each with text and, when asked, >= 1 entity)."""
    if isinstance(docs, Document):
        raise TypeError(f"{name}: expected a list of Document, got one Document (wrap it)")
    if isinstance(docs, str | bytes):
        raise TypeError(f"{name}: expected a list of Document, got a string")
    try:
        docs = list(docs)
    except TypeError:
        raise TypeError(f"{name}: expected a list of Document, got {type(docs).__name__}") from None
    if not docs:
        raise ValueError(f"{name} is empty: need at least one document")
    for i, d in enumerate(docs):
        if not isinstance(d, Document):
            raise TypeError(f"{name}[{i}]: expected a Document, got {type(d).__name__}")
        if not d.text:
            raise ValueError(f"{name}[{i}]: the document text is empty")
        if need_entities and not d.entities:
            raise ValueError(f"{name}[{i}]: the document has no entities")
    return docs


# ---------------------------------------------------------------- SPHERE reader


@dataclass
class SphereLoadReport:
    """What :func:`load_sphere` read: documents kept, rejected (with the first reasons)."""

    kept: int = 0
    rejected: int = 0
    reasons: list[str] = field(default_factory=list)


def _span_problem(text: str, span, name: str) -> str | None:
    if not isinstance(span, Sequence) or isinstance(span, str) or len(span) != 2:
        return f"span {span!r} is not a [start, end] pair"
    s, e = span
    if (
        isinstance(s, bool)
        or isinstance(e, bool)
        or not (isinstance(s, int) and isinstance(e, int))
    ):
        return f"span {span!r} does not hold integers"
    if not 0 <= s < e <= len(text):
        return f"span {span!r} lies outside the text (length {len(text)}) or is empty/reversed"
    if name and text[s:e].lower() != name.lower():
        return f"span {span!r} reads {text[s:e]!r}, not the entity name {name!r}"
    return None


def _parse_record(rec: dict, where: str, domain: str) -> Document:
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: a record must be a JSON object")
    text = rec.get("text")
    if not isinstance(text, str) or not text:
        raise ValueError(f"{where}: 'text' is missing or empty")
    raw_entities = rec.get("entities", [])
    if not isinstance(raw_entities, list):
        raise ValueError(f"{where}: 'entities' must be a list")
    entities, ids = [], set()
    for j, ent in enumerate(raw_entities):
        if not isinstance(ent, dict) or "id" not in ent or "span" not in ent:
            raise ValueError(f"{where}: entities[{j}] needs 'id' and 'span'")
        eid, name = str(ent["id"]), str(ent.get("name", ""))
        span = ent["span"]
        spans = span if (isinstance(span, list) and span and isinstance(span[0], list)) else [span]
        for sp in spans:
            problem = _span_problem(text, sp, name)
            if problem:
                raise ValueError(f"{where}: entities[{j}] (id {eid!r}) broken offset: {problem}")
        if eid in ids:
            raise ValueError(f"{where}: duplicate entity id {eid!r}")
        ids.add(eid)
        ent_type = str(ent.get("type", "Concept"))
        entities.append(
            Entity(
                eid,
                name or text[spans[0][0] : spans[0][1]],
                ent_type,
                tuple((int(a), int(b)) for a, b in spans),
            )
        )
    relations = []
    for j, rel in enumerate(rec.get("relations", []) or []):
        if not isinstance(rel, dict) or not {"source", "target", "type"} <= set(rel):
            raise ValueError(f"{where}: relations[{j}] needs 'source', 'target' and 'type'")
        src, tgt = str(rel["source"]), str(rel["target"])
        if src not in ids or tgt not in ids:
            raise ValueError(f"{where}: relations[{j}] refers to an unknown entity id")
        relations.append(Relation(src, tgt, str(rel["type"])))
    return Document(
        text,
        entities,
        relations,
        domain=str(rec.get("domain", domain)),
        doc_id=str(rec.get("id", where)),
    )


def load_sphere(
    path, *, errors: str = "raise", return_report: bool = False
) -> list[Document] | tuple[list[Document], SphereLoadReport]:
    """Read SPHERE documents from a ``.jsonl`` file, a ``.json`` list, or a folder of them.

    Every entity span is checked against the text (inside it, non-empty, and reading the entity's
    name). ``errors="raise"`` stops at the first broken record with a message naming the file,
    line and entity; ``errors="skip"`` drops broken records and counts them in the report
    (``return_report=True`` returns ``(docs, report)``)."""
    errors = V.check_choice(errors, "errors", ("raise", "skip"))
    return_report = V.check_bool(return_report, "return_report")
    if not isinstance(path, str | Path):
        raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"path: {path} does not exist")
    files = sorted(path.glob("*.json*")) if path.is_dir() else [path]
    if not files:
        raise ValueError(f"path: no .json/.jsonl files in {path}")
    docs: list[Document] = []
    report = SphereLoadReport()
    for file in files:
        domain = file.stem
        if file.suffix == ".jsonl":
            lines = file.read_text(encoding="utf-8").splitlines()
            items = [(f"{file.name}:{i + 1}", ln) for i, ln in enumerate(lines) if ln.strip()]
        else:
            data = json.loads(file.read_text(encoding="utf-8"))
            if isinstance(data, dict):  # a KG json (nodes/edges), not documents
                continue
            items = [(f"{file.name}[{i}]", rec) for i, rec in enumerate(data)]
        for where, raw in items:
            try:
                rec = json.loads(raw) if isinstance(raw, str) else raw
                docs.append(_parse_record(rec, where, domain))
                report.kept += 1
            except (ValueError, json.JSONDecodeError) as exc:
                if errors == "raise":
                    raise ValueError(f"path: {exc}") from None
                report.rejected += 1
                if len(report.reasons) < 20:
                    report.reasons.append(str(exc))
    if not docs:
        raise ValueError(f"path: no valid documents in {path} ({report.rejected} rejected)")
    return (docs, report) if return_report else docs


# ---------------------------------------------------------------- SphereLite

_POOLS: dict[str, tuple[str, str]] = {
    "physics": (
        "mechanics optics thermodynamics electrodynamics plasma lattice quark boson fermion "
        "photon neutrino gravity spacetime entropy oscillator resonance spectroscopy "
        "superconductivity magnetism acoustics cosmology radiation scattering hadron lepton "
        "interferometry relativity tunneling vortex soliton",
        "quantum classical relativistic nonlinear statistical thermal nuclear atomic "
        "electromagnetic gravitational cosmic stellar kinetic harmonic anharmonic chiral "
        "topological gauge scalar vector spinor ultracold coherent incoherent adiabatic "
        "isentropic inertial rotational vibrational longitudinal transverse polarized "
        "luminous radiative dissipative conservative canonical hamiltonian lagrangian "
        "perturbative variational hadronic leptonic baryonic neutral charged massive massless "
        "supersymmetric holographic entangled squeezed photonic optomechanical ferromagnetic "
        "paramagnetic diamagnetic laminar turbulent",
    ),
    "biology": (
        "genomics proteomics metabolism enzyme ribosome mitochondria chromosome transcription "
        "translation mutation phylogeny ecology neuron synapse antibody pathogen virus "
        "bacterium hormone receptor membrane cytoskeleton embryo tissue photosynthesis "
        "symbiosis microbiome epigenetics apoptosis immunity",
        "cellular molecular genetic evolutionary developmental immune neuronal hormonal "
        "metabolic microbial viral bacterial fungal plant animal marine terrestrial "
        "mitochondrial nucleolar cytoplasmic extracellular intracellular somatic germline "
        "embryonic adult stem transgenic mutant wildtype recessive dominant allelic "
        "chromosomal ribosomal enzymatic catalytic allosteric synaptic dendritic axonal "
        "cortical hippocampal retinal cardiac hepatic renal pulmonary dermal skeletal "
        "muscular lymphatic vascular oxidative glycolytic lipid peptide glycan",
    ),
    "computer_science": (
        "algorithm compiler database network protocol scheduler cache kernel parser "
        "encryption hashing graph tree heap queue transformer classifier regression "
        "clustering retrieval indexing routing virtualization blockchain debugger "
        "interpreter tokenizer optimizer recommender",
        "distributed parallel concurrent sequential recursive iterative greedy dynamic "
        "probabilistic deterministic randomized approximate exact sparse dense hierarchical "
        "relational declarative imperative functional lazy eager incremental online offline "
        "batched streaming federated decentralized adversarial generative discriminative "
        "supervised unsupervised reinforcement contrastive convolutional recurrent attentive "
        "autoregressive neural symbolic lexical syntactic semantic static runtime secure "
        "scalable elastic fault tolerant serverless embedded",
    ),
    "materials": (
        "alloy ceramic polymer composite crystal grain dislocation perovskite graphene "
        "nanotube zeolite oxide nitride carbide glass coating catalyst electrolyte anode "
        "cathode laminate foam fiber film hydrogel semiconductor dopant sintering corrosion "
        "annealing",
        "metallic amorphous crystalline polycrystalline monocrystalline porous mesoporous "
        "microporous layered lamellar fibrous granular ductile brittle refractory "
        "thermoelectric piezoelectric ferroelectric dielectric conductive insulating "
        "transparent opaque hydrophobic hydrophilic biodegradable recyclable lightweight "
        "highstrength wearresistant anticorrosive nanostructured microstructured "
        "heterogeneous homogeneous isotropic anisotropic textured sintered cast forged "
        "extruded welded printed deposited sputtered electroplated calcined quenched "
        "tempered carburized nitrided annealed",
    ),
}
DOMAINS = tuple(_POOLS)
_TYPE_BY_DEPTH = ("Field", "Field", "Method", "Concept", "Technique")
_FANOUT = ((3, 5), (2, 4), (2, 4), (1, 3))  # children per node at depths 0..3

_IS_A_TEMPLATES = (
    "{c} is a subfield of {p}.",
    "{c} is a kind of {p}.",
    "As a branch of {p}, {c} has its own methods.",
    "{c} belongs to the broader area of {p}.",
    "Within {p}, {c} forms a specialised topic.",
    "{c} can be seen as a special case of {p}.",
)
_RELATED_TEMPLATES = (
    "{a} is closely related to {b}.",
    "{a} shares many ideas with {b}.",
    "Work on {a} often informs {b}.",
    "{a} and {b} are sibling topics with a common core.",
)
_DEPENDS_TEMPLATES = (
    "{a} depends on {b}.",
    "{a} requires a solid grasp of {b}.",
    "Progress in {a} relies on {b}.",
    "{a} builds directly on results from {b}.",
)
_NEUTRAL_TEMPLATES = (
    "{a} and {b} are often discussed together.",
    "Both {a} and {b} appear in recent studies.",
    "Surveys mention {a} alongside {b}.",
    "The workshop covered {a} as well as {b}.",
    "Papers on {a} frequently cite {b}.",
    "{a} and {b} were compared in a recent review.",
)
_SINGLE_TEMPLATES = (
    "Recent work on {a} has grown rapidly.",
    "Many groups now study {a}.",
    "{a} remains an active topic.",
    "New results on {a} were reported this year.",
)


def _words(pool: str) -> list[str]:
    return pool.split()


class SphereLite:
    """Procedural SPHERE analogue: per-domain KG scaffolds and templated annotated documents.

    Phase 1 builds a KG per domain (root field -> 3-5 sub-fields -> 2-4 methods -> 2-4
    concepts -> 1-3 specific concepts). A child's name extends its parent's phrase with a new
    modifier with probability ``p_extend`` (up to six words), otherwise it gets a new head noun.
    ``related-to`` edges join siblings/cousins, ``dependent-on`` edges cross branches. Phase 2
    renders a document around a focus node (its parent, up to two children, one or two peers, at
    most one dependency: 4-8 entities) from templates, a fraction ``p_neutral`` of relation
    mentions with neutral templates that do not reveal the relation type. Phase 3 records exact
    character spans and the KG relations among every pair of the document's entities."""

    def __init__(self, seed: int = 0, *, p_extend: float = 0.6, p_neutral: float = 0.3):
        self.seed = V.check_int(seed, "seed", low=0)
        self.p_extend = V.check_probability(p_extend, "p_extend")
        self.p_neutral = V.check_probability(p_neutral, "p_neutral")
        self.graphs = {d: self._build_kg(d, i) for i, d in enumerate(DOMAINS)}

    # phase 1 -------------------------------------------------------------
    def _build_kg(self, domain: str, index: int) -> nx.DiGraph:
        rng = np.random.default_rng([self.seed, index])
        heads, mods = (_words(p) for p in _POOLS[domain])
        g = nx.DiGraph()  # edges parent -> child (is-a reversed) with kind="parent"
        names: set[str] = set()

        def new_name(parent_name: str | None) -> str:
            for _ in range(200):
                if parent_name and len(parent_name.split()) < 6 and rng.random() < self.p_extend:
                    name = f"{mods[rng.integers(len(mods))]} {parent_name}"
                else:
                    k = int(rng.integers(0, 3))
                    picked = rng.choice(len(mods), size=k, replace=False)
                    name = " ".join([mods[i] for i in picked] + [heads[rng.integers(len(heads))]])
                if name not in names:
                    names.add(name)
                    return name
            raise RuntimeError("SphereLite ran out of distinct names")  # pragma: no cover

        root = f"{domain}:0"
        g.add_node(root, name=new_name(None), depth=0)
        frontier, counter = [root], 1
        for depth, (lo, hi) in enumerate(_FANOUT):
            nxt = []
            for node in frontier:
                for _ in range(int(rng.integers(lo, hi + 1))):
                    child = f"{domain}:{counter}"
                    counter += 1
                    g.add_node(child, name=new_name(g.nodes[node]["name"]), depth=depth + 1)
                    g.add_edge(node, child, kind="parent")
                    nxt.append(child)
            frontier = nxt
        nodes = list(g.nodes)
        parent = {v: u for u, v in g.edges}
        peers: list[tuple[str, str]] = []
        deps: list[tuple[str, str]] = []
        for v in nodes:
            if v == root:
                continue
            sibs = [u for u in g.successors(parent[v]) if u != v and u > v]
            for u in sibs:
                if rng.random() < 0.35:
                    peers.append((v, u))
        same_depth: dict[int, list[str]] = {}
        for v in nodes:
            same_depth.setdefault(g.nodes[v]["depth"], []).append(v)
        for v in nodes:
            depth = g.nodes[v]["depth"]
            if depth >= 2 and rng.random() < 0.3:
                cands = [u for u in same_depth.get(depth - 1, []) if u != parent[v]]
                if cands:
                    deps.append((v, cands[int(rng.integers(len(cands)))]))
        g.graph["peers"] = peers
        g.graph["deps"] = deps
        return g

    def kg(self, domain: str) -> nx.DiGraph:
        """The domain's scaffold as a DiGraph of ``is-a-subconcept-of`` edges child -> parent."""
        domain = V.check_choice(domain, "domain", DOMAINS)
        g = self.graphs[domain]
        out = nx.DiGraph()
        out.add_nodes_from(g.nodes(data=True))
        out.add_edges_from(((c, p) for p, c in g.edges), type=IS_A)
        return out

    # phase 2 + 3 ---------------------------------------------------------
    def _relation(self, g: nx.DiGraph, a: str, b: str) -> str | None:
        if g.has_edge(b, a):
            return IS_A  # a is a child of b
        key = g.graph.setdefault("_peer_set", {frozenset(p) for p in g.graph["peers"]})
        if frozenset((a, b)) in key:
            return RELATED
        dep = g.graph.setdefault("_dep_set", set(g.graph["deps"]))
        if (a, b) in dep:
            return DEPENDS
        return None

    def _document(self, domain: str, rng: np.random.Generator, doc_id: str) -> Document:
        g = self.graphs[domain]
        nodes = [v for v in g.nodes if g.nodes[v]["depth"] >= 1]
        focus = nodes[int(rng.integers(len(nodes)))]
        parent = next(iter(g.predecessors(focus)))
        children = list(g.successors(focus))
        rng.shuffle(children)
        peers = [b if a == focus else a for a, b in g.graph["peers"] if focus in (a, b)]
        if not peers:  # fall back to siblings as co-mentioned (unrelated unless in the KG)
            peers = [u for u in g.successors(parent) if u != focus]
        rng.shuffle(peers)
        deps = [b for a, b in g.graph["deps"] if a == focus]
        chosen = [parent, focus] + children[:2] + peers[: int(rng.integers(1, 3))] + deps[:1]
        chosen = list(dict.fromkeys(chosen))
        if len(chosen) < 4:  # pad with cousins so every document has 4-8 entities
            extra = [
                u
                for u in nodes
                if u not in chosen and g.nodes[u]["depth"] == g.nodes[focus]["depth"]
            ]
            rng.shuffle(extra)
            chosen += extra[: 4 - len(chosen)]
        chosen = chosen[:8]
        # sentences: one per relation of the focus to each other entity, then a closing line
        order = [u for u in chosen if u != focus]
        rng.shuffle(order)
        pieces: list[tuple[str, list[str]]] = []
        for other in order:
            rel = self._relation(g, focus, other) or self._relation(g, other, focus)
            a, b = (focus, other) if self._relation(g, focus, other) else (other, focus)
            if rel is None or rng.random() < self.p_neutral:
                tpl = _NEUTRAL_TEMPLATES[int(rng.integers(len(_NEUTRAL_TEMPLATES)))]
                pair = [a, b] if rng.random() < 0.5 else [b, a]
                pieces.append((tpl.replace("{a}", "\0").replace("{b}", "\1"), pair))
                continue
            pool = {IS_A: _IS_A_TEMPLATES, RELATED: _RELATED_TEMPLATES, DEPENDS: _DEPENDS_TEMPLATES}
            tpl = pool[rel][int(rng.integers(len(pool[rel])))]
            tpl = tpl.replace("{c}", "{a}").replace("{p}", "{b}")
            pieces.append((tpl.replace("{a}", "\0").replace("{b}", "\1"), [a, b]))
        closing = _SINGLE_TEMPLATES[int(rng.integers(len(_SINGLE_TEMPLATES)))]
        pieces.append((closing.replace("{a}", "\0"), [focus]))
        text, spans = "", {u: [] for u in chosen}
        for tpl, pair in pieces:
            sentence_start = len(text) + (1 if text else 0)
            text += " " if text else ""
            out, i = "", 0
            for ch in tpl:
                if ch in "\0\1":
                    node = pair[0 if ch == "\0" else 1]
                    name = g.nodes[node]["name"]
                    at_start = sentence_start + len(out) == sentence_start
                    shown = name[0].upper() + name[1:] if at_start else name
                    spans[node].append((len(text) + len(out), len(text) + len(out) + len(shown)))
                    out += shown
                    i += 1
                else:
                    out += ch
            text += out
        ids = {u: f"T{k}" for k, u in enumerate(chosen)}
        entities = [
            Entity(ids[u], g.nodes[u]["name"], _TYPE_BY_DEPTH[g.nodes[u]["depth"]], tuple(spans[u]))
            for u in chosen
            if spans[u]
        ]
        relations = []
        for a in chosen:
            for b in chosen:
                if a != b and spans[a] and spans[b]:
                    rel = self._relation(g, a, b)
                    if rel is not None and not (
                        rel in SYMMETRIC
                        and (ids[b], ids[a]) in {(r.source, r.target) for r in relations}
                    ):
                        relations.append(Relation(ids[a], ids[b], rel))
        return Document(text, entities, relations, domain=domain, doc_id=doc_id)

    def documents(self, n: int, domains: Iterable[str] | None = None, *, offset: int = 0):
        """``n`` documents drawn round-robin from ``domains`` (all four by default);
        deterministic in (seed, domains, offset)."""
        n = V.check_int(n, "n", low=1)
        offset = V.check_int(offset, "offset", low=0)
        domains = list(DOMAINS if domains is None else domains)
        if not domains:
            raise ValueError("domains is empty: name at least one domain")
        for d in domains:
            V.check_choice(d, "domains", DOMAINS)
        docs = []
        for k in range(n):
            dom = domains[k % len(domains)]
            rng = np.random.default_rng([self.seed, 1000 + DOMAINS.index(dom), offset + k])
            docs.append(self._document(dom, rng, f"{dom}-{offset + k}"))
        return docs

    def zero_shot_split(self, n_train: int, n_test: int):
        """The paper's Table 4 transfer split: train on physics + biology, test on computer
        science + materials."""
        train = self.documents(n_train, ("physics", "biology"))
        test = self.documents(n_test, ("computer_science", "materials"))
        return train, test

    def in_domain_split(self, n_train: int, n_test: int):
        """Random documents of all four domains, disjoint draws for train and test."""
        return self.documents(n_train), self.documents(n_test, offset=10**6)

    def domain_words(self, domain: str) -> set[str]:
        domain = V.check_choice(domain, "domain", DOMAINS)
        heads, mods = _POOLS[domain]
        return set(heads.split()) | set(mods.split())


def topo_targets(doc: Document) -> dict[str, float]:
    """``y_topo(v) = height / (height + depth)`` in the document's gold is-a hierarchy (roots
    1, leaves 0) for entities that take part in at least one is-a relation."""
    if not isinstance(doc, Document):
        raise TypeError(f"doc must be a Document, got {type(doc).__name__}")
    g = nx.DiGraph()
    g.add_edges_from((r.target, r.source) for r in doc.relations if r.type == IS_A)  # p -> c
    if g.number_of_edges() == 0 or not nx.is_directed_acyclic_graph(g):
        return {}
    order = list(nx.topological_sort(g))
    depth = dict.fromkeys(order, 0)
    for v in order:
        for c in g.successors(v):
            depth[c] = max(depth[c], depth[v] + 1)
    height = dict.fromkeys(order, 0)
    for v in reversed(order):
        for c in g.successors(v):
            height[v] = max(height[v], height[c] + 1)
    return {v: height[v] / (height[v] + depth[v]) for v in order}
