"""The ``cpu-onednn`` engine: exact INT8 products on oneDNN's integer GEMM.

oneDNN's ``dnnl_gemm_u8s8s32`` (row-major C API, from the PyPI package
``onednn-cpu-gomp``: ``pip install 'ozaki-emu[onednn]'``; found, loaded, probed
and run on its OpenMP threads by :mod:`ozaki.backends.onednn_library`)
multiplies unsigned 8-bit ``A`` by signed 8-bit ``B`` into INT32 ``C``::

    C = alpha (A - ao) (B - bo) + beta C + co      (alpha = 1, beta = 0, bo = co = 0 here)

The library is loaded at the engine's first use (:meth:`OneDNNEngine.available`
or a product), never at ``import ozaki``. Operands are the scheme's residues (or
FP8 digits, or the bound GEMM's integers): integers in the int8 range
``[-128, 127]``, checked on every call, as on ``cpu-int8``.

Why the encoding matters
------------------------
Without VNNI (SSE4.1, AVX, AVX2, AVX-512 without ``avx512_vnni``), oneDNN's
kernels multiply with ``(v)pmaddubsw``: it forms ``a0 b0 + a1 b1`` for a *pair* of
u8 x s8 products and **saturates** that sum to int16 ``[-32768, 32767]``, before
``(v)pmaddwd`` widens to INT32. The naive encoding ``u = r + 128`` (u8 in
``[0, 255]``) against s8 residues in ``[-128, 127]`` reaches
``|2 * 255 * (-128)| = 65280 > 32767`` and returns wrong sums (measured: oneDNN
3.2 under ``ONEDNN_MAX_CPU_ISA=AVX2`` or ``AVX512_CORE``; ``dnnl_gemm_s8s8s32``,
which adds 128 to ``A`` itself, saturates the same way). With VNNI
(``vpdpbusd``, AVX-512 VNNI or AVX-VNNI; AMX's ``tdpbusd`` likewise) each
product is added into the INT32 lane directly: no 16-bit intermediate.

Two encodings, each exact on the kernels it runs on (``offset`` on every
instruction set when the s8 operand is narrow):

``split`` (exact on every instruction set)
    ``r = l - 128 s`` with ``l = r & 127`` in ``[0, 127]`` (the low seven bits
    of ``r`` in two's complement) and ``s = [r < 0]`` in ``{0, 1}`` (its sign
    bit). ``A`` is stacked as ``[L; S]`` (``2m`` rows of u8), ``B`` is the s8
    residues as they are, ``ao = 0``: one oneDNN call of ``2m x k x n``, whose two
    halves give ``X Y = L Y - 128 S Y``. Every int16 pair sum is at most
    ``2 * 127 * 128 = 32512 <= 32767 = 2**15 - 1``, so no pair can saturate on
    any kernel. INT32: ``|L Y| <= 127 * 128 k``, ``|128 S Y| <= 128 * 128 k``;
    with ``k <= kblock = floor((2**31 - 1) / (128 * 128)) = 131071`` every
    partial sum, in any order, is at most ``131071 * 16384 = 2**31 - 2**14``: no
    wrap. The two halves are combined in int64, exactly. This costs twice the
    multiply-adds of one INT8 GEMM: :attr:`OneDNNEngine.gemms_per_call` is 2.

``offset`` (used only where oneDNN reports a VNNI instruction set)
    ``u = r + 128`` in ``[0, 255]`` (the bit pattern of ``r`` with its sign bit
    flipped), ``ao = 128``: oneDNN subtracts ``128 * sum_l B[l, j]`` itself, one
    GEMM of ``m x k x n``. With VNNI no 16-bit intermediate exists; the largest
    INT32 partial sum is ``255 * 128 k`` (raw products) or ``128 * 128 k``
    (offset term), so ``k <= kblock = floor((2**31 - 1) / (255 * 128)) = 65793``
    gives at most ``65793 * 32640 = 2147483520 <= 2**31 - 1``: no wrap. Whether
    the kernels are VNNI ones is decided, and confirmed by probes at the
    saturating extreme, at load (:mod:`ozaki.backends.onednn_library`, "VNNI
    detection"); where it is not, ``auto`` means ``split``, except for narrow s8
    operands (next).

``offset`` on narrow s8 operands (``|b| <= 64``: exact on every instruction set)
    Without VNNI, ``auto`` takes ``offset`` too when the call's ``bmax <= 64``
    (:data:`NARROW_S8`): the ``int7`` scheme's residues (moduli up to 128), FP8
    digits, the accurate-mode bound GEMM's floors (below ``2**6``). With
    ``u <= 255`` and ``|b| <= 64`` a pair sum is at most ``2 * 255 * 64 = 32640
    <= 32767`` in magnitude (``>= -32640 >= -32768``): ``(v)pmaddubsw`` cannot
    saturate, and ``(v)pmaddwd`` widens the exact pair sums to INT32. INT32: oneDNN
    forms ``(A - ao) B`` from the raw products ``u b`` (each at most ``255 * 64``)
    and its zero-point compensation ``-ao * colsum(B)``, column sums of ``B`` taken
    in INT32 per oneDNN k-block and scaled by ``ao = 128`` (``128 |b| <= 128 * 64`` a
    term). Whatever order, blocking and thread split oneDNN uses, each INT32 value it
    forms (a column sum, its scaled compensation, a partial result) is a sum of some
    of these terms, so at most ``(255 + 128) * 64 k = 24512 k``; ``k <= kblock =
    floor((2**31 - 1) / 24512) = 87609`` gives at most ``2147471808 <= 2**31 - 1``:
    no wrap. This rests on the data, so the engine checks that every s8 entry is
    within ``[-64, 64]`` (else ``ValueError``: the call's ``bmax`` was wrong), and
    takes this path only where probes at the saturating extreme (``u = 255``
    against ``b = -64`` and ``64``, on the shapes of oneDNN's GEMV, small and
    blocked kernels) are exact at the first such call; else ``split``. With VNNI
    ``offset`` (above) is used for every ``bmax``, unchanged.

Each block is an exact integer in every case (the ``split`` and ``offset`` blocks
do not depend on the caller's ``amax``: the worst case of the int8 range); the
engine's blocks are added in FP64 by :meth:`ozaki.core.engine.Engine.matmul`,
exact by the caller's bound ``k amax bmax <= 2**53``. So the encoding changes the
speed, never a bit. The encoding is chosen per call from ``bmax`` (handed to each
block, no state shared between concurrent calls): :meth:`OneDNNEngine.encoding_for`.
The compiled passes that encode, check and combine are in
:mod:`ozaki.backends.onednn_passes`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..core.engine import Engine
from ..core.workspace import workspace
# The library's names are re-exported for ``from ozaki.backends.onednn import ...``;
# the loader reads its own module's ``library_path``: a test replaces that one.
from .onednn_library import (DISTRIBUTION, INSTALL_HINT, PROBE_SHAPES, OneDNNUnavailable,
                             library_info, library_path, load_library, mixed)
from .onednn_passes import compiled, run_checked, run_rows

__all__ = ["OneDNNEngine", "OneDNNUnavailable", "DISTRIBUTION", "INSTALL_HINT",
           "NARROW_S8", "library_path", "library_info"]

_INT32_MAX = 2 ** 31 - 1
#: Largest magnitudes of the encoded u8 operand (for the INT32 block bound) and of
#: the s8 one: 255 for ``offset`` (``r + 128``); 128 for ``split``, whose two halves
#: ``L`` (up to 127) and ``128 S`` (up to 128 times the sum of ``|y|``) are
#: combined after the GEMM.
_ENCODED_MAX = {"offset": 255, "split": 128}
_S8_MAX = 128
#: Largest ``|b|`` of the s8 operand for which ``offset`` is exact without VNNI: a
#: pair of u8 x s8 products is then at most ``2 * 255 * 64 = 32640 <= 2**15 - 1``.
NARROW_S8 = 64
#: The INT32 bound of one term of ``offset`` on narrow s8 operands: a raw product
#: ``u b`` (at most ``255 * 64``) plus its compensation ``ao b`` (``128 * 64``).
_NARROW_TERM = (255 + 128) * NARROW_S8


def _narrow_message(bmax: int) -> str:
    return (f"s8 operand outside [-{NARROW_S8}, {NARROW_S8}] or not integer-valued, "
            f"where the call's bmax = {bmax} chose the narrow offset encoding")


@lru_cache(maxsize=None)
def _narrow_exact(lib) -> bool:
    """Whether ``offset`` is exact on ``lib``'s kernels for s8 operands within
    ``[-64, 64]`` (module docstring): probes at the saturating extreme, ``u = 255``
    against ``b = -64`` and ``64`` (each pair sum ``-+32640``), on the shapes of
    oneDNN's GEMV, small and blocked kernels, against int64 references. Once per
    library (a second concurrent first call only probes again)."""
    for m, k, n in PROBE_SHAPES:
        A = np.full((m, k), 255, np.uint8)
        A[:, 1::3] = mixed((m, len(range(1, k, 3))), 0, 255, 3)
        B = np.full((k, n), -NARROW_S8, np.int8)
        B[:, ::2] = NARROW_S8
        B[2::5] = mixed((len(range(2, k, 5)), n), -NARROW_S8, NARROW_S8, 4)
        C = np.empty((m, n), np.int32)
        with lib.threads(follow_workers=False):  # small shapes: no numba for the count
            lib.call(A, B, C, 128)
        if not np.array_equal(C, (A.astype(np.int64) - 128) @ B.astype(np.int64)):
            return False
    return True


def _stack(X: np.ndarray) -> np.ndarray:
    """``X`` (..., r, c) as (b, r, c) (a view when the stack axes allow one)."""
    return X.reshape((-1,) + X.shape[-2:])


def _compiled_dtype(Z: np.ndarray, label: str) -> np.ndarray:
    """``Z`` in a type the compiled passes read: itself (integers, float32, float64),
    float16 as float32 (exact: every float16 is a float32); other floats (extended
    precision) raise ``ValueError`` rather than be rounded before the range check."""
    if Z.dtype.kind in "iu" or Z.dtype in (np.float32, np.float64):
        return Z
    if Z.dtype == np.float16:
        return Z.astype(np.float32)
    raise ValueError(f"engine 'cpu-onednn': {label} must be an integer, float16, float32 or "
                     f"float64 array, got {Z.dtype}")


def _slices(lead_x: tuple, lead_y: tuple, lead: tuple) -> tuple[np.ndarray, np.ndarray]:
    """For each slice of the broadcast stack ``lead``: the index of its ``X`` and ``Y``
    slices in their flattened stacks (``np.matmul``'s broadcasting)."""
    def index(shape):
        ids = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(
            (1,) * (len(lead) - len(shape)) + tuple(shape))
        return np.broadcast_to(ids, lead).ravel()
    return index(lead_x), index(lead_y)


class OneDNNEngine(Engine):
    """INT8 products on oneDNN's ``dnnl_gemm_u8s8s32``, exact on every instruction set.

    Operands are integers in ``[-128, 127]`` (checked on every call, as on
    ``cpu-int8``), accumulated in INT32 in blocks that never wrap. The encoding
    (module docstring) is ``offset`` (one GEMM) where oneDNN runs VNNI kernels,
    and without VNNI for calls whose s8 operand is narrow (``bmax <= 64``, checked:
    the ``int7`` scheme, FP8 digits, the bound GEMM), else ``split`` (one GEMM on
    twice the rows, exact even where the kernels saturate pairs of products to
    int16). Every block is an exact integer, so results do not depend on the
    encoding, the thread count or the blocks.

    Parameters
    ----------
    max_kblock : int, optional
        Upper limit on the products per block (see :class:`~ozaki.core.engine.Engine`).
    encoding : {"auto", "split", "offset"}
        ``"auto"``: ``offset`` with VNNI, else ``offset`` for ``bmax <= 64`` and
        ``split`` above (:meth:`encoding_for`). ``"split"`` forces the encoding exact
        on every instruction set, for every call; ``"offset"`` is available only
        where oneDNN runs VNNI kernels.

    Attributes
    ----------
    reason : str or None
        Why :meth:`available` last said ``False`` (naming ``pip install
        'ozaki-emu[onednn]'``), else ``None``.
    """

    name = "cpu-onednn"
    operand_max = 128
    accumulator_max = _INT32_MAX
    schemes = ("int8", "fp8", "int7")
    preferred_scheme = "int8"
    integer_operands = True

    def __init__(self, max_kblock: int | None = None, encoding: str = "auto"):
        super().__init__(max_kblock)
        if encoding not in ("auto", "split", "offset"):
            raise ValueError(f"encoding must be 'auto', 'split' or 'offset', got {encoding!r}")
        self._choice = encoding
        self.reason: str | None = None

    def __repr__(self) -> str:
        extra = [] if self.max_kblock is None else [f"max_kblock={self.max_kblock}"]
        extra += [] if self._choice == "auto" else [f"encoding={self._choice!r}"]
        return f"{type(self).__name__}({', '.join(extra)})"

    def available(self) -> bool:
        """Whether oneDNN loads here (and runs VNNI kernels, for ``encoding="offset"``).

        Loads the library at the first call. When ``False``, :attr:`reason` says why.
        """
        try:
            lib = load_library()
        except OneDNNUnavailable as exc:
            self.reason = str(exc)
            return False
        if self._choice == "offset" and not lib.vnni:
            self.reason = (f"the offset encoding needs oneDNN's VNNI kernels; this machine "
                           f"runs {lib.isa_name}")
            return False
        self.reason = None
        return True

    @property
    def encoding(self) -> str:
        """The encoding of calls over the whole int8 range (``bmax = 128``),
        ``"offset"`` or ``"split"`` (loads the library; :meth:`encoding_for`)."""
        return self.encoding_for(_S8_MAX)

    def encoding_for(self, bmax: int) -> str:
        """The encoding of a call whose s8 operand is bounded by ``bmax``: ``"split"``
        where forced; else ``"offset"`` with VNNI, and without VNNI for ``bmax <= 64``
        where the narrow probes are exact (module docstring); else ``"split"``.

        Loads the library. A function of ``bmax`` and the library only, so
        :meth:`kblock` and every block of a call agree, on any thread.
        """
        return self._plan(bmax)[0]

    def _plan(self, bmax: int) -> tuple[str, bool]:
        """``(encoding, narrow)``: :meth:`encoding_for`, and whether it is ``offset``
        without VNNI (exact only for s8 entries within ``[-64, 64]``, checked)."""
        if self._choice == "split":
            return "split", False
        lib = load_library()
        if lib.vnni:
            return "offset", False
        if self._choice == "offset":
            raise OneDNNUnavailable(f"the offset encoding needs oneDNN's VNNI kernels; "
                                    f"this machine runs {lib.isa_name}")
        if bmax <= NARROW_S8 and _narrow_exact(lib):
            return "offset", True
        return "split", False

    @property
    def gemms_per_call(self) -> int:
        """INT8 GEMMs of the call's size one block over the whole int8 range costs: 2
        for ``split``, 1 for ``offset`` (:meth:`gemms_for` at ``bmax = 128``)."""
        return self.gemms_for(_S8_MAX)

    def gemms_for(self, bmax: int) -> int:
        """INT8 GEMMs of the call's size one block costs when the s8 operand is bounded
        by ``bmax``: 2 for ``split``, 1 for ``offset`` (:meth:`encoding_for`)."""
        return 2 if self.encoding_for(bmax) == "split" else 1

    def kblock(self, amax: int, bmax: int) -> int:
        """Products per block: the encoding's INT32 bound (module docstring): 131071
        for ``split``, 65793 for ``offset`` with VNNI (the int8 extremes), 87609 for
        ``offset`` on narrow s8 operands without VNNI, and at most the contract's
        ``(2**31 - 1) / (amax bmax)``."""
        encoding, narrow = self._plan(bmax)
        term = _NARROW_TERM if narrow else _ENCODED_MAX[encoding] * _S8_MAX
        kb = self.accumulator_max // term
        kb = min(kb, max(1, self.accumulator_max // max(1, amax * bmax)))
        return kb if self.max_kblock is None else min(kb, self.max_kblock)

    def _block(self, X, Y, out, bound, amax, bmax):
        """``out = X @ Y`` for one block (``k <= kblock``): encode both operands, one
        oneDNN GEMM per stack slice (one for a whole stack that shares ``Y``) into
        INT32, then one pass into ``out``; every step exact (module docstring).

        The encoding is the call's (:meth:`encoding_for` of ``bmax``). ``X``, ``Y``
        are FP64 integers (encoded by one checked pass each) or the backend's int8
        residue planes (:attr:`integer_operands`: in range by their type; ``X``
        encoded by one byte-wise pass, ``Y`` read in place, checked within
        ``[-64, 64]`` by one pass for narrow ``offset``). ``out`` is FP64, FP32 or
        INT32 (strided allowed); an INT32 ``out`` that is C-ordered receives the
        ``offset`` GEMM directly.
        """
        if out.size == 0:
            return
        m, k = X.shape[-2:]
        if k == 0:
            out[...] = 0
            return
        lib = load_library()
        encoding, narrow = self._plan(bmax)
        split = encoding == "split"
        n = Y.shape[-1]
        X3, Y3 = (_compiled_dtype(_stack(Z), label) for Z, label in ((X, "X"), (Y, "Y")))
        rows = 2 * m if split else m
        ws = workspace(np)
        A = ws.take("onednn_a", (X3.shape[0], rows, k), np.uint8)
        B = self._encode(X3, Y3, A, split, ws, bmax if narrow else None)
        lead = out.shape[:-2]
        count = int(np.prod(lead, dtype=np.int64))
        ix, iy = _slices(X.shape[:-2], Y.shape[:-2], lead)
        dest, copied = out.view(), False
        try:
            dest.shape = (count, m, n)  # a view of out (strided allowed), no copy
        except AttributeError:
            dest, copied = np.empty((count, m, n), out.dtype), True
        # numpy's flag ignores the strides of single rows: Library.call then passes a
        # leading dimension oneDNN accepts
        direct = not split and dest.dtype == np.int32 and dest.flags.c_contiguous
        C = dest if direct else ws.take("onednn_c", (count, rows, n), np.int32)
        ao = 0 if split else 128
        with lib.threads():
            if count > 1 and not iy.any() and np.array_equal(ix, np.arange(count)):
                # one Y for the whole stack: one GEMM on the stacked rows of A
                lib.call(A.reshape(count * rows, k), B[0], C.reshape(count * rows, n), ao)
            else:
                for g in range(count):
                    lib.call(A[ix[g]], B[iy[g]], C[g], ao)
        if not direct:
            run_rows(compiled().combine, count * m, n, C, dest, split)
        if copied:
            out[...] = dest.reshape(out.shape)

    @staticmethod
    def _encode(X3: np.ndarray, Y3: np.ndarray, A: np.ndarray, split: bool,
                ws, narrow: int | None = None) -> np.ndarray:
        """Write ``X3``'s u8 encoding into ``A``; return ``Y3`` as s8 rows (b, k, n).

        int8 planes need no check against the int8 range: every int8 is in
        ``[-128, 127]``. Their u8 encodings are bit operations on the two's
        complement byte ``u``: ``r + 128 = u ^ 0x80``; ``r & 127 = u & 0x7f`` and
        ``[r < 0] = u >> 7``. An int8 ``Y3`` whose rows are contiguous is passed to
        oneDNN as it is. ``narrow`` (the call's ``bmax``, for ``offset`` without
        VNNI): ``Y3`` is checked within ``[-64, 64]`` instead, where exactness rests.
        """
        m = X3.shape[1]
        if X3.dtype == np.int8:
            u = X3.view(np.uint8)
            if split:
                np.bitwise_and(u, 0x7f, out=A[:, :m])
                np.right_shift(u, 7, out=A[:, m:])
            else:
                np.bitwise_xor(u, 0x80, out=A)
        else:
            run_checked(compiled().encode_a, X3.shape[0] * m, X3.shape[2], X3, A, split)
        rows, cols = Y3.shape[0] * Y3.shape[1], Y3.shape[2]
        if Y3.dtype == np.int8:
            if Y3.strides[-1] == 1 and Y3.strides[-2] >= Y3.shape[-1]:
                B = Y3
            else:
                B = ws.take("onednn_b", Y3.shape, np.int8)
                np.copyto(B, Y3)
            if narrow is not None:
                run_checked(compiled().check_b, rows, cols, B, NARROW_S8,
                            message=_narrow_message(narrow))
            return B
        B = ws.take("onednn_b", Y3.shape, np.int8)
        if narrow is None:
            run_checked(compiled().encode_b, rows, cols, Y3, B, -128.0, 127.0)
        else:
            run_checked(compiled().encode_b, rows, cols, Y3, B, float(-NARROW_S8),
                        float(NARROW_S8), message=_narrow_message(narrow))
        return B
