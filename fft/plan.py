"""Plans: a length's factors, its tables and its prepared DFT matrices.

A length-``n`` DFT along the leading axis of an ``(n, W)`` array runs as
stages, one per radix ``r_1 r_2 ... r_s = n`` (Bailey's four-step applied
recursively). With ``n = r M`` and ``x[M n1 + n2]``, stage one multiplies the
``(r, M W)`` view by the ``r x r`` DFT matrix (the whole batch in the wide
dimension: **one emulated product**), multiplies by the twiddles
``W_n^{k1 n2}`` and transposes ``[k1, n2, w] -> [n2, k1, w]``; the rest is a
length-``M`` DFT of the ``(M, r W)`` result, whose output ``[k2, (k1, w)]`` is
already the natural order ``k1 + r k2``. No final permutation is needed.

Complex data are held split, as a real ``(2, n, W)`` array (real parts, then
imaginary parts), so each stage is one *real* product
``[[Fr, -Fi], [Fi, Fr]] @ [Xr; Xi]``: the real and imaginary parts of a
column share their power-of-two shift, each output part is one dot product of
length ``2r`` (certified per entry), and the product runs on ozaki's fastest
path. Real input enters through ``[Fr; Fi] @ X`` and a real result leaves
through ``[Fr, -Fi] @ [Zr; Zi]``, halving those stages.

**Bits do not depend on the batch.** Products run in fast mode at a count
fixed per stage when the plan is made (the certified count of probe columns
that reach the normwise bound's extremes), with ``fallback="exact"``. A fast-mode
shift depends on its own row or column and the count only, and the certificate
and fallback are per entry, so any column of the batch gets the same bits
however the batch is cut: in pieces, along other axes, or across MPI ranks.
"""

from __future__ import annotations

import math
import time
from functools import lru_cache
from dataclasses import dataclass

import numpy as np

import ozaki

from . import tables
from .kernels import twiddle_transpose
from .records import record

__all__ = ["Plan", "StageRecord", "factorize", "plan_scheme", "MAX_RADIX", "DENSE_LIMIT"]

MAX_RADIX = 64      #: largest radix of a composite length's stages
DENSE_LIMIT = 2048  #: primes up to this are one dense stage; larger ones use Bluestein


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


@lru_cache(maxsize=4096)
def _pack(n: int, count: int, cap: int) -> tuple[int, ...] | None:
    """``n`` as ``count`` factors ``<= cap`` whose largest is as small as possible."""
    if count == 0:
        return () if n == 1 else None
    low = max(1, math.ceil(round(n ** (1.0 / count), 9)))  # the largest is >= n**(1/count)
    for d in range(low, min(cap, n) + 1):
        if n % d == 0:
            rest = _pack(n // d, count - 1, d)
            if rest is not None:
                return (d,) + rest
    return None


def factorize(n: int, max_radix: int = MAX_RADIX) -> list[int]:
    """Radices of a length-``n`` plan: few stages, each at most ``max_radix``, balanced.

    Prime factors above ``max_radix`` are stages of their own (dense up to
    :data:`DENSE_LIMIT`, Bluestein beyond). The rest is split into the fewest
    factors of at most ``max_radix``, and among those splits, one whose largest
    factor is smallest (a stage's cost grows with its radix).

    Examples
    --------
    >>> factorize(2 ** 20), factorize(3 * 5 * 7 * 64), factorize(1009)
    ([32, 32, 32, 32], [16, 20, 21], [1009])
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    primes = _prime_factors(n)
    big = [p for p in primes if p > max_radix]
    rest = math.prod(p for p in primes if p <= max_radix)
    radices: list[int] = []
    if rest > 1:
        count = max(1, math.ceil(math.log(rest) / math.log(max_radix) - 1e-12))
        while (got := _pack(rest, count, max_radix)) is None:
            count += 1
        radices = [r for r in got if r > 1]
    return sorted(radices + big) if radices or big else [1]


def _bluestein_length(n: int) -> int:
    """The smallest ``2**a 3**b 5**c 7**d >= 2n - 1`` (a length with small radices)."""
    want = 2 * n - 1
    best = 1 << (want - 1).bit_length()
    p7 = 1
    while p7 < best:
        p5 = p7
        while p5 < best:
            p3 = p5
            while p3 < best:
                m = p3
                while m < want:
                    m *= 2
                best = min(best, m)
                p3 *= 3
            p5 *= 5
        p7 *= 7
    return best


@dataclass
class StageRecord:
    """What one stage of one call did (see :func:`fft.stage_records`).

    Attributes
    ----------
    radix : int
        The stage's radix (``"direct"``: the line length ``N``).
    columns : int
        Width of its product (batch times the other stages' lengths; ``"direct"``: the
        number of lines).
    form : str
        ``"complex"``, ``"real-in"`` or ``"real-out"``: a stage of an FFT plan;
        ``"direct"``: a short DCT/DST's whole product with its matrix (:mod:`fft.direct`).
    num_moduli : int
    gemms : int
        Low-precision GEMMs (``info.gemms`` of its product; 0 on native plans and native
        direct products).
    seconds : float
        Wall time of the stage (product, twiddles and transpose).
    """

    radix: int
    columns: int
    form: str
    num_moduli: int
    gemms: int
    seconds: float


@dataclass
class _Options:
    scheme: str = "auto"
    mode: str = "fast"
    engine: str = "auto"
    num_moduli: int | str = "auto"
    native: bool = False


def plan_scheme(scheme: str = "auto", mode: str = "fast", engine: str = "auto",
                num_moduli: int | str = "auto") -> str:
    """The scheme a :class:`Plan` with these options runs (raising the errors ``dgemm``
    would), resolved when the plan is made, so its counts and bits are that scheme's for
    its life, whichever thread runs it.

    ``"auto"`` is :func:`ozaki.set_scheme`'s scheme where the thread pins one
    (:func:`ozaki.get_scheme`), else the engine's (``engine`` named), else ``fp64``,
    whatever the plan's ``mode`` and the machine. A stage's products are small
    (``k = 2 r`` for radix ``r`` up to 64) and its passes dominate, so the int8 scheme
    that products take on an integer unit with VNNI does not pay there: measured on two
    AVX-512 VNNI cores, int8 plans on ``cpu-onednn`` took 1.09x the fp64 plans' time at
    ``2**20`` points and 1.04x at ``128**3`` (and have other bits).
    """
    resolved = ozaki.resolve_options(scheme, num_moduli, mode, engine)  # this mode's errors
    auto_engine = engine is None or isinstance(engine, str) and engine == "auto"
    if scheme == "auto" and auto_engine and ozaki.get_scheme() is None:
        return "fp64"
    return resolved.scheme


class _Matrix:
    """One embedded DFT matrix of a stage, prepared once, with its fixed count."""

    def __init__(self, E: np.ndarray, opts: _Options):
        self.E, self.opts = E, opts
        # residues are kept for the small radices only (N planes of E each)
        self.prepared = None if opts.native else ozaki.prepare(
            E, keep_residues=E.shape[1] <= 2 * MAX_RADIX)
        self.count = 0 if opts.native else self._count()

    def _count(self) -> int:
        o = self.opts
        if o.num_moduli != "auto":
            return int(o.num_moduli)
        k = self.E.shape[1]
        rng = np.random.default_rng(0)
        cols = [np.ones(k), np.eye(k)[0], np.eye(k)[-1], 2.0 ** -np.arange(k),
                rng.standard_normal(k)] + [np.full(k, c) for c in (1.01, 1.26, 1.41, 1.68, 1.99)]
        probe = np.stack(cols, axis=1)
        _, info = ozaki.dgemm(self.prepared, probe, scheme=o.scheme, mode=o.mode,
                              engine=o.engine, return_info=True)
        return info.num_moduli

    def __call__(self, X: np.ndarray) -> tuple[np.ndarray, int]:
        if self.opts.native:
            return self.E @ X, 0
        o = self.opts
        Y, info = ozaki.dgemm(self.prepared, X, scheme=o.scheme, mode=o.mode, engine=o.engine,
                              num_moduli=self.count, fallback="exact", return_info=True)
        return Y, info.gemms


def _embedded(F: np.ndarray, form: str) -> np.ndarray:
    Fr, Fi = F.real, F.imag
    if form == "complex":
        return np.block([[Fr, -Fi], [Fi, Fr]])
    if form == "real-in":
        return np.concatenate([Fr, Fi], axis=0)
    return np.concatenate([Fr, -Fi], axis=1)  # real-out


class _Dense:
    """A stage whose DFT is one product with the ``r x r`` matrix."""

    def __init__(self, r: int, opts: _Options):
        self.r, self.opts = r, opts
        self._matrices: dict[str, _Matrix] = {}

    def matrix(self, form: str) -> _Matrix:
        got = self._matrices.get(form)
        if got is None:
            F = tables.dft_matrix(self.r, cache=self.r <= MAX_RADIX)
            got = self._matrices[form] = _Matrix(_embedded(F, form), self.opts)
        return got

    def counts(self) -> int:
        return self.matrix("complex").count

    @property
    def growth(self) -> int:
        """``ceil(log2 r)``: the stage's outputs are at most ``r`` times its largest input
        (complex moduli; each is a sum of ``r`` unit-modulus multiples of the inputs)."""
        return (self.r - 1).bit_length()

    def apply(self, Z: np.ndarray, form: str) -> tuple[np.ndarray, int, int]:
        """DFT along axis 1 of ``Z``: (2, r, c) split complex or (r, c) real input."""
        r, c = self.r, Z.shape[-1]
        mat = self.matrix(form)
        Y, gemms = mat(np.ascontiguousarray(Z.reshape(-1, c)))
        return Y.reshape((r, c) if form == "real-out" else (2, r, c)), mat.count, gemms


class _Bluestein:
    """A prime stage by Bluestein's chirp convolution through a smooth length ``L``."""

    def __init__(self, p: int, opts: _Options):
        self.r, self.opts = p, opts
        self.L = _bluestein_length(p)
        self.sub = Plan(self.L, **vars(opts))
        w = tables.chirp(p)
        b = np.zeros((2, self.L, 1))
        wc = np.conj(w)
        b[0, :p, 0], b[1, :p, 0] = wc.real, wc.imag
        b[0, self.L - p + 1:, 0], b[1, self.L - p + 1:, 0] = wc.real[:0:-1], wc.imag[:0:-1]
        B = self.sub.execute(b)[:, :, 0]
        self.kernel = (B[0] + 1j * B[1]) / self.L  # DFT of conj(chirp), inverse scale folded
        self.w = w

    def counts(self) -> int:
        return max(s.counts() for s in self.sub.stages)

    @property
    def growth(self) -> int:
        """``ceil(log2 (2 p**2))``, bounding every value of :meth:`apply` against its
        largest input ``mu`` (complex moduli). ``t = z w`` has ``|w| = 1``; the first inner
        DFT's values are sums of unit-modulus multiples of ``t``: at most ``||t||_1 <= p mu``.
        ``|kernel| <= (2p - 1) / L`` (the DFT of ``2p - 1`` unit chirp values, over ``L``), so
        ``|h| <= p (2p - 1) mu / L`` and the second inner DFT's values are at most
        ``||h||_1 <= p (2p - 1) mu < 2 p**2 mu``; the result is a cyclic convolution, at
        most ``p mu``."""
        return (2 * self.r * self.r - 1).bit_length()

    def apply(self, Z: np.ndarray, form: str) -> tuple[np.ndarray, int, int]:
        p, L, c = self.r, self.L, Z.shape[-1]
        z = Z.astype(np.complex128) if form == "real-in" else Z[0] + 1j * Z[1]
        a = np.zeros((2, L, c))
        t = z * self.w[:, None]
        a[0, :p], a[1, :p] = t.real, t.imag
        A = self.sub.execute(a)
        h = (A[0] + 1j * A[1]) * self.kernel[:, None]
        a[0], a[1] = h.real, -h.imag  # inverse DFT as conj(DFT(conj(h)))
        C = self.sub.execute(a)
        y = (C[0, :p] - 1j * C[1, :p]) * self.w[:, None]
        out = y.real.copy() if form == "real-out" else np.stack([y.real, y.imag])
        return out, self.counts(), 0


class Plan:
    """A length-``n`` transform: its radices, tables and prepared DFT matrices.

    Plans are what :mod:`fft`'s functions make and cache (:func:`fft.get_plan`);
    pass one as ``plan=`` to reuse it explicitly. The emulation options apply to
    every stage product.

    Parameters
    ----------
    n : int
        Transform length, ``n >= 1``.
    scheme, engine : str
        As in :func:`ozaki.dgemm`.
    mode : {"fast", "accurate"}
        Default ``"fast"``: shifts per row and per column, so bits do not depend
        on the batch (module docstring). ``"accurate"`` certifies each entry
        componentwise, but its shifts depend on the whole product.
    num_moduli : int or "auto"
        ``"auto"``: per stage, the count certified on probe columns.
    native : bool
        Run the same stages on native FP64 GEMMs (``numpy.matmul``): the baseline
        the benchmarks compare with.

    Attributes
    ----------
    n : int
    radices : list of int
    stages : list
    """

    def __init__(self, n: int, *, scheme: str = "auto", mode: str = "fast",
                 engine: str = "auto", num_moduli: int | str = "auto", native: bool = False):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"invalid number of data points ({n}) specified")
        self.n = int(n)
        self.options = _Options(plan_scheme(scheme, mode, engine, num_moduli), mode, engine,
                                num_moduli, bool(native))
        self.radices = factorize(self.n)
        self.stages = [(_Bluestein if r > DENSE_LIMIT else _Dense)(r, self.options)
                       for r in self.radices]
        self._twiddles: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    @property
    def growth(self) -> int:
        """``g`` with every value :meth:`execute` computes at most ``2**g`` times the largest
        complex modulus of its input, up to rounding (exact arithmetic).

        The sum of the stages' bounds: a dense radix-``r`` stage multiplies the largest
        modulus by at most ``r`` (its twiddles have modulus 1), a Bluestein stage of prime
        ``p`` by at most ``2 p**2`` (inside and at its output, rounding included). So
        ``growth`` is the sum of ``ceil(log2 r)`` over the radices (about ``log2 n``)
        for lengths without a Bluestein stage. The transforms scale near-overflow
        inputs by it (:mod:`fft.transforms`).
        """
        return sum(stage.growth for stage in self.stages)

    @property
    def nbytes(self) -> int:
        """Bytes the plan holds once every stage has run (an upper estimate).

        Per dense stage the embedded matrix ``(2r)**2`` FP64 words, times the moduli
        planes kept beside it for radices up to :data:`MAX_RADIX` (about 8), twice it
        for the large primes (the matrix and its prepared data); the twiddles; a
        Bluestein stage its inner plan and kernel.
        """
        total = 16 * self.n  # the twiddles, about n complex values over all stages
        for r, stage in zip(self.radices, self.stages):
            if isinstance(stage, _Bluestein):
                total += stage.sub.nbytes + 32 * stage.L
            else:
                total += 8 * (2 * r) ** 2 * (8 if r <= MAX_RADIX else 2)
        return total

    def __repr__(self) -> str:
        kind = "native" if self.options.native else f"{self.options.mode}"
        return f"Plan(n={self.n}, radices={self.radices}, {kind})"

    def _twiddle(self, i: int):
        got = self._twiddles.get(i)
        if got is None:
            m = math.prod(self.radices[i:])
            T = tables.twiddles(m, self.radices[i])
            got = self._twiddles[i] = (T.real.copy(), T.imag.copy())
        return got

    def execute(self, Z: np.ndarray, real_in: bool = False, real_out: bool = False) -> np.ndarray:
        """The DFT along axis ``-2`` of a split batch.

        Parameters
        ----------
        Z : ndarray, shape (2, n, W) (split complex) or (n, W) with ``real_in``
        real_in, real_out : bool
            Real input; only the real part of the result wanted.

        Returns
        -------
        ndarray, shape (2, n, W), or (n, W) with ``real_out``
        """
        Z = np.asarray(Z)
        if Z.ndim != (2 if real_in else 3):
            raise ValueError(f"Z must be {'2' if real_in else '3'}-D, got shape {Z.shape}")
        want = (self.n, Z.shape[-1]) if real_in else (2, self.n, Z.shape[-1])
        if Z.shape != want or Z.dtype != np.float64:
            raise ValueError(f"Z must be a float64 array of shape {want[:-1] + ('W',)}, "
                             f"got {Z.dtype} {Z.shape}")
        if real_in and real_out:
            raise ValueError("real_in and real_out cannot both be set")
        n, W = self.n, Z.shape[-1]
        s = len(self.stages)
        if n == 1:
            out = Z.reshape(-1, 1, W)[:1 if real_out else 2].copy()
            if real_in and not real_out:
                out = np.concatenate([out, np.zeros_like(out)])
            return out.reshape((1, W) if real_out else (2, 1, W))
        cols = W
        for i, (r, stage) in enumerate(zip(self.radices, self.stages)):
            t0 = time.perf_counter()
            m = n // math.prod(self.radices[:i])  # the sub-length this stage starts
            M = m // r
            form = ("real-in" if (i == 0 and real_in) else
                    "real-out" if (i == s - 1 and real_out) else "complex")
            Y, count, gemms = stage.apply(Z.reshape((r, M * cols) if form == "real-in"
                                                    else (2, r, M * cols)), form)
            if M > 1:
                Tr, Ti = self._twiddle(i)
                Z = twiddle_transpose(Y.reshape(2, r, M, cols), Tr, Ti)
            else:
                Z = Y
            cols *= r
            record(StageRecord(r, M * cols // r, form, count, gemms, time.perf_counter() - t0))
        return Z.reshape((n, W) if real_out else (2, n, W))
