"""Step 3 of the scheme: exact modular products ``C_i = A'_i B'_i (mod p_i)``.

Operands are the symmetric residues (``|r| <= floor(p/2)``). An engine whose
operand range holds them multiplies them directly; otherwise (FP8 units) each
residue is split into *digits*, integers in ``[-16, 16]`` that E4M3 holds
exactly (17 is not representable), computed in exact integer arithmetic:

* square modulus ``p = s**2``: ``r = s x + y`` with ``x = floor((r + floor(s/2)) / s)``,
  ``y = r - s x``, both in ``[-16, 16]`` for ``s <= 33``. Because ``s**2 x_a x_b``
  vanishes mod ``p``: ``r_a r_b = s (x_a y_b + y_a x_b) + y_a y_b (mod p)``: three
  GEMMs ``X_A Y_B``, ``Y_A X_B``, ``Y_A Y_B``.
* Karatsuba modulus ``p <= 511`` (``|r| <= 255``): ``x = sign(r) ceil(|r| / 16)``,
  ``y = r - 16 x``, ``z = x + y``, all in ``[-16, 16]``, and
  ``r_a r_b = 256 X_A X_B + 16 (Z_A Z_B - X_A X_B - Y_A Y_B) + Y_A Y_B``: three
  GEMMs ``X_A X_B``, ``Y_A Y_B``, ``Z_A Z_B``.

Each digit GEMM is exact on the engine (at most ``k * 256`` in magnitude); the
combination is formed in FP64, exact while ``k <= 2**36``. Larger ``k`` and the
direct products are blocked over ``k`` so that every block's exact sum stays
within ``2**53``, and blocks are reduced mod ``p`` before they are added.

A single product's column blocks on the pieces' worker threads
(:mod:`ozaki.core.passes`) run their modular products as GEMMs of a few columns
(:func:`column_stack_product`), and every modulus in one call where the products need
no digits and no k-blocks (:func:`moduli_product`): the same exact integers, entry by
entry, so the same bits.
"""

from __future__ import annotations

import math

import numpy as np

from .engine import Engine
from .workspace import workspace

__all__ = ["square_digits", "karatsuba_digits", "uses_digits", "gemms_per_modulus",
           "modular_product", "complex_product", "product_kblock", "product_bound",
           "product_calls", "SERIAL_GEMM_MNK", "serial_columns", "column_stack_product",
           "moduli_product"]

_DIGIT_KBLOCK = 2 ** 36

#: OpenBLAS runs a GEMM with ``m n k`` up to this on the calling thread alone (its
#: ``SMP_THRESHOLD_MIN`` 65536 times the default ``GEMM_MULTITHREAD_THRESHOLD`` 4), and
#: larger ones on its own thread pool.
SERIAL_GEMM_MNK = 2 ** 18


def square_digits(r: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """Digits ``(x, y)`` with ``r = s x + y``, ``|x|, |y| <= 16`` (``s <= 33``)."""
    x = np.floor((r + s // 2) / s)  # exact: r, s small integers; the quotient rounds
    y = r - s * x                   # to the right side of every integer boundary
    return x, y


def karatsuba_digits(r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Digits ``(x, y, z)``: ``x = sign(r) ceil(|r| / 16)``, ``y = r - 16 x``, ``z = x + y``."""
    x = np.sign(r) * np.ceil(np.abs(r) / 16.0)
    y = r - 16.0 * x
    return x, y, x + y


def uses_digits(engine: Engine, p: int) -> bool:
    """Whether residues mod ``p`` must be split into FP8 digits on ``engine``."""
    return p // 2 > engine.operand_max


def gemms_per_modulus(engine: Engine, p: int) -> int:
    """Low-precision GEMMs that one modular product costs on ``engine``."""
    return 3 if uses_digits(engine, p) else 1


def _digit_product(engine, ra, rb, p, out):
    s = math.isqrt(p)
    if s * s == p:
        xa, ya = square_digits(ra, s)
        xb, yb = square_digits(rb, s)
        t = engine.matmul(xa, yb, 16, 16)
        t += engine.matmul(ya, xb, 16, 16)
        t *= s
        t += engine.matmul(ya, yb, 16, 16)
    else:
        xa, ya, za = karatsuba_digits(ra)
        xb, yb, zb = karatsuba_digits(rb)
        xx = engine.matmul(xa, xb, 16, 16)
        yy = engine.matmul(ya, yb, 16, 16)
        zz = engine.matmul(za, zb, 16, 16)
        t = 256.0 * xx + 16.0 * (zz - xx - yy) + yy
    out[...] = t
    return out


def product_kblock(engine: Engine, p: int) -> int:
    """Products per k-block that keep one modular product's exact sum within ``2**53``."""
    h = p // 2
    kb = _DIGIT_KBLOCK if uses_digits(engine, p) else max(1, 2 ** 53 // (h * h))
    return kb if engine.max_kblock is None else min(kb, engine.max_kblock)


def product_bound(engine: Engine, p: int, k: int) -> int:
    """Largest magnitude of an entry of :func:`modular_product` over ``k`` products.

    A direct product and the Karatsuba digits' combination are the exact
    ``sum_l r_al r_bl``: at most ``k h**2`` (``h = floor(p/2)``). The square
    modulus's combination drops ``s**2 x_a x_b`` and keeps ``s (x_a y_b + y_a x_b)
    + y_a y_b``: at most ``k (512 s + 256)`` (digits below 16). A product
    blocked over ``k`` is a sum of reduced blocks: at most ``h`` per block.
    """
    h = p // 2
    kb = product_kblock(engine, p)
    if k > kb:
        return -(-k // kb) * h
    s = math.isqrt(p)
    if uses_digits(engine, p) and s * s == p:
        return k * (512 * s + 256)
    return k * h * h


def product_calls(engine: Engine, p: int, k: int) -> list[tuple[int, int, int]]:
    """The ``engine.matmul`` calls of one modular product, as :func:`modular_product`
    makes them: ``(k_call, amax, bmax)`` each (3 digit GEMMs per k-block, or 1)."""
    kb = product_kblock(engine, p)
    h = 16 if uses_digits(engine, p) else p // 2
    per = gemms_per_modulus(engine, p)
    lengths = [min(k, s + kb) - s for s in range(0, k, kb)] or [0]
    return [(length, h, h) for length in lengths for _ in range(per)]


def modular_product(backend, engine: Engine, ra: np.ndarray, rb: np.ndarray, p: int,
                    out: np.ndarray | None = None) -> np.ndarray:
    """Integer matrix congruent to ``ra @ rb`` mod ``p``, entries at most ``2**53``.

    Parameters
    ----------
    backend : the backend whose passes reduce k-blocks
    engine : Engine
    ra, rb : ndarray, shapes (..., m, k) and (..., k, n)
        Symmetric residues mod ``p`` (FP64, integer-valued); stacks broadcast as
        in ``np.matmul`` (one batched GEMM).
    p : int
    out : ndarray, shape (..., m, n), optional
        Receives the result.
    """
    k = ra.shape[-1]
    h = p // 2
    digits = uses_digits(engine, p)
    kb = product_kblock(engine, p)
    if out is None:
        lead = np.broadcast_shapes(ra.shape[:-2], rb.shape[:-2])
        out = backend.xp.empty(lead + (ra.shape[-2], rb.shape[-1]))

    def one(x, y, dst):
        if digits:
            return _digit_product(engine, x, y, p, dst)
        return engine.matmul(x, y, h, h, out=dst)

    if k <= kb:
        return one(ra, rb, out)
    block = backend.xp.empty_like(out)
    for n_blk, start in enumerate(range(0, k, kb)):
        blk = slice(start, min(k, start + kb))
        one(ra[..., blk], rb[..., blk, :], block)
        backend.reduce_into(out, block, p, n_blk == 0, product_bound(engine, p, kb))
    return out


def complex_product(backend, engine: Engine, ra: np.ndarray, rb: np.ndarray, p: int):
    """Gauss's three modular products of a complex product, from the real embedding.

    ``ra`` (b, m, 2k) holds the residues of ``[Ar, Ai]``, ``rb`` (b, 2k, n) those
    of ``[Br; Bi]``. Returns ``(P1, P2, P3)`` congruent to ``Ar Br``, ``Ai Bi`` and
    ``(Ar + Ai)(Br + Bi)`` mod ``p`` (the sums reduced to symmetric residues
    first, so each product has the range of a real one): ``Re = P1 - P2`` and
    ``Im = P3 - P1 - P2`` (mod ``p``), three products instead of four, exact in
    residue arithmetic because real and imaginary parts share their shifts.
    The three are views of this thread's workspace, valid until its next call.
    """
    k = ra.shape[-1] // 2
    ar, ai = ra[..., :k], ra[..., k:]
    br, bi = rb[..., :k, :], rb[..., k:, :]
    ws = workspace(backend.xp)  # no fresh pages a modulus
    sa = backend.add_halves(ra, -1, p, ws.take("gauss_a", ar.shape, ra.dtype))
    sb = backend.add_halves(rb, -2, p, ws.take("gauss_b", br.shape, rb.dtype))
    shape = np.broadcast_shapes(ar.shape[:-2], br.shape[:-2]) + (ar.shape[-2], br.shape[-1])
    return tuple(modular_product(backend, engine, x, y, p, ws.take(f"gauss_{j}", shape))
                 for j, (x, y) in enumerate(((ar, br), (ai, bi), (sa, sb))))


def serial_columns(m: int, k: int) -> int:
    """Columns per GEMM of an ``(m, k)`` operand that OpenBLAS runs on the calling thread
    alone (``m k w <= SERIAL_GEMM_MNK``), at least one."""
    return max(1, SERIAL_GEMM_MNK // max(1, m * k))


def column_stack_product(backend, engine: Engine, ra: np.ndarray, rb: np.ndarray, p: int,
                         out: np.ndarray, width: int) -> np.ndarray:
    """:func:`modular_product` of one ``ra`` (1, m, k) and one ``rb`` (1, k, n) as GEMMs of
    ``width`` columns each: the blocks of ``rb`` and ``out`` as one stack (strided views,
    no copy), so one ``np.matmul`` runs them (numpy calls the BLAS once per block); the
    columns beyond the last full block are one more GEMM.

    For products on the pieces' worker threads (:mod:`ozaki.core.passes`): GEMMs of
    :func:`serial_columns` columns stay on the calling thread, so two workers do not
    each wake the BLAS's own pool (measured on two cores with other processes on
    them: the 6 modular products of one 64 x 64 @ 64 x 32768 FFT stage, in pieces of
    2048 columns, took 0.09 s and at times up to 2.7 s of thread time as whole-piece
    GEMMs, 0.05-0.1 s as GEMMs of 64 columns). Column ``j`` of the result is
    ``ra @ rb[:, :, j]`` in every block, an exact integer (the engine contract), so the
    blocks change no bit.
    Stacks, ``width >= n``, and products blocked over ``k`` (:func:`product_kblock`),
    whose reduction needs a contiguous ``out``, take :func:`modular_product` whole.
    """
    k, n = rb.shape[-2:]
    if width >= n or ra.shape[0] != 1 or rb.shape[0] != 1 or out.shape[0] != 1 \
            or k > product_kblock(engine, p):
        return modular_product(backend, engine, ra, rb, p, out)
    stack_b, rest_b = _column_blocks(rb[0], width)
    stack_c, rest_c = _column_blocks(out[0], width)
    modular_product(backend, engine, ra, stack_b, p, stack_c)
    if rest_b.shape[-1]:
        modular_product(backend, engine, ra, rest_b[None], p, rest_c[None])
    return out


def moduli_product(engine: Engine, RA: np.ndarray, RB: np.ndarray, moduli: tuple[int, ...],
                   out: np.ndarray, width: int = 0) -> np.ndarray | None:
    """The exact products ``RA[q] @ RB[q]`` of every modulus of a single product in one
    call of the engine, or ``None`` (nothing written) where that cannot be one call.

    ``RA`` (N, 1, m, k) and ``RB`` (N, 1, k, n) hold the residue planes of the ``N``
    ``moduli``; ``out`` (N, 1, m, n) receives the products themselves (what
    :func:`modular_product` gives when no reduction is needed). One ``engine.matmul``
    of the stack of ``N`` GEMMs (numpy calls the BLAS once per GEMM), with operand bound
    ``h = max(p) // 2`` over all of them; with ``width`` (0: none) each GEMM is cut
    further into GEMMs of ``width`` columns, as in :func:`column_stack_product`.

    Exact: it takes only moduli whose residues the engine multiplies directly
    (:func:`uses_digits` false) and ``k`` within every modulus's
    :func:`product_kblock` (no reduction between k-blocks), so, by the engine
    contract (:meth:`~ozaki.core.engine.Engine.matmul`, with ``h`` bounding every
    residue), every entry is the exact integer ``sum_l ra_l rb_l``, the number
    :func:`modular_product` returns for that modulus, whatever path or encoding the
    engine picks from the bound: the same numbers, with one call per piece instead
    of one per modulus.
    """
    k, n = RB.shape[-2:]
    if RA.shape[1] != 1 or RB.shape[1] != 1 or out.shape[1] != 1 \
            or any(uses_digits(engine, p) for p in moduli) \
            or k > min(product_kblock(engine, p) for p in moduli):
        return None
    h = max(moduli) // 2
    ra, rb, dst = RA[:, 0], RB[:, 0], out[:, 0]  # (N, m, k), (N, k, n), (N, m, n)
    if not width or width >= n:
        engine.matmul(ra, rb, h, h, out=dst)
        return out
    stack_b, rest_b = _column_blocks(rb, width)
    stack_c, rest_c = _column_blocks(dst, width)
    engine.matmul(ra[:, None], stack_b, h, h, out=stack_c)
    if rest_b.shape[-1]:
        engine.matmul(ra, rest_b, h, h, out=rest_c)
    return out


def _column_blocks(X: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """``(blocks, rest)``: the first ``width * (n // width)`` columns of ``X`` (..., r, n)
    as a stack (..., n // width, r, width) and the remaining columns (..., r, n % width),
    both views of ``X`` (written through when ``X`` is an output)."""
    n = X.shape[-1]
    full = n // width * width
    blocks = X[..., :full].reshape(X.shape[:-1] + (n // width, width)).swapaxes(-3, -2)
    if not np.shares_memory(blocks, X):  # pragma: no cover - a reshape must not copy
        raise AssertionError("the column blocks must be views")
    return blocks, X[..., full:]
