"""Non-finite inputs: the semantics of exact arithmetic, then one rounding.

``C_ij`` is NaN iff row ``i`` of ``A`` or column ``j`` of ``B`` holds a NaN, or a
product ``inf * 0`` occurs, or infinite products of both signs occur; it is
``+-inf`` iff infinite products of one sign occur (and no NaN). An Inf in row
``i`` makes every ``C_ij`` non-finite (each term with it is infinite or
``inf * 0``), so only the rows and columns that hold a non-finite value need
this pass; the emulation treats those values as zero and this pass overwrites.
The counts below are sums of 0/1 products: exact in FP64.
"""

from __future__ import annotations

import numpy as np

__all__ = ["apply_nonfinite"]


def _status(As: np.ndarray, Bs: np.ndarray) -> np.ndarray:
    """Exact-arithmetic value class of ``As @ Bs`` entries: NaN, +inf, -inf or 0 (finite)."""
    inf_a, inf_b = np.isinf(As), np.isinf(Bs)
    pos_a, neg_a = (As > 0), (As < 0)
    pos_b, neg_b = (Bs > 0), (Bs < 0)
    f = np.float64

    def mm(x, y):
        return x.astype(f) @ y.astype(f)

    nan = np.isnan(As).any(axis=1)[:, None] | np.isnan(Bs).any(axis=0)[None, :]
    nan |= (mm(inf_a, Bs == 0) + mm(As == 0, inf_b)) > 0
    fin_pos_a, fin_neg_a = pos_a & ~inf_a, neg_a & ~inf_a
    plus = (mm(inf_a & pos_a, pos_b) + mm(inf_a & neg_a, neg_b)
            + mm(fin_pos_a, inf_b & pos_b) + mm(fin_neg_a, inf_b & neg_b)) > 0
    minus = (mm(inf_a & pos_a, neg_b) + mm(inf_a & neg_a, pos_b)
             + mm(fin_pos_a, inf_b & neg_b) + mm(fin_neg_a, inf_b & pos_b)) > 0
    out = np.zeros(nan.shape)
    out[plus] = np.inf
    out[minus] = -np.inf
    out[nan | (plus & minus)] = np.nan
    return out


def apply_nonfinite(A: np.ndarray, B: np.ndarray, bad_rows: np.ndarray,
                    bad_cols: np.ndarray, C: np.ndarray) -> None:
    """Overwrite, in ``C``, the entries whose exact value is not finite.

    ``bad_rows`` flags rows of ``A`` and ``bad_cols`` columns of ``B`` with a
    NaN or an Inf.
    """
    rows = np.flatnonzero(bad_rows)
    cols = np.flatnonzero(bad_cols)
    if rows.size:
        C[rows, :] = _status(A[rows, :], B)
    if cols.size:
        C[:, cols] = _status(A, B[:, cols])
