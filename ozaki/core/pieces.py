"""Pieces of a product: what goes through the moduli and the CRT at a time, and where.

After the decisions, :func:`ozaki.core.pipeline.emulate` runs a product a piece at a
time, small enough to stay in cache from its residues to its result: a chunk of
slices of a stack, or a block of ``B``'s columns of a single product with a
small ``A`` (:func:`column_block`). :func:`piece_bytes` is a piece's workspace;
:func:`piece_threads` says whether the pieces run on worker threads.
"""

from __future__ import annotations

from .products import product_kblock
from .kind import REAL, Kind

__all__ = ["CHUNK_BYTES", "GROUP_BYTES", "column_block", "piece_bytes", "group_size",
           "piece_threads"]

#: Bytes of operand and product planes per chunk of a stack (a few MiB: the
#: chunk's planes stay in cache through the N moduli).
CHUNK_BYTES = 2 ** 21
#: Residue planes of all N moduli are formed in one pass while they take at most
#: this many bytes (one read of each operand instead of N); otherwise one by one.
GROUP_BYTES = 2 ** 25


def column_block(A, m: int, k: int, n: int, N: int) -> int:
    """Columns of ``B`` per block of a single product (``n``: one block).

    Blocks pay when ``B`` and ``C`` are wide and ``A``'s planes of all N moduli
    are small (an FFT stage, a panel update): each block's planes, products and
    residues then stay in cache through the moduli and the reconstruction.
    """
    if 8 * N * m * k > GROUP_BYTES // 4 or 8 * (k + m) * n <= 4 * CHUNK_BYTES:
        return n
    return max(512, CHUNK_BYTES // (8 * (k + m)) // 512 * 512)


def piece_bytes(c: int, m: int, k: int, w: int, N: int, item: int, kind: Kind = REAL,
                blocked: bool = False, plane: int = 8, product: int = 8) -> int:
    """Workspace of one piece: ``c`` slices, ``w`` columns of the (real) product.

    Residue planes of ``A`` (``c m k``, or all N of a shared A formed once for
    column blocks, ``blocked``) and of ``B`` (``c k w``) of ``plane`` bytes an
    entry, :func:`group_size` moduli at once; the N exact products (``product``
    bytes an entry) when ``8 N c m w`` fits :data:`GROUP_BYTES` (reconstructed
    from there), else the N residues in ``item``-byte integers and one product
    plane, which a real piece of whole rows keeps in its own part of the result
    (:func:`ozaki.core.passes.piece_products`), so only a column block's takes
    workspace. Complex products (``k`` the embedding's) always store residues.
    """
    planes_a = 0 if blocked else c * m * k
    group = group_size(N, planes_a + c * k * w, plane)
    raw = not kind.complex and 8 * N * c * m * w <= GROUP_BYTES
    hosted = not kind.complex and not blocked
    store = N * c * m * w * (product if raw else item) + (
        0 if raw or hosted else product * c * m * w)
    return int(plane * group * (planes_a + c * k * w) + (plane * N * m * k if blocked else 0)
               + store)


def group_size(N: int, entries: int, item: int) -> int:
    """Moduli whose residue planes one pass forms (one read of the operands, the digits
    of each entry formed once), for planes of ``entries`` entries of ``item`` bytes a
    modulus: all ``N`` while they fit :data:`GROUP_BYTES`, else as many as fit in the
    bytes of one FP64 plane (``8 entries``), at least one.

    So FP64 planes of a large product are formed one modulus at a time, and int8
    planes eight at a time in the memory one FP64 plane would take: a pass then
    serves eight moduli (measured 2.45 ns a residue one at a time, 0.71 all 16 at
    once, n = 4096, two AVX-512 cores).
    """
    budget = max(GROUP_BYTES, 8 * entries)
    return max(1, min(N, budget // max(1, item * entries)))


def piece_threads(backend, engine, pa, pb, s, t, pieces, moduli, k, kind) -> int:
    """Worker threads for the pieces of a product: 1 (the calling thread) or the pass threads.

    Pieces run on worker threads when there are several (the backend's
    :meth:`~ozaki.core.backend.Backend.run_pieces`), each piece's passes on its
    own thread: on a few cores that beats alternating multithreaded GEMMs with
    multithreaded passes, whose thread pools wait on each other. It takes real
    products whose residues the split pass serves and whose modular products
    need no k-blocking (every pass of a piece then has a serial form). Each entry
    is computed as on one thread, so the bits are the same either way.
    """
    threads = backend.pass_threads()
    if threads < 2 or len(pieces) < 2 or kind.complex:
        return 1
    if k > min(product_kblock(engine, p) for p in moduli):
        return 1
    for prep, shift in ((pa, s), (pb, t)):
        E, zero = prep.lines.exponents
        if not backend.residue_pass(E, zero, shift):
            return 1
    return min(threads, len(pieces))
