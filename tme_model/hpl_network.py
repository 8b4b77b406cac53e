"""The distributed HPL of :func:`ozaki.distributed.lu_factor` in the model: traffic and time.

**Traffic.** :func:`hpl_traffic` gives what one rank ``(p, q)`` of a ``P x Q`` grid
sends in the factorisation of an ``n x n`` matrix dealt block-cyclically in ``nb``
blocks (flat-collective convention, :mod:`ozaki.distributed.traffic`: a broadcast's
root sends ``s - 1`` copies, an all-gather or all-to-all sends ``s - 1`` messages per
rank), kind by kind as ``info.traffic.by_kind`` counts it, from the layout alone.  Per
panel ``k`` (``w = min(nb, n - k)``, ``e = k + w``, block column on process column
``pc = (k / nb) mod Q``, diagonal block on process row ``pr = (k / nb) mod P``;
``m_p(i)``, ``n_q(i)``: the rows, columns ``>= i`` that ``p``, ``q`` holds):

* ``"pivots"``: on ``pc`` with ``P > 1``, ``w`` all-gathers of ``8 (3 + 2w)`` bytes
  (``w (P - 1)`` messages); from ``pc``, the ``8 (w + 1)`` bytes of the pivots along
  the row (``Q - 1``);
* ``"panels"``: from ``pc``, the panel's ``8 m_p(k) w`` bytes along the row; from
  ``pr`` (unless ``e = n``), ``U12``'s ``8 w n_q(e)`` down the column;
* ``"interchanges"``: ``P - 1`` messages (with ``P > 1``) of ``8 c_q`` bytes per row
  sent, ``c_q = n_q(0)`` (``pc``: ``n_q(0) - w``).  Which rows move depends on the
  pivots: the count is exact given them (``piv``), else expected or bounded above.

"panels" and "pivots" are exact, and so are the interchanges' messages.  **Rows sent,
exactly**: the swaps ``k + j <-> piv[k + j]`` (``piv[k + j] >= k + j``) compose to a
permutation of the moved rows in which every moved row ``>= e`` receives the content of
a row of ``k:e`` (a position ``k + j`` is final once step ``j`` is done, and before it
holds only contents of ``k:e``); so the rows ``>= e`` that move are the distinct
pivots ``S = {piv[k + j] >= e}``, and as many rows of ``k:e`` (all on ``pr``) receive
theirs.  Rank ``p != pr`` sends ``|S & rows(p)|`` rows, ``pr`` sends ``|S - rows(pr)|``.
**Expected**: with every pivot uniform over the rows it is chosen from (a
Fisher-Yates shuffle: the assumption for HPL's random matrices), a row ``>= e`` stays out of
``S`` with probability ``prod_j (1 - 1 / (n - k - j)) = (n - e) / (n - k)``, so
``E |S & rows(p)| = m_p(e) w / (n - k)``.  **Bound**: ``min(w, m_p(e))`` (``pr``:
``min(w, n - e - m_pr(e))``).  :func:`solve_traffic` is the same for
:func:`ozaki.distributed.lu_solve` (``"rhs"``, ``"panels"`` exact; its interchanges
apply the whole permutation, uniform under the same assumption).  The updates'
``"decisions"`` are not modelled (``O(m + n)`` per update).

**Time** (:func:`hpl_time`), per panel, each step priced on the slowest rank taking
part: (1) the panel on ``pc``: the level-2 work of the rank's rows (the flops and
bytes of :mod:`tme_model.lu_projection`'s panel on the rank's rows; the rank with the
most rows is the slowest at every column) plus
``w (P - 1) (alpha + 8 (3 + 2w) / beta)`` for the all-gathers; (2) the broadcasts of
the panel and pivots along the rows (:func:`tme_model.network.bcast_s`); (3) the
interchanges: ``(P - 1) alpha + bytes / beta`` and a pass reading and writing the
moved rows; (4) ``U12``'s triangular solve on ``pr`` and its broadcast down the
columns; (5) the trailing update ``m_p(e) x w x n_q(e)``, by the ``machine``.  Measured
step costs (``steps``, :class:`tme_model.hpl_check.StepCosts`) replace (1) and (3).
**Critical path**: the collectives block, so every step waits for its slowest
participant: the time is the sum over panels of the sum over steps of the max over
ranks (each cost grows with the rank's rows and columns, so the max is at the largest
``m_p``, ``n_q``).  No overlap, as the implementation; ``lookahead=True`` (a projection
option, not implemented) hides panel ``k + 1`` behind update ``k``:
``max(panel_{k+1}, update_k)`` instead of their sum.  The solve follows
:func:`~ozaki.distributed.lu_solve`'s schedule (its block columns copied contiguous
and broadcast along the rows, twice).

**Machines.** ``machine`` prices one rank's local work: ``pass_s(bytes)`` (a streaming
pass), ``level2_s(flops, bytes)`` (loop code), ``trsm_s(w, cols)`` and
``update_s(m, n, w, emulated, whole)`` (``C - L U`` on the rank's block of a ``whole``
``(M, N, w)`` update): :class:`tme_model.hpl_check.ProfileMachine` (a CPU rank from a
calibration profile and its measured rates) or :class:`tme_model.hpl_cluster.DeviceMachine`
(a GPU of the database).

**Command line**: ``python -m tme_model.hpl_network --check out.json`` compares runs of
``benchmarks/mpi/hpl.py`` with the model (:mod:`tme_model.hpl_check`, also
``python -m tme_model.hpl_check``); any other arguments project a GPU cluster,
``python -m tme_model.hpl_network --gpu b300 --ranks 64 --network ndr``
(:mod:`tme_model.hpl_cluster`, also ``python -m tme_model.hpl_cluster``).  Modelled
figures, not measured.
"""

from __future__ import annotations

import numpy as np

from .lu_projection import PANEL_MODELS
from .network import BCASTS, Network, bcast_s

__all__ = ["INTERCHANGES", "PHASES", "cyclic_count", "hpl_time", "hpl_traffic", "main",
           "solve_traffic"]

#: How the interchanges' rows are counted without the pivots (module docstring).
INTERCHANGES = ("expected", "bound")
#: The phases of :func:`hpl_time` (its ``phases`` and ``solve_phases``; ``other``: the
#: solve's block columns copied contiguous before their broadcasts).
PHASES = ("panel", "broadcasts", "interchanges", "triangular", "updates", "other")


def cyclic_count(size: int, nb: int, parts: int, part, start=0):
    """How many of the indices ``start..size-1`` process ``part`` (int or int ndarray)
    of ``parts`` holds when ``size`` rows or columns are dealt in blocks of ``nb``
    (block ``I`` on process ``I mod parts``, :mod:`ozaki.distributed.cyclic`)."""
    def below(s):  # full cycles of parts blocks, then this part's share of the rest
        cycles, rem = divmod(int(s), nb * parts)
        return cycles * nb + np.clip(rem - np.asarray(part) * nb, 0, nb)
    return below(size) - below(min(max(int(start), 0), int(size)))


def _args(n, nb, P, Q, p=0, q=0, first="n"):
    for name, v in ((first, n), ("nb", nb), ("P", P), ("Q", Q)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if not (0 <= p < P and 0 <= q < Q):
        raise ValueError(f"rank (p, q) = ({p}, {q}) is not on the {P} x {Q} grid")


def _how(interchanges: str) -> None:
    if interchanges not in INTERCHANGES:
        raise ValueError(f"interchanges must be one of {', '.join(INTERCHANGES)}, got "
                         f"{interchanges!r}")


def _pivots(piv, n: int):
    if piv is None:
        return None
    a = np.asarray(piv)
    if a.shape != (n,) or a.dtype.kind not in "iu":
        raise ValueError(f"piv must be an integer array of shape ({n},), got {a.dtype} {a.shape}")
    if n and (np.any(a < np.arange(n)) or a.max() >= n):
        raise ValueError("piv must be LU pivots: i <= piv[i] < n")
    return a.astype(np.int64)


def _pivot_rows(n, nb, P, k, w, pr, how, piv=None):
    """Panel ``k``'s rows below it that move (``S``), per process row, shape (P,):
    ``(held, sent)``: ``|S & rows(p)|``, and the rows ``p`` sends (``pr``: ``|S - rows(pr)|``)."""
    e, ps = k + w, np.arange(P)
    if piv is not None:  # exact: the distinct pivots below the panel, by owner
        S = np.unique(piv[k:e][piv[k:e] >= e])
        held = np.bincount((S // nb) % P, minlength=P)
        total = len(S)
    else:
        below = cyclic_count(n, nb, P, ps, e)
        if how == "bound":
            held = np.minimum(w, below)
            return held, np.where(ps == pr, np.minimum(w, n - e - below[pr]), held)
        held, total = below * (w / (n - k)), (n - e) * (w / (n - k))
    return held, np.where(ps == pr, total - held[pr], held)


def hpl_traffic(n: int, nb: int, P: int, Q: int, p: int, q: int, *, piv=None,
                interchanges: str = "expected") -> dict[str, tuple[float, int]]:
    """What rank ``(p, q)`` sends in :func:`ozaki.distributed.lu_factor` of an ``n x n``
    matrix in blocks of ``nb`` on a ``P x Q`` grid (module docstring).

    Parameters
    ----------
    n, nb, P, Q : int
    p, q : int
        The rank's process row and column.
    piv : (n,) int array, optional
        The run's pivots (``lu_factor``'s ``piv``): the interchanges' bytes exact.
    interchanges : {"expected", "bound"}
        Without ``piv``: the expected bytes (uniform pivots) or an upper bound.

    Returns
    -------
    dict
        ``{"panels", "pivots", "interchanges"}`` to ``(bytes, messages)``: ints, but the
        interchanges' bytes without ``piv`` (a float).
    """
    _args(n, nb, P, Q, p, q)
    _how(interchanges)
    piv = _pivots(piv, n)
    out = {"panels": [0, 0], "pivots": [0, 0], "interchanges": [0, 0]}
    cols = int(cyclic_count(n, nb, Q, q))

    def add(kind, nbytes, messages):
        out[kind][0] += nbytes
        out[kind][1] += messages
    for k in range(0, n, nb):
        w, K = min(nb, n - k), k // nb
        pc, pr = K % Q, K % P
        if q == pc:
            if P > 1:
                add("pivots", w * (P - 1) * 8 * (3 + 2 * w), w * (P - 1))
            add("pivots", (Q - 1) * 8 * (w + 1), Q - 1)
            add("panels", (Q - 1) * 8 * int(cyclic_count(n, nb, P, p, k)) * w, Q - 1)
        if P > 1:
            rows = _pivot_rows(n, nb, P, k, w, pr, interchanges, piv)[1][p]
            add("interchanges", 8 * (cols - (w if q == pc else 0)) * rows, P - 1)
        if k + w < n and p == pr:
            add("panels", (P - 1) * 8 * w * int(cyclic_count(n, nb, Q, q, k + w)), P - 1)
    return {kind: (int(v[0]) if piv is not None or kind != "interchanges" else float(v[0]),
                   int(v[1])) for kind, v in out.items()}


def solve_traffic(n: int, nb: int, P: int, Q: int, p: int, q: int, nrhs: int = 1, *,
                  piv=None, interchanges: str = "expected") -> dict[str, tuple[float, int]]:
    """What rank ``(p, q)`` sends in :func:`ozaki.distributed.lu_solve` with ``nrhs``
    right-hand sides (dealt as ``b``, ``(n, nrhs)`` in blocks of ``nb``).

    ``"rhs"``: the all-gather of ``b``'s columns along the rows; ``"panels"``: per
    block column ``K``, in each of the two triangular solves, the rank's ``8 m_p(0) w``
    bytes of it from ``K mod Q`` along the row and the ``8 w nrhs`` of the solved block
    from ``K mod P`` down the column; ``"interchanges"``: the whole permutation's rows
    (``P - 1`` messages; bytes exact with ``piv``, else the expected
    ``m_p (n - m_p) / n`` rows of a uniform permutation, or at most ``m_p``).
    Arguments and return as :func:`hpl_traffic`.
    """
    _args(n, nb, P, Q, p, q)
    _args(nrhs, nb, P, Q, first="nrhs")
    _how(interchanges)
    piv = _pivots(piv, n)
    mp = int(cyclic_count(n, nb, P, p))
    out = {"rhs": ((Q - 1) * 8 * mp * int(cyclic_count(nrhs, nb, Q, q)), Q - 1)}
    panels = [0, 0]
    for k in range(0, n, nb):
        w, K = min(nb, n - k), k // nb
        if q == K % Q:
            panels = [panels[0] + 2 * (Q - 1) * 8 * mp * w, panels[1] + 2 * (Q - 1)]
        if p == K % P:
            panels = [panels[0] + 2 * (P - 1) * 8 * w * nrhs, panels[1] + 2 * (P - 1)]
    out["panels"] = tuple(panels)
    if P > 1:
        if piv is not None:  # where each row's content ends (ozaki's composed swaps)
            perm = np.arange(n)
            for i, j in enumerate(piv):
                perm[[i, j]] = perm[[j, i]]
            src_owner, dst_owner = (perm // nb) % P, (np.arange(n) // nb) % P
            rows = int(np.sum((src_owner == p) & (dst_owner != p)))
        else:
            rows = mp if interchanges == "bound" else mp * (n - mp) / n
        out["interchanges"] = (8 * nrhs * rows if piv is not None else float(8 * nrhs * rows),
                               P - 1)
    return out


def _panel_cost(machine, rows: int, w: int, diagonal: bool, panel: str) -> float:
    """The level-2 LU of a rank's ``rows x w`` part of a panel (``diagonal``: it holds the
    panel's first ``w`` rows, which leave the elimination one per step)."""
    s1, s2 = w * (w - 1) // 2, (w - 1) * w * (2 * w - 1) // 6
    if diagonal:  # sum_j (R-1-j)(2(w-1-j)+1) and 16 sum_j (R-j)(w-j), closed forms
        a, c = rows - 1, 2 * w - 1
        flops = a * c * w - (2 * a + c) * s1 + 2 * s2
        streamed = 16 * (rows * w * w - (rows + w) * s1 + s2)
    else:  # R rows in every step
        flops, streamed = rows * w * w, 8 * rows * w * (w + 1)
    return machine.level2_s(flops, streamed if panel == "streamed" else 16 * rows * w)


def hpl_time(n: int, nb: int, P: int, Q: int, machine, net: Network, *, emulated: bool,
             lookahead: bool = False, bcast: str = "flat", panel: str = "streamed",
             interchanges: str = "expected", decisions: tuple = (0, 0), solve: bool = True,
             nrhs: int = 1, steps=None) -> dict:
    """Modelled seconds of the distributed HPL (factorisation and solve), by phase.

    Parameters
    ----------
    n, nb, P, Q : int
    machine : tme_model.hpl_check.ProfileMachine or tme_model.hpl_cluster.DeviceMachine
        One rank's local times (module docstring).
    net : tme_model.network.Network
    emulated : bool
        Emulated (``lu_factor``) or native (``native_lu_factor``) trailing updates.
    lookahead : bool
        Hide panel ``k + 1`` behind update ``k`` (a projection; the code has none).
    bcast : {"flat", "scatter-allgather"}
        The broadcasts' algorithm (:func:`tme_model.network.bcast_s`).
    panel : {"streamed", "cached"}
        The panel's traffic (:data:`tme_model.lu_projection.PANEL_MODELS`).
    interchanges : {"expected", "bound"}
    decisions : (bytes, messages)
        The updates' reductions a rank sends in the run (not modelled; e.g. a record's
        ``"decisions"``), added as ``messages alpha + bytes / beta``.
    solve, nrhs
        Include ``lu_solve`` with ``nrhs`` right-hand sides.
    steps : optional
        Two steps as measured on the run's machine (:class:`tme_model.hpl_check.StepCosts`),
        in place of their modelled cost: ``steps.panel_s(rows, w)``, the panel's step on
        its process column whose tallest rank holds ``rows`` rows (its level-2 work and
        all-gathers), and ``steps.interchange_s(nbytes)``, the interchanges moving
        ``nbytes`` on the busiest rank (``16`` per column of each moved row: read and
        written; their pass and all-to-all).  Their messages are then in the measured
        times, not in ``communication_s``.

    Returns
    -------
    dict
        ``total_s = factor_s + solve_s``; ``phases`` (factorisation: ``panel`` (its
        exposed part), ``broadcasts``, ``interchanges``, ``triangular``, ``updates``,
        ``other`` = 0), ``solve_phases`` (the same keys, :data:`PHASES`),
        ``panel_hidden_s``, ``communication_s`` (the messages' time in both, the panels'
        all-gathers counted whole even where the look-ahead hides them).
    """
    _args(n, nb, P, Q)
    _how(interchanges)
    if bcast not in BCASTS or panel not in PANEL_MODELS:
        raise ValueError(f"bcast and panel must be in {BCASTS} and {PANEL_MODELS}, got "
                         f"{bcast!r}, {panel!r}")
    ps, qs = np.arange(P), np.arange(Q)
    ncols = cyclic_count(n, nb, Q, qs)
    ph = dict.fromkeys(PHASES, 0.0)
    comm = hidden = 0.0
    last_update = None
    for k in range(0, n, nb):
        w, K = min(nb, n - k), k // nb
        e, pc, pr = k + w, K % Q, K % P
        mk, me, ne = cyclic_count(n, nb, P, ps, k), cyclic_count(n, nb, P, ps, e), \
            cyclic_count(n, nb, Q, qs, e)
        gather = w * (P - 1) * net.message_s(8.0 * (3 + 2 * w)) if P > 1 else 0.0
        if steps is None:
            t_panel = max(_panel_cost(machine, int(mk[p]), w, p == pr, panel) for p in ps) + gather
        else:  # measured, its all-gathers included
            t_panel, gather = steps.panel_s(int(mk.max()), w), 0.0
        held, rows = _pivot_rows(n, nb, P, k, w, pr, interchanges)  # rows: 0 if P == 1
        cols = ncols - np.where(qs == pc, w, 0)
        exchange = (P - 1) * net.alpha_s + 8.0 * rows.max() * cols.max() / net.beta_bps \
            if P > 1 else 0.0
        moved = held + np.where(ps == pr, w, 0)  # each moved row read and written once
        volume = 16.0 * moved.max() * cols.max()
        if steps is None:
            t_moves = exchange + machine.pass_s(volume)
        else:  # measured, its all-to-all included
            t_moves, exchange = steps.interchange_s(volume), 0.0
        msgs = (max(bcast_s(net, 8.0 * m * w, Q, bcast) for m in mk)
                + bcast_s(net, 8.0 * (w + 1), Q, bcast))
        upd = tri = 0.0
        if e < n:
            tri = machine.trsm_s(w, int(ne.max()))
            msgs += max(bcast_s(net, 8.0 * w * c, P, bcast) for c in ne)
            upd = machine.update_s(int(me.max()), int(ne.max()), w, emulated, (n - e, n - e, w))
        if lookahead and last_update is not None:  # this panel ran during the last update
            hidden += min(t_panel, last_update)
            t_panel = max(0.0, t_panel - last_update)
        last_update = upd
        ph["panel"] += t_panel
        ph["broadcasts"] += msgs
        ph["interchanges"] += t_moves
        ph["triangular"] += tri
        ph["updates"] += upd
        comm += msgs + exchange + gather
    ph["updates"] += net.message_s(*decisions)
    sp = _solve_time(n, nb, P, Q, machine, net, emulated, bcast, interchanges, nrhs) if solve \
        else dict.fromkeys(PHASES, 0.0) | {"communication": 0.0}
    scomm = sp.pop("communication")
    ph, sp = ({k: float(v) for k, v in d.items()} for d in (ph, sp))
    factor_s, solve_s = sum(ph.values()), sum(sp.values())
    return {"total_s": factor_s + solve_s, "factor_s": factor_s, "solve_s": solve_s,
            "phases": ph, "solve_phases": sp, "panel_hidden_s": float(hidden),
            "communication_s": float(comm + scomm)}


def _solve_time(n, nb, P, Q, machine, net, emulated, bcast, interchanges, nrhs) -> dict:
    """:func:`ozaki.distributed.lu_solve`'s steps, each on its slowest rank."""
    ps = np.arange(P)
    mp = cyclic_count(n, nb, P, ps)
    rhs = (Q - 1) * 8.0 * mp.max() * cyclic_count(nrhs, nb, Q, 0)  # q = 0 holds the most
    gather = (Q - 1) * net.alpha_s + rhs / net.beta_bps if Q > 1 else 0.0
    rows = {"expected": mp * (n - mp) / n, "bound": mp}[interchanges] if P > 1 else 0 * mp
    exchange = (P - 1) * net.alpha_s + 8.0 * nrhs * rows.max() / net.beta_bps if P > 1 else 0.0
    sp = dict.fromkeys(PHASES, 0.0)
    sp["interchanges"] = exchange + machine.pass_s(16.0 * nrhs * mp.max())
    msgs = gather
    for k in range(0, n, nb):
        w, e = min(nb, n - k), min(k + nb, n)
        msgs += 2 * (max(bcast_s(net, 8.0 * m * w, Q, bcast) for m in mp)
                     + bcast_s(net, 8.0 * w * nrhs, P, bcast))
        sp["other"] += 2 * machine.pass_s(16.0 * mp.max() * w)  # the block column, contiguous
        sp["triangular"] += 2 * machine.level2_s(w * w * nrhs, 8.0 * (w * w / 2 + 2 * w * nrhs))
        below = int(cyclic_count(n, nb, P, ps, e).max())  # the forward solve's rows left
        above = int((mp - cyclic_count(n, nb, P, ps, k)).max())  # the backward one's
        sp["updates"] += (machine.update_s(below, nrhs, w, emulated, (n - e, nrhs, w))
                          + machine.update_s(above, nrhs, w, emulated, (k, nrhs, w)))
    sp["broadcasts"] = msgs
    return sp | {"communication": msgs + exchange}


def main(argv=None) -> int:
    """``python -m tme_model.hpl_network``: with ``--check``, :func:`tme_model.hpl_check.main`,
    else :func:`tme_model.hpl_cluster.main`, on the same arguments."""
    import importlib
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    check = any(a == "--check" or a.startswith("--check=") for a in args)
    # named at run time: both modules build on this one, and an import statement here
    # would close an import circle (tests/test_layout.py keeps the graph acyclic)
    module = importlib.import_module("tme_model.hpl_check" if check else "tme_model.hpl_cluster")
    return module.main(args, prog="python -m tme_model.hpl_network")


if __name__ == "__main__":
    raise SystemExit(main())
