"""Architectures of quantized networks: a DAG with alpha input and omega output neurons.

A neuron v computes f(v) = ReLU_d(sum_{u->v} f(u) w(u, v) - b(v)); the bias is subtracted,
as in the paper's definition of d-QNNT.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import networkx as nx

from iclr26 import validation as V


class Architecture:
    """A directed acyclic graph with ordered input and output neurons.

    ``inputs`` default to the sources in insertion order, ``outputs`` to the sinks.
    """

    def __init__(
        self,
        graph: nx.DiGraph,
        inputs: Sequence[Hashable] | None = None,
        outputs: Sequence[Hashable] | None = None,
    ) -> None:
        if not isinstance(graph, nx.DiGraph):
            raise TypeError("graph must be a networkx.DiGraph")
        if graph.number_of_nodes() == 0:
            raise ValueError("graph has no neurons")
        if not nx.is_directed_acyclic_graph(graph):
            raise ValueError("graph must be acyclic")
        sources = [v for v in graph.nodes if graph.in_degree(v) == 0]
        sinks = [v for v in graph.nodes if graph.out_degree(v) == 0]
        self.inputs = list(inputs) if inputs is not None else sources
        self.outputs = list(outputs) if outputs is not None else sinks
        if sorted(map(str, self.inputs)) != sorted(map(str, sources)):
            raise ValueError("inputs must be exactly the neurons without incoming edges")
        missing = [v for v in self.outputs if v not in graph]
        if missing:
            raise ValueError(f"outputs {missing} are not neurons of the graph")
        if not self.outputs:
            raise ValueError("the architecture needs at least one output neuron")
        if set(self.outputs) & set(self.inputs):
            raise ValueError("an output neuron cannot be an input neuron")
        self.graph = graph
        input_set = set(self.inputs)
        self.computed = [v for v in nx.topological_sort(graph) if v not in input_set]
        self.predecessors = {v: list(graph.predecessors(v)) for v in self.computed}

    @property
    def alpha(self) -> int:
        return len(self.inputs)

    @property
    def omega(self) -> int:
        return len(self.outputs)

    @property
    def edges(self) -> list[tuple[Hashable, Hashable]]:
        return [(u, v) for v in self.computed for u in self.predecessors[v]]

    @property
    def n_parameters(self) -> int:
        """Number of weights plus biases."""
        return sum(len(p) + 1 for p in self.predecessors.values())

    def interchangeable_groups(self) -> dict[Hashable, int]:
        """Hidden neurons with identical in- and out-neighbourhoods (e.g. one fully connected
        layer) get the same group id; swapping them maps solutions to solutions."""
        keys: dict[tuple, int] = {}
        group = {}
        out_set = set(self.outputs)
        for v in self.computed:
            if v in out_set:
                continue
            key = (frozenset(self.graph.predecessors(v)), frozenset(self.graph.successors(v)))
            group[v] = keys.setdefault(key, len(keys))
        return group

    def __repr__(self) -> str:
        return (
            f"Architecture(alpha={self.alpha}, omega={self.omega}, "
            f"neurons={self.graph.number_of_nodes()}, parameters={self.n_parameters})"
        )


def layered(alpha: int, widths: Sequence[int], omega: int) -> Architecture:
    """A fully connected layered network alpha -> widths[0] -> ... -> omega."""
    alpha = V.check_int(alpha, "alpha", low=1)
    omega = V.check_int(omega, "omega", low=1)
    if isinstance(widths, str) or not isinstance(widths, Sequence):
        raise TypeError(f"widths must be a sequence of positive integers, got {widths!r}")
    widths = [V.check_int(w, f"widths[{i}]", low=1) for i, w in enumerate(widths)]
    graph = nx.DiGraph()
    previous = [("x", i) for i in range(alpha)]
    graph.add_nodes_from(previous)
    for layer, width in enumerate(widths):
        current = [("h", layer, j) for j in range(width)]
        graph.add_nodes_from(current)
        graph.add_edges_from((u, v) for v in current for u in previous)
        previous = current
    outputs = [("y", j) for j in range(omega)]
    graph.add_nodes_from(outputs)
    graph.add_edges_from((u, v) for v in outputs for u in previous)
    return Architecture(graph, inputs=[("x", i) for i in range(alpha)], outputs=outputs)
