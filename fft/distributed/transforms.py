"""``fftn``, ``ifftn``, ``rfftn``, ``irfftn`` of distributed 3-D arrays.

Each runs exactly the steps of its serial counterpart in :mod:`fft.transforms` --
the same 1-D transforms, axis after axis in the same order, the same conjugations,
Hermitian completion and final scaling -- on the rank's block, with an exchange
(:mod:`fft.distributed.transpose`) before each axis that is not local. The serial
steps are all *per line*: a plan's stages run in fast mode at counts fixed when the
plan is made, so a line's bits depend on that line only, never on the batch it is
computed in (:mod:`fft.plan`); the conjugations and the scaling are per entry; the
exchanges move values without changing them. So every rank's block of the result
has the bits of the same block of the serial result, on every grid and layout.

Axes run in the serial order: the last of ``axes`` first. The layout changes on the
way and the result's ``split`` says where it ended. Two orders need no more than two
exchanges: from the input layout ``(0, 1)``, the default ``axes=(0, 1, 2)`` (axis 2
first) ends in ``(1, 2)``; from there, ``axes=(2, 1, 0)`` returns to ``(0, 1)``, with
the bits of the serial call with those axes. A round trip is therefore

>>> Y = fftn(x)                      # = fft.fftn(X)                  # doctest: +SKIP
>>> x2 = ifftn(Y, axes=(2, 1, 0))    # = fft.ifftn(Y_, axes=(2, 1, 0)) # doctest: +SKIP
>>> Z = rfftn(x)                     # = fft.rfftn(X)                 # doctest: +SKIP
>>> x3 = irfftn(Z, s=(n1, n0, n2), axes=(1, 0, 2))  # s along axes  # doctest: +SKIP
"""

from __future__ import annotations

import operator
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ozaki.distributed.layout import agree
from ozaki.distributed.traffic import Traffic

from ..plan import Plan
from ..transforms import (apply_norm, check_norm, check_workers, complete_hermitian,
                          limit_threads, plan_for_axis, result_array, to_split,
                          transform_along)
from .layout import DistributedArray
from .transpose import make_local

__all__ = ["fftn", "ifftn", "rfftn", "irfftn", "FFTInfo"]

PHASES = ("transforms", "transposes", "packing", "passes")


@dataclass
class FFTInfo:
    """What a distributed transform did on this rank.

    Attributes
    ----------
    seconds : dict
        ``"transforms"`` (the local 1-D transforms: the stages' products and twiddles),
        ``"transposes"`` (the ``Alltoallv`` calls, waiting included), ``"packing"``
        (their send and receive copies), ``"passes"`` (split, conjugation, completion,
        scaling, the result's layout; for the real-to-real transforms also the
        all-reduce of each axis's range peaks, :mod:`fft.distributed.realtransforms`),
        in seconds.
    traffic : ozaki.distributed.traffic.Traffic
        Bytes and messages this rank sent (flat convention): ``by_kind["transposes"]``
        the exchanges, ``by_kind["range"]`` the real-to-real transforms' peaks.
    exchanges : list of tuple
        ``(axis made local, split before, split after)`` for each ``Alltoallv``, in
        order (a slab grid's trivial cut only relabels the layout: not listed).
    """

    seconds: dict = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    traffic: Traffic = field(default_factory=Traffic)
    exchanges: list = field(default_factory=list)


def axes_order(axes) -> list[int]:
    """``axes`` as a permutation of ``(0, 1, 2)`` (default that; negative axes count from
    the end); ``TypeError`` or ``ValueError`` otherwise: the distributed transforms are 3-D."""
    if axes is None:
        return [0, 1, 2]
    try:
        got = [operator.index(a) for a in axes]
    except TypeError:
        raise TypeError(f"axes must be a sequence of integers, got {axes!r}") from None
    got = [a + 3 if -3 <= a < 0 else a for a in got]
    if sorted(got) != [0, 1, 2]:
        raise ValueError(f"axes must order the three axes (a permutation of 0, 1, 2), got "
                         f"{axes!r}: the distributed transforms are 3-D")
    return got


def _plans(plan, lengths: list[int]) -> list[Plan]:
    """One plan per axis, in the order of ``axes`` (of the given lengths), fast mode."""
    if isinstance(plan, Sequence) and not isinstance(plan, str) and len(plan) != 3:
        raise ValueError(f"plan holds {len(plan)} plans for 3 transformed axes: pass one per "
                         "axis, in the order of axes")
    plans = [plan_for_axis(plan, i, n) for i, n in enumerate(lengths)]
    for p in plans:
        if p.options.mode != "fast" and not p.options.native:
            raise ValueError("plans in accurate mode choose shifts from the whole batch, "
                             "which differs from rank to rank: pass mode='fast' plans")
    return plans


def plan_fingerprint(plan: Plan) -> tuple:
    """What makes a plan's bits: length, radices, options as resolved, stage counts."""
    o = plan.options
    if o.native:
        return plan.n, tuple(plan.radices), "native"
    import ozaki
    eng = ozaki.get_engine(o.engine, o.scheme)
    return (plan.n, tuple(plan.radices), o.mode, eng.name,
            eng.preferred_scheme if o.scheme == "auto" else o.scheme,
            tuple(st.counts() for st in plan.stages))


def _check(x, axes, norm, workers, plan, kind: str, s=None):
    """Validate and agree on the arguments on every rank (the same error everywhere).

    Returns ``(axes, norm, plans, n_last)``; ``n_last`` is the output length of the
    real axis of ``irfftn`` (``None`` otherwise).
    """
    if not isinstance(x, DistributedArray):  # no communicator to agree on
        raise TypeError(f"x must be a fft.distributed.DistributedArray (see scatter), got "
                        f"{type(x).__name__}")
    held = {}

    def check():
        x.validate()
        ax, nm = axes_order(axes), check_norm(norm)
        check_workers(workers)
        complex_in = np.iscomplexobj(x.local)
        if kind == "r2c" and complex_in:
            raise TypeError("x must be real for rfftn (got complex values)")
        lengths = [x.shape[a] for a in ax]
        n_last = None
        if kind == "c2r":
            n_last = 2 * (lengths[-1] - 1) if s is None else _output_length(s, x.shape, ax)
            if n_last < 1:
                raise ValueError(f"invalid number of data points ({n_last}) specified")
            lengths[-1] = n_last
        held["plans"] = _plans(plan, lengths)
        fingerprint = [plan_fingerprint(p) for p in held["plans"]]
        return (x.shape, x.split, (x.grid.P, x.grid.Q), complex_in, ax, nm, n_last,
                fingerprint)

    _, _, _, _, ax, nm, n_last, _ = agree(x.grid.comm, check)
    return ax, nm, held["plans"], n_last


def _output_length(s, shape, axes) -> int:
    """``irfftn``'s real-axis length from ``s``, the lengths along ``axes`` in their order
    (scipy's rule); the others must be the input's: nothing is cropped or padded."""
    try:
        s = [operator.index(v) for v in s]
    except TypeError:
        raise TypeError(f"s must be a sequence of three integers, got {s!r}") from None
    if len(s) != 3:
        raise ValueError(f"s must give the three output lengths, got {s!r}")
    for n, a in zip(s[:-1], axes[:-1]):
        if n not in (-1, shape[a]):
            raise ValueError(f"s asks for length {n} along axis {a} (length {shape[a]}): the "
                             "distributed transforms do not resize; resize before scatter")
    m, n = shape[axes[-1]], s[-1]
    if n == -1:
        n = m
    if n < 1 or n // 2 + 1 != m:
        raise ValueError(f"s asks for length {n} along the real axis {axes[-1]}, which needs "
                         f"{n // 2 + 1 if n >= 1 else 'a positive length'} inputs there; x "
                         f"has {m}: the distributed transforms do not resize")
    return n


class TransformRun:
    """One transform's state: the block, its global shape and layout, the clock
    (shared with :mod:`fft.distributed.realtransforms`)."""

    def __init__(self, x: DistributedArray, info: FFTInfo):
        self.grid, self.shape, self.split, self.info = x.grid, list(x.shape), x.split, info

    def local(self, S, axis: int, lead: int):
        t = self.info.seconds
        S, split = make_local(S, lead, self.shape, self.split, self.grid, axis,
                              self.info.traffic, t)
        ranks = self.grid.P if axis == self.split[0] else self.grid.Q
        if split != self.split and ranks > 1:  # not a slab's relabel
            self.info.exchanges.append((axis, self.split, split))
        self.split = split
        return S

    def along(self, S, axis: int, plan: Plan, real_in=False, real_out=False):
        S = self.local(S, axis, 0 if real_in else 1)
        t0 = time.perf_counter()
        out = transform_along(S, axis, plan, real_in, real_out)
        self.info.seconds["transforms"] += time.perf_counter() - t0
        return out

    def passes(self, f, *args):
        t0 = time.perf_counter()
        out = f(*args)
        self.info.seconds["passes"] += time.perf_counter() - t0
        return out

    def result(self, S, real: bool) -> DistributedArray:
        out = self.passes(result_array, S, False, real)
        return DistributedArray(out, tuple(self.shape), self.grid, self.split)


def _c2c(x, axes, norm, workers, plan, inverse: bool, return_info: bool):
    axes, norm, plans, _ = _check(x, axes, norm, workers, plan, "c2c")
    info = FFTInfo()
    run = TransformRun(x, info)
    order = list(reversed(list(enumerate(axes))))
    with limit_threads(workers):
        if not np.iscomplexobj(x.local):  # as serial: real input enters through [Fr; Fi]
            i, ax = order.pop(0)
            S = run.along(x.local, ax, plans[i], real_in=True)
        else:
            S = run.passes(to_split, x.local)
            if inverse:
                S[1] = -S[1]
        for i, ax in order:
            S = run.along(S, ax, plans[i])
    if inverse:
        S[1] = -S[1]
    total = int(np.prod(run.shape, dtype=np.int64))
    out = run.result(run.passes(apply_norm, S, norm, inverse, total), False)
    return (out, info) if return_info else out


def fftn(x: DistributedArray, axes=None, norm=None, workers=None, *, plan=None,
         return_info: bool = False):
    """3-D DFT of a distributed array, bitwise equal to serial :func:`fft.fftn`
    (with the default or any fast-mode emulated plans; module docstring).

    Parameters
    ----------
    x : DistributedArray
        Real or complex, in any layout.
    axes : sequence of 3 int, optional
        The order of the axes (a permutation of ``(0, 1, 2)``, default that): as in
        :func:`fft.fftn`, the last runs first. The result's bits are those of
        ``fft.fftn(X, axes=axes)``; the order decides the exchanges (module docstring).
    norm : {"backward", "ortho", "forward"}, optional
    workers : int, optional
        Caps this rank's threads.
    plan : fft.Plan or sequence of 3, optional
        One per axis in the order of ``axes`` (fast mode: see :func:`fft.get_plan`).
    return_info : bool
        Also return an :class:`FFTInfo`.

    Returns
    -------
    DistributedArray, complex128
        The transform, in the layout the last exchange left (its ``split``).

    Raises
    ------
    TypeError, ValueError
        On every rank, for bad arguments on any rank or ranks that disagree (``x`` must
        be a DistributedArray on every rank: without one there is no communicator to
        agree on, and only that rank raises).
    """
    return _c2c(x, axes, norm, workers, plan, False, return_info)


def ifftn(x: DistributedArray, axes=None, norm=None, workers=None, *, plan=None,
          return_info: bool = False):
    """3-D inverse DFT, bitwise equal to ``fft.ifftn(X, axes=axes)``; see :func:`fftn`.

    From :func:`fftn`'s output layout ``(1, 2)``, ``axes=(2, 1, 0)`` needs two exchanges
    and returns to ``(0, 1)``; the default order needs three.
    """
    return _c2c(x, axes, norm, workers, plan, True, return_info)


def rfftn(x: DistributedArray, axes=None, norm=None, workers=None, *, plan=None,
          return_info: bool = False):
    """3-D DFT of a real distributed array, bitwise equal to ``fft.rfftn(X, axes=axes)``.

    The real axis is the last of ``axes`` (default 2); it keeps ``n // 2 + 1`` entries.
    Other parameters as :func:`fftn`.

    Returns
    -------
    DistributedArray, complex128
    """
    axes, norm, plans, _ = _check(x, axes, norm, workers, plan, "r2c")
    info = FFTInfo()
    run = TransformRun(x, info)
    last = axes[-1]
    total = int(np.prod(run.shape, dtype=np.int64))
    with limit_threads(workers):
        S = run.along(x.local, last, plans[2], real_in=True)
        h = run.shape[last] // 2 + 1
        S = S[(slice(None),) * (last + 1) + (slice(0, h),)]
        run.shape[last] = h
        for i, ax in reversed(list(enumerate(axes[:-1]))):
            S = run.along(S, ax, plans[i])
    out = run.result(run.passes(apply_norm, S, norm, False, total), False)
    return (out, info) if return_info else out


def irfftn(x: DistributedArray, s=None, axes=None, norm=None, workers=None, *, plan=None,
           return_info: bool = False):
    """Inverse of :func:`rfftn`: real output, bitwise equal to ``fft.irfftn(X, s, axes)``.

    Parameters
    ----------
    x : DistributedArray, complex128
        The half spectrum: ``m`` entries along the real axis (the last of ``axes``).
    s : sequence of 3 int, optional
        The output lengths along ``axes``, in their order (scipy's rule); only the real
        axis's may differ from ``x``'s: ``2m - 2`` (the default) or ``2m - 1``. The
        distributed transforms do not crop or pad.
    axes, norm, workers, plan, return_info
        As :func:`fftn`. From :func:`rfftn`'s output layout, ``axes=(1, 0, 2)`` needs two
        exchanges and returns to ``(0, 1)``.

    Returns
    -------
    DistributedArray, float64
    """
    axes, norm, plans, n_last = _check(x, axes, norm, workers, plan, "c2r", s)
    info = FFTInfo()
    run = TransformRun(x, info)
    last = axes[-1]
    S = run.passes(to_split, x.local)
    S[1] = -S[1]  # the inverse as conj(DFT(conj(x)))
    with limit_threads(workers):
        for i, ax in reversed(list(enumerate(axes[:-1]))):
            S = run.along(S, ax, plans[i])
        S = run.local(S, last, 1)
        full = run.passes(complete_hermitian, S, last, n_last)
        run.shape[last] = n_last
        R = run.along(full, last, plans[2], real_out=True)
    total = int(np.prod(run.shape, dtype=np.int64))
    out = run.result(run.passes(apply_norm, R, norm, True, total), True)
    return (out, info) if return_info else out
