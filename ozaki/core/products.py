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
"""

from __future__ import annotations

import math

import numpy as np

from .engine import Engine
from .workspace import workspace

__all__ = ["square_digits", "karatsuba_digits", "uses_digits", "gemms_per_modulus",
           "modular_product", "complex_product", "product_kblock", "product_bound",
           "product_calls"]

_DIGIT_KBLOCK = 2 ** 36


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
