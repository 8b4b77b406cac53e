"""The accuracy contract: per-call, per-entry error bounds and the moduli count they choose.

Target (what native DGEMM achieves in practice), for every entry::

    |C_ij - (AB)_ij| <= u |(AB)_ij| + u (|A||B|)_ij,        u = 2**-53.

The bound
---------
With ``A' = trunc(diag(2**s) A)``, ``B' = trunc(B diag(2**t))`` and
``C~ = diag(2**-s) A'B' diag(2**-t)`` (recovered exactly by the CRT), the
truncation error is at most (:doc:`contract`, "The bound and its proof")::

    T_ij = sum_l min(2**-s_i, |a_il|) |b_lj| + sum_l |a_il| min(2**-t_j, |b_lj|).

Accurate mode has the exact floor GEMM ``G = F_A F_B`` of the quantised
magnitudes ``alpha = |A| 2**e``, ``beta = |B| 2**f`` (:mod:`ozaki.core.scaling`). As
``min(2**-s_i, |a_il|) <= 2**-s_i [a_il != 0]`` and
``sum_l [a_il != 0] beta_lj <= cF_j + min(nA_i, nB_j)`` (column sums of the
floors, nonzero counts), and symmetrically,
``T_ij <= 2**-(e_i + f_j) (2**-sigma_i (cF_j + c_ij) + 2**-tau_j (rF_i + c_ij))``
with ``s = e + sigma``, ``t = f + tau``, ``c_ij = min(nA_i, nB_j)``; and
``T_ij <= 2 (|A||B|)_ij`` always. ``G`` itself is a **lower** bound:
``(|A||B|)_ij >= 2**-(e_i + f_j) G_ij``.

The reconstruction is exact up to the compensated sum of its ``L`` level terms
(Ogita-Rump-Oishi Sum2): ``|fl(C') - C'| <= (u + g) |C'| + R`` with ``g`` and
``R`` from :class:`ozaki.core.moduli.CRTPlan` (``gamma2`` and ``rounding``), and the
scale-back rounds once more (by at most ``2**-1075``) only for subnormal results.
Altogether, with ``|C~| <= |AB| + T <= 2 |A||B|``::

    |C_ij - (AB)_ij| <= u |(AB)_ij| + (1 + u)(T_ij + 2**-(s_i + t_j) R)
                        + 2 g (|A||B|)_ij + 2**-1075,

so an entry is **certified** when ``(1 + u)(T_ij + 2**-(s_i+t_j) R) +
2 g (|A||B|)_ij + 2**-1075 <= u (|A||B|)_ij``, checked against the lower bound
above (and the upper bound for the ``g`` term). Every quantity is
scaled by ``2**(e_i + f_j)`` first, so nothing over- or underflows; the float
evaluation carries a relative safety factor of ``2**-40``, which covers its own
roundings (a few ``u``, relative, on nonnegative terms) and the factor ``1 + u``
(not multiplied in: ``1 + 2**-53`` rounds to 1 in FP64).

Fast mode has no componentwise information; it certifies the weaker normwise
target ``|C_ij - (AB)_ij| <= u |(AB)_ij| + u ||a_i||_2 ||b_j||_2``: the same
bound with ``T_ij <= 2**-s_i ||b_j||_1 + 2**-t_j ||a_i||_1`` and
``|A||B| <= ||a_i||_2 ||b_j||_2`` must stay below ``u ||a_i||_2 ||b_j||_2`` (see
:func:`normwise_ratio`; the final rounding ``u |(AB)_ij|`` is part of the target,
as in accurate mode, since no bound below it can hold).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import scaling
from .moduli import crt_plan, plan_terms

__all__ = ["CertificationError", "Certificate", "Refinement", "Whole", "WHOLE", "accurate_shifts",
           "componentwise", "Normwise", "normwise_ratio", "normwise_entries", "explain"]

U = 2.0 ** -53
_SAFETY = 1.0 + 2.0 ** -40


class CertificationError(ArithmeticError):
    """Raised with ``fallback="raise"`` when some entries cannot be certified."""


@dataclass
class Certificate:
    """Outcome of the bound for a stack of ``b`` products, each at its own count.

    Attributes
    ----------
    num_moduli : ndarray of int64, shape (b,)
    sigma, tau : ndarray of int64, shapes (b, m), (b, n)
        Extra shifts on top of the quantisation exponents (``s = e + sigma``;
        in fast mode the shifts themselves).
    max_ratio : ndarray, shape (b,)
        Largest ``bound / target`` over each slice's entries (``<= 1``: certified).
    uncertified : ndarray of int64, shape (b,)
        Entries whose bound misses the target.
    kind : str
        ``"componentwise"`` (accurate mode) or ``"normwise"`` (fast mode).
    """

    num_moduli: np.ndarray
    sigma: np.ndarray
    tau: np.ndarray
    max_ratio: np.ndarray
    uncertified: np.ndarray
    kind: str

    def where(self, cond: np.ndarray, other: "Certificate") -> "Certificate":
        """Per slice: ``other`` where ``cond``, else ``self`` (``self`` itself where nowhere)."""
        if not cond.any():
            return self
        c1 = cond[:, None]
        return Certificate(np.where(cond, other.num_moduli, self.num_moduli),
                           np.where(c1, other.sigma, self.sigma),
                           np.where(c1, other.tau, self.tau),
                           np.where(cond, other.max_ratio, self.max_ratio),
                           np.where(cond, other.uncertified, self.uncertified), self.kind)

    def put(self, g: int, one: "Certificate") -> "Certificate":
        """A copy with slice ``g`` taken from ``one``, a certificate of that slice alone."""
        fields = [x.copy() for x in (self.num_moduli, self.sigma, self.tau, self.max_ratio,
                                     self.uncertified)]
        for x, y in zip(fields, (one.num_moduli, one.sigma, one.tau, one.max_ratio,
                                 one.uncertified)):
            x[g] = y[0]
        return Certificate(*fields, self.kind)


class Whole:
    """The reductions of a product held whole: none (every method is the identity).

    The accurate-mode decisions read, besides per-entry data, maxima over a
    row's columns (``row_max``), over a column's rows (``col_max``), and totals
    (``max``, ``sum``; the rows and columns holding a failure, ``row_any``,
    ``col_any``, and their numbers, ``count_rows``, ``count_cols``). A product
    cut into blocks (:mod:`ozaki.distributed`) passes an object with the same
    methods that reduces them over the other blocks (MAX, OR and exact SUM, so
    the order does not matter), and ``lines(m, n)`` gives the whole's shape.
    """

    def row_max(self, x):
        return x

    col_max = row_max
    row_any = row_max
    col_any = row_max
    max = row_max
    sum = row_max
    count_rows = row_max
    count_cols = row_max

    def lines(self, m: int, n: int) -> tuple[int, int]:
        return m, n


WHOLE = Whole()


def accurate_shifts(backend, G, rF, cF, nA, nB, H, tie=None, mu=None, reduce: Whole = WHOLE):
    """``(sigma, tau)`` from the floor GEMM ``G`` (:mod:`ozaki.core.scaling`), per slice.

    ``H`` (b,) per slice gives shifts (b, m) and (b, n); ``H`` (K, b), for ``K``
    counts, gives (K, b, m) and (K, b, n) from one pass over ``G``, each count's
    exactly as alone (the column maxima of all ``K`` are reduced before any
    ``tau`` is fitted). ``tie(sigma, tau)``, when given, ties shifts that must be
    equal (complex products: the real and imaginary columns of one ``B``
    column), lowering them only, which keeps them safe. ``mu``, the row maxima
    of ``U`` (they do not depend on the count), may be passed in.
    """
    H = np.asarray(H)
    if mu is None:
        mu = reduce.row_max(backend.upper_rowmax(G, rF, cF, nA, nB))
    HK = H.reshape(-1, H.shape[-1])[:, :, None]
    sigma = scaling.half_fit(mu, HK)
    nu = reduce.col_max(backend.upper_scaled_colmax(G, rF, cF, nA, nB, sigma))
    tau = scaling.fit(nu, HK)
    if tie is not None:
        tied = [tie(s, t) for s, t in zip(sigma, tau)]
        sigma, tau = np.stack([s for s, _ in tied]), np.stack([t for _, t in tied])
    return (sigma, tau) if H.ndim == 2 else (sigma[0], tau[0])


def componentwise(backend, G, rF, cF, nA, nB, e, f, scheme: str, counts, *, ratio=None,
                  bound=None, sigma=None, tau=None, tie=None, mu=None,
                  probe=False, reduce: Whole = WHOLE):
    """Shifts for ``counts`` (b,) and their componentwise certificate (accurate mode).

    ``G`` is the floor GEMM (b, m, n), ``rF``/``cF`` the row/column sums of the
    floors, ``nA``/``nB`` the nonzero counts, ``e``/``f`` the quantisation
    exponents. ``sigma``/``tau`` impose the extra shifts (else they are chosen
    from ``G``); ``ratio`` and ``bound`` (b, m, n) receive the per-entry ratio
    and absolute bound. ``probe`` asks only whether each slice certifies (its
    ``uncertified`` is then nonzero iff not, and its ``max_ratio`` a lower bound).
    ``reduce`` combines the blocks of a distributed product (:class:`Whole`).

    ``counts`` (K, b) evaluates ``K`` counts in one pass over ``G`` (each exactly
    as alone) and returns a list of ``K`` certificates: ``probe`` is then a flag
    per count, imposed shifts have shapes (K, b, m) and (K, b, n), and ``ratio``
    and ``bound`` belong to the first count (which is then no probe).
    """
    counts = np.asarray(counts)
    C = counts.reshape(-1, counts.shape[-1])
    H, R, g2 = (np.stack(x) for x in zip(*(plan_terms(scheme, c) for c in C)))
    if sigma is None:
        sigma, tau = accurate_shifts(backend, G, rF, cF, nA, nB, H, tie, mu, reduce)
    sigma = sigma.reshape((len(C),) + sigma.shape[-2:])
    tau = tau.reshape((len(C),) + tau.shape[-2:])
    probes = np.array(np.broadcast_to(probe, len(C)), np.bool_)
    probes[0] &= ratio is None and bound is None
    empty = backend.xp.zeros((0, 0, 0))
    rowmax, rowfail = backend.componentwise_ratios(
        G, rF, cF, nA, nB, sigma, tau, R, g2, e, f, _SAFETY,
        empty if ratio is None else ratio, empty if bound is None else bound, probes)
    top = reduce.max(rowmax.max(axis=2, initial=0.0))
    fails = reduce.sum(rowfail.sum(axis=2))
    certs = [Certificate(c, s, t, x, y, "componentwise")
             for c, s, t, x, y in zip(C, sigma, tau, top, fails)]
    return certs if counts.ndim == 2 else certs[0]


@dataclass
class Refinement:
    """Exact FP64 bounds at a finer quantisation, for a block of one slice's entries.

    The coarse bound quantises to the scheme unit's range (16 on FP8): small
    entries floor to 0 and the lower bound of ``|A||B|`` can vanish; its upper
    bound also cannot see structural zeros (``A = B = I``). For the rows and
    columns holding uncertified entries, exact FP64 products at ``r'`` bits
    (``r' = min(20, (53 - log2 k) / 2 - 1)``, quantisation exponents ``e'``,
    ``f'``) give the lower bound ``G' = F_A F_B`` and the upper bound
    ``U' = (F_A + I_A)(F_B + I_B)`` (``I`` the nonzero indicators), which is 0
    exactly for structural zeros (a GEMM only on lines that hold zeros; elsewhere
    ``U'`` follows from ``G'`` and line sums, exactly: :func:`upper_product`). The truncation term keeps the coarse bound
    (the fine one would over-count by the quantisation range), capped by
    ``T <= 2 |A||B| <= 2 U'``. Everything is exact integer data, so the outcome
    is the same on every engine. Fields are per block row (``rows``) and column
    (``cols``); ``rF``, ``cF`` are the coarse floor sums, ``nA``, ``nB`` the
    nonzero counts (the coarse term's ``c = min(nA_i, nB_j)``); ``backend`` runs
    the per-entry pass (:meth:`ozaki.core.backend.Backend.refined_ratios`).
    """

    rows: np.ndarray
    cols: np.ndarray
    G: np.ndarray
    U: np.ndarray
    e: np.ndarray
    f: np.ndarray
    rF: np.ndarray
    cF: np.ndarray
    nA: np.ndarray
    nB: np.ndarray
    backend: Any
    #: Exact GEMM calls made (``G'``, and ``U'`` where lines hold zeros: 1 to 3).
    gemms: int = 1

    def certify(self, sigma, tau, e, f, plan, ratio, bound=None) -> tuple[float, int]:
        """Improve one slice's coarse ``ratio`` (m, n) on this block; ``(max ratio, fails)``.

        ``sigma`` (m,), ``tau`` (n,), ``e``, ``f`` are the slice's coarse shifts and
        quantisation exponents; ``bound`` (m, n) is improved likewise. Per entry of
        the block (:func:`ozaki.backends.numpy.certificate.refined_ratios`, the
        formula in its order of operations): the coarse truncation term in the fine
        units ``2**-(e' + f')``, capped by ``2 U'``, plus the reconstruction and
        subnormal terms, over ``u G'`` (``u = 2**-53``: the target ``u |A||B|`` is at
        least ``u 2**-(e' + f') G'``); a term that overflows (exponents near the ends of
        the range) is inf: the entry then fails, which is the conservative outcome.
        """
        rows, cols = self.rows, self.cols
        self.backend.refined_ratios(
            self.G, self.U, self.rF, self.cF, self.nA, self.nB, sigma[rows], tau[cols],
            self.e - e[rows], self.f - f[cols],  # fine units are 2**-(e' + f')
            self.e, self.f, plan.rounding, plan.gamma2, _SAFETY, rows, cols, ratio, bound)
        return float(ratio.max(initial=0.0)), int((ratio > 1).sum())


def _take_lines(X, ix, axis: int):
    """``X`` restricted to the lines ``ix`` along ``axis``: ``X`` itself (no copy) when
    ``ix`` is every line in order, else the gathered copy (the same entries)."""
    if len(ix) == X.shape[axis] and np.array_equal(ix, np.arange(X.shape[axis])):
        return X
    return X[ix] if axis == 0 else X[:, ix]


def refinement(backend, A, B, rows, cols, la, lb, k, rF, cF, nA, nB,
               out=(None, None)) -> Refinement:
    """Exact FP64 bound GEMMs of the failing rows of ``A`` (m, k) and columns of ``B``.

    ``la``, ``lb``: the slice's :class:`ozaki.core.decisions.Lines`; ``rF``, ``cF``,
    ``nA``, ``nB`` its coarse floor sums and nonzero counts (see :class:`Refinement`);
    ``rows`` and ``cols`` are strictly increasing. A block of every row (column) reads
    ``A`` (``B``) in place; the floors, and ``F + I``, are the same either way. ``out``:
    memory for ``G'`` and ``U'`` (1-D FP64 of at least ``len(rows) len(cols)`` entries
    each, or ``None``: fresh arrays), which the :class:`Refinement` then holds."""
    r = min(20, (53 - int(np.ceil(np.log2(max(k, 1))))) // 2 - 1)
    (Ea, za), (Eb, zb) = la.exponents, lb.exponents
    e = scaling.accurate_quantizers(Ea[rows], za[rows], r)
    f = scaling.accurate_quantizers(Eb[cols], zb[cols], r)
    Asub, Bsub = _take_lines(A, rows, 0)[None], _take_lines(B, cols, 1)[None]
    oa, ob = backend.operand(Asub, 0), backend.operand(Bsub, 1)
    xp = backend.xp
    # the floors, with their line sums (row sums of F_A, column sums of F_B) from the
    # same pass: exact integers (at most k 2**r), which U' reads
    FA, rs = backend.quantize(oa, e[None], xp.empty(oa.layout(1)), sums=True)
    FB, cs = backend.quantize(ob, f[None], xp.empty(ob.layout(1)), sums=True)
    FA, FB = xp.ascontiguousarray(FA[0]), xp.ascontiguousarray(FB[0])
    exact = backend.exact_engine()
    block = (len(rows), len(cols))
    mem = [None if x is None else x[:block[0] * block[1]].reshape(block) for x in out]
    G = exact.matmul(FA, FB, 2 ** r - 1, 2 ** r - 1, out=mem[0])
    U, gemms = upper_product(backend, exact, oa, ob, FA, FB, G, r, rs[0], cs[0], nA[rows],
                             nB[cols], out=mem[1])
    return Refinement(rows, cols, G, U, e, f, rF[rows], cF[cols], nA[rows], nB[cols], backend,
                      1 + gemms)


def upper_product(backend, exact, oa, ob, FA, FB, G, r: int, rs, cs, nA, nB, out=None):
    """``(U', gemms)``: ``U' = (F_A + I_A)(F_B + I_B)``, exactly, from ``G' = F_A F_B``.

    ``FA`` (m, k) and ``FB`` (k, n) are the floors at ``r`` bits (FP64 integers in
    ``[0, 2**r)``), ``oa``, ``ob`` their operands; both become ``F + I`` (in place)
    where a GEMM needs them. ``rs`` (m,) and ``cs`` (n,) are the floors' row and column
    sums, ``nA`` (m,) and ``nB`` (n,) the lines' finite nonzero counts
    (:attr:`ozaki.core.decisions.Lines.nnz`, of the same operands): the number of ones
    ``I`` holds on each line, so a line holds no zero (nor inf or NaN, whose ``I`` is 0)
    exactly when its count is ``k``. Where row ``i`` and column ``j`` are such lines::

        U'_ij = G'_ij + sum_l F_A[i, l] + sum_l F_B[l, j] + k,

    an O(m + n) sweep over ``G'`` instead of a GEMM. Exactness: every term is a
    nonnegative integer and every partial sum, in any order, is at most ``U'_ij <= k
    2**(2r) <= 2**51`` (``r`` from :func:`refinement`), so FP64 adds them exactly; the
    line sums likewise (at most ``k 2**r``). The value is therefore the GEMM's, bit for
    bit. The entries of lines that do hold a zero take exact GEMMs of those lines only,
    or one whole GEMM when they are most of the block. ``gemms`` counts the exact GEMM
    calls made here (0 to 2). ``out`` (``G``'s shape, FP64, C-ordered), when given,
    receives ``U'``.
    """
    k = FA.shape[1]
    xp = backend.xp
    sparse_r = xp.flatnonzero(xp.asarray(nA) != k)
    sparse_c = xp.flatnonzero(xp.asarray(nB) != k)
    m, n = G.shape
    if len(sparse_r) or len(sparse_c):
        backend.add_nonzeros(oa, FA[None])  # F + I: the floors' upper neighbours
        backend.add_nonzeros(ob, FB[None])
    if len(sparse_r) * n + m * len(sparse_c) >= m * n:
        return exact.matmul(FA, FB, 2 ** r, 2 ** r, out=out), 1
    U = xp.add(G, rs[:, None], out=out)
    U += (cs + k)[None, :]
    gemms = 0
    if len(sparse_r):
        U[sparse_r] = exact.matmul(FA[sparse_r], FB, 2 ** r, 2 ** r)
        gemms += 1
    if len(sparse_c):
        U[:, sparse_c] = exact.matmul(FA, FB[:, sparse_c], 2 ** r, 2 ** r)
        gemms += 1
    return U, gemms


@dataclass
class Normwise:
    """Per-line bounds of the normalised norms ``||x 2**-E||`` (fast mode), shape (b, lines).

    ``lo2 <= ||x 2**-E||_2 <= hi2``, ``||x 2**-E||_1 <= hi1``, and ``upper2`` an
    upper bound of ``||x 2**-E||_2**2`` (see :class:`ozaki.core.decisions.Norms`).
    """

    E: np.ndarray
    zero: np.ndarray
    lo2: np.ndarray
    hi2: np.ndarray
    hi1: np.ndarray
    upper2: np.ndarray

    def terms(self, shift):
        """``x = 2**-(shift + E) / lo2`` and ``alpha = hi1 / lo2``, 0 on zero lines."""
        nz = ~self.zero
        lo = np.where(nz, self.lo2, 1.0)
        x = np.where(nz, np.ldexp(1.0, -(shift + self.E).astype(np.int64)) / lo, 0.0)
        return x, np.where(nz, self.hi1 / lo, 0.0)

    def term_maxima(self, backend, shift):
        """Per slice ``(max x, max alpha)`` of :meth:`terms`, in one compiled pass."""
        return backend.normwise_maxima(self.E, self.zero, self.lo2, self.hi1,
                                      np.broadcast_to(shift, self.E.shape))

    def smallest(self):
        """Per slice: the least ``E`` and ``lo2`` over nonzero lines (for the subnormal term)."""
        nz = ~self.zero
        return (np.where(nz, self.E, 10 ** 6).min(axis=1),
                np.where(nz, self.lo2, np.inf).min(axis=1))


def _sub_ratio(Ea, lo_a, Eb, lo_b):
    """``2**-1075 / (u ||a_i|| ||b_j||) = 2**(-1022 - E_a - E_b) / (lo_a lo_b)`` (may be inf)."""
    with np.errstate(over="ignore"):
        # np.clip costs ~0.1 ms a call on small integer arrays; min/max do not
        e = np.minimum(np.maximum(-1022 - Ea - Eb, -1100), 1100)
        return np.ldexp(1.0, e) / (lo_a * lo_b)


def normwise_ratio(backend, na: Normwise, nb: Normwise, s, t, R, g2) -> np.ndarray:
    """Per slice, the largest ``bound / (u ||a_i||_2 ||b_j||_2)`` of the fast-mode bound.

    With ``x_i = 2**-s_i / ||a_i||_2`` and ``alpha_i = ||a_i||_1 / ||a_i||_2`` (and
    ``y``, ``beta`` for ``B``), ``T_ij / (||a_i|| ||b_j||) <= x_i beta_j + y_j alpha_i``;
    the reconstruction adds ``R x_i y_j`` and ``2 g``, the subnormal scale-back
    ``2**-1075`` (:func:`_sub_ratio`). The maximum over ``(i, j)`` is bounded by the
    products of the maxima: O(m + n). ``R``, ``g2`` (b,) per slice.
    """
    (xm, am), (ym, bm) = na.term_maxima(backend, s), nb.term_maxima(backend, t)
    ratio = xm * bm + ym * am + R * xm * ym
    (Ea, la), (Eb, lb) = na.smallest(), nb.smallest()
    live = (~na.zero).any(axis=1) & (~nb.zero).any(axis=1)
    sub = np.where(live, _sub_ratio(np.where(live, Ea, 0), np.where(live, la, 1.0),
                                    np.where(live, Eb, 0), np.where(live, lb, 1.0)), 0.0)
    # |A||B| <= ||a_i||_2 ||b_j||_2 (Cauchy-Schwarz) bounds the 2 g |A||B| term; a ratio
    # that overflows (operands near the subnormal edge, ``sub`` up to 2**1100) is inf:
    # an uncertified slice, which the decisions and the fallback handle, so no warning
    with np.errstate(over="ignore"):
        return np.where(live, (ratio + 2 * g2 + sub) * _SAFETY / U, 0.0)


def normwise_entries(na: Normwise, nb: Normwise, s, t, R, g2, ratio, bound=None) -> np.ndarray:
    """Per entry: ``ratio`` (b, m, n) of the fast-mode bound to ``u ||a_i|| ||b_j||``.

    ``bound`` (b, m, n), when given, receives the absolute error bound without
    the final rounding ``u |(AB)_ij|`` (added by the caller once ``C`` is known):
    ``(1 + u)(T_ij + 2**-(s_i+t_j) R) + 2 g ||a_i|| ||b_j|| + 2**-1075``, each term
    an upper bound computed with ``ldexp`` on the normalised sums, the whole
    multiplied by the safety factor and raised by four smallest subnormals (the
    underflow of each term's ``ldexp``). Zero lines give 0. Returns the number
    of entries above 1 per slice.
    """
    x, alpha = na.terms(s)
    y, beta = nb.terms(t)
    live = (~na.zero)[:, :, None] & (~nb.zero)[:, None, :]
    Ra, ga = R[:, None, None], g2[:, None, None]
    Ea, Eb = na.E[:, :, None], nb.E[:, None, :]
    with np.errstate(over="ignore", invalid="ignore"):
        r = (x[:, :, None] * beta[:, None, :] + alpha[:, :, None] * y[:, None, :]
             + Ra * (x[:, :, None] * y[:, None, :]))
        lo_a = np.where(na.zero, 1.0, na.lo2)[:, :, None]
        lo_b = np.where(nb.zero, 1.0, nb.lo2)[:, None, :]
        sub = _sub_ratio(Ea, lo_a, Eb, lo_b)
        ratio[...] = np.where(live, (r + 2 * ga + sub) * _SAFETY / U, 0.0)
        if bound is not None:
            sa, tb = s[:, :, None].astype(np.int64), t[:, None, :].astype(np.int64)
            T = (np.ldexp(nb.hi1[:, None, :], Eb - sa) + np.ldexp(na.hi1[:, :, None], Ea - tb))
            rec = np.ldexp(Ra, -(sa + tb))
            # 0 where g2 == 0 (one CRT level), even where ||a|| ||b|| overflows
            norms = np.ldexp(na.hi2[:, :, None] * nb.hi2[:, None, :], Ea + Eb)
            big = np.where(ga > 0, 2 * ga * norms, 0.0)
            bound[...] = np.where(live, ((T + rec) + big + 2.0 ** -1075) * _SAFETY
                                  + 4 * 5e-324, 0.0)
    return (ratio > 1).sum(axis=(1, 2))


def explain(decision, scheme: str, mode: str, stacked: bool = False) -> str:
    """Message for ``fallback="raise"``: how many bits were missing, and where."""
    g = int(np.argmax(decision.max_ratio))
    count = int(decision.counts[g])
    worst = float(decision.max_ratio[g])
    plan = crt_plan(scheme, count)
    where = ""
    if decision.mask is not None and decision.mask.any():
        gg, i, j = np.argwhere(decision.mask)[0]
        where = f"; the first is C[{gg}, {i}, {j}]" if stacked else f"; the first is C[{i}, {j}]"
    if np.isfinite(worst):
        # each extra bit of both shifts halves the bound: 2 bits of P per bit
        need = f"about {2 * np.log2(worst):.0f} more bits of P"
    else:
        need = "a nonzero lower bound of |A||B| (structural cancellation or a wide exponent spread)"
    return (f"{int(decision.uncertified.sum())} entries cannot be certified ({decision.kind} "
            f"bound, {mode} mode) with {count} {scheme} moduli ({plan.log2_P:.0f} bits of P); "
            f"the worst bound is {worst:.3g} times the target, needing {need}{where}. "
            "Use fallback='exact' or 'none', or another scheme.")
