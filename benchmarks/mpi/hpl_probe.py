"""The measured inputs of the HPL model, taken on the run's grid in the same job.

:func:`grid_probe` runs on every rank of a grid after the warm-up and before the timed
calls of ``benchmarks/mpi/hpl.py``, every rank at once (so each measures its share of the
machine, as in the run), and gives the fields that :func:`tme_model.hpl_check.check_runs`
prices a run with (stored in each record of the grid):

``rank_rates``
    Per rank, :func:`benchmarks.mpi.probe.rank_rates` (the keyword arguments of
    :class:`tme_model.network.RankRates`, and ``shape``) on the rank's block of the first
    trailing update, ``m_p(nb) x nb x n_q(nb)``, with the emulated updates' scheme and
    moduli, ``products="serial"`` (an update runs the serial pipeline on its block).
``panel_probe``
    ``{"width": nb, "rows": [R_first, R_last], "seconds": [t_first, t_last]}``:
    :func:`ozaki.distributed.panel.factor_panel` over each process column (all columns
    at once) of a panel of HPL's entries (uniform in [-0.5, 0.5)) holding each rank's
    rows ``>= k`` of the layout, for the first panel (``k = 0``) and the last one of full
    width (``k = nb (n // nb - 1)``; only the first when ``n < 2 nb``).  ``rows``: the
    tallest rank's count; ``seconds``: per rank the fastest of ``repeats`` calls (after
    one untimed), the slowest rank's.  It holds whatever the panel costs on this machine:
    the level-2 work at the rate the panel's code runs, the per-column Python and mpi4py
    overhead and the column's all-gathers (one per column when ``P > 1``).
``interchange_probe``
    ``{"bytes": B, "seconds": t}``: :func:`ozaki.distributed.rows.move_rows` over each
    process column on a copy of the rank's local matrix, with the interchanges of a
    first panel (pivots ``piv[j]`` uniform on ``j..n-1``, the same draw on every rank;
    the panel's own columns left out on its process column, as ``lu_factor``);
    ``B = 8 c (written + read)``: the bytes of the rows the busiest rank writes and reads
    on its ``c`` columns; ``seconds``: as the panel's.  Its rate ``B / t`` holds the
    fancy-indexed row copies and, with ``P > 1``, the all-to-all.
"""

from __future__ import annotations

import time
from functools import partial

import numpy as np

__all__ = ["grid_probe", "moved_bytes", "uniform_pivots"]


def uniform_pivots(n: int, w: int, rng) -> np.ndarray:
    """``w`` LU-like pivots of an ``n``-row panel at ``k = 0``: ``piv[j]`` uniform on
    ``j..n-1`` (a Fisher-Yates draw, the model's assumption for HPL's matrices), int64."""
    return np.array([rng.integers(j, n) for j in range(w)], np.int64)


def moved_bytes(moves: dict, nb: int, P: int, p: int, columns: int) -> int:
    """The bytes process row ``p`` writes and reads in ``move_rows`` with ``moves``
    (``{row: source}``, global rows dealt in blocks of ``nb`` over ``P``): 8 per column
    of each destination row it holds and of each source row it holds."""
    held = sum(((r // nb) % P == p) + ((s // nb) % P == p) for r, s in moves.items())
    return 8 * int(columns) * int(held)


def _fastest(comm, make, repeats: int) -> float:
    """This rank's fastest of ``repeats`` calls (after one untimed), each after a barrier;
    ``make()`` prepares a call's operands, untimed, and returns the call."""
    best = np.inf
    for i in range(repeats + 1):
        call = make()
        comm.Barrier()
        t0 = time.perf_counter()
        call()
        if i:
            best = min(best, time.perf_counter() - t0)
    return best


def grid_probe(A, profile: str, *, repeats: int = 3, seed: int = 0) -> dict | None:
    """The measured inputs of the module docstring, for the run of ``A`` on its grid.

    Collective over ``A.grid``'s ranks.

    Parameters
    ----------
    A : ozaki.distributed.CyclicMatrix, (n, n)
        The run's matrix (its layout and block size; never modified).
    profile : str
        The calibration profile's file (:func:`tme_model.profile_file.load_profile`) the
        rates are relative to: the one the check uses.
    repeats : int
        Timed calls of each probe, the fastest kept.
    seed : int
        Of the probes' entries and pivots.

    Returns
    -------
    dict or None
        On the grid's rank 0, ``{"rank_rates", "panel_probe", "interchange_probe"}``;
        ``None`` elsewhere.
    """
    import ozaki
    from ozaki.distributed.panel import factor_panel
    from ozaki.distributed.rows import composed, move_rows
    from ozaki.distributed.traffic import Traffic

    from tme_model.profile_file import load_profile

    from .probe import rank_rates

    grid, n, nb = A.grid, A.shape[0], A.block_size
    comm, w = grid.comm, min(nb, n)
    opts = ozaki.resolve_options()
    count = (ozaki.auto_num_moduli(opts.scheme, w) if opts.num_moduli == "auto"
             else int(opts.num_moduli))
    shape = (max(1, int(np.sum(A.rows >= w))), w, max(1, int(np.sum(A.cols >= w))))
    rates = rank_rates(comm, load_profile(profile), shape, scheme=opts.scheme, num_moduli=count,
                       repeats=repeats, seed=seed, products="serial")
    rng = np.random.default_rng([seed, comm.Get_rank()])
    heights = [0] + ([nb * (n // nb - 1)] if n // nb >= 2 else [])
    rows, panel = [], []
    for k in heights:  # this rank's rows >= k of a panel of HPL's entries
        mine = np.ascontiguousarray(A.rows[A.rows >= k])
        entries = rng.random((len(mine), w)) - 0.5
        panel.append(_fastest(comm, lambda: partial(factor_panel, entries.copy(), mine, k,
                                                    grid.col, Traffic()), repeats))
        rows.append(len(mine))
    moves = composed(uniform_pivots(n, w, np.random.default_rng(seed)), 0)
    outside = (slice(w, None),) if grid.q == 0 else (slice(None),)  # k = 0: column 0
    X = A.local.copy()
    moved = _fastest(comm, lambda: partial(move_rows, grid.col, X, moves, nb, outside,
                                           Traffic()), repeats)
    columns = sum(len(range(X.shape[1])[c]) for c in outside)
    mine = (rates, rows, panel, moved_bytes(moves, nb, grid.P, grid.p, columns), moved)
    got = comm.gather(mine, root=0)
    if comm.Get_rank() != 0:
        return None
    return {"rank_rates": [{**g[0]["rates"], "shape": list(g[0]["shape"])} for g in got],
            "panel_probe": {"width": w, "rows": [max(g[1][i] for g in got)
                                                 for i in range(len(heights))],
                            "seconds": [max(g[2][i] for g in got)
                                        for i in range(len(heights))]},
            "interchange_probe": {"bytes": max(g[3] for g in got),
                                  "seconds": max(g[4] for g in got)}}
