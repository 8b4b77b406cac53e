"""FFT workloads from an :class:`fft.Plan`: its stage GEMMs, its passes over memory, and
their predicted time on this machine from a calibration profile (the GPU projection of
the same workloads: :mod:`tme_model.fft_projection`).

A plan of length ``n = r_1 ... r_s`` runs one real GEMM per stage on split complex data
(:mod:`fft.plan`): the embedded DFT matrix ``E`` times the batch in the wide dimension,

=============  =========  =========  ======================
form           m          k          n (columns)
=============  =========  =========  ======================
``complex``    2 r        2 r        (length / r) x width
``real-in``    2 r        r          (length / r) x width
``real-out``   r          2 r        (length / r) x width
=============  =========  =========  ======================

followed, on every stage but the last, by the twiddle multiply and the transpose (one
elementwise pass).  The transforms of :mod:`fft` add layout passes around the plans
(splitting, moving the axis to the front, interleaving the result).  Bytes per complex
point of each pass are counted from the numpy operations that run it
(:data:`TWIDDLE_BYTES`, :data:`LAYOUT_BYTES`).

``fft`` is imported inside the functions that need it (``tme_model`` stays usable
without it); functions that take a plan use only its ``n``, ``radices``, ``stages`` and
``options``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .profile import Profile

__all__ = ["FFTTime", "FFTWorkload", "LAYOUT_BYTES", "StageGemm", "TWIDDLE_BYTES",
           "fft_workload", "plan_stages", "plan_workload", "predict_fft"]

#: Bytes per complex point of one twiddle-and-transpose pass as the plan runs it: per
#: part, two products into temporaries (read 8, write 8 each), their sum (read 16, write
#: 8) and the transposed store (read 8, write 8): 72 bytes, 144 for both parts.
TWIDDLE_BYTES = 144.0
#: Bytes per complex point of one layout pass of :mod:`fft`'s transforms (split, axis
#: copy, or the interleaved result): read 16, write 16.
LAYOUT_BYTES = 32.0


@dataclass(frozen=True)
class StageGemm:
    """One stage of a plan: ``E`` (m x k) times the batch (k x n), then its twiddles.

    Attributes
    ----------
    radix : int
    form : str
        ``"complex"``, ``"real-in"`` or ``"real-out"``.
    m, k, n : int
        GEMM shape.
    num_moduli : int or None
        The plan's fixed count for the stage (0 on a native plan; ``None``: not read).
    twiddled : bool
        A twiddle multiply and transpose follow (every stage but a plan's last).
    """

    radix: int
    form: str
    m: int
    k: int
    n: int
    num_moduli: int | None
    twiddled: bool

    @property
    def flops(self) -> float:
        """FP64-equivalent flops of the product, 2 m n k."""
        return 2.0 * self.m * self.n * self.k

    @property
    def points(self) -> int:
        """Complex points the stage transforms (radix x columns)."""
        return self.radix * self.n


@dataclass(frozen=True)
class FFTWorkload:
    """An FFT call as the model sees it.

    Attributes
    ----------
    lengths : tuple of int
        Transform lengths, one per transformed axis.
    batch : int
        Points of the input divided by the transform size (the untransformed axes).
    stages : tuple of StageGemm
        Every stage product, in the order they run (a Bluestein stage: its inner plans).
    twiddle_points : float
        Complex points through twiddle passes (and Bluestein's chirp products).
    layout_points : float
        Complex points through the transforms' layout passes (0 for a bare plan).
    native : bool
        Stages on native FP64 GEMMs (``Plan(native=True)``).
    scheme, engine, mode : str
        The emulated GEMMs' configuration, resolved (``fp64``, ``cpu-blas``, ``fast``
        for the default plan); empty on native plans.
    """

    lengths: tuple[int, ...]
    batch: int
    stages: tuple[StageGemm, ...]
    twiddle_points: float
    layout_points: float
    native: bool
    scheme: str = ""
    engine: str = ""
    mode: str = ""

    @property
    def points(self) -> int:
        """Complex points of the whole call."""
        return math.prod(self.lengths) * self.batch

    @property
    def flops(self) -> float:
        """The native FFT's count, 5 N log2 N per transform of N points, times the batch."""
        size = math.prod(self.lengths)
        return 5.0 * size * math.log2(size) * self.batch if size > 1 else 0.0

    @property
    def gemm_flops(self) -> float:
        """FP64-equivalent flops of the stage products (dense DFT matrices)."""
        return sum(s.flops for s in self.stages)

    @property
    def gemms(self) -> int:
        """Low-precision GEMMs of an emulated call (one per modulus and stage on ``cpu-blas``)."""
        return sum(s.num_moduli or 0 for s in self.stages)

    @property
    def bytes(self) -> float:
        """Bytes of the elementwise passes (twiddles and layout), outside the GEMMs."""
        return TWIDDLE_BYTES * self.twiddle_points + LAYOUT_BYTES * self.layout_points


def _count(stage, form: str) -> int:
    matrices = getattr(stage, "matrix", None)
    return matrices(form).count if matrices is not None else stage.counts()


def plan_stages(plan, width: int, real_in: bool = False, real_out: bool = False,
                counts: bool = True) -> tuple[list[StageGemm], float]:
    """The stage GEMMs of ``plan.execute`` on ``width`` columns, and its twiddle points.

    Parameters
    ----------
    plan : fft.Plan
    width : int
        Columns of the split batch (``W`` of ``(2, n, W)``).
    real_in, real_out : bool
        As :meth:`fft.Plan.execute` takes them.
    counts : bool
        Read each stage's fixed moduli count (prepares its matrix if not yet done);
        ``False``: ``num_moduli = None``.

    Returns
    -------
    tuple of (list of StageGemm, float)
        The stages in the order they run, and the complex points through twiddle passes.
    """
    from fft.plan import DENSE_LIMIT

    if width < 1:
        raise ValueError(f"width must be >= 1, got {width}")
    n, radices = plan.n, list(plan.radices)
    native = bool(plan.options.native)
    out: list[StageGemm] = []
    twiddles = 0.0
    if n == 1:
        return out, twiddles
    cols = width
    for i, (r, stage) in enumerate(zip(radices, plan.stages)):
        M = n // math.prod(radices[:i]) // r
        form = ("real-in" if (i == 0 and real_in) else
                "real-out" if (i == len(radices) - 1 and real_out) else "complex")
        c = M * cols
        if r > DENSE_LIMIT:  # Bluestein: two transforms of length L, three chirp products
            for _ in range(2):
                inner, tw = plan_stages(stage.sub, c, counts=counts)
                out += inner
                twiddles += tw
            twiddles += 3.0 * stage.L * c
        else:
            m, k = {"complex": (2 * r, 2 * r), "real-in": (2 * r, r), "real-out": (r, 2 * r)}[form]
            count = 0 if native else (_count(stage, form) if counts else None)
            out.append(StageGemm(r, form, m, k, c, count, M > 1))
        if M > 1:
            twiddles += float(r * c)
        cols *= r
    return out, twiddles


def _resolved(plan) -> tuple[str, str, str]:
    if plan.options.native:
        return "", "", ""
    import ozaki

    o = plan.options
    eng = ozaki.get_engine(o.engine, o.scheme)
    return (eng.preferred_scheme if o.scheme == "auto" else o.scheme), eng.name, o.mode


def plan_workload(plan, width: int, real_in: bool = False, real_out: bool = False,
                  counts: bool = True) -> FFTWorkload:
    """The workload of one ``plan.execute`` on ``width`` columns (no layout passes).

    Parameters
    ----------
    plan : fft.Plan
    width : int
        Columns of the split batch.
    real_in, real_out, counts
        As in :func:`plan_stages`.

    Returns
    -------
    FFTWorkload
    """
    stages, tw = plan_stages(plan, width, real_in, real_out, counts)
    return FFTWorkload((plan.n,), int(width), tuple(stages), tw, 0.0,
                       bool(plan.options.native), *_resolved(plan))


def fft_workload(shape: Sequence[int], axes: Sequence[int] | None = None, *, plans=None,
                 counts: bool = True, **options) -> FFTWorkload:
    """The workload of :func:`fft.fftn` (``fft.fft``, ``fft.fft2``) on a complex array.

    Axes run last to first, as the transforms run them; each is a plan's ``execute`` on
    the other axes as its width. Layout passes, as :func:`fft.transforms.transform_along`
    runs them: the split; for the array's last axis two tiled transposes (to the front
    and back, leaving the data C-ordered), for another axis one copy to the front (none
    for axis 0 of C-ordered data), the result coming back as a view; the interleaved
    result.

    Parameters
    ----------
    shape : sequence of int
        Shape of the complex input.
    axes : sequence of int, optional
        Transformed axes (default all).
    plans : fft.Plan or sequence of them, optional
        One per axis (as ``plan=`` takes them); default :func:`fft.get_plan` of each
        length with ``options``.
    counts : bool
        Read the stages' moduli counts (see :func:`plan_stages`).
    **options
        Plan options (``native=True``, ``scheme``, ...), when ``plans`` is not given.

    Returns
    -------
    FFTWorkload
    """
    shape = tuple(int(d) for d in shape)
    if not shape or min(shape) < 1:
        raise ValueError(f"shape must be positive lengths, got {shape}")
    nd = len(shape)
    axes = list(range(nd)) if axes is None else [int(a) % nd for a in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"axes must be unique, got {axes}")
    total = math.prod(shape)
    stages: list[StageGemm] = []
    twiddles, layout = 0.0, 2.0 * total  # split and result
    used, ordered = [], True  # whether the data is C-ordered in the array's axis order
    for j, ax in reversed(list(enumerate(axes))):
        if plans is None:
            from fft import get_plan

            plan = get_plan(shape[ax], **options)
        else:
            plan = plans[j] if isinstance(plans, Sequence) else plans
            if plan.n != shape[ax]:
                raise ValueError(f"plan is for length {plan.n}, axis {ax} has length {shape[ax]}")
        used.append(plan)
        st, tw = plan_stages(plan, total // shape[ax], counts=counts)
        stages += st
        twiddles += tw
        if ax == nd - 1 and nd > 1:  # tiled transposes to the front and back
            layout += 2 * total
        elif not (ax == 0 and ordered):  # a copy to the front; back as a view
            layout += total
            ordered = ax == 0
    kinds = {bool(p.options.native) for p in used}
    if len(kinds) > 1:
        raise ValueError("plans mix native and emulated stages")
    lengths = tuple(shape[a] for a in axes)
    return FFTWorkload(lengths, total // math.prod(lengths), tuple(stages), twiddles, layout,
                       kinds.pop(), *_resolved(used[0]))


@dataclass(frozen=True)
class FFTTime:
    """Predicted time of an FFT call on a calibrated machine, seconds.

    Attributes
    ----------
    gemm_s : tuple of float
        Each stage's product (:meth:`Profile.predict_gemm` total, or the native GEMM).
    twiddle_s : float
        Twiddle passes (bytes over the profile's STREAM bandwidth).
    layout_s : float
        Layout passes of the transforms.
    """

    gemm_s: tuple[float, ...]
    twiddle_s: float
    layout_s: float

    @property
    def total_s(self) -> float:
        """Sum of the stage products and the passes."""
        return sum(self.gemm_s) + self.twiddle_s + self.layout_s


def predict_fft(workload: FFTWorkload, profile: Profile) -> FFTTime:
    """Predict the CPU time of an FFT workload from a calibration profile.

    Parameters
    ----------
    workload : FFTWorkload
        With its moduli counts read (``counts=True``) unless native.
    profile : Profile
        Must have a rate for the workload's scheme and engine.

    Returns
    -------
    FFTTime
        Each stage product by :meth:`Profile.predict_gemm` (at the plan's fixed count,
        in the plan's mode) or :meth:`Profile.native_gemm_s`; the passes by their bytes
        over the profile's bandwidth.
    """
    gemm = []
    for s in workload.stages:
        if workload.native:
            gemm.append(profile.native_gemm_s(s.m, s.n, s.k))
            continue
        if s.num_moduli is None:
            raise ValueError("the workload has no moduli counts: make it with counts=True")
        gemm.append(profile.predict_gemm(workload.scheme, s.num_moduli, workload.mode, s.m, s.n,
                                         s.k, engine=workload.engine).total_s)
    bw = profile.mem_tbps * 1e12
    return FFTTime(tuple(gemm), TWIDDLE_BYTES * workload.twiddle_points / bw,
                   LAYOUT_BYTES * workload.layout_points / bw)
