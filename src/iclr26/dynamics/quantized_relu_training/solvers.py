"""Exact solvers for d-QNNT: brute force, the signature dynamic programme, and CP-SAT.

The signature DP is the fixed-parameter-tractable algorithm for alpha + width + omega
(Corollary 2 of the paper, specialised to layered networks whose tree decomposition is a
path of layers): after deduplication there are p <= d^alpha distinct inputs, a neuron is
fully described by its *signature* (its values on those p inputs), and a DP over neurons in
topological order only has to remember the signatures of the frontier (neurons that still
feed unprocessed ones, and the outputs). The number of states is at most (d^p)^F, which
does not depend on n or depth; the running time is linear in n (deduplication) and in the
number of neurons, and explodes only through p (alpha) and the frontier size F.
With an error budget ell the DP also prunes states whose partially determined outputs
already err on more than ell points (the alpha + width + ell variant).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from iclr26 import validation as V

from .instance import QNNTInstance, forward_batch, pair_errors


@dataclass
class SolverResult:
    """What an exact solver returns.

    ``error`` is the error of the returned witness (``weights``/``biases``), ``min_error`` the
    proven minimum (``None`` when not proven), ``feasible`` whether some assignment errs on at
    most ``ell`` points (``None`` when undecided), ``status`` one of ``optimal``, ``feasible``,
    ``infeasible``, ``time_limit``, ``state_limit``.
    """

    status: str
    min_error: int | None
    error: int | None
    feasible: bool | None
    weights: dict = field(default_factory=dict)
    biases: dict = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)


def _check_instance(inst) -> None:
    if not isinstance(inst, QNNTInstance):
        raise TypeError(f"inst must be a QNNTInstance, got {type(inst).__name__}")


def _check_time_limit(time_limit) -> float | None:
    return V.check_scalar(time_limit, "time_limit", low=0.0, low_open=True, allow_none=True)


def _as_dicts(inst: QNNTInstance, w_rows: dict, b_vals: dict) -> tuple[dict, dict]:
    arch = inst.architecture
    weights = {
        (u, v): int(w_rows[v][k]) for v in arch.computed for k, u in enumerate(arch.predecessors[v])
    }
    biases = {v: int(b_vals[v]) for v in arch.computed}
    return weights, biases


def _decision(inst: QNNTInstance, best: int | None, proven: bool) -> tuple[str, bool | None]:
    if best is None:
        return ("infeasible", False) if proven else ("time_limit", None)
    if inst.ell is None:
        return ("optimal" if proven else "time_limit"), True
    if best <= inst.ell:
        return ("optimal" if proven else "feasible"), True
    return ("infeasible", False) if proven else ("time_limit", None)


def solve_brute_force(
    inst: QNNTInstance,
    *,
    time_limit: float | None = None,
    chunk_elements: int = 1 << 22,
    max_assignments: int = 1 << 40,
) -> SolverResult:
    """Enumerate all d^(#weights + #biases) assignments in vectorised chunks on the
    deduplicated data. Stops early at error 0, or at error <= ell when ``inst.ell`` is set."""
    _check_instance(inst)
    time_limit = _check_time_limit(time_limit)
    chunk_elements = V.check_int(chunk_elements, "chunk_elements", low=1)
    max_assignments = V.check_int(max_assignments, "max_assignments", low=1)
    start = time.perf_counter()
    arch, dom, data = inst.architecture, inst.domain, inst.distinct()
    n_params = arch.n_parameters
    total = dom.d**n_params
    if total > max_assignments:
        raise ValueError(
            f"max_assignments={max_assignments} is below the {total} assignments of this "
            "instance; use solve_signature_dp"
        )
    slots, offset = {}, 0
    for v in arch.computed:
        k = len(arch.predecessors[v])
        slots[v] = (offset, k)
        offset += k + 1
    target = 0 if inst.ell is None else inst.ell
    chunk = int(max(1, chunk_elements // max(1, data.p * len(arch.computed))))
    powers = dom.d ** np.arange(n_params, dtype=np.int64)
    best_err, best_digits, done, evaluated = None, None, True, 0
    for first in range(0, total, chunk):
        idx = np.arange(first, min(first + chunk, total), dtype=np.int64)
        digits = ((idx[:, None] // powers[None, :]) % dom.d + dom.lo).astype(np.int32)
        w = {v: digits[:, o : o + k] for v, (o, k) in slots.items()}
        b = {v: digits[:, o + k] for v, (o, k) in slots.items()}
        errors = pair_errors(
            forward_batch(arch, dom, data.inputs, w, b, inst.output_activation), data
        )
        evaluated += idx.size
        i = int(np.argmin(errors))
        if best_err is None or errors[i] < best_err:
            best_err, best_digits = int(errors[i]), digits[i].copy()
        if best_err <= target:
            break
        if time_limit is not None and time.perf_counter() - start > time_limit:
            done = False
            break
    proven = done and (evaluated == total or best_err == 0)
    weights, biases = _as_dicts(
        inst,
        {v: best_digits[o : o + k] for v, (o, k) in slots.items()},
        {v: best_digits[o + k] for v, (o, k) in slots.items()},
    )
    if inst.ell is not None and best_err > inst.ell and not proven:
        status, feasible = "time_limit", None
    else:
        status, feasible = _decision(inst, best_err, proven)
        if status == "infeasible":
            feasible = False
    return SolverResult(
        status=status,
        min_error=best_err if proven else None,
        error=best_err,
        feasible=feasible,
        weights=weights,
        biases=biases,
        stats={
            "distinct_inputs": data.p,
            "assignments_total": total,
            "assignments_evaluated": evaluated,
            "seconds": time.perf_counter() - start,
        },
    )


def _signature_ids(sigs: np.ndarray) -> np.ndarray:
    """Lexicographic ids of signature rows (m, p) int8."""
    rows = np.ascontiguousarray(sigs).view(np.dtype((np.void, sigs.shape[1])))[:, 0]
    return np.unique(rows, return_inverse=True)[1].reshape(-1)


def _state_keys(states: np.ndarray, groups: list[list[int]]) -> np.ndarray:
    """One comparable key per state; interchangeable neurons' signatures are sorted first so
    that states equal up to swapping them share a key."""
    n_states, width, p = states.shape
    ids = _signature_ids(states.reshape(-1, p)).reshape(n_states, width)
    for cols in groups:
        ids[:, cols] = np.sort(ids[:, cols], axis=1)
    ids = np.ascontiguousarray(ids.astype(np.int64))
    return ids.view(np.dtype((np.void, 8 * width)))[:, 0]


def _merge(parts, groups_list):
    """One deduplicated (states, parent, combo) triple from several chunks' triples."""
    cand = np.concatenate([q[0] for q in parts])
    parent_idx = np.concatenate([q[1] for q in parts])
    combo_idx = np.concatenate([q[2] for q in parts])
    _, first = np.unique(_state_keys(cand, groups_list), return_index=True)
    return cand[first], parent_idx[first], combo_idx[first]


def solve_signature_dp(
    inst: QNNTInstance,
    *,
    time_limit: float | None = None,
    max_states: int = 2_000_000,
    canonicalize: bool = True,
    prune_by_ell: bool = True,
    chunk_elements: int = 1 << 23,
) -> SolverResult:
    """Exact training by dynamic programming over frontier signatures (see module docstring).

    ``max_states`` and ``time_limit`` are checked *inside* the expansion of every neuron, after
    each chunk of parent states: the states held at any moment never exceed ``max_states`` by
    more than one chunk's output, which is capped at ``max(n_comb, max_states // 16)``
    candidates (``n_comb`` = weight/bias choices of the neuron), so memory stays bounded by the
    limit. ``stats`` reports the load-free work counts: ``states`` (table size after each
    neuron), ``candidates`` (parent-state x weight/bias combinations evaluated),
    ``signature_values`` (candidates x p activations computed) and ``peak_states``."""
    _check_instance(inst)
    time_limit = _check_time_limit(time_limit)
    max_states = V.check_int(max_states, "max_states", low=1)
    chunk_elements = V.check_int(chunk_elements, "chunk_elements", low=1)
    canonicalize = V.check_bool(canonicalize, "canonicalize")
    prune_by_ell = V.check_bool(prune_by_ell, "prune_by_ell")
    start = time.perf_counter()
    arch, dom, data = inst.architecture, inst.domain, inst.distinct()
    p = data.p
    step_of = {v: t for t, v in enumerate(arch.computed)}
    outputs = set(arch.outputs)
    last_use = {
        v: max((step_of[s] for s in arch.graph.successors(v)), default=-1) for v in arch.computed
    }
    group_of = arch.interchangeable_groups() if canonicalize else {}
    constant = {u: data.inputs[:, i].astype(np.int16) for i, u in enumerate(arch.inputs)}
    bias_values = dom.values.astype(np.int16)
    states = np.zeros((1, 0, p), dtype=np.int8)
    frontier: list = []
    trace: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    max_seen, peak_held, status = 1, 1, None
    table_sizes: list[int] = []
    candidates_evaluated = 0

    def out_of_time() -> bool:
        return time_limit is not None and time.perf_counter() - start > time_limit

    for t, v in enumerate(arch.computed):
        preds = arch.predecessors[v]
        grid = np.array(list(itertools.product(dom.values, repeat=len(preds))), dtype=np.int16)
        grid = grid.reshape(-1, len(preds))
        n_comb = grid.shape[0] * bias_values.size
        kept = [j for j, u in enumerate(frontier) if u in outputs or last_use[u] > t]
        new_frontier = [frontier[j] for j in kept]
        if v in outputs or last_use[v] > t:
            new_frontier.append(v)
        groups: dict[int, list[int]] = {}
        for j, u in enumerate(new_frontier):
            if u in group_of:
                groups.setdefault(group_of[u], []).append(j)
        groups_list = [cols for cols in groups.values() if len(cols) > 1]
        kind = inst.output_activation if v in outputs else "relu_d"
        prune = None
        if inst.ell is not None and prune_by_ell and v in outputs:
            done_outputs = [u for u in arch.outputs if u in new_frontier and step_of[u] <= t]
            prune = (
                [new_frontier.index(u) for u in done_outputs],
                [arch.outputs.index(u) for u in done_outputs],
            )
        # a chunk of parents yields at most chunk * n_comb candidates: cap that by the limit
        per_chunk = max(n_comb, max_states // 16)
        chunk = max(1, min(chunk_elements // (n_comb * p), per_chunk // n_comb))
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        held = 0
        for s0 in range(0, states.shape[0], chunk):
            block = states[s0 : s0 + chunk]
            c = block.shape[0]
            candidates_evaluated += c * n_comb
            parents = np.stack(
                [
                    np.broadcast_to(constant[u], (c, p))
                    if u in constant
                    else block[:, frontier.index(u)].astype(np.int16)
                    for u in preds
                ],
                axis=1,
            )
            pre = np.einsum("ckp,wk->cwp", parents, grid)
            pre = pre[:, :, None, :] - bias_values[None, None, :, None]
            sig = dom.activate(pre, kind).astype(np.int8).reshape(c * n_comb, p)
            parent_idx = np.repeat(np.arange(s0, s0 + c), n_comb)
            combo_idx = np.tile(np.arange(n_comb), c)
            # distinct (parent, new signature) pairs first: most combinations collide
            sig_id = _signature_ids(sig)
            pair_key = parent_idx * (int(sig_id.max()) + 1) + sig_id
            _, first = np.unique(pair_key, return_index=True)
            sig, parent_idx, combo_idx = sig[first], parent_idx[first], combo_idx[first]
            if v in new_frontier:
                cand = np.concatenate([states[parent_idx][:, kept], sig[:, None, :]], axis=1)
            else:
                cand = states[parent_idx][:, kept]
            _, first = np.unique(_state_keys(cand, groups_list), return_index=True)
            cand, parent_idx, combo_idx = cand[first], parent_idx[first], combo_idx[first]
            if prune is not None:
                alive = pair_errors(cand[:, prune[0]], data, prune[1]) <= inst.ell
                cand, parent_idx, combo_idx = cand[alive], parent_idx[alive], combo_idx[alive]
            parts.append((cand, parent_idx, combo_idx))
            held += cand.shape[0]
            peak_held = max(peak_held, held)
            if held > max_states and len(parts) > 1:
                parts = [_merge(parts, groups_list)]
                held = parts[0][0].shape[0]
            if held > max_states:
                status = "state_limit"
                break
            if out_of_time():
                status = "time_limit"
                break
        if status is not None:
            max_seen = max(max_seen, held)
            break
        if len(parts) > 1:
            parts = [_merge(parts, groups_list)]
        if parts:
            cand, parent_idx, combo_idx = parts[0]
        else:  # no parent state: nothing to expand
            cand = np.zeros((0, len(new_frontier), p), dtype=np.int8)
            parent_idx = combo_idx = np.zeros(0, dtype=np.int64)
        states, frontier = cand, new_frontier
        trace.append((parent_idx, combo_idx, grid))
        table_sizes.append(int(states.shape[0]))
        max_seen = max(max_seen, states.shape[0])
        if states.shape[0] == 0:
            break
    stats = {
        "distinct_inputs": p,
        "max_states": int(max_seen),
        "peak_states": int(peak_held),
        "states": table_sizes,
        "states_total": int(sum(table_sizes)),
        "candidates": int(candidates_evaluated),
        "signature_values": int(candidates_evaluated) * p,
        "seconds": time.perf_counter() - start,
    }
    if status is not None:
        return SolverResult(status, None, None, None, stats=stats)
    if states.shape[0] == 0:
        stats["seconds"] = time.perf_counter() - start
        return SolverResult("infeasible", None, None, False, stats=stats)
    out_cols = [frontier.index(u) for u in arch.outputs]
    errors = pair_errors(states[:, out_cols], data)
    best = int(np.argmin(errors))
    best_err = int(errors[best])
    w_rows, b_vals = {}, {}
    idx = best
    for (parent_idx, combo_idx, grid), v in zip(reversed(trace), reversed(arch.computed)):
        combo = int(combo_idx[idx])
        w_rows[v] = grid[combo // bias_values.size]
        b_vals[v] = bias_values[combo % bias_values.size]
        idx = int(parent_idx[idx])
    weights, biases = _as_dicts(inst, w_rows, b_vals)
    status, feasible = _decision(inst, best_err, True)
    stats["seconds"] = time.perf_counter() - start
    return SolverResult(status, best_err, best_err, feasible, weights, biases, stats)


def solve_cpsat(
    inst: QNNTInstance, *, time_limit: float | None = None, workers: int = 1
) -> SolverResult:
    """Exact training as a CP-SAT model (OR-Tools): weights/biases as integer variables,
    per distinct input a pre-activation with AddMultiplicationEquality for products of two
    variables and AddMax/AddMin equalities for ReLU_d; minimise the weighted error."""
    _check_instance(inst)
    time_limit = _check_time_limit(time_limit)
    workers = V.check_int(workers, "workers", low=1)
    try:
        from ortools.sat.python import cp_model
    except ImportError as exc:  # optional dependency
        raise ImportError("solve_cpsat needs OR-Tools: pip install ortools") from exc
    start = time.perf_counter()
    arch, dom, data = inst.architecture, inst.domain, inst.distinct()
    lo, hi = dom.lo, dom.hi
    big = max(abs(lo), hi)
    model = cp_model.CpModel()
    w = {e: model.NewIntVar(lo, hi, f"w{i}") for i, e in enumerate(arch.edges)}
    b = {v: model.NewIntVar(lo, hi, f"b{i}") for i, v in enumerate(arch.computed)}
    value: dict = {}
    for x in range(data.p):
        for i, u in enumerate(arch.inputs):
            value[u, x] = int(data.inputs[x, i])
        for v in arch.computed:
            preds = arch.predecessors[v]
            bound = len(preds) * big * big + big
            terms = []
            for u in preds:
                if isinstance(value[u, x], int):
                    terms.append(value[u, x] * w[u, v])
                else:
                    prod = model.NewIntVar(-big * big, big * big, "")
                    model.AddMultiplicationEquality(prod, [value[u, x], w[u, v]])
                    terms.append(prod)
            pre = model.NewIntVar(-bound, bound, "")
            model.Add(pre == sum(terms) - b[v])
            if v in arch.outputs and inst.output_activation == "clip":
                low_cut = model.NewIntVar(lo, bound, "")
                model.AddMaxEquality(low_cut, [pre, lo])
                out = model.NewIntVar(lo, hi, "")
                model.AddMinEquality(out, [low_cut, hi])
            else:
                positive = model.NewIntVar(0, bound, "")
                model.AddMaxEquality(positive, [pre, 0])
                out = model.NewIntVar(0, hi, "")
                model.AddMinEquality(out, [positive, hi])
            value[v, x] = out
    correct = []
    for q in range(data.pair_count.size):
        ok = model.NewBoolVar("")
        x = int(data.pair_input[q])
        for j, u in enumerate(arch.outputs):
            model.Add(value[u, x] == int(data.pair_label[q, j])).OnlyEnforceIf(ok)
        correct.append(ok)
    error = sum(int(c) * (1 - ok) for c, ok in zip(data.pair_count, correct))
    if inst.ell is not None:
        model.Add(error <= inst.ell)
    model.Minimize(error)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = int(workers)
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = float(time_limit)
    code = solver.Solve(model)
    stats = {"distinct_inputs": data.p, "seconds": time.perf_counter() - start}
    if code == cp_model.INFEASIBLE:
        return SolverResult("infeasible", None, None, False, stats=stats)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return SolverResult("time_limit", None, None, None, stats=stats)
    weights = {e: int(solver.Value(var)) for e, var in w.items()}
    biases = {v: int(solver.Value(var)) for v, var in b.items()}
    err = int(round(solver.ObjectiveValue()))
    proven = code == cp_model.OPTIMAL
    status, feasible = _decision(inst, err, proven)
    return SolverResult(status, err if proven else None, err, feasible, weights, biases, stats)
