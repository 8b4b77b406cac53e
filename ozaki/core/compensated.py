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
(:data:`SAFE`, :data:`UNDERFLOW`, :data:`OVERFLOW` below): an entry whose sums may overflow is computed by the exactly
rounded dot product (the backend's ``exact_dot``), as the emulated path's overflow guard
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

import contextlib
import threading
import time
from dataclasses import dataclass

import numpy as np

from .fallback import exact_bound, exact_entries
from .kind import Kind, kind_of
from .scope import scoped
from .special import apply_nonfinite

__all__ = ["SMALL_WORK", "applies", "emulated_options", "enabled", "product", "SAFE",
           "UNDERFLOW", "OVERFLOW"]

#: Largest work ``m n k`` of a product (per slice of a stack; ``4 m n k`` complex)
#: that takes this path. Dot2 costs about 0.28 ns a term on one AVX-512 core, so
#: ``2**24`` terms (256 x 256 x 256) take about 5 ms on one thread, less than the
#: emulation of that product; a fixed constant, so the path never depends on the
#: machine.
SMALL_WORK = 2 ** 24
_U = 2.0 ** -53

#: Per-entry codes (:meth:`~ozaki.core.backend.Backend.small_lines`): Dot2 serves the
#: entry; products may underflow (not certified: the fallback policy decides); a sum
#: may overflow (the exactly rounded dot product, whatever the policy, as the overflow
#: guard). With biased exponents (``|x| < 2**(e - 1022)``, ``|x| >= 2**(e - 1023)``
#: for normal ``x``), ``amax``/``amin`` the largest and smallest over the finite
#: (nonzero) entries of row ``i`` of ``A``, ``bmax``/``bmin`` of column ``j`` of
#: ``B``, ``lk = ceil(log2 k)``, entry ``(i, j)`` is
#:
#: * OVERFLOW when ``amax + bmax + lk > 2044 + 1021``: otherwise every product and
#:   partial sum is below ``k 2**(ea + eb - 2044) <= 2**1021``;
#: * else UNDERFLOW when ``amin + bmin < 2046 - 900``: otherwise every nonzero
#:   ``|a b| >= 2**-900``, so ``fma(a, b, -p)`` is exact (it needs
#:   ``e_a + e_b >= -969``, Boldo and Muller; a subnormal operand, ``e = 0``, fails);
#: * else SAFE. Sums never lose bits to underflow (a sum in the subnormal range is
#:   exact), so these are all the conditions of Proposition 5.5. A line without a
#:   finite nonzero entry has ``amin = 2047``; Inf and NaN are flagged per line.
SAFE, UNDERFLOW, OVERFLOW = 0, 1, 2


_local = threading.local()


def enabled(on: bool) -> contextlib.AbstractContextManager:
    """Let small products take this path (``True``, the default) or not, in the block.

    Local to the calling thread and restored on exit, in the style of
    :func:`scipy.fft.set_backend`: ``ozaki.set_small_products(False)`` measures
    or validates the emulation itself on small products.
    """
    if not isinstance(on, bool):
        raise TypeError(f"enabled must be True or False, got {on!r}")
    return scoped(_local, "on", on)


def rows_per_product(n: int, k: int, kind: Kind) -> int:
    """The most rows of ``A`` with which an ``(m, k) @ (k, n)`` product still takes this
    path on the calling thread (``num_moduli="auto"``, operands not prepared): 0 when
    not even one row does, or when the thread turned the path off."""
    if not getattr(_local, "on", True):
        return 0
    return SMALL_WORK // max(1, n * k * kind.work)


def applies(opts, prepared: bool, m: int, n: int, k: int, kind: Kind) -> bool:
    """Whether a product of shape (m, k) @ (k, n) takes this path.

    Only with ``num_moduli="auto"`` (an explicit count asks for the emulation), on
    operands that were not prepared (a prepared operand is kept for the emulation),
    at most :data:`SMALL_WORK` terms (``k >= 1``), and unless the calling thread
    turned the path off (:func:`enabled`).
    """
    work = m * n * k * kind.work
    return (opts.num_moduli == "auto" and not prepared and 0 < work <= SMALL_WORK
            and getattr(_local, "on", True))


def emulated_options(scheme: str, m: int, k: int, n: int, complex_: bool = False) -> dict:
    """Keyword arguments that make a product of this shape run the emulation.

    ``{}`` where ``num_moduli="auto"`` already does; on a small product, the count
    ``"auto"`` starts from (:func:`ozaki.auto_num_moduli`), given explicitly, with the
    exact fallback. For measurements of the emulation itself (the TME model's
    calibration, the SUMMA benchmark); the result meets the same contract.
    """
    from .moduli import SCHEMES, auto_num_moduli
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")
    kind = kind_of(complex_)
    if m * n * k * kind.work > SMALL_WORK:
        return {}
    return dict(num_moduli=auto_num_moduli(scheme, kind.width * k), fallback="exact")


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


def product(backend, A: np.ndarray, B: np.ndarray, out: np.ndarray, bounds: bool = False,
            policy: str = "exact") -> Outcome:
    """``out = A @ B`` for real stacks ``A`` (ba, m, k), ``B`` (bb, k, n), entry by entry.

    ``ba``/``bb`` are 1 (shared) or ``b = out.shape[0]``; ``k >= 1``. Rows run on
    the backend's threads where its :meth:`~ozaki.core.backend.Backend.sized` scope allows
    (the ``cpu`` backend: from ``2**16`` terms on, about 30 us of work).
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
    with backend.sized(b * m * n * k):  # terms: small ones stay on the calling thread
        # ``lines``: (codes, rare, abad, bbad) where already formed
        rare, lines = backend.dot2(A, B, out, lines=bounds)
        eb = None
        if bounds:
            eb = backend.xp.empty((b, m, n))
            backend.abs_product(A, B, eb)
    if bounds:
        # |res - ab| <= u |ab| + g2 |a||b| and |a||b| <= M / (1 - gamma_k) (M computed in
        # order): with |ab| <= |res| + err, err <= (u |res| + g2 M / (1 - gamma_k)) / (1 - u);
        # (1 + 2**-50) covers 1 / (1 - u) and the bound's own four roundings, and
        # 1e-323 (two subnormal units) its underflows
        gam = k * _U / (1 - k * _U)
        g2 = gam * gam / (1 - gam) * (1 + 2.0 ** -40)
        with np.errstate(over="ignore"):
            eb = (_U * np.abs(out) + g2 * eb) * (1 + 2.0 ** -50) + 1e-323
    done = _rare(backend, A, B, out, eb, policy, lines) if rare else Outcome(bound=eb)
    done.seconds = time.perf_counter() - t0
    return done


def _rare(backend, A, B, out, eb, policy: str, lines=None) -> Outcome:
    """The entries Dot2 does not serve (not :data:`SAFE`) and the non-finite values
    (exact arithmetic's semantics, :func:`ozaki.core.special.apply_nonfinite`)."""
    codes, _, abad, bbad = lines if lines is not None else backend.small_lines(A, B,
                                                                               out.shape[0])
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
            exact_entries(backend, A[ga], B[gb], sel, out[g])
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
