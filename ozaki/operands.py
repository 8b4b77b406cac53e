"""Operands read as IEEE bit patterns, with their per-line shifts.

An :class:`Operand` wraps ``A`` (shifts on rows) or ``B`` (shifts on columns) as a
C-ordered int64 view of its bits and runs the compiled passes of
:mod:`ozaki.kernels` on it: line statistics, norms, quantisation and residues.
"""

from __future__ import annotations

import numpy as np

from . import kernels, scaling

__all__ = ["Operand", "pow2mod", "MAX_EXPONENT"]

#: ``2**E mod p`` is tabulated for scaled exponents ``E`` below this bound.
MAX_EXPONENT = 1100


class Operand:
    """An operand read as C-ordered bits; ``outer`` is the axis that gets shifts.

    A Fortran-ordered array is read through its transpose (no copy); residue
    planes are then returned transposed so they always have the product's shape.
    """

    def __init__(self, X: np.ndarray, outer: int):
        self.X = X
        self.shape = X.shape
        if X.flags.c_contiguous:
            self.bits, self.axis, self.T = X.view(np.int64), outer, False
        elif X.flags.f_contiguous:
            self.bits, self.axis, self.T = X.T.view(np.int64), 1 - outer, True
        else:
            self.bits, self.axis, self.T = np.ascontiguousarray(X).view(np.int64), outer, False

    def stats(self):
        """Per line: exponent bound ``E``, all-zero flag, non-finite flag, nonzeros."""
        with kernels.LOCK:
            maxbits, bad, nnz = kernels.absmax_bits(self.bits, self.axis)
        E, zero = scaling.exponents(maxbits)
        return E, zero, bad, nnz

    def norms(self, E):
        with kernels.LOCK:
            return kernels.norms_normalized(self.bits, E, self.axis)

    def _shifts(self, shift):
        zeros = np.zeros(self.bits.shape[1 - self.axis], np.int64)
        return (shift, zeros) if self.axis == 0 else (zeros, shift)

    def _buffer(self, flat):
        """``flat`` (the workspace slot, product shape) viewed in the bits' layout."""
        return flat.reshape(-1)[: self.bits.size].reshape(self.bits.shape)

    def _plane(self, buf):
        return buf.T if self.T else buf

    def quantize(self, shift, slot):
        buf = self._buffer(slot)
        srow, scol = self._shifts(shift)
        with kernels.LOCK:
            kernels.quantize_down(self.bits, srow, scol, buf)
        return self._plane(buf)

    def residues(self, shift, p, pow2mod, slot):
        buf = self._buffer(slot)
        srow, scol = self._shifts(shift)
        with kernels.LOCK:
            kernels.residues(self.bits, srow, scol, float(p), 1.0 / p, pow2mod, buf)
        return self._plane(buf)


_POW2MOD: dict[int, np.ndarray] = {}


def pow2mod(p: int) -> np.ndarray:
    """``2**e mod p`` for ``e < MAX_EXPONENT + 27`` (cached per modulus)."""
    tab = _POW2MOD.get(p)
    if tab is None:
        tab = np.array([pow(2, e, p) for e in range(MAX_EXPONENT + 27)], dtype=np.float64)
        tab.flags.writeable = False  # shared by every call: nobody may change it
        _POW2MOD[p] = tab
    return tab
