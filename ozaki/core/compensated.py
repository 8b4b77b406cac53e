"""The small-product path: compensated dot products (Dot2), certified entry by entry.

A product whose work is small pays the emulation's fixed cost (decisions, residues,
``N`` GEMMs, the CRT: about half a millisecond of Python and passes) for little
arithmetic. Below :data:`SMALL_WORK` terms per product (``m n k``; ``4 m n k`` for a
complex one, on its real embedding), with ``num_moduli="auto"`` and operands that
were not prepared, :func:`ozaki.dgemm` and its siblings compute each entry instead by
**Dot2**, the compensated dot product of Ogita, Rump and Oishi ("Accurate sum and dot
product", SIAM J. Sci. Comput. 26(6), 2005, Algorithm 5.3): every product
``a b = p + e`` split error-free (their TwoProductFMA: ``e = fma(a, b, -p)``), every
partial sum ``s + p = t + q`` split error-free (Knuth's TwoSum), the errors ``q + e``
summed apart, and ``fl(s + c)`` returned. The fused multiply-add is explicit (LLVM's
``llvm.fma``: IEEE 754's correctly rounded ``a b + c``, in hardware or in libm), never a
contraction, so its result is the same on every machine (:doc:`algorithm`, "FMA
policy"); here it is exact. Their Proposition 5.5 bounds the result of ``k`` terms,
when no product underflows and nothing overflows, by

    ``|res - a.b| <= u |a.b| + gamma_k**2 (|a|.|b|)``,  ``gamma_k = k u / (1 - k u)``,

so with ``gamma_k**2 <= u`` (every ``k <= 2**26``; here ``k <= SMALL_WORK = 2**24``)
each entry meets the accurate mode's target ``u |AB| + u |A||B|`` and, since
``(|A||B|)_ij <= ||a_i||_2 ||b_j||_2``, the fast mode's normwise one. The conditions
are checked per entry from its row's and column's exponent range
(:func:`unsafe_entries`): an entry whose sums may overflow is computed by the exactly
rounded dot product (:mod:`ozaki.backends.cpu.exactdot`), as the emulated path's overflow guard
does; one whose products may underflow is uncertified, and the fallback policy decides
(its exactly rounded value, Dot2's value without a bound, or an error); non-finite
values follow exact arithmetic (:mod:`ozaki.core.special`), as on the emulated path.

Each entry's value depends on row ``i`` of ``A`` and column ``j`` of ``B`` alone, in a
fixed order of IEEE operations (no ``fastmath``: no contraction, no reassociation),
so it is the same on every machine and thread count; a stack's slices equal the 2-D
products, and the distributed products, which gather the lines, equal serial. The
rule that takes this path (:func:`applies`) reads only the product's shape and
options, never its data.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from .fallback import exact_bound, exact_entries
from ..backends.cpu.parallel import run
from .special import apply_nonfinite

__all__ = ["SMALL_WORK", "applies", "emulated_options", "product", "unsafe_entries"]

#: Largest work ``m n k`` of a product (per slice of a stack; ``4 m n k`` complex)
#: that takes this path. Dot2 costs about 0.28 ns a term on one AVX-512 core, so
#: ``2**24`` terms (256 x 256 x 256) take about 5 ms on one thread, less than the
#: emulation of that product; a fixed constant, so the path never depends on the
#: machine.
SMALL_WORK = 2 ** 24
#: Work (terms) from which the path runs its rows on several threads (about 30 us).
PARALLEL_WORK = 2 ** 16
_U = 2.0 ** -53


@intrinsic
def _fma(typingctx, a, b, c):
    """``fma(a, b, c)``: ``a b + c`` rounded once (LLVM's ``llvm.fma``, always fused)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        d = ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [d], ir.FunctionType(d, [d, d, d]))
        return builder.call(fn, args)
    return sig, codegen


def applies(opts, prepared: bool, m: int, n: int, k: int, complex_: bool) -> bool:
    """Whether a product of shape (m, k) @ (k, n) takes this path.

    Only with ``num_moduli="auto"`` (an explicit count asks for the emulation), on
    operands that were not prepared (a prepared operand is kept for the emulation),
    and at most :data:`SMALL_WORK` terms (``k >= 1``).
    """
    work = m * n * k * (4 if complex_ else 1)
    return opts.num_moduli == "auto" and not prepared and 0 < work <= SMALL_WORK


def emulated_options(scheme: str, m: int, k: int, n: int, complex_: bool = False) -> dict:
    """Keyword arguments that make a product of this shape run the emulation.

    ``{}`` where ``num_moduli="auto"`` already does; on a small product, the count
    ``"auto"`` starts from (:func:`ozaki.auto_num_moduli`), given explicitly, with the
    exact fallback. For measurements of the emulation itself (the TME model's
    calibration, the SUMMA benchmark); the result meets the same contract.
    """
    from .moduli import auto_num_moduli
    if m * n * k * (4 if complex_ else 1) > SMALL_WORK:
        return {}
    return dict(num_moduli=auto_num_moduli(scheme, 2 * k if complex_ else k), fallback="exact")


@nb.njit(cache=True)
def _exponents(X, axis):
    """Each line's exponent range: ``(emax, emin, bad)``, each (b, lines).

    Lines are the rows (``axis`` 0) or columns (1) of every slice of ``X`` (b, r, c),
    C-ordered: the largest biased exponent over finite entries, the smallest over
    finite nonzero ones (2047 when there is none; 0 for a subnormal), and whether the
    line holds an Inf or a NaN.
    """
    b, r, c = X.shape
    n = r if axis == 0 else c
    emax = np.zeros((b, n), np.int64)
    emin = np.full((b, n), 2047, np.int64)
    bad = np.zeros((b, n), np.bool_)
    bits = X.view(np.int64)
    for g in range(b):
        for i in range(r):
            for j in range(c):
                e = (bits[g, i, j] >> 52) & 0x7FF
                line = i if axis == 0 else j
                if e == 0x7FF:
                    bad[g, line] = True
                else:
                    if e > emax[g, line]:
                        emax[g, line] = e
                    if X[g, i, j] != 0.0 and e < emin[g, line]:
                        emin[g, line] = e
    return emax, emin, bad


@nb.njit(nogil=True, cache=True)
def _dot2_rows(t0, t1, A, B, C):
    """Rows ``t0:t1`` (flattened over the stack) of ``C = A @ B`` by Dot2.

    ``A`` (ba, m, k), ``B`` (bb, k, n) with ``ba``, ``bb`` 1 (shared) or ``b``. Per
    entry, in order of ``l``: ``p = fl(a b)``, ``e = fma(a, b, -p)`` (exact),
    ``t = fl(s + p)``, ``q`` its TwoSum error (exact), ``c = fl(c + fl(q + e))``; the
    entry is ``fl(s + c)``. The loop over a row's columns vectorises: the columns are
    independent accumulators.
    """
    m, k = A.shape[1], A.shape[2]
    n = B.shape[2]
    ba, bb = A.shape[0], B.shape[0]
    s = np.empty(n)
    c = np.empty(n)
    for task in range(t0, t1):
        g = task // m
        i = task - g * m
        ga, gb = min(g, ba - 1), min(g, bb - 1)
        for j in range(n):
            s[j] = 0.0
            c[j] = 0.0
        for l in range(k):
            a = A[ga, i, l]
            row = B[gb, l]
            for j in range(n):
                p = a * row[j]
                e = _fma(a, row[j], -p)
                sj = s[j]
                t = sj + p
                z = t - sj
                q = (sj - (t - z)) + (p - z)
                s[j] = t
                c[j] += q + e
        o = C[g, i]
        for j in range(n):
            o[j] = s[j] + c[j]


@nb.njit(nogil=True, cache=True)
def _abs_rows(t0, t1, A, B, M):
    """Rows ``t0:t1`` of ``M = fl(|A| |B|)`` in order of ``l`` (finite entries, no NaN)."""
    m, k = A.shape[1], A.shape[2]
    n = B.shape[2]
    ba, bb = A.shape[0], B.shape[0]
    for task in range(t0, t1):
        g = task // m
        i = task - g * m
        ga, gb = min(g, ba - 1), min(g, bb - 1)
        o = M[g, i]
        for j in range(n):
            o[j] = 0.0
        for l in range(k):
            a = abs(A[ga, i, l])
            row = B[gb, l]
            for j in range(n):
                o[j] += a * abs(row[j])


#: :func:`unsafe_entries`' codes: Dot2 serves the entry; products may underflow (the
#: entry is not certified: the fallback policy decides); a sum may overflow (the
#: exactly rounded dot product, whatever the policy, as the overflow guard).
SAFE, UNDERFLOW, OVERFLOW = 0, 1, 2


@nb.njit(cache=True)
def unsafe_entries(amax, amin, bmax, bmin, k, mask):
    """Mark in ``mask`` (b, m, n) the entries where Dot2's conditions may fail.

    With biased exponents (``|x| < 2**(e - 1022)``, ``|x| >= 2**(e - 1023)`` for
    normal ``x``; ``amax``/``amin`` (ba, m) of ``A``'s rows, ``bmax``/``bmin`` (bb, n)
    of ``B``'s columns, from :func:`_exponents`, ``ba``/``bb`` 1 or ``b``), entry
    ``(i, j)`` is safe when

    * nothing overflows: every product and partial sum is below
      ``k 2**(ea + eb - 2044) <= 2**1021``;
    * no product underflows: every nonzero ``|a b| >= 2**(ea + eb - 2046) >= 2**-900``,
      so ``fma(a, b, -p)`` is exact (it needs ``e_a + e_b >= -969``, Boldo and
      Muller; a subnormal operand, ``e = 0``, fails this).

    Sums never lose bits to underflow (a sum in the subnormal range is exact), so
    these are all the conditions of Proposition 5.5. ``mask`` receives
    :data:`OVERFLOW` where the first fails, else :data:`UNDERFLOW` where the second
    does, else :data:`SAFE`. Returns the counts ``(underflow, overflow)``.
    """
    b, m, n = mask.shape
    lk = 0
    while (1 << lk) < k:
        lk += 1
    under = 0
    over = 0
    for g in range(b):
        ga, gb = min(g, amax.shape[0] - 1), min(g, bmax.shape[0] - 1)
        for i in range(m):
            ah, al = amax[ga, i], amin[ga, i]
            for j in range(n):
                bh, bl = bmax[gb, j], bmin[gb, j]
                top = ah + bh + lk > 2044 + 1021
                low = al + bl < 2046 - 900
                code = OVERFLOW if top else (UNDERFLOW if low else SAFE)
                mask[g, i, j] = code
                under += code == UNDERFLOW
                over += code == OVERFLOW
    return under, over


@nb.njit(nogil=True, cache=True)
def _prepare(A, B, b):
    """:func:`_exponents` of ``A``'s rows and ``B``'s columns, and :func:`unsafe_entries`
    for ``b`` slices, in one compiled call (a small product pays each call's dispatch).
    ``rare``: some entry is not :data:`SAFE` or some line holds an Inf or a NaN."""
    amax, amin, abad = _exponents(A, 0)
    bmax, bmin, bbad = _exponents(B, 1)
    codes = np.empty((b, A.shape[1], B.shape[2]), np.int8)
    under, over = unsafe_entries(amax, amin, bmax, bmin, A.shape[2], codes)
    special = False
    for x in abad.ravel():
        special |= x
    for x in bbad.ravel():
        special |= x
    return codes, under + over > 0 or special, abad, bbad


@nb.njit(nogil=True, cache=True)
def _serial(A, B, C):
    """:func:`_prepare` and every row of :func:`_dot2_rows` in one call (a tiny product);
    whether some entry is unsafe or some line holds an Inf or a NaN."""
    rare = _prepare(A, B, C.shape[0])[1]
    _dot2_rows(0, C.shape[0] * C.shape[1], A, B, C)
    return rare


@dataclass
class Outcome:
    """What :func:`product` did beyond Dot2.

    ``exact``: entries computed by the exactly rounded dot product (the overflow
    guard's, and the fallback's); ``uncertified``: entries whose products may
    underflow, where Dot2 has no bound (the fallback policy decides); ``fallback``:
    whether the exact dot product replaced them; ``mask``: where they are (b, m, n),
    ``None`` when there are none; ``bound``: per-entry error bounds (with ``bounds``;
    ``inf`` on uncertified entries that were kept); ``seconds``: the call's time.
    """

    exact: int = 0
    uncertified: int = 0
    fallback: bool = False
    mask: np.ndarray | None = None
    bound: np.ndarray | None = None
    seconds: float = 0.0


def product(A: np.ndarray, B: np.ndarray, out: np.ndarray, bounds: bool = False,
            policy: str = "exact") -> Outcome:
    """``out = A @ B`` for real stacks ``A`` (ba, m, k), ``B`` (bb, k, n), entry by entry.

    ``ba``/``bb`` are 1 (shared) or ``b = out.shape[0]``; ``k >= 1``. Rows run on
    :func:`ozaki.backends.cpu.parallel.threads` threads from :data:`PARALLEL_WORK` terms on.
    Entries whose sums may overflow take the exactly rounded dot product; entries
    whose products may underflow are not certified, and ``policy`` says what
    happens to them: ``"exact"`` recomputes them with the exactly rounded dot
    product, ``"none"`` and ``"raise"`` keep Dot2's values (the caller raises).
    """
    t0 = time.perf_counter()
    A = np.ascontiguousarray(A, dtype=np.float64)
    B = np.ascontiguousarray(B, dtype=np.float64)
    b, m, n = out.shape
    k = A.shape[2]
    serial = 1 if b * m * n * k < PARALLEL_WORK else None
    lines = None  # (codes, rare, abad, bbad) where already formed
    if serial and not bounds:
        rare = _serial(A, B, out)
    else:
        lines = _prepare(A, B, b)
        rare = lines[1]
        run(_dot2_rows, b * m, A, B, out, max_threads=serial)
    eb = None
    if bounds:
        eb = np.empty((b, m, n))
        run(_abs_rows, b * m, A, B, eb, max_threads=serial)
        # |res - ab| <= u |ab| + g2 |a||b| and |a||b| <= M / (1 - gamma_k) (M computed in
        # order): with |ab| <= |res| + err, err <= (u |res| + g2 M / (1 - gamma_k)) / (1 - u);
        # (1 + 2**-50) covers 1 / (1 - u) and the bound's own four roundings, and
        # 1e-323 (two subnormal units) its underflows
        gam = k * _U / (1 - k * _U)
        g2 = gam * gam / (1 - gam) * (1 + 2.0 ** -40)
        with np.errstate(over="ignore"):
            eb = (_U * np.abs(out) + g2 * eb) * (1 + 2.0 ** -50) + 1e-323
    done = _rare(A, B, out, eb, policy, lines) if rare else Outcome(bound=eb)
    done.seconds = time.perf_counter() - t0
    return done


def _rare(A, B, out, eb, policy: str, lines=None) -> Outcome:
    """The entries Dot2 does not serve (:func:`unsafe_entries`) and the non-finite values
    (exact arithmetic's semantics, :func:`ozaki.core.special.apply_nonfinite`)."""
    codes, _, abad, bbad = lines if lines is not None else _prepare(A, B, out.shape[0])
    finite = ~abad[:, :, None] & ~bbad[:, None, :]  # elsewhere exact arithmetic decides
    under = (codes == UNDERFLOW) & finite
    done = Outcome(bound=eb, uncertified=int(under.sum()),
                   fallback=policy == "exact" and bool(under.any()),
                   mask=under if under.any() else None)
    exact = ((codes == OVERFLOW) & finite) | under if done.fallback else \
        (codes == OVERFLOW) & finite
    for g in range(out.shape[0]):
        ga, gb = min(g, A.shape[0] - 1), min(g, B.shape[0] - 1)
        sel = exact[g]
        if sel.any():
            exact_entries(A[ga], B[gb], sel, out[g])
            done.exact += int(sel.sum())
            if eb is not None:
                eb[g][sel] = exact_bound(out[g][sel])
        if eb is not None and not done.fallback:
            eb[g][under[g]] = np.inf  # kept without a bound
        if abad[ga].any() or bbad[gb].any():
            apply_nonfinite(A[ga], B[gb], abad[ga], bbad[gb], out[g])
            if eb is not None:  # the values of exact arithmetic
                eb[g][abad[ga], :] = 0.0
                eb[g][:, bbad[gb]] = 0.0
    return done


def explain(uncertified: int, where: tuple) -> str:
    """Message for ``fallback="raise"`` on a small product."""
    at = ", ".join(map(str, where))
    return (f"{uncertified} entries of a small product cannot be certified by compensated "
            f"dot products: some of their products may underflow (below 2**-900); the "
            f"first is C[{at}]. Use fallback='exact' (their exactly rounded values) or "
            "'none'.")


def max_ratio(k: int) -> float:
    """Largest ratio of Dot2's bound to the accurate target over an entry of ``k`` terms.

    ``(u x + g2 M) / (u x + u M)`` with ``0 <= x = |ab| <= M = |a|.|b|`` peaks at
    ``x = M``: ``(1 + g2 / u) / 2``, just above one half.
    """
    gam = k * _U / (1 - k * _U)
    return 0.5 * (1 + gam * gam / _U)
