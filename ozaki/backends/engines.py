"""The host engines: exact integer matrix products by numpy GEMMs.

Each meets the contract of :class:`ozaki.core.engine.Engine` (exact in any order
and blocking, by the caller's bound on the sum of absolute values of the terms);
the ``cpu`` and ``numpy`` backends both multiply on them.

==============  =====================================  ==========================
engine          operands and accumulator               exact block
==============  =====================================  ==========================
``cpu-blas``    FP64 (``|x| <= 2**26``), FP64 BLAS       ``sum |x||y| <= 2**53``
``cpu-fp8``     FP8 E4M3 (integers ``|x| <= 16``),      ``sum |x||y| <= 2**24``
                FP32 accumulation (tensor-core model)   (65536 products of 256)
``cpu-int8``    INT8, INT32 accumulation                ``sum |x||y| <= 2**31 - 1``
``cpu-onednn``  INT8 through oneDNN's integer GEMM      k-blocks whose INT32 sums
                (:mod:`ozaki.backends.onednn`, the      cannot wrap, pair sums that
                ``onednn`` extra)                       cannot saturate
==============  =====================================  ==========================
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from ..core.engine import FP32_EXACT, Engine, exact_out
from ..core.scope import scoped
from .onednn import NARROW_S8, OneDNNEngine

__all__ = ["Engine", "BlasEngine", "FP8Engine", "Int8Engine", "get_engine", "auto_engine",
           "machine_scheme", "pin_scheme", "pinned_scheme",
           "available_engines", "exact_out", "ENGINES", "FP32_EXACT"]


class BlasEngine(Engine):
    """FP64 BLAS (numpy's ``matmul``): exact while partial sums stay below ``2**53``.

    Any order of accumulation, FMA or not, is exact because every partial sum of
    integers bounded by ``sum |x||y| <= 2**53`` is an integer FP64 represents.
    Blocks whose bound is at most ``2**24`` run in FP32 (SGEMM, about twice as
    fast), exact for the same reason.
    """

    name = "cpu-blas"
    operand_max = 2 ** 26
    accumulator_max = 2 ** 53
    schemes = ("int8", "fp8", "fp64", "int7")
    preferred_scheme = "fp64"  # the fast path on FP64 BLAS

    #: Blocks whose exact bound is at most this run in FP32: every partial sum is
    #: then an integer of magnitude at most ``2**24``, which FP32 represents.
    fp32_bound = FP32_EXACT

    def fp32(self, bound: int) -> bool:
        return bound <= self.fp32_bound

    def _block(self, X, Y, out, bound, amax, bmax):
        # The operands are finite integers and every partial sum is exact (the contract):
        # no NaN or Inf can arise, so an "invalid" or "overflow" flag left by the BLAS
        # (seen once in CI on a 4-D stack whose result was exact, not reproducible) is
        # not about the result: numpy must not turn it into the caller's RuntimeWarning.
        with np.errstate(invalid="ignore", over="ignore"):
            self._gemm(X, Y, out, bound)

    def _gemm(self, X, Y, out, bound):
        if out.dtype == np.float32:  # exact: Engine.matmul checked the bound
            np.matmul(X.astype(np.float32, copy=False), Y.astype(np.float32, copy=False),
                      out=out)
        elif self.fp32(bound):
            # SGEMM a tile of the product at a time, each tile converted into
            # ``out`` while in cache: no FP32 copy of a large product in memory
            X, Y = X.astype(np.float32, copy=False), Y.astype(np.float32, copy=False)
            if max(X.ndim, Y.ndim, out.ndim) > 3:  # (the tiles index stacks of matrices)
                out[...] = np.matmul(X, Y)
                return
            for lead, rows, cols in _tiles(out.shape, 2 ** 19):
                x = X[lead + (rows,)] if X.ndim > 2 and X.shape[0] > 1 else X[..., rows, :]
                y = Y[lead + (slice(None), cols)] if Y.ndim > 2 and Y.shape[0] > 1 \
                    else Y[..., cols]
                out[lead + (rows, cols)] = np.matmul(x, y)
        else:
            # float32 operands (the bound GEMM's planes) must not select SGEMM
            # here: numpy picks the loop from the operands, not from ``out``
            X = X.astype(np.float64, copy=False)
            if Y.dtype == np.float64:
                np.matmul(X, Y, out=out)
                return
            # Y converted a slab of columns at a time, in cache: no FP64 copy of
            # a wide Y in memory (the same exact integers, whatever the slabs)
            n = Y.shape[-1]
            width = max(2048, 2 ** 19 // max(1, Y.shape[-2]))
            for j0 in range(0, n, width):
                cols = slice(j0, min(n, j0 + width))
                np.matmul(X, Y[..., cols].astype(np.float64), out=out[..., cols])


def _tiles(shape: tuple[int, ...], size: int):
    """``(lead, rows, cols)`` index tuples of tiles of about ``size`` entries of a
    stack of ``shape`` (..., m, n): whole slices in chunks of the first axis
    while a slice is small, else blocks of rows (at least 256, full width when
    that fits) and columns."""
    *batch, m, n = shape
    if batch and m * n <= size:
        per = max(1, size // max(1, m * n))
        for g0 in range(0, batch[0], per):
            yield (slice(g0, g0 + per),), slice(None), slice(None)
        return
    tm = min(m, max(256, size // max(1, n)))
    tn = min(n, max(1, size // max(1, tm)))
    for lead in np.ndindex(*batch):
        for i0 in range(0, m, tm):
            for j0 in range(0, n, tn):
                yield lead, slice(i0, i0 + tm), slice(j0, j0 + tn)


class FP8Engine(Engine):
    """Faithful model of an FP8 tensor core with a true FP32 accumulator.

    Operands are converted to ``float8_e4m3fn`` and back, and the conversion is
    checked lossless; products of E4M3 integers are exact in FP32 and blocks of
    at most ``2**24 / (amax bmax)`` products (65536 for digits up to 16)
    accumulate exactly in FP32 (SGEMM: any order, FMA or not). It runs the ``fp8``
    scheme only: the ``int8`` and ``int7`` schemes' residues would split into FP8
    digits (:mod:`ozaki.core.products`), but their accurate-mode bound GEMM
    multiplies floors up to ``2**6 - 1 = 63``
    (:func:`ozaki.core.scaling.quantization_bits`), beyond E4M3's integers.
    """

    name = "cpu-fp8"
    operand_max = 16
    accumulator_max = 2 ** 24
    schemes = ("fp8",)
    preferred_scheme = "fp8"

    def available(self) -> bool:
        try:
            import ml_dtypes  # noqa: F401
        except ImportError:  # pragma: no cover - declared dependency
            return False
        return True

    @staticmethod
    def _to_fp8(X):
        import ml_dtypes
        q = X.astype(ml_dtypes.float8_e4m3fn)
        back = q.astype(np.float32)
        if not np.array_equal(back, X):
            raise ValueError("operand is not exactly representable in float8_e4m3fn")
        return back

    def _block(self, X, Y, out, bound, amax, bmax):
        out[...] = np.matmul(self._to_fp8(X), self._to_fp8(Y), dtype=np.float32)


class Int8Engine(Engine):
    """INT8 operands with INT32 accumulation (numpy integer matmul; slow, for tests).

    Blocks hold at most ``(2**31 - 1) / (amax bmax)`` products (131071 for
    residues up to 128), so the INT32 sums never wrap.
    """

    name = "cpu-int8"
    operand_max = 128
    accumulator_max = 2 ** 31 - 1
    schemes = ("int8", "fp8", "int7")
    preferred_scheme = "int8"

    @staticmethod
    def _to_int8(X):
        if X.size and (X.min() < -128 or X.max() > 127):
            raise ValueError("operand outside the int8 range [-128, 127]")
        q = X.astype(np.int8)
        if not np.array_equal(q, X):
            raise ValueError("operand is not integer-valued")
        return q.astype(np.int32)

    def _block(self, X, Y, out, bound, amax, bmax):
        out[...] = np.matmul(self._to_int8(X), self._to_int8(Y), dtype=np.int32)


ENGINES: dict[str, type[Engine]] = {
    cls.name: cls for cls in (BlasEngine, FP8Engine, Int8Engine, OneDNNEngine)
}


def available_engines() -> list[str]:
    """Names of the engines usable on this machine.

    Examples
    --------
    >>> import ozaki
    >>> "cpu-blas" in ozaki.available_engines()
    True
    """
    return [name for name, cls in ENGINES.items() if cls().available()]


def auto_engine(scheme: str | None = None, mode: str = "accurate") -> Engine:
    """The engine ``engine="auto"`` picks: the fastest certified path on this machine.

    For a given scheme (``"int8"``, ``"fp8"``, ``"int7"``), ``cpu-onednn`` where it
    is installed, else ``cpu-blas``: a scheme's bits do not depend on the engine, and
    oneDNN's integer GEMM beats FP64 BLAS on every instruction set (about 3.6-4x the
    FP64 rate without VNNI, half of it for the split encoding's two GEMMs, which
    ``int7``'s residues do not need; 7x and more with VNNI or AMX), so this changes the
    speed only. With ``scheme`` ``None``/``"auto"``, the engine of
    :func:`machine_scheme` for ``mode``.
    """
    if scheme in (None, "auto"):
        scheme = machine_scheme(mode)
    one = OneDNNEngine()
    if scheme in one.schemes and one.available():
        return one
    return BlasEngine()


def _integer_scheme() -> str | None:
    """The integer scheme whose modular products take one INT8 GEMM on ``cpu-onednn``
    here: ``"int8"`` where oneDNN runs VNNI or AMX kernels (residues up to 128, at 7x
    or more the FP64 rate), ``"int7"`` where it runs kernels without VNNI whose narrow
    ``offset`` encoding is exact (residues up to 64), ``None`` without oneDNN. From
    the instruction set oneDNN reports and probes at load, so the same answer for
    every call in a process."""
    one = OneDNNEngine()
    if not one.available():
        return None
    if one.encoding == "offset":
        return "int8"
    return "int7" if one.encoding_for(NARROW_S8) == "offset" else None


_pinned = threading.local()


def machine_scheme(mode: str = "accurate") -> str:
    """The scheme of calls whose ``scheme`` and ``engine`` are both ``"auto"``: the
    calling thread's :func:`ozaki.set_scheme`, else the machine's fastest for ``mode``.

    Where oneDNN runs VNNI or AMX kernels: ``int8`` in both modes (about 16 INT8 GEMMs
    in fast mode, 17-19 in accurate mode, on ``cpu-onednn``). Where oneDNN is installed
    without VNNI: ``int7`` in fast mode (about 19 INT8 GEMMs, one a modulus), ``fp64``
    in accurate mode. Without oneDNN: ``fp64`` (about 6 FP64 GEMMs on ``cpu-blas``).

    Measured (``python -m benchmarks.engines_goals``, entries (U - 1/2) exp(N(0, 1))
    unless "uniform", :doc:`benchmarks`, "INT8 products on the CPU"):

    * fast mode, two AVX-512 VNNI cores: int8 0.38-0.85x the time of fp64 on cpu-blas
      at n = 1024 to 4096. Without VNNI (oneDNN's AVX2 kernels,
      ``ONEDNN_MAX_CPU_ISA=AVX2``, with OpenBLAS's and numba's code held to AVX2 too):
      int7 0.75-0.96x, where int8's split-encoded products (two GEMMs a modulus) take
      1.17-1.51x.
    * accurate mode with VNNI, each configuration in its own process: int8 0.36-0.45x
      at n = 2048 and 4096, 0.74x at 1024; on the shapes of :mod:`ozaki.linalg`'s
      trailing updates (k = 256) 0.94-0.96x on spread entries and 0.61-0.65x on
      uniform ones from m = n = 1024 up; 0.41-0.67x at k = 512 and 1024 (m = n = 2048,
      4096), a refined block's exact FP64 GEMM included where one is taken. Below
      n = 1024 the fixed cost of 17 or more small INT8 GEMMs shows: at n = 512 on
      spread entries 1.2-1.4x right after a numpy DGEMM (whose spinning threads slow
      oneDNN's), at parity alone (25-33 ms against 28-29 ms).
    * accurate mode without VNNI: int7 0.92-1.12x at n = 1024 (runs differ) and
      0.82-0.84x at 2048: at parity at n = 1024, so ``fp64``.
    * operands whose column (row) exponents spread widely: a product the machine's
      integer scheme cannot certify at its largest count is decided again in ``fp64``
      (:func:`ozaki.core.pipeline.widened`), after the integer scheme's decisions. At
      n = 2048 with exponents spread over 2**+-80, int8 certifies (19 moduli, the
      whole block refined) in 0.48x fp64's time; over 2**+-150 and 2**+-300 the call
      widens and takes 1.2-1.3x (entries N(0, 1) times 2**e, ``e`` uniform over the
      spread per column of ``A`` and row of ``B``; best of two calls).

    The choice follows the machine, and schemes differ in their bits (each is FP64
    grade): results of such calls differ between a VNNI machine (int8), one without
    (int7 in fast mode, fp64 in accurate mode) and one without oneDNN (fp64). Pin it
    with :func:`ozaki.set_scheme` or pass ``scheme=`` for the same bits everywhere.
    """
    pinned = pinned_scheme()
    if pinned:
        return pinned
    integer = _integer_scheme()
    if mode != "fast":
        return "int8" if integer == "int8" else "fp64"
    return integer or "fp64"


def pinned_scheme() -> str | None:
    """The calling thread's :func:`ozaki.set_scheme` (``None`` outside its blocks)."""
    return getattr(_pinned, "scheme", None)


def pin_scheme(scheme: str) -> contextlib.AbstractContextManager:
    """:func:`machine_scheme` is ``scheme`` on the calling thread inside the block."""
    return scoped(_pinned, "scheme", scheme)


def get_engine(engine: str | Engine | None, scheme: str | None = None) -> Engine:
    """Resolve ``engine`` (a name, an :class:`Engine`, or ``None``/``"auto"``:
    :func:`auto_engine`).

    ``scheme`` (``None`` or ``"auto"``: the engine's :attr:`~Engine.preferred_scheme`)
    must be one the engine runs.
    """
    if engine is None or (isinstance(engine, str) and engine == "auto"):
        eng = auto_engine(scheme)
    elif isinstance(engine, Engine):
        eng = engine
    elif isinstance(engine, str) and engine in ENGINES:
        eng = ENGINES[engine]()
    else:
        raise ValueError(f"engine must be one of {sorted(ENGINES)}, 'auto' or an "
                         f"ozaki.Engine, got {engine!r}")
    if not eng.available():
        why = getattr(eng, "reason", None)
        raise ValueError(f"engine {eng.name!r} is not available on this machine"
                         + (f": {why}" if why else ""))
    if scheme not in (None, "auto") and scheme not in eng.schemes:
        raise ValueError(f"engine {eng.name!r} does not run scheme {scheme!r} "
                         f"(it runs {', '.join(eng.schemes)})")
    return eng
