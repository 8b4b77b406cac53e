"""What every product call shares: options, operand shapes, the output check, and the
path of a stacked product.

:func:`stacked` takes operands as stacks (b, m, k) @ (b, k, n) (a shared operand is a
stack of one) and sends the product down its path: an empty product gives exact
zeros (:func:`empty_product`), a small one takes compensated dot products
(:func:`compensated_product`, :mod:`ozaki.core.compensated`), any other the emulation
(:func:`ozaki.core.pipeline.emulate`: real products directly, complex ones on their real
embedding with Gauss's three products per modulus). The front ends
(:mod:`ozaki.api.front`, :mod:`ozaki.api.stacks`, :mod:`ozaki.distributed`) check their
arguments and call these.
"""

from __future__ import annotations

import time

import numpy as np

from ..core import compensated
from ..core.kind import Kind
from .arguments import policy_for, resolve
from ..backends import get_backend
from ..backends.engines import pinned_scheme
from ..core.certify import CertificationError
from ..core.info import OzakiInfo
from ..core.moduli import auto_num_moduli
from ..core.operands import FloorRequest, Prepared, floors_buffer
from ..core.pipeline import Options, decide, emulate, plane_of, widened
from .prepared import PreparedOperand, embed
from ..core.scaling import quantization_bits

__all__ = ["options", "stacked", "empty_product", "compensated_product", "parts_bound",
           "shape_of", "side_check", "check_out"]


def options(scheme, num_moduli, mode, engine, fallback, bounds, backend=None) -> Options:
    """The call's :class:`~ozaki.core.pipeline.Options`, every argument checked.

    Where the machine chooses the scheme (``scheme``, ``engine`` and ``num_moduli``
    all ``"auto"``, no :func:`ozaki.set_scheme`), a product its scheme cannot certify
    takes ``fp64``'s wider range instead (:func:`ozaki.core.pipeline.widened`).
    """
    be = get_backend(backend)
    machine = (isinstance(scheme, str) and scheme == "auto" and pinned_scheme() is None
               and (engine is None or isinstance(engine, str) and engine == "auto")
               and isinstance(num_moduli, str) and num_moduli == "auto")
    scheme, num_moduli, mode, eng = resolve(scheme, num_moduli, mode, engine, be)
    wider = "fp64" if machine and scheme != "fp64" else None
    return Options(scheme, num_moduli, mode, eng, policy_for(fallback, num_moduli),
                   bool(bounds), be, wider)


def stacked(A3, B3, opts: Options, kind: Kind, b: int, m: int, n: int, k: int):
    """``C`` (b, m, n) and info for stacks (or prepared operands) ``A3``, ``B3``."""
    dtype = np.complex128 if kind.complex else np.float64
    if b == 0 or m == 0 or n == 0 or k == 0:
        return empty_product(opts, b, m, n, k, kind)

    def side(X, outer):
        if isinstance(X, PreparedOperand):
            return X.stack(kind, opts.backend)
        op = opts.backend.operand(embed(X, outer) if kind.complex else X, outer)
        floors = None
        if opts.mode == "accurate":  # the floors with the line data, in one read
            floors = FloorRequest(quantization_bits(opts.scheme, op.inner),
                                  floors_buffer(op, opts.backend.xp))
        return Prepared(op, opts.backend, norms=opts.mode == "fast", floors=floors)

    width = kind.width
    prepared = isinstance(A3, PreparedOperand) or isinstance(B3, PreparedOperand)
    if compensated.applies(opts, prepared, m, n, k, kind):
        out, info, where = compensated_product(A3, B3, opts, kind, b, m, n, k)
        if info.uncertified and opts.policy == "raise":
            first = np.argwhere(where)[0]
            raise CertificationError(compensated.explain(
                info.uncertified, tuple(int(x) for x in (first if b > 1 else first[1:]))))
    else:
        with opts.backend.sized(b * width * max(m * k, k * n, m * n)):
            t0 = time.perf_counter()
            pa, pb = side(A3, 0), side(B3, 1)  # the operands' line data: part of the decisions
            out = np.empty((b, m, n), dtype)
            dec = None
            if opts.wider is not None:  # the machine's scheme, unless it cannot certify
                dec = decide(pa, pb, opts, b, kind, plane_of(out, kind))
                wide = widened(opts, dec)
                if wide is not None:
                    opts, dec = wide, None
                    pa, pb = side(A3, 0), side(B3, 1)  # accurate mode: the scheme's floors
            lines = time.perf_counter() - t0
            info = emulate(pa, pb, opts, out, kind=kind, decision=dec)
            info.seconds["scaling"] += lines
    if info.error_bound is not None:
        info.error_bound = parts_bound(info.error_bound, n, kind)
    return out, info


def empty_product(opts: Options, b: int, m: int, n: int, k: int, kind: Kind):
    """A product with an empty dimension: ``C`` (b, m, n) of exact zeros (an empty sum)
    and its info (the count ``"auto"`` would start from, for the real embedding's ``k``)."""
    dtype = np.complex128 if kind.complex else np.float64
    kk = kind.width * k
    count = auto_num_moduli(opts.scheme, kk) if opts.num_moduli == "auto" else opts.num_moduli
    info = OzakiInfo(opts.scheme, count, opts.mode, opts.engine.name,
                     bound_kind="normwise" if opts.mode == "fast" else "componentwise",
                     backend=opts.backend.name)
    info.slice_moduli = np.full(b, count)
    if opts.want_bound:
        info.error_bound = np.zeros((b, m, n), dtype)  # complex: one per part
    return np.zeros((b, m, n), dtype), info


def parts_bound(bound: np.ndarray, n: int, kind: Kind) -> np.ndarray:
    """A complex product's bound on its embedding ``[Re | Im]`` as one complex bound per
    entry (real part: the real part's bound); a real product's as it is.

    The parts are set apart (not ``re + 1j * im``: ``1j * inf`` is ``nan + inf j``,
    which would turn the real part's bound into NaN where the imaginary one is inf).
    """
    if not kind.complex:
        return bound
    out = np.empty(bound.shape[:-1] + (n,), np.complex128)
    out.real, out.imag = bound[..., :n], bound[..., n:]
    return out


def compensated_product(A3, B3, opts: Options, kind: Kind, b: int, m: int, n: int, k: int):
    """The small-product path (:mod:`ozaki.core.compensated`): ``C`` (b, m, n), its info, and
    where its uncertified entries are (on the real embedding; ``None`` if nowhere).

    A complex product is the real one of its embedding ``[Ar, Ai] @ [[Br, Bi], [-Bi, Br]]
    = [Re | Im]``, the matrices the emulated path's fallback reads.
    """
    if kind.complex:
        A3 = embed(A3, 0)
        Bc = B3.astype(np.complex128, copy=False)
        B3 = np.concatenate((np.concatenate((Bc.real, Bc.imag), axis=2),
                             np.concatenate((-Bc.imag, Bc.real), axis=2)), axis=1)
    ke = A3.shape[2]
    flat = np.empty((b, m, B3.shape[2]))
    done = compensated.product(opts.backend, A3, B3, flat, opts.want_bound, opts.policy)
    info = OzakiInfo(opts.scheme, 0, opts.mode, opts.engine.name, bound_kind="componentwise",
                     path="compensated", exact_entries=done.exact, backend=opts.backend.name,
                     uncertified=done.uncertified, error_bound=done.bound,
                     max_bound_ratio=np.inf if done.uncertified else compensated.max_ratio(ke))
    if done.fallback:
        info.fallback, info.fallback_entries = "exact", done.uncertified
        info.fallback_block = (int(done.mask.any(axis=2).sum()), int(done.mask.any(axis=1).sum()))
    info.slice_moduli = np.zeros(b, np.int64)
    info.seconds["products"] = done.seconds
    if not kind.complex:
        return flat, info, done.mask
    out = np.empty((b, m, n), np.complex128)
    out.real, out.imag = flat[..., :n], flat[..., n:]
    return out, info, done.mask


def shape_of(X, name: str) -> tuple[int, ...]:
    return X.shape if isinstance(X, PreparedOperand) else np.shape(X)


def side_check(X, want: str, name: str) -> None:
    if isinstance(X, PreparedOperand) and X.side != want:
        raise ValueError(f"{name} was prepared as the {X.side} operand; prepare it with "
                         f"side={want!r}")


def check_out(out, shape, dtype, *operands) -> None:
    if out is None:
        return
    if not isinstance(out, np.ndarray) or out.dtype != dtype or out.shape != shape:
        raise ValueError(f"out must be a {np.dtype(dtype).name} ndarray of shape {shape}")
    if not out.flags.writeable:
        raise ValueError("out must be writeable")
    for name, X in zip("ABC", operands):
        X = X.array if isinstance(X, PreparedOperand) else X
        if X is not None and overlaps(out, X):
            raise ValueError(f"out may not overlap {name}")


def overlaps(X: np.ndarray, Y: np.ndarray) -> bool:
    """Whether ``X`` and ``Y`` share an element: exact for the interleaved views of one
    matrix (``W[e:, e:]`` beside ``W[e:, k:e]``); a problem too hard to decide quickly
    counts as an overlap."""
    if not np.may_share_memory(X, Y):
        return False
    try:
        return bool(np.shares_memory(X, Y, max_work=2 ** 16))
    except np.exceptions.TooHardError:  # pragma: no cover - needs contrived strides
        return True
