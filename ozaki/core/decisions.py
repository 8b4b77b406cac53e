"""Step 1, the decisions: exponents, shifts and the moduli count, from exact data.

Everything a product decides (the shifts ``s``, ``t``, the count ``N``, which
entries are certified) is a deterministic function of **exact integer data**,
so a product split into pieces (k-panels, column blocks, MPI ranks) decides
exactly as the whole does once the pieces' data are combined:

==================  ============  ====================================  ============
data                shape         value                                 combine
==================  ============  ====================================  ============
``Lines.maxbits``   (b, lines)    bits of the largest finite ``|x|``    MAX over k
``Lines.nnz``       (b, lines)    finite nonzero entries                SUM over k
``Lines.bad``       (b, lines)    any Inf or NaN                        OR over k
``Bound.G``         (b, m, n)     floor GEMM ``F_A F_B`` (accurate)     SUM over k
``Bound.rF, cF``    (b, m/n)      sums of the floors (accurate)         SUM over k
``Norms.S2, S1``    (b, lines)    ``sum F**2``, ``sum F`` (fast)        SUM over k
==================  ============  ====================================  ============

The floors need the line exponents first (``F = floor(|x| 2**(r - E))``): a
distributed caller reduces ``Lines`` (MAX/SUM/OR), then forms and reduces the
floor data. From there the shifts need, per row, the maximum over the row's
columns of the upper bound ``U`` (MAX over column pieces) and, per column, a
maximum over rows (MAX over row pieces); the certificate's failure counts are
SUMs. :meth:`Lines.combine`, :meth:`Bound.combine` and :meth:`Norms.combine`
do this for pieces held in one process. ``G`` is held in FP32 where its
entries are at most ``2**24`` (every ``k <= 2**16``); its SUM is formed in
FP64, where a sum of pieces may pass that.

The accurate certificate and the shift rules are in :mod:`ozaki.core.certify` and
:mod:`ozaki.core.scaling`; this module runs them over a stack of ``b`` products,
each slice with its own count, all slices in one pass per step.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property
from typing import NamedTuple

import numpy as np

from . import certify, scaling
from .kind import REAL, Kind
from .engine import exact_out
from .moduli import MIN_MODULI, REFINEMENT_PRICE, crt_plan, max_moduli, plan_terms
from .workspace import workspace

__all__ = ["Lines", "Bound", "Norms", "Floors", "BoundData", "Decision", "choose_counts"]


@dataclass(frozen=True)
class Lines:
    """Exact per-line data of an operand stack (rows of ``A``, columns of ``B``)."""

    maxbits: np.ndarray
    bad: np.ndarray
    nnz: np.ndarray

    @classmethod
    def combine(cls, parts: list["Lines"]) -> "Lines":
        """The data of the whole line from pieces along ``k`` (MAX, OR, SUM)."""
        return cls(np.maximum.reduce([p.maxbits for p in parts]),
                   np.logical_or.reduce([p.bad for p in parts]),
                   np.add.reduce([p.nnz for p in parts]))

    @cached_property
    def exponents(self) -> tuple[np.ndarray, np.ndarray]:
        """``(E, zero)``: ``|x| < 2**E`` on every line, and the all-zero flags."""
        return scaling.exponents(self.maxbits)


@dataclass(frozen=True)
class Bound:
    """Accurate mode: the exact floor GEMM and the sums of the floors.

    ``r`` is the quantisation (floors below ``2**r``); ``G`` (b, m, n), ``rF``
    (b, m), ``cF`` (b, n) are integers below ``2**53`` held in FP64, exact
    (``G`` in FP32 where its entries are at most ``2**24``: :func:`bound_data`).
    """

    r: int
    G: np.ndarray
    rF: np.ndarray
    cF: np.ndarray

    @classmethod
    def combine(cls, parts: list["Bound"]) -> "Bound":
        """The data of the whole product from pieces along ``k`` (exact SUMs).

        Every piece must have been quantised at the whole's ``r`` with the whole's
        exponents (:func:`bound_data` with the combined :class:`Lines` and the whole ``k``).
        """
        if len({p.r for p in parts}) != 1:
            raise ValueError("pieces quantised at different r: use the whole k")
        # in FP64: the sum of float32 pieces may pass 2**24
        return cls(parts[0].r, np.add.reduce([p.G.astype(np.float64) for p in parts]),
                   np.add.reduce([p.rF for p in parts]), np.add.reduce([p.cF for p in parts]))


@dataclass(frozen=True)
class Norms:
    """Fast mode: exact sums of the floors ``F = floor(|x| 2**(h - E)) < 2**h``.

    From them, per line (``I`` the nonzero indicator, ``F <= |x| 2**(h-E) < F + I``):
    ``||x 2**-E||_2**2`` lies in ``[S2, S2 + 2 S1 + nnz] 2**-2h`` and
    ``||x 2**-E||_1 <= (S1 + nnz) 2**-h``, exact integers rounded the safe way.
    """

    h: int
    S2: np.ndarray
    S1: np.ndarray

    @classmethod
    def combine(cls, parts: list["Norms"]) -> "Norms":
        """The sums of the whole line from pieces along ``k`` (exact SUMs).

        Every piece must have floored at the whole's ``h`` (:func:`ozaki.core.scaling.norm_bits`
        of the whole ``k``) with the whole's exponents.
        """
        if len({p.h for p in parts}) != 1:
            raise ValueError("pieces floored at different h: use the whole k's norm_bits")
        return cls(parts[0].h, np.add.reduce([p.S2 for p in parts]),
                   np.add.reduce([p.S1 for p in parts]))

    def normwise(self, lines: Lines) -> certify.Normwise:
        """Bounds of the normalised norms for :mod:`ozaki.core.certify`."""
        E, zero = lines.exponents
        up, dn = 1.0 + 2.0 ** -52, 1.0 - 2.0 ** -52
        upper2 = np.ldexp((self.S2 + 2 * self.S1 + lines.nnz).astype(np.float64) * up,
                          -2 * self.h)
        lo2 = np.sqrt(np.ldexp(self.S2.astype(np.float64) * dn, -2 * self.h)) * dn
        hi2 = np.sqrt(upper2) * up
        # S1 + nnz <= k 2**h: exact in FP64 for k <= 2**33; rounded up beyond
        hi1 = np.ldexp((self.S1 + lines.nnz).astype(np.float64) * up, -self.h)
        return certify.Normwise(E, zero, lo2, hi2, hi1, upper2)


class Floors(NamedTuple):
    """An operand's accurate-mode floors at some ``r`` (planes of the product's shape,
    float32, exact) and their exact FP64 sums along each line (b, lines)."""

    planes: np.ndarray
    sums: np.ndarray


class BoundData(NamedTuple):
    """What :func:`bound_data` forms: the :class:`Bound`, the quantisers ``e`` (ba, m)
    and ``f`` (bb, n), and both operands' :class:`Floors` (kept by prepared operands)."""

    bound: "Bound"
    e: np.ndarray
    f: np.ndarray
    floors: tuple[Floors, Floors]


@dataclass
class Decision:
    """What step 1 decided for a stack of ``b`` products.

    ``counts`` (b,) moduli per slice, ``s`` (b, m) and ``t`` (b, n) the shifts,
    ``mask`` (b, m, n) the uncertified entries (or ``None``), ``bound`` the
    per-entry absolute bound without the final rounding (or ``None``),
    ``max_ratio`` and ``uncertified`` per slice, ``kind`` of certificate,
    ``gemms`` the exact GEMMs step 1 ran, ``refined`` the refined blocks.
    """

    counts: np.ndarray
    s: np.ndarray
    t: np.ndarray
    mask: np.ndarray | None
    bound: np.ndarray | None
    max_ratio: np.ndarray
    uncertified: np.ndarray
    kind: str
    gemms: int = 0
    refined: tuple[int, int] = (0, 0)

    def block(self, rows=slice(None), cols=slice(None)) -> "Decision":
        """The decision restricted to a block of the product (a copy).

        ``rows`` index the rows of ``A`` (and ``C``), ``cols`` the columns of ``B``:
        :func:`ozaki.core.pipeline.emulate` on those rows and columns with this decision
        gives exactly the whole product's bits there (the MPI layer's blocks).
        Counts, ratios and failure counts stay those of the whole. For a complex
        product the columns are the real embedding's ``[Re | Im]``: select
        ``J`` and ``n + J`` together.
        """
        def cut(x):
            return None if x is None else np.array(x[:, rows][:, :, cols])
        return Decision(self.counts.copy(), np.array(self.s[:, rows]),
                        np.array(self.t[:, cols]), cut(self.mask), cut(self.bound),
                        self.max_ratio.copy(), self.uncertified.copy(), self.kind,
                        self.gemms, self.refined)


def choose_counts(evaluate, scheme: str, start, down: bool = True,
                  first: certify.Certificate | None = None,
                  below: certify.Certificate | None = None) -> certify.Certificate:
    """Per slice, the smallest count whose certificate holds, searching from ``start``.

    ``evaluate(counts, probe=False) -> Certificate`` for a stack (per-slice counts;
    ``probe``: only whether each slice certifies is needed). The
    bound decreases with the count (the shifts only grow with ``P``), so each
    slice walks down while certified and up while not; a slice that no count
    certifies ends at the largest. All slices step together, one pass a step.
    ``first``, when given, is ``evaluate(start)`` already computed, and ``below``
    ``evaluate(start - 1, probe=True)`` (``MIN_MODULI < start <= top``): the first
    step down reads it where taken (a slice's certificate depends on its count only).
    """
    top = max_moduli(scheme)
    n = np.minimum(np.maximum(np.asarray(start, np.int64), MIN_MODULI), top)
    cert = evaluate(n) if first is None else first
    ok = cert.uncertified == 0
    active = ok & (n > MIN_MODULI) if down else np.zeros_like(ok)
    while active.any():
        trial = np.where(active, n - 1, n)
        lower = evaluate(trial, probe=True) if below is None else below  # certified?
        below = None
        better = active & (lower.uncertified == 0)
        n = np.where(better, trial, n)
        cert = cert.where(better, lower)
        active = better & (n > MIN_MODULI)
    active = ~ok & (n < top)
    while active.any():
        trial = np.where(active, n + 1, n)
        higher = evaluate(trial)
        n = trial
        cert = cert.where(active, higher)
        active = active & (higher.uncertified > 0) & (n < top)
    return cert


def _slice(x, g):
    return x[g:g + 1]


def bound_data(backend, engine, pa, pb, la: Lines, lb: Lines, scheme: str, k: int,
               floors: tuple[Floors | None, Floors | None] = (None, None),
               buffers=(None, None, None), kind: Kind = REAL) -> BoundData:
    """Accurate mode's exact data: quantisers ``e``, ``f``, floors, and the floor GEMM.

    ``floors`` may hold an operand's :class:`Floors` already computed (they depend
    on that operand and ``r`` only); ``buffers`` the float32 planes for the floors
    (bits' layout) and FP64 memory for ``G`` (:func:`ozaki.core.engine.exact_out`).
    Returns the :class:`BoundData`. For a complex ``kind``, ``pa`` is ``[Ar,
    Ai]``, ``pb`` is ``[Br; Bi]`` (bb, 2k, n) and ``lb`` the embedding's tiled
    column data: ``G``, ``cF`` and ``f`` are the real embedding's (``2n``
    columns), the returned ``FB``, ``cF`` those of ``[Br; Bi]``.
    """
    r = scaling.quantization_bits(scheme, k)
    (Ea, za), (Eb, zb) = la.exponents, lb.exponents
    e = scaling.accurate_quantizers(Ea, za, r)
    f = scaling.accurate_quantizers(Eb, zb, r)
    buf_a, buf_b, buf_g = buffers
    # rF, cF: exact FP64 sums of integers below 2**53 (formed with the floors)
    if floors[0] is None:  # integers below 2**20: exact in FP32, half the memory
        out = backend.xp.empty(pa.layout(pa.batch), np.float32) if buf_a is None else buf_a
        FA, rF = backend.quantize(pa, e, out, sums=True)  # (planes, sums)
    else:
        FA, rF = floors[0]
    if floors[1] is None:
        out = backend.xp.empty(pb.layout(pb.batch), np.float32) if buf_b is None else buf_b
        FB, cF = backend.quantize(pb, f[:, :pb.shape[2]] if kind.complex else f, out, sums=True)
    else:
        FB, cF = floors[1]
    kept = (Floors(FA, rF), Floors(FB, cF))
    q = 2 ** r - 1
    n, h = FB.shape[2], FA.shape[2] // 2
    G = exact_out(np.broadcast_shapes(FA.shape[:-2], FB.shape[:-2])
                          + (FA.shape[1], kind.width * n), FA.shape[2] * q * q, buf_g)
    if not kind.complex:
        return BoundData(Bound(r, backend.matmul(engine, FA, FB, q, q, G), rF, cF), e, f, kept)
    # The embedding's floors are [[FBr, FBi], [FBi, FBr]], so its floor GEMM is
    # [FA FB | FA' FB] with FA' = [FAi, FAr]: two GEMMs of the same exact integer
    # sums (any order), without forming the embedding's floors.
    backend.matmul(engine, FA, FB, q, q, G[..., :n])
    swapped = workspace(backend.xp).take("floors_swap", FA.shape, np.float32)
    backend.xp.concatenate((FA[..., h:], FA[..., :h]), axis=-1, out=swapped)
    backend.matmul(engine, swapped, FB, q, q, G[..., n:])
    return BoundData(Bound(r, G, rF, kind.tile(cF)), e, f, kept)


def decide_accurate(opts, bd: Bound, e, f, la: Lines, lb: Lines, b: int, k: int, operands,
                    start: int, tie=None, reduce: certify.Whole = certify.WHOLE) -> Decision:
    """Shifts, counts and certificate in accurate mode, for ``b`` slices at once.

    ``opts`` is the call's :class:`~ozaki.core.pipeline.Options` (scheme, count,
    policy, whether bounds are wanted, backend). All slices walk from the
    starting count together (down while certified, up while not, for
    ``"auto"``). A slice not certified at the start is then resolved on its own:
    where its coarse bound fails, the refined bound (exact FP64 GEMMs on the
    block of failing rows and columns, :func:`ozaki.core.certify.refinement`) may certify at this count, and for
    ``"auto"`` more moduli may too; it refines when the block, priced at
    :data:`ozaki.core.moduli.REFINEMENT_PRICE` moduli for the whole product, costs no
    more than the extra moduli the coarse bound needs. ``operands(g) -> (A_g, B_g)`` gives a
    slice's matrices for the refinement. ``reduce`` combines the blocks of a
    distributed product (:class:`ozaki.core.certify.Whole`): every outcome
    (counts, whether and where to refine, failure counts) is then the whole
    product's, on every block.
    """
    run = _Accurate(opts, bd, e, f, la, lb, b, k, tie, reduce)
    first, cert = run.walk(start)
    refines = {}
    if opts.num_moduli == "auto" or opts.policy != "none" or opts.want_bound:
        for g in np.flatnonzero(first.uncertified):
            cert = run.refine(g, cert, operands, refines)
    mask = bound = None
    if refines or opts.want_bound or (cert.uncertified.any() and opts.policy != "none"):
        cert, mask, bound = run.per_entry(cert, refines)
    return Decision(cert.num_moduli, run.e + cert.sigma, run.f + cert.tau, mask, bound,
                    cert.max_ratio, cert.uncertified, "componentwise", run.gemms, run.refined)


class _Accurate:
    """The steps of :func:`decide_accurate` over one stack's exact bound data."""

    def __init__(self, opts, bd: Bound, e, f, la: Lines, lb: Lines, b: int, k: int, tie,
                 reduce: certify.Whole):
        m, n = bd.G.shape[1:]

        def full(x, width):  # a shared operand's data, read by every slice
            return x if x.shape[0] == b else np.broadcast_to(x, (b, width))

        self.opts, self.bd, self.la, self.lb, self.b, self.k = opts, bd, la, lb, b, k
        self.m, self.n, self.tie, self.reduce = m, n, tie, reduce
        self.nA, self.nB = full(la.nnz, m), full(lb.nnz, n)
        self.rF, self.cF = full(bd.rF, m), full(bd.cF, n)
        self.e, self.f = full(e, m), full(f, n)
        self.auto = opts.num_moduli == "auto"
        self.xp = opts.backend.xp
        self.gemms, self.refined = 1, (0, 0)
        # per refined slice, the count of its refinement's last step, whose ratios
        # its plane of ``ratios`` holds (see per_entry)
        self.last: dict[int, int] = {}
        # the row maxima of U: the same for every count
        self.mu = reduce.row_max(opts.backend.upper_rowmax(bd.G, self.rF, self.cF,
                                                           self.nA, self.nB))

    @cached_property
    def ratios(self):
        """(b, m, n) FP64 planes for the per-entry ratios: slice ``g``'s refinement
        steps write plane ``g`` (each step overwrites the one before; the last step
        is kept for :meth:`per_entry`), and :meth:`per_entry` the whole. In the
        thread's workspace, so repeated calls fault in no new pages; only the mask
        ``ratio > 1`` leaves the decision."""
        return workspace(self.xp).take("ratios", (self.b, self.m, self.n))

    @cached_property
    def refined_planes(self):
        """(b, 2, m n) FP64 memory for the refinements: slice ``g``'s block's ``G'`` and
        ``U'`` (at most m n entries each) in ``[g, 0]`` and ``[g, 1]``, alive with the
        decision. In the thread's workspace (one buffer a decision, like :attr:`ratios`),
        so repeated calls fault in no new pages."""
        return workspace(self.xp).take("refined", (self.b, 2, self.m * self.n))

    def evaluate(self, counts, g=None, **kw) -> certify.Certificate:
        """The certificate at ``counts`` (of slice ``g`` alone when given)."""
        data = (self.bd.G, self.rF, self.cF, self.nA, self.nB, self.e, self.f)
        mu = self.mu
        if g is not None:
            data, mu = tuple(_slice(x, g) for x in data), _slice(mu, g)
        return certify.componentwise(self.opts.backend, *data, self.opts.scheme, counts,
                                     tie=self.tie, mu=mu, reduce=self.reduce, **kw)

    def walk(self, start: int):
        """``(first, cert)``: the certificate at the start count, and per slice at
        the count the walk settles on (the start itself for an explicit count)."""
        scheme = self.opts.scheme
        self.count0 = count0 = start if self.auto else self.opts.num_moduli
        counts0 = np.full(self.b, count0, np.int64)
        below = None
        if self.auto and MIN_MODULI < count0 <= max_moduli(scheme):
            # the start and the first step down (the common outcome) in one pass
            first, below = self.evaluate(np.stack([counts0, counts0 - 1]),
                                         probe=[False, True])
        else:
            first = self.evaluate(counts0)
        cert = (choose_counts(self.evaluate, scheme, first.num_moduli, first=first,
                              below=below) if self.auto else first)
        return first, cert

    def refine(self, g: int, cert, operands, refines: dict):
        """Slice ``g`` not certified at the start: refine its failing block when that
        costs less than the extra moduli (or always, for an explicit count)."""
        reduce, count0, m, n = self.reduce, self.count0, self.m, self.n
        ratio = self.ratios[g:g + 1]
        coarse = [count0, self.evaluate(np.array([count0]), g, ratio=ratio)]
        fail = ratio[0] > 1
        rows = np.flatnonzero(reduce.row_any(fail.any(axis=1)))
        cols = np.flatnonzero(reduce.col_any(fail.any(axis=0)))
        nr, nc = reduce.count_rows(len(rows)), reduce.count_cols(len(cols))
        extra = cert.num_moduli[g] - count0 if not cert.uncertified[g] else np.inf
        # the refinement of the whole product is priced in the scheme's moduli
        # (REFINEMENT_PRICE, versioned: the rule picks counts, so results)
        price = REFINEMENT_PRICE[self.opts.scheme]
        if self.auto and price * nr * nc > extra * np.prod(reduce.lines(m, n)):
            return cert
        A_g, B_g = operands(g)
        ref = certify.refinement(self.opts.backend, A_g, B_g, rows, cols,
                                 _lines(self.la, g, self.b), _lines(self.lb, g, self.b),
                                 self.k, self.rF[g], self.cF[g], self.nA[g], self.nB[g],
                                 out=tuple(self.refined_planes[g]))
        refines[g] = ref
        self.gemms += ref.gemms
        self.refined = (self.refined[0] + nr, self.refined[1] + nc)
        scheme, e, f = self.opts.scheme, self.e, self.f

        def final(counts, probe=False):
            count = int(counts[0])
            if coarse and coarse[0] == count:  # the coarse step at count0, formed above
                c = coarse[1]
            else:  # the slice's plane: the step before is read no more, overwritten whole
                c = self.evaluate(counts, g, ratio=ratio)
            coarse.clear()
            plan = crt_plan(scheme, count)
            top, fails = ref.certify(c.sigma[0], c.tau[0], e[g], f[g], plan, ratio[0])
            c.max_ratio[0], c.uncertified[0] = reduce.max(top), reduce.sum(fails)
            self.last[g] = count
            return c

        # failures only shrink as the count grows
        pick = (choose_counts(final, scheme, [count0], down=False) if self.auto
                else final(np.array([count0])))
        return cert.put(g, pick)

    def per_entry(self, cert, refines: dict):
        """Per-entry ratios (and bounds) at the chosen counts: ``(cert, mask, bound)``."""
        b, m, n = self.b, self.m, self.n
        if not self.opts.want_bound and all(self.last.get(g) == cert.num_moduli[g]
                                            for g in range(b)):
            # every slice is refined, and its last step was at the count it settled on:
            # that step's ratios are this pass's (the same shifts, the same per-entry
            # arithmetic), and ``cert`` already holds its outcome
            return cert, self.ratios > 1, None
        ratio = self.ratios
        bound = self.xp.empty((b, m, n)) if self.opts.want_bound else None
        # each slice's shifts are its count's (a certificate's depend on its count only)
        cert = self.evaluate(cert.num_moduli, ratio=ratio, bound=bound, sigma=cert.sigma,
                             tau=cert.tau)
        for g, ref in refines.items():
            plan = crt_plan(self.opts.scheme, int(cert.num_moduli[g]))
            top, fails = ref.certify(cert.sigma[g], cert.tau[g], self.e[g], self.f[g], plan,
                                     ratio[g], None if bound is None else bound[g])
            cert.max_ratio[g], cert.uncertified[g] = self.reduce.max(top), self.reduce.sum(fails)
        return cert, ratio > 1, bound


def _lines(lines: Lines, g: int, b: int) -> Lines:
    """Slice ``g`` of ``lines`` (a stack of ``b``, or of one shared by all)."""
    g = min(g, lines.maxbits.shape[0] - 1)
    return Lines(lines.maxbits[g], lines.bad[g], lines.nnz[g])


def decide_fast(opts, na: certify.Normwise, nb: certify.Normwise, b: int,
                start: int) -> Decision:
    """Shifts, counts and the normwise certificate in fast mode, for ``b`` slices.

    The count is chosen on the separable maximum (O(m + n) per slice); when
    that fails (and a fallback is wanted) or bounds are wanted, the same bound
    is evaluated per entry and only the entries above the target fail.
    """
    backend, scheme, num_moduli = opts.backend, opts.scheme, opts.num_moduli
    policy, want_bound = opts.policy, opts.want_bound
    m, n = na.E.shape[-1], nb.E.shape[-1]

    def full(norm, width):  # a shared operand's bounds, read by every slice
        if norm.E.shape[0] == b:
            return norm
        return certify.Normwise(*(np.broadcast_to(getattr(norm, f.name), (b, width))
                                  for f in fields(norm)))

    na, nb = full(na, m), full(nb, n)

    def shifts(counts):
        H, R, g2 = plan_terms(scheme, counts)
        s = scaling.fast_shifts(na.E, na.zero, na.upper2, H[:, None])
        t = scaling.fast_shifts(nb.E, nb.zero, nb.upper2, H[:, None])
        return s, t, R, g2

    def evaluate(counts, probe=False):  # O(m + n): nothing to gain from probing
        s, t, R, g2 = shifts(counts)
        ratio = certify.normwise_ratio(backend, na, nb, s, t, R, g2)
        return certify.Certificate(np.asarray(counts), s, t, ratio,
                                   np.where(ratio <= 1, 0, m * n), "normwise")

    cert = (choose_counts(evaluate, scheme, np.full(b, start)) if num_moduli == "auto"
            else evaluate(np.full(b, num_moduli, np.int64)))
    mask = bound = None
    if (cert.uncertified.any() and policy != "none") or want_bound:
        s, t, R, g2 = shifts(cert.num_moduli)
        ratio = workspace(backend.xp).take("ratios", (b, m, n))  # only the mask leaves
        bound = backend.xp.empty((b, m, n)) if want_bound else None
        fails = certify.normwise_entries(na, nb, s, t, R, g2, ratio, bound)
        cert = certify.Certificate(cert.num_moduli, s, t, ratio.max(axis=(1, 2), initial=0.0),
                                   fails, "normwise")
        mask = ratio > 1
    return Decision(cert.num_moduli, cert.sigma, cert.tau, mask, bound, cert.max_ratio,
                    cert.uncertified, "normwise")
