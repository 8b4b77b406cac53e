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
columns; (5) the trailing update ``m_p(e) x w x n_q(e)``, by the ``machine``
(:class:`ProfileMachine`: a calibration profile over the rank's rates, as
:func:`tme_model.network.summa_compute_parts`; :class:`DeviceMachine`: the TME model's
:func:`~tme_model.model.predict`).  **Critical path**: the collectives block, so every
step waits for its slowest participant: the time is the sum over panels of the sum
over steps of the max over ranks (each cost grows with the rank's rows and columns, so
the max is at the largest ``m_p``, ``n_q``).  No overlap, as the implementation;
``lookahead=True`` (a projection option, not implemented) hides panel ``k + 1`` behind
update ``k``: ``max(panel_{k+1}, update_k)`` instead of their sum.  The solve follows
:func:`~ozaki.distributed.lu_solve`'s schedule (its block columns broadcast along the
rows, twice).

:func:`check_runs` compares records of ``benchmarks/mpi/hpl.py`` with the model
(``python -m tme_model.hpl_network --check out.json``); :func:`cluster_rows` projects a
GPU cluster (``python -m tme_model.hpl_network --gpu b300 --ranks 64 --network ndr``).
Modelled figures, not measured.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .lu_projection import PANEL_MODELS, hpl_flops
from .network import BCASTS, Network, RankRates, bcast_s
from .specs import TMEError

__all__ = ["INTERCHANGES", "SMALL_WORK", "SMALL_S_PER_TERM", "DeviceMachine", "ProfileMachine",
           "check_runs", "cluster_rows", "cyclic_count", "hpl_time", "hpl_traffic", "main",
           "markdown", "solve_traffic"]

#: How the interchanges' rows are counted without the pivots (module docstring).
INTERCHANGES = ("expected", "bound")
#: ``ozaki``'s small-product threshold (``m n k`` terms of the whole update): below it,
#: with ``num_moduli="auto"``, an update takes the compensated path, not the emulation.
SMALL_WORK = 2 ** 24
#: Seconds per term of that path, one thread: ``ozaki``'s own figure (``2**24`` terms
#: in about 5 ms, :mod:`ozaki.core.compensated`), a rough constant, not a calibration.
SMALL_S_PER_TERM = 5e-3 / 2 ** 24
_PHASES = ("panel", "broadcasts", "interchanges", "triangular", "updates")


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


@dataclass(frozen=True)
class ProfileMachine:
    """One rank of a CPU run: local times from a calibration profile over the rank's rates.

    Attributes
    ----------
    profile : tme_model.profile.Profile
    rates : RankRates or float
        The rank's rates relative to the profile (``benchmarks.mpi.probe``).
    scheme, moduli, mode, engine
        Of the emulated updates (``moduli``: ``info.num_moduli``; ``engine``: the
        profile's best by default).
    small_products : bool
        Whether updates of at most :data:`SMALL_WORK` terms take ``ozaki``'s
        compensated path (``num_moduli="auto"``, the default), at
        :data:`SMALL_S_PER_TERM`.
    """

    profile: object
    rates: RankRates | float = 1.0
    scheme: str = "fp64"
    moduli: int = 6
    mode: str = "accurate"
    engine: str | None = None
    small_products: bool = True

    @property
    def _r(self) -> RankRates:
        return self.rates if isinstance(self.rates, RankRates) else RankRates.uniform(self.rates)

    def pass_s(self, nbytes: float) -> float:
        """A streaming pass of ``nbytes``, seconds."""
        return nbytes / (self.profile.mem_tbps * 1e12 * self._r.stream)

    def level2_s(self, flops: float, nbytes: float) -> float:
        """Loop code (panel, triangular solves): vector rate or traffic, the slower."""
        return max(flops / (self.profile.fp64_vector_tflops * 1e12), self.pass_s(nbytes))

    def trsm_s(self, w: int, cols: int) -> float:
        """``L11^-1`` (``w x w``, unit) applied to ``w x cols``, seconds."""
        return self.level2_s(cols * w * (w - 1), 8.0 * (w * w / 2 + 2 * w * cols))

    def update_s(self, m: int, n: int, w: int, emulated: bool, whole: tuple) -> float:
        """``C - L U`` on an ``m x w x n`` block of a ``whole`` ``(M, N, w)`` update."""
        if not (m and n and w):
            return 0.0
        r, sub = self._r, self.pass_s(24.0 * m * n)  # the difference C - X
        if not emulated:
            return self.profile.native_gemm_s(m, n, w) / r.gemm + sub
        if self.small_products and math.prod(whole) <= SMALL_WORK:
            return m * n * w * SMALL_S_PER_TERM
        t = self.profile.predict_gemm(self.scheme, self.moduli, self.mode, m, n, w,
                                      engine=self.engine)
        return (t.gemm_s / r.products + t.scale_s / r.scaling + t.residue_s / r.residues
                + t.recon_s / r.reconstruction + t.fixed_s / r.passes + sub)


@dataclass(frozen=True)
class DeviceMachine:
    """One GPU of the database: the loops at its FP64 vector rate or bandwidth, the
    updates by the TME model (:func:`~tme_model.model.predict`, the ``scenario``'s
    emulation for inner dimension ``w``), as :mod:`tme_model.lu_projection` prices them."""

    device: object
    scenario: object = None
    _emulations: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    def emulation(self, w: int):
        """The :class:`~tme_model.model.Emulation` of an update of inner dimension ``w``."""
        from .scenario import Scenario
        from .workloads import Kernel
        if w not in self._emulations:
            sc = self.scenario if self.scenario is not None else Scenario()
            kern = Kernel("hpl-update", 2.0 * w ** 3, 32.0 * w * w, float(w * w), w, matrix=True)
            self._emulations[w] = sc.emulation(self.device, kern)
        return self._emulations[w]

    def pass_s(self, nbytes: float) -> float:
        return nbytes / (self.device.bandwidth() * 1e12)

    def level2_s(self, flops: float, nbytes: float) -> float:
        return max(flops / (self.device.p64(False) * 1e12), self.pass_s(nbytes))

    def trsm_s(self, w: int, cols: int) -> float:
        return max(cols * w * (w - 1) / (self.device.p64(True) * 1e12),
                   self.pass_s(8.0 * (w * w / 2 + 2 * w * cols)))

    def update_s(self, m: int, n: int, w: int, emulated: bool, whole: tuple) -> float:
        from .model import predict
        from .workloads import Kernel
        if not (m and n and w):
            return 0.0
        kern = Kernel(f"hpl-update:{m}x{n}x{w}", 2.0 * m * n * w, 8.0 * (m * w + w * n + 2 * m * n),
                      float(m * n), w, matrix=True, n_in=float(m * w + w * n))
        pred = predict(kern, self.device, self.emulation(w))
        return pred.emulated_s if emulated else pred.native_s


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
             nrhs: int = 1) -> dict:
    """Modelled seconds of the distributed HPL (factorisation and solve), by phase.

    Parameters
    ----------
    n, nb, P, Q : int
    machine : ProfileMachine or DeviceMachine
        One rank's local times.
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

    Returns
    -------
    dict
        ``total_s = factor_s + solve_s``; ``phases`` (factorisation: ``panel`` (its
        exposed part), ``broadcasts``, ``interchanges``, ``triangular``, ``updates``),
        ``solve_phases`` (the same keys), ``panel_hidden_s``, ``communication_s`` (the
        messages' time in both, the panels' all-gathers counted whole even where the
        look-ahead hides them).
    """
    _args(n, nb, P, Q)
    _how(interchanges)
    if bcast not in BCASTS or panel not in PANEL_MODELS:
        raise ValueError(f"bcast and panel must be in {BCASTS} and {PANEL_MODELS}, got "
                         f"{bcast!r}, {panel!r}")
    ps, qs = np.arange(P), np.arange(Q)
    ncols = cyclic_count(n, nb, Q, qs)
    ph = dict.fromkeys(_PHASES, 0.0)
    comm = hidden = 0.0
    last_update = None
    for k in range(0, n, nb):
        w, K = min(nb, n - k), k // nb
        e, pc, pr = k + w, K % Q, K % P
        mk, me, ne = cyclic_count(n, nb, P, ps, k), cyclic_count(n, nb, P, ps, e), \
            cyclic_count(n, nb, Q, qs, e)
        gather = w * (P - 1) * net.message_s(8.0 * (3 + 2 * w)) if P > 1 else 0.0
        t_panel = max(_panel_cost(machine, int(mk[p]), w, p == pr, panel) for p in ps) + gather
        held, rows = _pivot_rows(n, nb, P, k, w, pr, interchanges)  # rows: 0 if P == 1
        cols = ncols - np.where(qs == pc, w, 0)
        exchange = (P - 1) * net.alpha_s + 8.0 * rows.max() * cols.max() / net.beta_bps \
            if P > 1 else 0.0
        moved = held + np.where(ps == pr, w, 0)  # each moved row read and written once
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
        ph["interchanges"] += exchange + machine.pass_s(16.0 * moved.max() * cols.max())
        ph["triangular"] += tri
        ph["updates"] += upd
        comm += msgs + exchange + gather
    ph["updates"] += net.message_s(*decisions)
    sp = _solve_time(n, nb, P, Q, machine, net, emulated, bcast, interchanges, nrhs) if solve \
        else dict.fromkeys(_PHASES, 0.0) | {"communication": 0.0}
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
    sp = dict.fromkeys(_PHASES, 0.0)
    sp["interchanges"] = exchange + machine.pass_s(16.0 * nrhs * mp.max())
    msgs = gather
    for k in range(0, n, nb):
        w, e = min(nb, n - k), min(k + nb, n)
        msgs += 2 * (max(bcast_s(net, 8.0 * m * w, Q, bcast) for m in mp)
                     + bcast_s(net, 8.0 * w * nrhs, P, bcast))
        sp["triangular"] += 2 * machine.level2_s(w * w * nrhs, 8.0 * (w * w / 2 + 2 * w * nrhs))
        below = int(cyclic_count(n, nb, P, ps, e).max())  # the forward solve's rows left
        above = int((mp - cyclic_count(n, nb, P, ps, k)).max())  # the backward one's
        sp["updates"] += (machine.update_s(below, nrhs, w, emulated, (n - e, nrhs, w))
                          + machine.update_s(above, nrhs, w, emulated, (k, nrhs, w)))
    sp["broadcasts"] = msgs
    return sp | {"communication": msgs + exchange}


def _merge(*dicts) -> dict:
    out: dict = {}
    for d in dicts:
        for kind, (b, m) in d.items():
            have = out.get(kind, (0, 0))
            out[kind] = (have[0] + b, have[1] + m)
    return out


def _run_options(meta: dict) -> dict:
    """scheme, mode and an explicit moduli count from a record's ``meta["ozaki"]``
    (``str(ozaki.resolve_options())``), where it says them."""
    text = str(meta.get("ozaki", ""))
    got = {k: m.group(1) for k in ("scheme", "mode")
           if (m := re.search(rf"{k}='(\w+)'", text))}
    if m := re.search(r"num_moduli=(\d+)", text):
        got["moduli"] = int(m.group(1))
    return got


def _rates(rec: dict, rates) -> RankRates | float:
    """The record's own ``rank_rates`` (the slowest rank's rate of each kind), else ``rates``."""
    per = rec.get("rank_rates")
    if not per:
        return rates
    return RankRates(**{f: min(float(r[f]) for r in per) for f in RankRates.__dataclass_fields__})


def check_runs(doc, profile, net: Network, *, rates: RankRates | float = 1.0,
               scheme: str | None = None, moduli: int | None = None, mode: str | None = None,
               engine: str | None = None, bcast: str = "flat", panel: str = "cached",
               target: float = 0.25) -> list[dict]:
    """The model against measured runs of ``benchmarks/mpi/hpl.py``.

    Parameters
    ----------
    doc : dict or list of dict
        The benchmark's JSON (``{"meta", "runs"}``) or its runs. A run needs ``kind``,
        ``n``, ``nb``, ``grid`` (``"PxQ"``), ``seconds``; ``factor_seconds``,
        ``phases``, ``traffic_rank0``, ``traffic_max`` (``{kind: [bytes, messages]}``,
        factorisation and solve) and ``rank_rates`` are used where present.
    profile : tme_model.profile.Profile
        The calibration of the machine (one rank's local times: :class:`ProfileMachine`).
    net : Network
        Alpha and beta (``benchmarks.mpi.network``'s ping-pong, or given).
    rates : RankRates or float
        The ranks' rates against the profile, for runs without ``rank_rates``.
    scheme, moduli, mode, engine
        The emulated updates' (default: from ``meta["ozaki"]``, else ``fp64``,
        ``ozaki.auto_num_moduli(scheme, nb)``, ``accurate``, the profile's best engine).
    bcast, panel : str
        The broadcasts' algorithm and the panel's traffic in the model (``"cached"``: a
        CPU's caches hold a rank's ``m_p x nb`` panel at the sizes a CPU runs).
    target : float
        The tolerance on ``predicted / measured - 1`` (the issue's: 25%).

    Returns
    -------
    list of dict
        Per run: ``measured_s``, ``predicted_s``, ``ratio`` (predicted / measured),
        ``within_target``; the same for the factorisation alone (``factor_*``);
        ``phases_measured`` (the record's, max over ranks; its ``communication``
        includes waiting, its ``other`` the interchanges), ``phases_predicted`` (the
        model's, factorisation plus solve); ``traffic`` (kind: predicted and measured
        ``[bytes, messages]``, rank 0 and the most over ranks) and ``traffic_exact``
        (whether the exactly modelled counts -- ``panels``, ``pivots``, ``rhs`` and the
        interchanges' messages -- equal the measured ones).
    """
    meta, runs = (doc.get("meta", {}), doc.get("runs")) if isinstance(doc, dict) else ({}, doc)
    if not isinstance(runs, list) or not runs:
        raise TMEError("doc must be benchmarks/mpi/hpl.py's JSON (a 'runs' list) or its runs")
    given = _run_options(meta)
    out = []
    for i, rec in enumerate(runs):
        try:
            kind, n, nb = rec["kind"], int(rec["n"]), int(rec["nb"])
            measured = float(rec["seconds"])
            P, Q = (int(v) for v in str(rec["grid"]).lower().split("x"))
        except (KeyError, ValueError, TypeError) as exc:
            raise TMEError(f"run {i}: needs kind, n, nb, grid 'PxQ' and seconds "
                           f"({exc!r})") from None
        sch = scheme or given.get("scheme", "fp64")
        if moduli is not None or "moduli" in given:
            count = moduli if moduli is not None else given["moduli"]
        else:
            from ozaki import auto_num_moduli
            count = auto_num_moduli(sch, nb)
        machine = ProfileMachine(profile, _rates(rec, rates), sch, count,
                                 mode or given.get("mode", "accurate"), engine,
                                 bool(meta.get("small_products", True)))
        seen_max, seen0 = rec.get("traffic_max", {}), rec.get("traffic_rank0", {})
        t = hpl_time(n, nb, P, Q, machine, net, emulated=kind == "emulated", bcast=bcast,
                     panel=panel, decisions=tuple(seen_max.get("decisions", (0, 0))))
        per_rank = [_merge(hpl_traffic(n, nb, P, Q, p, q), solve_traffic(n, nb, P, Q, p, q))
                    for p in range(P) for q in range(Q)]
        traffic, exact = {}, True
        for k in ("panels", "pivots", "rhs", "interchanges"):
            num = float if k == "interchanges" else int  # its bytes are an expectation
            pred0 = [num(per_rank[0].get(k, (0, 0))[0]), int(per_rank[0].get(k, (0, 0))[1])]
            predm = [num(max(r.get(k, (0, 0))[0] for r in per_rank)),
                     int(max(r.get(k, (0, 0))[1] for r in per_rank))]
            got0, gotm = list(seen0.get(k, [0, 0])), list(seen_max.get(k, [0, 0]))
            traffic[k] = {"predicted_rank0": pred0, "measured_rank0": got0,
                          "predicted_max": predm, "measured_max": gotm}
            if seen0 or seen_max:
                j = 1 if k == "interchanges" else 0
                exact = exact and pred0[j:] == got0[j:] and predm[j:] == gotm[j:]
        ratio = t["total_s"] / measured
        fs = rec.get("factor_seconds")
        both = {k: t["phases"][k] + t["solve_phases"][k] for k in _PHASES}
        out.append({"kind": kind, "n": n, "nb": nb, "grid": f"{P}x{Q}",
                    "oversubscribed": bool(rec.get("oversubscribed", False)),
                    "measured_s": measured, "predicted_s": t["total_s"], "ratio": ratio,
                    "within_target": abs(ratio - 1) <= target,
                    "factor_measured_s": fs, "factor_predicted_s": t["factor_s"],
                    "factor_ratio": None if not fs else t["factor_s"] / float(fs),
                    "phases_measured": rec.get("phases", {}), "phases_predicted": both,
                    "predicted_communication_s": t["communication_s"],
                    "traffic": traffic, "traffic_exact": exact if (seen0 or seen_max) else None,
                    "scheme": sch, "moduli": count})
    return out


def hpl_order(device, P: int, Q: int, nb: int, fill: float = 0.8) -> int:
    """The largest multiple of ``nb`` whose largest block-cyclic share (``8 m_p n_q``
    bytes) fills at most ``fill`` of one GPU's memory (``mem_size``)."""
    _args(nb, nb, P, Q, first="nb")
    if not (isinstance(fill, (int, float)) and 0.0 < fill <= 1.0):
        raise ValueError(f"fill must be in (0, 1], got {fill!r}")
    room = fill * device.require("mem_size") * 1e9
    n = nb * int(math.sqrt(room * P * Q / 8) // nb)
    while n > nb and 8.0 * cyclic_count(n, nb, P, 0) * cyclic_count(n, nb, Q, 0) > room:
        n -= nb  # process 0 holds the most rows and columns
    return max(n, nb)


def _sources(dev, net: Network) -> list[str]:
    lines = []
    for f in ("fp8", "fp64_vector", "fp64_matrix", "mem_bw", "mem_size"):
        fig = dev.figures.get(f)
        if fig is not None:
            note = f" ({fig.note})" if fig.note else ""
            lines.append(f"{dev.key} {f} = {fig.value:g}: {fig.source_text}{note}")
    path = Path(__file__).parent / "data" / "networks.toml"
    data = tomllib.loads(path.read_text())
    entry, cites = data.get("networks", {}).get(net.key), data.get("sources", {})
    for f, unit in (("alpha_us", "us"), ("beta_gbps", "GB/s")):
        if entry is None:
            lines.append(f"{net.key} {f}: {net.source}")
            continue
        e = entry[f]
        keys = str(e.get("source", "")).strip("[]").split("][")
        lines.append(f"{net.key} {f} = {e['value']:g} {unit}: "
                     + "; ".join(cites.get(s, s) for s in keys)
                     + (f" (inferred: {e['note']})" if e.get("inferred") else ""))
    return lines


def cluster_rows(gpu: str = "b300", ranks: int = 64, network: str = "ndr", nb: int = 1024,
                 fill: float = 0.8, bcast: str = "scatter-allgather", lookahead: bool = False,
                 panel: str = "streamed") -> dict:
    """An HPL run on ``ranks`` GPUs (the grid as square as the count allows), native FP64
    against FP8 Ozaki-II trailing updates (accurate mode, moduli for ``k = nb``; the
    reconstruction fused, ``gamma = 0``, or at its estimated cost).

    Returns
    -------
    dict
        ``n`` (:func:`hpl_order`), ``grid``, ``sources`` (every rate's) and ``rows``:
        per run, seconds per phase (the factorisation's and ``solve``), ``total_s``,
        ``tflops`` (HPL's count), ``tflops_per_gpu`` and ``speedup`` (native / this).
    """
    from .cluster import grid_shape
    from .network import load_network
    from .scenario import Scenario
    from .specs import get_device, load_devices

    _args(ranks, nb, 1, 1, first="ranks")
    dev, net = get_device(gpu, load_devices()), load_network(network)
    P, Q = grid_shape(int(ranks))
    n = hpl_order(dev, P, Q, nb, fill)
    rows, sources = [], _sources(dev, net)
    for label, emulated, sc in (("native FP64", False, Scenario(scheme="fp8", gamma=0.0)),
                                ("FP8 Ozaki-II, gamma 0", True, Scenario(scheme="fp8", gamma=0.0)),
                                ("FP8 Ozaki-II, gamma est.", True, Scenario(scheme="fp8"))):
        machine = DeviceMachine(dev, sc)
        t = hpl_time(n, nb, P, Q, machine, net, emulated=emulated, lookahead=lookahead,
                     bcast=bcast, panel=panel)
        emu = machine.emulation(nb)
        if emulated:
            sources.append(f"{label}: {emu.scheme}, N = {emu.moduli} moduli for k = {nb} "
                           f"({sc.grade} grade, {emu.mode} mode), alpha = {emu.alpha:g} "
                           f"(ozaki's GEMM count), gamma = {emu.gamma:.3g} s per output "
                           f"({emu.gamma_source})")
        rows.append({"run": label, "emulated": emulated,
                     "substrate": f"{emu.scheme} N={emu.moduli}" if emulated else "fp64",
                     **{f"{k}_s": v for k, v in t["phases"].items()},
                     "solve_s": t["solve_s"], "panel_hidden_s": t["panel_hidden_s"],
                     "communication_s": t["communication_s"], "total_s": t["total_s"],
                     "tflops": hpl_flops(n) / t["total_s"] / 1e12})
    for r in rows:
        r["tflops_per_gpu"] = r["tflops"] / (P * Q)
        r["speedup"] = rows[0]["total_s"] / r["total_s"]
    return {"gpu": dev.key, "network": net.key, "ranks": P * Q, "grid": f"{P}x{Q}", "n": n,
            "nb": nb, "fill": fill, "bcast": bcast, "lookahead": lookahead, "panel": panel,
            "rows": rows, "sources": sources}


def markdown(proj: dict) -> str:
    """:func:`cluster_rows`' projection as a Markdown table, then its sources."""
    cols = ("panel", "broadcasts", "interchanges", "triangular", "updates", "solve", "total")
    out = [f"MODELLED (not measured): HPL n = {proj['n']}, nb = {proj['nb']} on {proj['ranks']} "
           f"{proj['gpu']} ({proj['grid']}) over {proj['network']}; broadcasts {proj['bcast']}, "
           f"look-ahead {'on' if proj['lookahead'] else 'off'}, panel {proj['panel']}", "",
           "| run | substrate | " + " | ".join(f"{c} s" for c in cols)
           + " | TFLOP/s | TFLOP/s per GPU | speed-up |", "|" + "---|" * (len(cols) + 5)]
    for r in proj["rows"]:
        out.append(f"| {r['run']} | {r['substrate']} | "
                   + " | ".join(f"{r[c + '_s']:.4g}" for c in cols)
                   + f" | {r['tflops']:.4g} | {r['tflops_per_gpu']:.4g} | {r['speedup']:.3g}x |")
    return "\n".join(out + ["", "Sources:"] + [f"- {s}" for s in proj["sources"]])


def _check_table(rows: list[dict]) -> str:
    out = ["| kind | n | nb | grid | measured s | predicted s | predicted/measured | within | "
           "factor pred/meas | traffic exact |", "|" + "---|" * 10]
    for r in rows:
        fr = "-" if r["factor_ratio"] is None else f"{r['factor_ratio']:.2f}"
        out.append(f"| {r['kind']} | {r['n']} | {r['nb']} | {r['grid']}"
                   f"{' (oversubscribed)' if r['oversubscribed'] else ''} | "
                   f"{r['measured_s']:.4g} | {r['predicted_s']:.4g} | {r['ratio']:.2f} | "
                   f"{'yes' if r['within_target'] else 'NO'} | {fr} | {r['traffic_exact']} |")
    return "\n".join(out)


def main(argv=None) -> int:
    """``python -m tme_model.hpl_network``: the cluster projection, or ``--check FILE``."""
    import argparse

    from .profile_file import load_profile

    p = argparse.ArgumentParser(prog="python -m tme_model.hpl_network",
                                description="Distributed HPL in the TME model: a GPU-cluster "
                                            "projection, or --check against measured runs.")
    p.add_argument("--check", metavar="JSON", help="benchmarks/mpi/hpl.py's --json output")
    p.add_argument("--gpu", default="b300", help="projection: a device key (default b300)")
    p.add_argument("--ranks", type=int, default=64, help="projection: GPUs (default 64)")
    p.add_argument("--network", help="a key of data/networks.toml or a calibration JSON of "
                                     "benchmarks.mpi.network (default: ndr; --check: "
                                     "network.json)")
    p.add_argument("--alpha", type=float, help="--check: latency, s (with --beta)")
    p.add_argument("--beta", type=float, help="--check: bandwidth, bytes/s")
    p.add_argument("--profile", default=str(Path(__file__).resolve().parents[1] / "docs"
                                            / "_generated" / "tme_profile.json"))
    p.add_argument("--rates", help="--check: JSON of RankRates' fields (or a probe's "
                                   "{'rates': ...}); default --speed")
    p.add_argument("--speed", type=float, default=1.0,
                   help="--check: every rate against the profile (default 1)")
    p.add_argument("--scheme")
    p.add_argument("--moduli", type=int)
    p.add_argument("--mode", choices=("fast", "accurate"))
    p.add_argument("--engine")
    p.add_argument("--nb", type=int, default=1024, help="projection: panel width (default 1024)")
    p.add_argument("--fill", type=float, default=0.8,
                   help="projection: share of each GPU's memory the matrix fills (default 0.8)")
    p.add_argument("--bcast", choices=BCASTS,
                   help="broadcasts (default: scatter-allgather; --check: flat)")
    p.add_argument("--lookahead", action="store_true",
                   help="projection: hide each panel behind the previous update")
    p.add_argument("--panel", choices=PANEL_MODELS,
                   help="the panel's traffic (default: streamed; --check: cached)")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown")
    a = p.parse_args(argv)
    if (a.alpha is None) != (a.beta is None):
        p.error("--alpha and --beta go together")
    from .network import load_network
    try:
        if a.check:
            net = (Network("given", "given alpha-beta", a.alpha, a.beta, "command line")
                   if a.alpha is not None and a.beta is not None
                   else load_network(a.network or "network.json"))
            rates = a.speed
            if a.rates:
                got = json.loads(Path(a.rates).read_text())
                rates = RankRates(**got.get("rates", got))
            doc = json.loads(Path(a.check).read_text())
            rows = check_runs(doc, load_profile(a.profile), net, rates=rates, scheme=a.scheme,
                              moduli=a.moduli, mode=a.mode, engine=a.engine,
                              bcast=a.bcast or "flat", panel=a.panel or "cached")
            print(json.dumps(rows, indent=1) if a.format == "json" else
                  f"MODELLED against MEASURED ({a.check}; network {net.name}: alpha "
                  f"{net.alpha_s * 1e6:.3g} us, beta {net.beta_bps / 1e9:.3g} GB/s)\n\n"
                  + _check_table(rows))
            return 0
        proj = cluster_rows(a.gpu, a.ranks, a.network or "ndr", a.nb, a.fill,
                            a.bcast or "scatter-allgather", a.lookahead, a.panel or "streamed")
    except (TMEError, ValueError, OSError, json.JSONDecodeError) as exc:
        p.error(str(exc))
    print(json.dumps(proj, indent=1) if a.format == "json" else markdown(proj))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
