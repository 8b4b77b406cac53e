"""The data that depend on one operand alone: line data, floors, norm sums, residue planes.

Everything step 1 and step 2 read of an operand, apart from the shifts, is a
function of that operand alone (and of the scheme, through ``r`` and the moduli,
or of ``k``, through ``h``): the exact line data (the exponent ``E`` of each line,
its non-finite flag, its nonzero count), the accurate mode's floors
``floor(|x| 2**(r - E))`` and their line sums, the fast mode's exact norm sums
``(sum F**2, sum F)`` of ``F = floor(|x| 2**(h - E))``, and, once step 1 has chosen
the shifts, the residue planes ``smod(trunc(x 2**shift), p)``. A
:class:`Prepared` operand holds them; a kept one (what :func:`ozaki.prepare`
makes) holds them across calls.

**Why keeping changes no bit.** Each kept datum is an exact integer (the
backend's passes are exact: :mod:`ozaki.core.backend`), so a kept value is the
value a fresh pass would give. Floors are kept per ``r`` and norm sums per ``h``,
the only parameters they depend on; residue planes are kept per (moduli, slices,
columns, dtype) together with the bytes of the shifts they were formed with, and
served only for those same shifts. A product against a kept operand therefore
reads exactly the numbers an unprepared call forms, and gives its bits.

:mod:`ozaki.core.pipeline` builds these for each call (or takes the kept ones)
and passes them to step 1 (:func:`ozaki.core.pipeline.decide`) and to the
per-piece passes (:mod:`ozaki.core.passes`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import decisions, scaling
from .backend import Backend, Operand
from .workspace import workspace

__all__ = ["FloorRequest", "Prepared", "floors_buffer"]


def floors_buffer(op: Operand, xp=np) -> np.ndarray:
    """Float32 planes (bits' layout) for the floors of an operand that is not kept:
    the residue planes' workspace (namespace ``xp``), free until the floor GEMM has
    read them."""
    return workspace(xp).take("ra" if op.outer == 0 else "rb", op.layout(op.batch), np.float32)


class FloorRequest(NamedTuple):
    """Ask an operand for its accurate-mode floors at ``r`` with its line data, in one
    read, into ``out`` (float32, the bits' layout: :func:`floors_buffer`)."""

    r: int
    out: np.ndarray


class Prepared:
    """An operand with the data that depend on it alone.

    ``op`` is the :class:`~ozaki.core.backend.Operand`; ``lines`` its exact line
    data (with ``norms``, also its fast-mode norm sums, formed in the same read).
    A kept operand (``keep``, what :func:`ozaki.prepare` makes) also keeps
    its accurate-mode floors and their line sums (``floors[r]``) and fast-mode
    norm sums (``norms[h]``) across calls (an operand that is not kept may have
    them for one call: ``norms``, or ``floors`` (a :class:`FloorRequest`), asks for them
    with its line data, in the same read), and with ``keep_residues`` the residue planes
    of the shifts it was last used with (one set per modulus and chunk,
    replaced when a product picks other shifts). Everything is exact, so
    products against it give the bits of unprepared calls.
    """

    def __init__(self, op: Operand, backend: Backend, keep: bool = False,
                 keep_residues: bool = False, norms: bool = False,
                 floors: FloorRequest | None = None):
        self.op = op
        self.backend = backend
        self.floors: dict[int, decisions.Floors] = {}
        self.norms: dict[int, decisions.Norms] = {}
        if norms:  # fast mode's norm sums in the same read of the operand
            h = scaling.norm_bits(op.inner)
            *stats, S2, S1 = backend.line_norms(op, h)
            self.lines = decisions.Lines(*stats)
            self.norms[h] = decisions.Norms(h, S2, S1)
        elif floors is not None:  # accurate mode's floors in the same read
            stats, planes, sums = backend.line_floors(op, floors.r, floors.out)
            self.lines = decisions.Lines(*stats)
            self.floors[floors.r] = decisions.Floors(planes, sums)
        else:
            self.lines = decisions.Lines(*backend.line_stats(op))
        self.residues: dict[tuple, tuple[bytes, np.ndarray]] = {}
        self.keep = keep
        self.keep_residues = keep and keep_residues

    def norm_sums(self, k: int) -> decisions.Norms:
        """Fast mode's exact norm sums of the lines for a product over ``k`` terms.

        ``(sum F**2, sum F)`` per line (int64, (b, lines)) of ``F = floor(|x| 2**(h - E))``,
        ``h = norm_bits(k)`` (:func:`ozaki.core.scaling.norm_bits`), ``E`` the line's
        exponent (shift 0 on an all-zero line); formed by one pass of the backend
        unless already held (asked for with the line data, or kept from an earlier
        call: ``keep``). They depend on ``h`` alone, so a held value is the one a
        fresh pass gives.
        """
        h = scaling.norm_bits(k)
        got = self.norms.get(h)
        if got is None:
            E, zero = self.lines.exponents
            shift = np.where(zero, 0, h - E).astype(np.int64)
            got = decisions.Norms(h, *self.backend.norm_sums(self.op, shift))
            if self.keep:
                self.norms[h] = got
        return got

    def residue_planes(self, shift: np.ndarray, moduli: tuple[int, ...], out: np.ndarray,
                       part: tuple[int, int] | None = None,
                       cols: tuple[int, int] | None = None) -> np.ndarray:
        """Residues of ``trunc(x 2**shift)`` mod each of ``moduli`` (kept, or formed into ``out``).

        ``part = (lo, hi)`` restricts a stack to its slices ``lo:hi`` (a shared
        operand, a stack of one, is read whole); ``cols = (j0, j1)`` a right
        operand to its columns. Returns (L, b, rows, cols) planes.
        """
        op = self.op if part is None or self.op.batch == 1 else self.op.sub(*part)
        E, zero = self.lines.exponents
        if part is not None and self.op.batch > 1:
            E, zero = E[part[0]:part[1]], zero[part[0]:part[1]]
        if cols is not None:
            E, zero = E[:, cols[0]:cols[1]], zero[:, cols[0]:cols[1]]
            fit = self.backend.residue_pass(E, zero, shift[:, cols[0]:cols[1]])
        else:
            fit = self.backend.residue_pass(E, zero, shift)
        if not self.keep_residues:
            return self.backend.residues(op, shift, moduli, out, fit, cols)
        key = (moduli, part if self.op.batch > 1 else None, cols, out.dtype)
        tag = shift.shape, shift.tobytes()
        kept = self.residues.get(key)
        if kept is not None and kept[0] == tag:
            return kept[1]
        planes = self.backend.residues(op, shift, moduli, out, fit, cols).copy()
        self.residues[key] = (tag, planes)  # the last shifts' planes, nothing older
        return planes
