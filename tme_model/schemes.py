"""Ozaki Scheme II substrates: moduli counts, the compute multiplier alpha, scheme choice.

The scheme facts are ``ozaki``'s, read through its public functions (imported inside
the functions, so that ``import tme_model`` does not load ``ozaki``; :doc:`architecture`,
"Packages and imports"):

* alpha, the exact low-precision GEMMs one emulated FP64 GEMM costs, is the work of the
  calls :func:`ozaki.exact_gemms` lists, on the engine that models the scheme's own
  matrix unit (:data:`UNIT_ENGINES`):

  ============  ===========  ==============
  scheme        fast mode    accurate mode
  ============  ===========  ==============
  ``int8``      N            N + 1
  ``fp8``       3 N          3 N + 1
  ============  ===========  ==============

  (accurate mode adds one exact GEMM on quantised magnitudes to bound the product; each
  FP8 modulus needs three digit GEMMs);
* GEMMs per modulus on any engine: :func:`ozaki.gemms_per_modulus`;
* the moduli count of the ``"2x-native"`` grade: :func:`ozaki.auto_num_moduli`, the count
  ``ozaki.dgemm(num_moduli="auto")`` starts from.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .specs import Device, MissingFigureError

__all__ = [
    "CPU_PATHS",
    "CPU_RECON_FLOPS_PER_MODULUS",
    "GRADES",
    "GRADE_EXTRA_MODULI",
    "MODES",
    "REFERENCE_K",
    "SCHEMES",
    "UNIT_ENGINES",
    "CPUCrossover",
    "CPUPath",
    "SchemeChoice",
    "alpha_for",
    "candidates",
    "choose_scheme",
    "cpu_crossover",
    "cpu_path",
    "gemms_per_modulus",
    "int8_gemms_per_product",
    "moduli_for",
]

#: Substrates the model knows; each runs on the device figure of the same name.  A
#: subset of ``ozaki.SCHEMES`` (its ``fp64`` scheme has no low-precision figure; the
#: tests pin the two together).
SCHEMES: tuple[str, ...] = ("int8", "fp8")
#: Modes of the scaling step: accurate adds one exact bounding GEMM.  The names of
#: ``ozaki.MODES``, in the order the command-line tools show them.
MODES: tuple[str, ...] = ("fast", "accurate")
#: The ``ozaki`` engine that models each scheme's own matrix unit: INT8 with INT32
#: accumulation, FP8 E4M3 with FP32 accumulation (``fp64``: FP64 BLAS).  alpha counts
#: the GEMMs ``ozaki`` runs there.
UNIT_ENGINES: dict[str, str] = {"int8": "cpu-int8", "fp8": "cpu-fp8", "fp64": "cpu-blas"}
#: Moduli each accuracy grade adds to ozaki's automatic count.  "2x-native" is that
#: count (:func:`ozaki.auto_num_moduli`: error no worse than twice native DGEMM's
#: componentwise error, INT8 16, FP8 13 at k <= 4096, more for larger k as ozaki
#: measured).  "certified" is the model's stricter choice, error <= ``u (|A||B|)_ij``
#: certified at phi <= 1: 124-132 bits of P instead of 112-120 (:doc:`algorithm`, "Error bound"),
#: INT8 16-17 and FP8 14-15 moduli at k <= 4096; the upper end is taken, one INT8 and
#: two FP8 moduli above the automatic count, at every k.  The peers' defaults (GEMMul8
#: INT8 14-15 / FP8 10-11, the TME paper's FP8 12) are below FP64 grade by this measure.
GRADE_EXTRA_MODULI: dict[str, dict[str, int]] = {
    "2x-native": {"int8": 0, "fp8": 0},
    "certified": {"int8": 1, "fp8": 2},
}
#: Accuracy grades accepted by :func:`moduli_for`.
GRADES: tuple[str, ...] = tuple(GRADE_EXTRA_MODULI)
#: Inner dimension at which the substrate of a device is compared by default
#: (:func:`choose_scheme`), and at which alpha's work is counted.
REFERENCE_K = 4096


def _check_scheme(scheme: str) -> None:
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")


@lru_cache(maxsize=None)
def _exact_work(scheme: str, moduli: int, mode: str) -> int:
    """Work of ``ozaki.exact_gemms`` on the scheme's unit engine, in full-k GEMMs."""
    import ozaki

    try:
        calls = ozaki.exact_gemms(REFERENCE_K, scheme=scheme, num_moduli=moduli, mode=mode,
                                  engine=UNIT_ENGINES[scheme])
    except ValueError as exc:
        raise ValueError(f"moduli: {exc}") from None
    work, rest = divmod(sum(kc for kc, _, _ in calls), REFERENCE_K)
    if rest:  # pragma: no cover - k-blocks always add up to k
        raise AssertionError(f"ozaki's exact GEMMs for {scheme} do not add up to k")
    return work


def alpha_for(scheme: str, moduli: int, mode: str) -> int:
    """Return the compute multiplier alpha of an ozaki configuration.

    Parameters
    ----------
    scheme : {"int8", "fp8"}
        Low-precision substrate.
    moduli : int
        Number of moduli N, a count ``ozaki`` runs (2 to 20).
    mode : {"fast", "accurate"}
        Scaling mode; accurate adds one exact bounding GEMM.

    Returns
    -------
    int
        Exact low-precision GEMMs per emulated FP64 GEMM, as :func:`ozaki.exact_gemms`
        lists them on the scheme's unit engine (:data:`UNIT_ENGINES`), k-blocks counted
        by their share of k: N or N + 1 (int8), 3N or 3N + 1 (fp8).
    """
    _check_scheme(scheme)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if isinstance(moduli, bool) or int(moduli) != moduli or moduli < 1:
        raise ValueError(f"moduli must be a positive integer, got {moduli!r}")
    return _exact_work(scheme, int(moduli), mode)


@lru_cache(maxsize=None)
def gemms_per_modulus(scheme: str, engine: str | None = None) -> int:
    """Return the exact GEMMs one modulus of a scheme costs on an ``ozaki`` engine.

    Parameters
    ----------
    scheme : str
        An ``ozaki`` scheme (``int8``, ``fp8``, ``fp64``).
    engine : str, optional
        An ``ozaki`` engine that runs the scheme; default the scheme's unit engine
        (:data:`UNIT_ENGINES`).

    Returns
    -------
    int
        :func:`ozaki.gemms_per_modulus`, the same for every modulus of the scheme: 3
        where residues are split into FP8 digits, else 1.
    """
    import ozaki

    if scheme not in ozaki.SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(ozaki.SCHEMES)}, got {scheme!r}")
    engine = UNIT_ENGINES[scheme] if engine is None else engine
    engines = ozaki.available_engines()
    if engine not in engines:
        raise ValueError(f"engine must be one of {', '.join(engines)}, got {engine!r}")
    return ozaki.gemms_per_modulus(scheme, engine)


def moduli_for(scheme: str, grade: str = "2x-native", k: int = REFERENCE_K) -> int:
    """Return the number of moduli that gives FP64 grade.

    Parameters
    ----------
    scheme : {"int8", "fp8"}
        Low-precision substrate.
    grade : {"2x-native", "certified"}
        Accuracy grade (see :data:`GRADE_EXTRA_MODULI`).
    k : int, optional
        Inner dimension of the product (at least 1).

    Returns
    -------
    int
        :func:`ozaki.auto_num_moduli` at ``k`` plus the grade's extra moduli.
    """
    import ozaki

    _check_scheme(scheme)
    if grade not in GRADE_EXTRA_MODULI:
        raise ValueError(f"grade must be one of {', '.join(GRADES)}, got {grade!r}")
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return ozaki.auto_num_moduli(scheme, int(k)) + GRADE_EXTRA_MODULI[grade][scheme]


@dataclass(frozen=True)
class SchemeChoice:
    """A substrate chosen for a device.

    Attributes
    ----------
    scheme : str
        ``"int8"`` or ``"fp8"``.
    moduli : int
        Number of moduli N.
    mode : str
        ``"fast"`` or ``"accurate"``.
    alpha : int
        Compute multiplier.
    plow : float
        The substrate's peak, TFLOP/s (TOP/s for INT8).
    ceiling : float
        Emulated FP64 ceiling Plow / alpha, TFLOP/s.
    """

    scheme: str
    moduli: int
    mode: str
    alpha: int
    plow: float
    ceiling: float


def candidates(device: Device, k: int = REFERENCE_K, grade: str = "2x-native",
               mode: str = "accurate") -> list[SchemeChoice]:
    """Return every substrate the device has, at the grade's moduli count.

    Parameters
    ----------
    device : Device
        The hardware.
    k : int, optional
        Inner dimension (see :func:`moduli_for`).
    grade : str, optional
        Accuracy grade.
    mode : str, optional
        Scaling mode.

    Returns
    -------
    list of SchemeChoice
        One per scheme whose peak is known, in :data:`SCHEMES` order.
    """
    out = []
    for scheme in SCHEMES:
        plow = device.get(scheme)
        if plow is None:
            continue
        n = moduli_for(scheme, grade, k)
        a = alpha_for(scheme, n, mode)
        out.append(SchemeChoice(scheme, n, mode, a, plow, plow / a))
    return out


def choose_scheme(device: Device, k: int = REFERENCE_K, grade: str = "2x-native",
                  mode: str = "accurate") -> SchemeChoice:
    """Pick the substrate with the highest emulated FP64 ceiling Plow / alpha.

    Parameters
    ----------
    device : Device
        The hardware.
    k : int, optional
        Inner dimension (see :func:`moduli_for`).
    grade : str, optional
        Accuracy grade.
    mode : str, optional
        Scaling mode.

    Returns
    -------
    SchemeChoice
        The best substrate; on a tie the one with the smaller alpha (less overhead).

    Raises
    ------
    MissingFigureError
        If the device has neither an INT8 nor an FP8 figure.
    """
    found = candidates(device, k, grade, mode)
    if not found:
        raise MissingFigureError(
            f"device {device.key!r} has no known INT8 or FP8 peak, so emulation cannot be "
            "modelled; give one with --specs FILE"
            + (" (or use paper:r200)" if device.key == "rubin" else "")
        )
    return max(found, key=lambda c: (c.ceiling, -c.alpha))


# ------------------------------------------------------------------- CPUs

#: The paths of an FP64 GEMM on a CPU, ``label: (scheme, engine)``: numpy's DGEMM, the
#: fp64 scheme on FP64 BLAS and the int8 scheme on oneDNN's integer GEMM.
CPU_PATHS: dict[str, tuple[str | None, str | None]] = {
    "native": (None, None), "fp64/cpu-blas": ("fp64", "cpu-blas"),
    "int8/cpu-onednn": ("int8", "cpu-onednn")}


#: FP64 operations per output and modulus of the reconstruction: the estimate of
#: :data:`tme_model.scenario.RECON_FLOPS_PER_MODULUS` (that module imports this one, so
#: the value is restated here; tests/test_tme_cpu.py pins the two equal).
CPU_RECON_FLOPS_PER_MODULUS = 8.0


def int8_gemms_per_product(device: Device) -> int:
    """INT8 GEMMs of its size one exact product costs on ``cpu-onednn`` on a CPU.

    1 where the CPU's INT8 path has VNNI or AMX (``ozaki``'s ``offset`` encoding), 2
    where it has not: pairs of u8 x s8 products are summed into a saturating int16
    there, and the engine's exact ``split`` encoding multiplies twice the rows (the
    engine's ``gemms_per_call``; tests/test_tme_cpu.py pins the two together).
    """
    if device.isa is None:
        raise ValueError(f"device {device.key!r} is not a CPU (no isa)")
    return 1 if device.vnni else 2


@dataclass(frozen=True)
class CPUPath:
    """The cost of an FP64 GEMM ``(n x k) (k x n)`` on one CPU path, in the TME form
    ``T = max(W c, Q / Bmem) + gamma n**2`` with ``W = 2 n**2 k`` and ``Q = 24 n**2``
    bytes (:func:`tme_model.workloads.dense_gemm`).

    Attributes
    ----------
    label : str
        A key of :data:`CPU_PATHS`.
    moduli : int or None
        N (``None``: native).
    mode : str or None
        Scaling mode.
    gemms : float
        alpha: the exact GEMMs of the call (``ozaki.exact_gemms``, k-blocks counted by
        their share of k), times :func:`int8_gemms_per_product` on ``cpu-onednn``.
    c : float
        Seconds per FP64 flop of W when compute-bound: each GEMM's share at its
        unit's peak (FP64, FP32 for blocks on ``cpu-blas``'s FP32 path, INT8).
    gamma : float
        Seconds per output element (reconstruction), as :class:`~tme_model.scenario.Scenario`
        estimates it (0 for native).
    mem_tbps : float
        Bmem, TB/s.
    """

    label: str
    moduli: int | None
    mode: str | None
    gemms: float
    c: float
    gamma: float
    mem_tbps: float

    def seconds(self, n: float) -> float:
        """Predicted seconds of a square FP64 GEMM of order ``n``."""
        return max(2.0 * n ** 3 * self.c, 24.0 * n * n / (self.mem_tbps * 1e12)) + self.gamma * n * n


def cpu_path(device: Device, label: str, mode: str = "accurate", k: int = REFERENCE_K,
             gamma: float | None = None) -> CPUPath:
    """The cost parameters of one CPU path (see :class:`CPUPath`).

    Parameters
    ----------
    device : Device
        A CPU (``kind == "cpu"``) with FP64 vector, FP32, INT8 and bandwidth figures.
    label : str
        A key of :data:`CPU_PATHS`.
    mode : {"fast", "accurate"}
        Scaling mode.
    k : int, optional
        Inner dimension: sets N (``ozaki.auto_num_moduli``, the count of
        ``num_moduli="auto"``) and the k-blocks.
    gamma : float, optional
        Seconds per output; default the model's estimate, ``RECON_FLOPS_PER_MODULUS``
        x N FP64 flops on the vector units (:data:`CPU_RECON_FLOPS_PER_MODULUS`).

    Returns
    -------
    CPUPath
    """
    import ozaki

    if label not in CPU_PATHS:
        raise ValueError(f"path must be one of {', '.join(CPU_PATHS)}, got {label!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if device.kind != "cpu":
        raise ValueError(f"device {device.key!r} is a {device.kind}, not a CPU")
    p64, bw = device.require("fp64_vector") * 1e12, device.bandwidth()
    scheme, engine = CPU_PATHS[label]
    if scheme is None:
        return CPUPath(label, None, None, 1.0, 1.0 / p64, 0.0, bw)
    n_mod = ozaki.auto_num_moduli(scheme, int(k))
    if engine == "cpu-onednn":
        # the int8 scheme's GEMMs (one per modulus, plus the bound GEMM) are the same
        # list on every INT8 engine; read them on cpu-int8 (numpy, always there), so
        # that no CPU model needs oneDNN installed here.  All run at the INT8 rate.
        per, rates = int8_gemms_per_product(device), {False: device.require("int8") * 1e12}
        blocks = [(kc, False) for kc, _, _ in ozaki.exact_gemms(
            int(k), scheme=scheme, num_moduli=n_mod, mode=mode, engine=UNIT_ENGINES[scheme])]
    else:  # each exact block on its path (as tme_model.profile.gemm_paths reads them)
        per, rates = 1, {False: p64, True: device.require("fp32") * 1e12}
        eng = ozaki.get_engine(engine)
        blocks = [(length, eng.fp32(bound))
                  for kc, amax, bmax in ozaki.exact_gemms(int(k), scheme=scheme, num_moduli=n_mod,
                                                          mode=mode, engine=eng)
                  for length, bound in eng.blocks(kc, amax, bmax)]
    gemms = per * sum(length for length, _ in blocks) / k
    c = per * sum(length / rates[fp32] for length, fp32 in blocks) / k
    g = CPU_RECON_FLOPS_PER_MODULUS * n_mod / p64 if gamma is None else float(gamma)
    return CPUPath(label, n_mod, mode, gemms, c, g, bw)


@dataclass(frozen=True)
class CPUCrossover:
    """Where one CPU path starts (or stops) being faster than another, in the order n
    of a square GEMM.

    Attributes
    ----------
    faster, than : str
        Keys of :data:`CPU_PATHS`.
    kind : str
        ``"above"`` (faster for n > ``n``), ``"below"`` (faster for n < ``n``),
        ``"always"`` or ``"never"``.
    n : float or None
        The crossover order (``None`` for always/never).
    """

    faster: str
    than: str
    kind: str
    n: float | None

    def describe(self) -> str:
        """One line: ``int8/cpu-onednn beats fp64/cpu-blas for n > 9.3``."""
        head = f"{self.faster} beats {self.than}"
        if self.kind in ("always", "never"):
            return f"{self.faster} never beats {self.than}" if self.kind == "never" else f"{head} at every n"
        return f"{head} for n {'>' if self.kind == 'above' else '<'} {self.n:.4g}"


def cpu_crossover(x: CPUPath, y: CPUPath) -> CPUCrossover:
    """Where path ``x`` is faster than path ``y``, exactly.

    ``g(n) = (T_x - T_y) / n**2 = max(2 c_x n, M) - max(2 c_y n, M) + gamma_x - gamma_y``
    with ``M = 24 / Bmem`` is piecewise linear in n, with breakpoints ``b = M / (2c)``
    where a path leaves the memory roof.  It is monotone: if ``c_x <= c_y`` then
    ``b_y <= b_x`` and g is constant below ``b_y``, falls with slope ``-2 c_y`` up to
    ``b_x`` and with slope ``2 (c_x - c_y) <= 0`` beyond; if ``c_x > c_y`` the mirror
    argument makes it non-decreasing.  So g changes sign at most once, on one linear
    piece, where linear interpolation between its ends (or the final slope past the
    last breakpoint) gives the root exactly.

    Parameters
    ----------
    x, y : CPUPath
        Paths on the same CPU (same bandwidth).

    Returns
    -------
    CPUCrossover
    """
    if x.mem_tbps != y.mem_tbps:
        raise ValueError("paths of different devices (their bandwidths differ)")
    m = 24.0 / (x.mem_tbps * 1e12)

    bx, by = m / (2 * x.c), m / (2 * y.c)

    def g(n: float) -> float:
        # each path on its memory roof up to its breakpoint, where ``2 c b = M`` holds
        # exactly (not up to the rounding of ``2 c (M / 2c)``, which could invent a sign)
        tx = m if n <= bx else 2 * x.c * n
        ty = m if n <= by else 2 * y.c * n
        return tx - ty + x.gamma - y.gamma

    pts = [0.0] + sorted({bx, by})
    vals = [g(p) for p in pts]
    slope = 2 * (x.c - y.c)
    falling = x.c <= y.c
    wins = (lambda v: v < 0)
    if all(wins(v) for v in vals) and slope <= 0:
        return CPUCrossover(x.label, y.label, "always", None)
    if not any(wins(v) for v in vals) and slope >= 0:
        return CPUCrossover(x.label, y.label, "never", None)
    for (p0, v0), (p1, v1) in zip(zip(pts, vals), zip(pts[1:], vals[1:])):
        if wins(v0) != wins(v1):  # the sign changes on this piece: it is linear there
            root = p0 + v0 * (p1 - p0) / (v0 - v1)
            return CPUCrossover(x.label, y.label, "above" if falling else "below", root)
    root = pts[-1] - vals[-1] / slope  # on the last piece, slope != 0 here
    return CPUCrossover(x.label, y.label, "above" if falling else "below", root)
