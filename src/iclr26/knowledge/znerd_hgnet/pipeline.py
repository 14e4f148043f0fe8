"""Text -> knowledge graph: Z-NERD spans, HGNet relations, exported as a ``networkx.DiGraph``.

Nodes are entity names (lower-cased, whitespace-normalised) with their type, mention count,
source documents and, when the relation model is an HGNet trained with CAF, the mean abstraction
score ŷ. Edges carry the relation type and how many documents support them; ``is-a-subconcept-of``
edges point child -> parent as in SPHERE.
"""

from __future__ import annotations

from collections import Counter

import networkx as nx
import numpy as np

from iclr26 import validation as V

from .data import Document, Entity, check_documents
from .encoder import check_texts

__all__ = ["KGPipeline", "to_networkx", "documents_from_spans"]


def _key(name: str) -> str:
    return " ".join(name.lower().split())


def documents_from_spans(texts, spans) -> list[Document]:
    """Documents whose entities are the predicted spans (identical surface strings of one text
    become one entity with several mentions)."""
    texts = check_texts(texts)
    if len(spans) != len(texts):
        raise ValueError(f"spans must have one list per text: {len(spans)} vs {len(texts)}")
    docs = []
    for k, (text, found) in enumerate(zip(texts, spans)):
        groups: dict[str, list] = {}
        types: dict[str, Counter] = {}
        for s, e, typ in found:
            if not (0 <= s < e <= len(text)):
                raise ValueError(f"spans[{k}]: span ({s}, {e}) lies outside the text")
            key = _key(text[s:e])
            groups.setdefault(key, []).append((s, e))
            types.setdefault(key, Counter())[typ] += 1
        entities = [
            Entity(f"E{i}", key, types[key].most_common(1)[0][0], tuple(groups[key]))
            for i, key in enumerate(groups)
        ]
        docs.append(Document(text, entities, [], doc_id=f"text-{k}"))
    return docs


def to_networkx(docs, relations=None, scores=None) -> nx.DiGraph:
    """Merge documents into one DiGraph keyed by normalised entity names. ``relations``
    (one list per document) defaults to each document's gold relations; ``scores`` (one array
    per document, aligned with its entities) adds the mean abstraction score per node."""
    docs = check_documents(docs, "docs", need_entities=False)
    if relations is not None and len(relations) != len(docs):
        raise ValueError(
            f"relations must have one list per document: {len(relations)} vs {len(docs)}"
        )
    if scores is not None and len(scores) != len(docs):
        raise ValueError(f"scores must have one array per document: {len(scores)} vs {len(docs)}")
    g = nx.DiGraph()
    score_sum: Counter = Counter()
    for k, doc in enumerate(docs):
        names = {}
        for i, ent in enumerate(doc.entities):
            key = _key(ent.name)
            names[ent.id] = key
            if key not in g:
                g.add_node(key, type=ent.type, mentions=0, documents=[])
            g.nodes[key]["mentions"] += len(ent.spans)
            g.nodes[key]["documents"].append(doc.doc_id or str(k))
            if scores is not None:
                row = V.check_array(scores[k], f"scores[{k}]", ndim=1, n_rows=len(doc.entities))
                score_sum[key] += float(row[i])
        for rel in doc.relations if relations is None else relations[k]:
            u, v = names[rel.source], names[rel.target]
            if u == v:
                continue
            if g.has_edge(u, v) and g.edges[u, v]["type"] == rel.type:
                g.edges[u, v]["support"] += 1
            else:
                g.add_edge(u, v, type=rel.type, support=1)
    if scores is not None:
        for key in g.nodes:
            g.nodes[key]["abstraction"] = score_sum[key] / len(g.nodes[key]["documents"])
    return g


class KGPipeline:
    """``KGPipeline(tagger, relation_model).build(texts)`` -> ``networkx.DiGraph``."""

    def __init__(self, tagger, relation_model):
        self.tagger = V.check_module_attrs(tagger, "tagger", ("predict",))
        self.relation_model = V.check_module_attrs(relation_model, "relation_model", ("predict",))

    def extract(self, texts) -> list[Document]:
        """Documents with predicted entities and relations."""
        texts = check_texts(texts)
        docs = documents_from_spans(texts, self.tagger.predict(texts))
        keep = [i for i, d in enumerate(docs) if len(d.entities) >= 2]
        if keep:
            sub = [docs[i] for i in keep]
            for doc, rels in zip(sub, self.relation_model.predict(sub)):
                doc.relations = rels
        return docs

    def build(self, texts) -> nx.DiGraph:
        docs = self.extract(texts)
        scores = None
        if hasattr(self.relation_model, "abstraction_scores") and getattr(
            self.relation_model, "use_caf", False
        ):
            with_entities = [d for d in docs if d.entities]
            got = (
                iter(self.relation_model.abstraction_scores(with_entities))
                if with_entities
                else iter(())
            )
            scores = [next(got) if d.entities else np.zeros(0) for d in docs]
        return to_networkx(docs, scores=scores)
