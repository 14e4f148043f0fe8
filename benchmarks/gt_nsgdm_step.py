"""Time one vectorised GT-NSGDm step against a plain dense ``W @ X`` torch step.

The reference is the update written directly with dense matrix products
(``v = beta v + (1 - beta) g``; ``y = W (y + v - v_prev)``; ``x = W (x - lr y / ||y||)``);
the package's step is ``GTNSGDm.step`` on the same state. Both run on the same tensors, one
thread, timed with ``iclr26.claims.timeit`` (minimum CPU time over repeats). Load-free counts
(flops of the two mixing rounds, dense and over the edges only) are printed beside the times.

    python benchmarks/gt_nsgdm_step.py [--repeat 7] [--number 200]
"""

from __future__ import annotations

import argparse

import torch

from iclr26.claims import timeit
from iclr26.optim.gt_nsgdm import GTNSGDm, graphs

CASES = [  # (nodes, dimension, grid of step sizes run at once, graph)
    (8, 20, 1, "ring"),
    (8, 20, 4, "ring"),
    (8, 1000, 1, "ring"),
    (64, 20, 1, "ring"),
    (64, 20, 4, "exponential"),
    (64, 1000, 1, "ring"),
]


def dense_reference(W, lr: float, beta: float, eps: float = 1e-12):
    """The dense torch step the package must not be slower than."""

    def step(s, g):
        v_prev = s["v"]
        s["v"] = beta * v_prev + (1 - beta) * g
        s["y"] = W @ (s["y"] + s["v"] - v_prev)
        s["x"] = W @ (s["x"] - lr * s["y"] / (s["y"].norm(dim=-1, keepdim=True) + eps))
        return s

    return step


def _graph(name: str, n: int):
    return graphs.ring(n) if name == "ring" else graphs.exponential(n)


def measure(n: int, d: int, grid: int, graph: str, repeat: int, number: int) -> dict:
    W = _graph(graph, n)
    gen = torch.Generator().manual_seed(0)
    shape = (grid, n, d) if grid > 1 else (n, d)
    grads = torch.randn(*shape, generator=gen, dtype=torch.float64)
    x0 = torch.randn(*shape, generator=gen, dtype=torch.float64)
    algo = GTNSGDm(W, lr=1e-2, beta=0.9)
    ref = dense_reference(W, 1e-2, 0.9)
    s_pkg, s_ref = algo.init(x0), algo.init(x0)
    t_pkg = timeit(lambda: algo.step(s_pkg, grads), repeat=repeat, number=number, threads=1)
    t_ref = timeit(lambda: ref(s_ref, grads), repeat=repeat, number=number, threads=1)
    # the same update: both trajectories agree to rounding
    agree = float((s_pkg["x"] - s_ref["x"]).abs().max())
    nnz = int((W > 0).sum())
    return {
        "n": n,
        "d": d,
        "grid": grid,
        "graph": graph,
        "pkg_us": t_pkg.cpu_s * 1e6,
        "dense_us": t_ref.cpu_s * 1e6,
        "ratio": t_pkg.cpu_s / t_ref.cpu_s,
        "mixing": algo.resolve_mixing(x0.numel() // n),
        "dense_flops": 4 * grid * n * n * d,  # two mixing rounds, 2 flops a multiply-add
        "sparse_flops": 4 * grid * nnz * d,
        "max_abs_diff": agree,
        "load": t_pkg.load_before,
    }


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=200)
    args = parser.parse_args(argv)
    rows = [measure(*case, repeat=args.repeat, number=args.number) for case in CASES]
    head = (
        f"{'n':>4} {'d':>5} {'grid':>4} {'graph':>11} {'mixing':>8} {'package us':>11} "
        f"{'dense W@X us':>13} {'ratio':>6} {'dense flops':>12} {'sparse flops':>13} "
        f"{'max|diff|':>9}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['n']:>4} {r['d']:>5} {r['grid']:>4} {r['graph']:>11} {r['mixing']:>8} "
            f"{r['pkg_us']:>11.1f} {r['dense_us']:>13.1f} {r['ratio']:>6.2f} "
            f"{r['dense_flops']:>12} {r['sparse_flops']:>13} {r['max_abs_diff']:>9.1e}"
        )
    print(f"load average (1 min) at start: {rows[0]['load']}; times are minimum CPU time per step")
    return rows


if __name__ == "__main__":
    main()
