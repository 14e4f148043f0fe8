"""HGNet (§3.2) and the relation-extraction baselines on entity embeddings.

HGNet predicts a soft latent graph P_uv = softmax(MLP([h_u ‖ h_v])) over {parent-of, peer-of,
no-edge} for every ordered pair, then runs K three-channel layers
m_par(v) = Σ_u P_uv^par W_up h_u, m_ch(v) = Σ_u P_vu^par W_down h_u, m_peer(v) = Σ_u P_uv^peer
W_peer h_u, h_v <- UpdateMLP([h_v ‖ m_par ‖ m_ch ‖ m_peer]); a pair head on
[h_u ‖ h_v ‖ h_u ⊙ h_v] gives the task relation of every ordered pair. Training adds the
Differentiable Hierarchy Loss on A_parent and the CAF loss on the final embeddings
(L = L_RE + λ1 L_hier + λ2 L_caf). Baselines: the same pair head on the input embeddings
(a span-pair classifier) and a 3-layer GAT over the complete document graph.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import torch
from torch import nn

from iclr26 import validation as V

from .data import IS_A, RELATION_TYPES, SYMMETRIC, Document, Relation, check_documents, topo_targets
from .losses import CAFLoss, HierarchyLoss

__all__ = [
    "HGNetModule",
    "PairHead",
    "DenseGATConv",
    "GATEncoder",
    "HGNet",
    "PairwiseRelationClassifier",
    "GATRelationClassifier",
    "entity_embeddings",
    "relation_f1",
    "cycle_rate",
]

LABELS = ("none",) + RELATION_TYPES  # pair-head classes
PARENT, PEER, NO_EDGE = 0, 1, 2  # latent relation classes


class PairHead(nn.Module):
    """Relation logits of every ordered pair from [h_u ‖ h_v ‖ h_u ⊙ h_v]: (B, N, N, labels)."""

    def __init__(self, dim: int, n_labels: int = len(LABELS), dropout: float = 0.2):
        super().__init__()
        self.dim = V.check_int(dim, "dim", low=1)
        self.mlp = nn.Sequential(
            nn.Linear(3 * dim, dim), nn.ReLU(), nn.Dropout(dropout), nn.Linear(dim, n_labels)
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        V.check_tensor(h, "h", min_ndim=2, floating=True)
        if h.shape[-1] != self.dim:
            raise ValueError(f"h must have last dimension {self.dim}, got {h.shape[-1]}")
        n = h.shape[-2]
        hu = h.unsqueeze(-2).expand(*h.shape[:-1], n, h.shape[-1])
        hv = h.unsqueeze(-3).expand(*h.shape[:-2], n, n, h.shape[-1])
        return self.mlp(torch.cat([hu, hv, hu * hv], dim=-1))


class HGNetModule(nn.Module):
    """The HGNet network on padded entity embeddings ``h`` (B, N, in_dim) with ``mask`` (B, N).

    ``forward`` returns a dict: ``logits`` (B, N, N, labels), ``latent`` P (B, N, N, 3),
    ``parent`` / ``peer`` adjacencies (B, N, N) (zero on the diagonal and on padding) and the
    final embeddings ``h`` (B, N, hidden)."""

    def __init__(self, in_dim: int, hidden: int = 128, layers: int = 3, dropout: float = 0.2):
        super().__init__()
        self.in_dim = V.check_int(in_dim, "in_dim", low=1)
        self.hidden = V.check_int(hidden, "hidden", low=1)
        self.n_layers = V.check_int(layers, "layers", low=1)
        dropout = V.check_probability(dropout, "dropout", open_high=True)
        self.inp = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Dropout(dropout))
        self.predictor = nn.Sequential(
            nn.Linear(2 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, 3)
        )
        self.w_up = nn.ModuleList(nn.Linear(hidden, hidden, bias=False) for _ in range(layers))
        self.w_down = nn.ModuleList(nn.Linear(hidden, hidden, bias=False) for _ in range(layers))
        self.w_peer = nn.ModuleList(nn.Linear(hidden, hidden, bias=False) for _ in range(layers))
        self.update = nn.ModuleList(
            nn.Sequential(nn.Linear(4 * hidden, hidden), nn.ReLU(), nn.Dropout(dropout))
            for _ in range(layers)
        )
        self.head = PairHead(hidden, dropout=dropout)

    def latent_graph(self, h: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        n = h.shape[-2]
        hu = h.unsqueeze(-2).expand(*h.shape[:-1], n, h.shape[-1])
        hv = h.unsqueeze(-3).expand(*h.shape[:-2], n, n, h.shape[-1])
        p = torch.softmax(self.predictor(torch.cat([hu, hv], dim=-1)), dim=-1)
        valid = ~torch.eye(n, dtype=torch.bool, device=h.device)
        if mask is not None:
            valid = valid & mask.unsqueeze(-1) & mask.unsqueeze(-2)
        return p * valid.unsqueeze(-1).to(p.dtype)

    def propagate(self, h, parent, peer):
        """K three-channel layers given the adjacencies; returns the final embeddings."""
        for w_up, w_down, w_peer, update in zip(self.w_up, self.w_down, self.w_peer, self.update):
            m_par = parent.transpose(-1, -2) @ w_up(h)  # Σ_u P_uv^par W_up h_u
            m_ch = parent @ w_down(h)  # Σ_u P_vu^par W_down h_u
            m_peer = peer.transpose(-1, -2) @ w_peer(h)
            h = update(torch.cat([h, m_par, m_ch, m_peer], dim=-1))
        return h

    def forward(self, h: torch.Tensor, mask: torch.Tensor | None = None) -> dict:
        V.check_tensor(h, "h", ndim=3, floating=True)
        if h.shape[-1] != self.in_dim:
            raise ValueError(f"h must have last dimension {self.in_dim}, got {h.shape[-1]}")
        if mask is not None:
            V.check_tensor(mask, "mask", shape=h.shape[:2])
            mask = mask.bool()
        h0 = self.inp(h)
        p = self.latent_graph(h0, mask)
        parent, peer = p[..., PARENT], p[..., PEER]
        out = self.propagate(h0, parent, peer)
        return {"logits": self.head(out), "latent": p, "parent": parent, "peer": peer, "h": out}


class DenseGATConv(nn.Module):
    """GAT layer (Veličković et al.) on a dense adjacency, computing what
    ``torch_geometric.nn.GATConv(in_dim, out_dim, heads)`` computes (self-loops added, heads
    concatenated, LeakyReLU 0.2, bias after aggregation) — the fallback when torch-geometric is
    not installed; a test checks both agree on the same weights."""

    def __init__(self, in_dim: int, out_dim: int, heads: int = 1, negative_slope: float = 0.2):
        super().__init__()
        self.heads = V.check_int(heads, "heads", low=1)
        self.out_dim = V.check_int(out_dim, "out_dim", low=1)
        self.negative_slope = V.check_scalar(negative_slope, "negative_slope", low=0.0)
        self.lin = nn.Linear(V.check_int(in_dim, "in_dim", low=1), heads * out_dim, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, 1, heads, out_dim))
        self.att_dst = nn.Parameter(torch.empty(1, 1, heads, out_dim))
        self.bias = nn.Parameter(torch.zeros(heads * out_dim))
        nn.init.xavier_uniform_(self.lin.weight)
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)

    def forward(self, x: torch.Tensor, adjacency: torch.Tensor) -> torch.Tensor:
        """``x`` (B, N, in), ``adjacency`` (B, N, N) bool with adjacency[b, src, dst]."""
        V.check_tensor(x, "x", ndim=3, floating=True)
        if x.shape[-1] != self.lin.in_features:
            raise ValueError(
                f"x must have last dimension {self.lin.in_features}, got {x.shape[-1]}"
            )
        b, n, _ = x.shape
        V.check_tensor(adjacency, "adjacency", shape=(b, n, n))
        z = self.lin(x).view(b, n, self.heads, self.out_dim)
        a_src = (z * self.att_src).sum(-1)  # (B, N, H)
        a_dst = (z * self.att_dst).sum(-1)
        logits = a_src.unsqueeze(2) + a_dst.unsqueeze(1)  # (B, src, dst, H)
        logits = nn.functional.leaky_relu(logits, self.negative_slope)
        eye = torch.eye(n, dtype=torch.bool, device=x.device)
        edges = (adjacency.bool() & ~eye) | eye  # GATConv removes then adds self-loops
        logits = logits.masked_fill(~edges.unsqueeze(-1), float("-inf"))
        alpha = torch.softmax(logits, dim=1)  # over sources for each destination
        out = torch.einsum("bsdh,bshc->bdhc", alpha, z)
        return out.reshape(b, n, self.heads * self.out_dim) + self.bias


def _pyg_available() -> bool:
    try:
        import torch_geometric.nn  # noqa: F401
    except Exception:  # noqa: BLE001 - any import problem means: use the fallback
        return False
    return True


class GATEncoder(nn.Module):
    """Input projection and ``layers`` GAT layers over the complete graph of each document.

    ``backend="pyg"`` uses ``torch_geometric.nn.GATConv`` on a batched edge list, ``"dense"``
    the equivalent :class:`DenseGATConv`; ``"auto"`` picks pyg when it imports."""

    def __init__(
        self,
        in_dim: int,
        hidden: int = 128,
        layers: int = 3,
        heads: int = 1,
        dropout: float = 0.2,
        backend: str = "auto",
    ):
        super().__init__()
        backend = V.check_choice(backend, "backend", ("auto", "pyg", "dense"))
        if backend == "auto":
            backend = "pyg" if _pyg_available() else "dense"
        self.backend = backend
        heads = V.check_int(heads, "heads", low=1)
        hidden = V.check_int(hidden, "hidden", low=1)
        if hidden % heads:
            raise ValueError(f"hidden ({hidden}) must be divisible by heads ({heads})")
        self.inp = nn.Sequential(
            nn.Linear(V.check_int(in_dim, "in_dim", low=1), hidden), nn.ReLU(), nn.Dropout(dropout)
        )
        if backend == "pyg":
            from torch_geometric.nn import GATConv

            self.convs = nn.ModuleList(
                GATConv(hidden, hidden // heads, heads=heads)
                for _ in range(V.check_int(layers, "layers", low=1))
            )
        else:
            self.convs = nn.ModuleList(
                DenseGATConv(hidden, hidden // heads, heads)
                for _ in range(V.check_int(layers, "layers", low=1))
            )
        self.drop = nn.Dropout(dropout)

    def forward(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        V.check_tensor(h, "h", ndim=3, floating=True)
        V.check_tensor(mask, "mask", shape=h.shape[:2])
        mask = mask.bool()
        x = self.inp(h)
        b, n, d = x.shape
        adjacency = mask.unsqueeze(-1) & mask.unsqueeze(-2)
        if self.backend == "pyg":
            flat = x.reshape(b * n, d)
            bi, src, dst = adjacency.nonzero(as_tuple=True)
            edge_index = torch.stack([bi * n + src, bi * n + dst])
            for conv in self.convs:  # residual: a complete graph oversmooths without it
                flat = flat + self.drop(torch.relu(conv(flat, edge_index)))
            return flat.view(b, n, d)
        for conv in self.convs:
            x = x + self.drop(torch.relu(conv(x, adjacency)))
        return x


# ---------------------------------------------------------------- data preparation


def entity_embeddings(features, offsets, doc: Document) -> np.ndarray:
    """Mean of the token features inside any mention of each entity: (n_entities, dim)."""
    features = V.check_array(features, "features", ndim=2, dtype=np.float32)
    offsets = V.check_array(offsets, "offsets", ndim=2, shape=(len(features), 2), dtype=np.int64)
    out = np.zeros((len(doc.entities), features.shape[1]), dtype=np.float32)
    for i, ent in enumerate(doc.entities):
        inside = np.zeros(len(offsets), dtype=bool)
        for s, e in ent.spans:
            inside |= (offsets[:, 0] >= s) & (offsets[:, 1] <= e) & (offsets[:, 1] > offsets[:, 0])
        if not inside.any():  # a span between tokens: take the overlapping tokens
            for s, e in ent.spans:
                inside |= (offsets[:, 0] < e) & (offsets[:, 1] > s)
        if not inside.any():
            raise ValueError(f"doc {doc.doc_id!r}: entity {ent.id!r} covers no token")
        out[i] = features[inside].mean(0)
    return out


def _doc_targets(doc: Document) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    ids = {e.id: i for i, e in enumerate(doc.entities)}
    n = len(ids)
    labels = np.zeros((n, n), dtype=np.int64)
    for (s, t), typ in doc.relation_map().items():
        if typ in LABELS:
            labels[ids[s], ids[t]] = LABELS.index(typ)
    np.fill_diagonal(labels, -100)
    topo = np.full(n, np.nan, dtype=np.float32)
    for eid, value in topo_targets(doc).items():
        topo[ids[eid]] = value
    edges = [(ids[r.source], ids[r.target]) for r in doc.relations if r.type == IS_A]
    return labels, topo, edges


class _Batch:
    def __init__(self, embeddings: list[np.ndarray], targets: list | None):
        n = max(len(e) for e in embeddings)
        b, d = len(embeddings), embeddings[0].shape[1]
        self.h = torch.zeros(b, n, d)
        self.mask = torch.zeros(b, n, dtype=torch.bool)
        for i, e in enumerate(embeddings):
            self.h[i, : len(e)] = torch.from_numpy(e)
            self.mask[i, : len(e)] = True
        if targets is not None:
            self.labels = torch.full((b, n, n), -100, dtype=torch.long)
            self.topo = torch.full((b, n), float("nan"))
            cp = []
            for i, (lab, topo, edges) in enumerate(targets):
                k = len(topo)
                self.labels[i, :k, :k] = torch.from_numpy(lab)
                self.topo[i, :k] = torch.from_numpy(topo)
                cp += [(i, c, p) for c, p in edges]
            self.child_parent = torch.tensor(cp, dtype=torch.long).reshape(-1, 3)

    def to(self, device) -> _Batch:
        for key in ("h", "mask", "labels", "topo", "child_parent"):
            if hasattr(self, key):
                setattr(self, key, getattr(self, key).to(device))
        return self


# ---------------------------------------------------------------- wrappers


class _RelationExtractor:
    """Shared fit / predict / evaluate of the relation models (subclasses build the net)."""

    def __init__(
        self,
        encoder="minilm",
        *,
        hidden: int = 128,
        dropout: float = 0.2,
        lr: float = 1e-3,
        epochs: int = 30,
        batch_size: int = 8,
        device: str = "cpu",
    ):
        from .ner import _resolve_encoder

        self.device = torch.device(device)
        self.encoder = _resolve_encoder(encoder)
        self.hidden = V.check_int(hidden, "hidden", low=1)
        self.dropout = V.check_probability(dropout, "dropout", open_high=True)
        self.lr = V.check_scalar(lr, "lr", low=0.0, low_open=True)
        self.epochs = V.check_int(epochs, "epochs", low=1)
        self.batch_size = V.check_int(batch_size, "batch_size", low=1)
        self.net: nn.Module | None = None

    # subclasses ------------------------------------------------------
    def _build(self, in_dim: int) -> nn.Module:  # pragma: no cover - abstract
        raise NotImplementedError

    def _forward(self, batch: _Batch) -> dict:
        return self.net(batch.h.to(self.device), batch.mask.to(self.device))

    def _extra_loss(self, out: dict, batch: _Batch) -> torch.Tensor:
        return out["logits"].new_zeros(())

    # shared ----------------------------------------------------------
    def _embed(self, docs: list[Document]) -> list[np.ndarray]:
        encoded = self.encoder.encode([d.text for d in docs])
        return [entity_embeddings(f, o, d) for (f, o), d in zip(encoded, docs)]

    def n_parameters(self) -> int:
        if self.net is None:
            raise RuntimeError("not fitted yet; call fit first")
        return sum(p.numel() for p in self.net.parameters())

    def fit(self, docs, *, seed: int = 0):
        """Train on documents with gold entities and relations."""
        docs = check_documents(docs, "docs")
        seed = V.check_int(seed, "seed", low=0)
        embeddings = self._embed(docs)
        targets = [_doc_targets(d) for d in docs]
        gen = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)
        self.net = self._build(embeddings[0].shape[1]).to(self.device)
        opt = torch.optim.AdamW(self.net.parameters(), lr=self.lr, weight_decay=0.01)
        loss_fn = nn.CrossEntropyLoss(ignore_index=-100)
        self.net.train()
        self.losses_: list[float] = []
        for _ in range(self.epochs):
            order = torch.randperm(len(docs), generator=gen).tolist()
            for b in range(0, len(order), self.batch_size):
                idx = order[b : b + self.batch_size]
                batch = _Batch([embeddings[i] for i in idx], [targets[i] for i in idx])
                batch.to(self.device)
                out = self._forward(batch)
                logits = out["logits"]
                loss = loss_fn(logits.reshape(-1, logits.shape[-1]), batch.labels.reshape(-1))
                loss = loss + self._extra_loss(out, batch)
                opt.zero_grad()
                loss.backward()
                opt.step()
                self.losses_.append(float(loss.detach()))
        self.net.eval()
        return self

    def predict_proba(self, docs, *, batch_size: int = 64) -> list[np.ndarray]:
        """Per document, (n, n, labels) probabilities of every ordered pair (labels: none,
        is-a-subconcept-of, related-to, dependent-on; the diagonal is meaningless)."""
        if self.net is None:
            raise RuntimeError("this model is not fitted yet; call fit first")
        docs = check_documents(docs, "docs")
        batch_size = V.check_int(batch_size, "batch_size", low=1)
        embeddings = self._embed(docs)
        out = []
        with torch.inference_mode():
            for b in range(0, len(docs), batch_size):
                chunk = embeddings[b : b + batch_size]
                batch = _Batch(chunk, None)
                probs = torch.softmax(self._forward(batch)["logits"], -1).cpu().numpy()
                out += [probs[i, : len(e), : len(e)] for i, e in enumerate(chunk)]
        return out

    def predict(self, docs) -> list[list[Relation]]:
        """Relations per document (argmax over labels per ordered pair; a symmetric type is
        reported once per unordered pair)."""
        docs = check_documents(docs, "docs")
        result = []
        for doc, probs in zip(docs, self.predict_proba(docs)):
            pred = probs.argmax(-1)
            rels, seen = [], set()
            for u, v in zip(*np.nonzero(pred)):
                if u == v:
                    continue
                typ = LABELS[pred[u, v]]
                key = (typ, *sorted((u, v))) if typ in SYMMETRIC else (typ, u, v)
                if key not in seen:
                    seen.add(key)
                    rels.append(Relation(doc.entities[u].id, doc.entities[v].id, typ))
            result.append(rels)
        return result

    def evaluate(self, docs) -> dict:
        """Relation F1 (hierarchical = is-a, peer = related-to + dependent-on, overall) and the
        share of documents whose predicted is-a graph (P > 0.5) has a directed cycle."""
        docs = check_documents(docs, "docs")
        probs = self.predict_proba(docs)
        pred = self.predict(docs)
        out = relation_f1(pred, docs)
        out["cycle_rate"] = cycle_rate(probs)
        return out


class HGNet(_RelationExtractor):
    """HGNet relation extractor (``fit`` / ``predict`` / ``evaluate`` /
    ``abstraction_scores``). ``use_dhl`` / ``use_caf`` switch the structural losses (the
    paper's ablations); λ1, λ2 weight them in L = L_RE + λ1 L_hier + λ2 L_caf."""

    def __init__(
        self,
        encoder="minilm",
        *,
        hidden: int = 128,
        layers: int = 3,
        lambda_acyc: float = 1.0,
        lambda_sep: float = 0.1,
        delta: float = 0.5,
        gammas: tuple[float, float] = (1.0, 0.5),
        lambda_hier: float = 1.0,
        lambda_caf: float = 1.0,
        use_dhl: bool = True,
        use_caf: bool = True,
        dropout: float = 0.2,
        lr: float = 1e-3,
        epochs: int = 30,
        batch_size: int = 8,
        device: str = "cpu",
    ):
        super().__init__(
            encoder,
            hidden=hidden,
            dropout=dropout,
            lr=lr,
            epochs=epochs,
            batch_size=batch_size,
            device=device,
        )
        self.layers = V.check_int(layers, "layers", low=1)
        self.lambda_hier = V.check_scalar(lambda_hier, "lambda_hier", low=0.0)
        self.lambda_caf = V.check_scalar(lambda_caf, "lambda_caf", low=0.0)
        self.use_dhl = V.check_bool(use_dhl, "use_dhl")
        self.use_caf = V.check_bool(use_caf, "use_caf")
        self.hierarchy_loss = HierarchyLoss(lambda_acyc, lambda_sep)
        self._caf_args = (delta, tuple(gammas))
        CAFLoss(1, delta, tuple(gammas))  # validate now

    def _build(self, in_dim: int) -> nn.Module:
        net = HGNetModule(in_dim, self.hidden, self.layers, self.dropout)
        net.caf = CAFLoss(self.hidden, *self._caf_args)
        return net

    def _extra_loss(self, out: dict, batch: _Batch) -> torch.Tensor:
        loss = out["logits"].new_zeros(())
        if self.use_dhl:
            loss = loss + self.lambda_hier * self.hierarchy_loss(out["parent"], batch.mask)
        if self.use_caf:
            loss = loss + self.lambda_caf * self.net.caf(out["h"], batch.child_parent, batch.topo)
        return loss

    def abstraction_scores(self, docs) -> list[np.ndarray]:
        """ŷ(v) = h_v · w per entity of each document (higher = more abstract)."""
        if self.net is None:
            raise RuntimeError("this model is not fitted yet; call fit first")
        docs = check_documents(docs, "docs")
        embeddings = self._embed(docs)
        with torch.inference_mode():
            out = []
            for b in range(0, len(docs), 64):
                chunk = embeddings[b : b + 64]
                batch = _Batch(chunk, None)
                y = self.net.caf.scores(self._forward(batch)["h"]).cpu().numpy()
                out += [y[i, : len(e)] for i, e in enumerate(chunk)]
        return out

    def latent_parent(self, docs) -> list[np.ndarray]:
        """The soft latent A_parent (n, n) of each document."""
        if self.net is None:
            raise RuntimeError("this model is not fitted yet; call fit first")
        docs = check_documents(docs, "docs")
        embeddings = self._embed(docs)
        with torch.inference_mode():
            batch = _Batch(embeddings, None)
            a = self._forward(batch)["parent"].cpu().numpy()
        return [a[i, : len(e), : len(e)] for i, e in enumerate(embeddings)]

    def forward_flops(self, n_entities: int) -> int:
        """Multiply-adds x 2 of one inference forward pass on a document of ``n`` entities
        (a load-free count beside documents/s)."""
        n = V.check_int(n_entities, "n_entities", low=1)
        if self.net is None:
            raise RuntimeError("not fitted yet; call fit first")
        d_in, h, k = self.net.in_dim, self.hidden, self.layers
        macs = n * d_in * h  # input projection
        macs += n * n * (2 * h * h + h * 3)  # latent predictor
        macs += k * (3 * n * h * h + 3 * n * n * h + n * 4 * h * h)  # channels + update
        macs += n * n * (3 * h * h + h * len(LABELS))  # pair head
        return 2 * macs


class PairwiseRelationClassifier(_RelationExtractor):
    """Baseline: the pair head on projected entity embeddings, no message passing
    (the span-pair classifier analogue of PURE / PL-Marker)."""

    def _build(self, in_dim: int) -> nn.Module:
        return _PairwiseNet(in_dim, self.hidden, self.dropout)


class _PairwiseNet(nn.Module):
    def __init__(self, in_dim: int, hidden: int, dropout: float):
        super().__init__()
        self.inp = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Dropout(dropout))
        self.head = PairHead(hidden, dropout=dropout)

    def forward(self, h, mask):
        return {"logits": self.head(self.inp(h))}


class GATRelationClassifier(_RelationExtractor):
    """Baseline: a GAT over the complete entity graph of each document + the same pair head."""

    def __init__(
        self, encoder="minilm", *, layers: int = 3, heads: int = 1, backend: str = "auto", **kwargs
    ):
        super().__init__(encoder, **kwargs)
        self.layers = V.check_int(layers, "layers", low=1)
        self.heads = V.check_int(heads, "heads", low=1)
        self.backend = V.check_choice(backend, "backend", ("auto", "pyg", "dense"))

    def _build(self, in_dim: int) -> nn.Module:
        return _GATNet(in_dim, self.hidden, self.layers, self.heads, self.dropout, self.backend)


class _GATNet(nn.Module):
    def __init__(self, in_dim, hidden, layers, heads, dropout, backend):
        super().__init__()
        self.encoder = GATEncoder(in_dim, hidden, layers, heads, dropout, backend)
        self.head = PairHead(hidden, dropout=dropout)

    def forward(self, h, mask):
        return {"logits": self.head(self.encoder(h, mask))}


# ---------------------------------------------------------------- metrics


def _relation_set(doc_index: int, rels, types) -> set:
    out = set()
    for r in rels:
        if r.type not in types:
            continue
        if r.type in SYMMETRIC:
            out.add((doc_index, r.type, *sorted((r.source, r.target))))
        else:
            out.add((doc_index, r.type, r.source, r.target))
    return out


def relation_f1(predicted, docs) -> dict:
    """Micro F1 of typed directed relations (symmetric types unordered): ``hier_f1`` over
    is-a, ``peer_f1`` over related-to + dependent-on, ``f1`` over all."""
    docs = check_documents(docs, "docs", need_entities=False)
    if len(predicted) != len(docs):
        raise ValueError(
            f"predicted must have one list per document: {len(predicted)} vs {len(docs)}"
        )
    groups = {"hier": {IS_A}, "peer": set(RELATION_TYPES) - {IS_A}, "all": set(RELATION_TYPES)}
    out = {}
    for name, types in groups.items():
        pred = set().union(*(_relation_set(i, p, types) for i, p in enumerate(predicted)))
        gold = set().union(*(_relation_set(i, d.relations, types) for i, d in enumerate(docs)))
        tp = len(pred & gold)
        prec = tp / len(pred) if pred else 0.0
        rec = tp / len(gold) if gold else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        out["f1" if name == "all" else f"{name}_f1"] = f1
    return out


def cycle_rate(probabilities, threshold: float = 0.5) -> float:
    """Share of documents whose graph of pairs with P(is-a) > ``threshold`` (child -> parent)
    has a directed cycle. ``probabilities``: per document (n, n, labels) or (n, n) arrays."""
    threshold = V.check_probability(threshold, "threshold")
    probabilities = list(probabilities)
    if not probabilities:
        raise ValueError("probabilities is empty: need at least one document")
    cyclic = 0
    for i, p in enumerate(probabilities):
        p = V.check_array(p, f"probabilities[{i}]", ndim=(2, 3))
        a = p[..., LABELS.index(IS_A)] if p.ndim == 3 else p
        a = (a > threshold) & ~np.eye(len(a), dtype=bool)
        if not nx.is_directed_acyclic_graph(
            nx.from_numpy_array(a.astype(np.int8), create_using=nx.DiGraph)
        ):
            cyclic += 1
    return cyclic / len(probabilities)
