"""The TME model on CPUs: which path an FP64-grade GEMM should take.

Four paths (:data:`CPU_PATHS`): numpy's DGEMM, the ``fp64`` scheme on ``cpu-blas``
(its modular products as FP64 GEMMs), and the ``int8`` and ``int7`` schemes on
``cpu-onednn`` (INT8 GEMMs with INT32 accumulation through oneDNN; ``int7``'s moduli up
to 128 cost one INT8 GEMM each on every instruction set, :func:`int8_gemms_per_product`).
:func:`cpu_path` prices each in the TME form, :func:`cpu_crossover` finds where one
overtakes another (exactly), and :func:`cpu_figure` draws their rates over the order n
(:doc:`tme_model`, "CPUs").  The CPU entries are :func:`tme_model.specs.load_cpus`'s;
the tables and ``--cpu`` of the command-line tools are :mod:`tme_model.tables` and
:mod:`tme_model.cli_cpu`.  ozaki and matplotlib are imported inside the functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .scenario import RECON_FLOPS_PER_MODULUS
from .schemes import MODES, REFERENCE_K, UNIT_ENGINES
from .specs import Device

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "CPU_PATHS",
    "CROSSOVERS",
    "NARROW_S8",
    "CPUCrossover",
    "CPUPath",
    "cpu_crossover",
    "cpu_figure",
    "cpu_path",
    "int8_gemms_per_product",
]

#: The paths of an FP64 GEMM on a CPU, ``label: (scheme, engine)``: numpy's DGEMM, the
#: fp64 scheme on FP64 BLAS, and the int8 and int7 schemes on oneDNN's integer GEMM.
CPU_PATHS: dict[str, tuple[str | None, str | None]] = {
    "native": (None, None), "fp64/cpu-blas": ("fp64", "cpu-blas"),
    "int8/cpu-onednn": ("int8", "cpu-onednn"), "int7/cpu-onednn": ("int7", "cpu-onednn")}

#: The crossovers the tables and figures show, ``(faster, than)`` pairs of
#: :data:`CPU_PATHS`: each scheme on oneDNN against the fp64 scheme and native DGEMM,
#: and the fp64 scheme against native (first three: int8's and fp64's, then int7's).
CROSSOVERS: tuple[tuple[str, str], ...] = (
    ("int8/cpu-onednn", "fp64/cpu-blas"), ("int8/cpu-onednn", "native"),
    ("fp64/cpu-blas", "native"),
    ("int7/cpu-onednn", "fp64/cpu-blas"), ("int7/cpu-onednn", "native"))

#: The largest bound ``bmax`` of the s8 operand for which ``cpu-onednn`` takes its
#: one-GEMM ``offset`` encoding without VNNI (the engine's ``NARROW_S8``, which
#: tests/test_tme_cpu.py pins this to): a pair of u8 x s8 products is then at most
#: ``2 * 255 * 64 = 32640 <= 2**15 - 1`` and cannot saturate the int16 pair sum.
NARROW_S8 = 64


def int8_gemms_per_product(device: Device, bmax: int = 128) -> int:
    """INT8 GEMMs of its size one exact product costs on ``cpu-onednn`` on a CPU.

    Parameters
    ----------
    device : Device
        A CPU (its ``isa`` set).
    bmax : int, optional
        Bound on the product's s8 operand (the third entry of ``ozaki.exact_gemms``);
        default 128, the whole int8 range (the ``int8`` scheme's products).

    Returns
    -------
    int
        1 where the CPU's INT8 path has VNNI or AMX (``ozaki``'s ``offset``
        encoding, for every ``bmax``), and without them for ``bmax <= 64``
        (:data:`NARROW_S8`: the ``int7`` scheme's residues, FP8 digits, the accurate
        mode's bound GEMM, whose floors are below ``2**6``: ``offset`` on a narrow s8
        operand cannot saturate). Else 2: pairs of u8 x s8 products are summed into
        a saturating int16 there, and the engine's exact ``split`` encoding
        multiplies twice the rows. This is the engine's ``gemms_for(bmax)``
        (tests/test_tme_cpu.py pins the two together); it assumes the engine's
        probes of the narrow ``offset`` encoding pass, as they do on oneDNN 3.2.
    """
    if device.isa is None:
        raise ValueError(f"device {device.key!r} is not a CPU (no isa)")
    return 1 if device.vnni or bmax <= NARROW_S8 else 2


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
        their share of k), each times its :func:`int8_gemms_per_product` (of its
        ``bmax``) on ``cpu-onednn``.
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
        Seconds per output; default the model's estimate,
        :data:`~tme_model.scenario.RECON_FLOPS_PER_MODULUS` x N FP64 flops on the
        vector units.

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
        # the scheme's GEMMs (one per modulus, plus the bound GEMM) are the same list on
        # every INT8 engine; read them on cpu-int8 (numpy, always there), so that no CPU
        # model needs oneDNN installed here.  All run at the INT8 rate; each costs the
        # INT8 GEMMs of its encoding, decided per call from its bmax as the engine does.
        rates = {False: device.require("int8") * 1e12}
        blocks = [(kc, False, int8_gemms_per_product(device, bmax))
                  for kc, _, bmax in ozaki.exact_gemms(int(k), scheme=scheme, num_moduli=n_mod,
                                                       mode=mode, engine=UNIT_ENGINES[scheme])]
    else:  # each exact block on its path (as tme_model.profile.gemm_paths reads them)
        rates = {False: p64, True: device.require("fp32") * 1e12}
        eng = ozaki.get_engine(engine)
        blocks = [(length, eng.fp32(bound), 1)
                  for kc, amax, bmax in ozaki.exact_gemms(int(k), scheme=scheme, num_moduli=n_mod,
                                                          mode=mode, engine=eng)
                  for length, bound in eng.blocks(kc, amax, bmax)]
    gemms = sum(per * length for length, _, per in blocks) / k
    c = sum(per * length / rates[fp32] for length, fp32, per in blocks) / k
    g = RECON_FLOPS_PER_MODULUS * n_mod / p64 if gamma is None else float(gamma)
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


def cpu_figure(cpus: Sequence[Device], mode: str = "accurate", gamma: float | None = None
               ) -> "Figure":
    """One panel per CPU: predicted FP64 rate 2n**3 / T of a square GEMM of order n on
    each path of :data:`CPU_PATHS` (log-log), its compute ceiling (the rate at which it
    is compute-bound, 1 / c), and its crossovers as vertical lines.

    Parameters
    ----------
    cpus : sequence of Device
        CPUs (``kind == "cpu"``).
    mode : {"fast", "accurate"}
        Scaling mode.
    gamma : float, optional
        Seconds per output (default: the model's estimate).

    Returns
    -------
    matplotlib.figure.Figure
        The figure, with exactly one axes per CPU.
    """
    from .plot import load_pyplot

    if not cpus:
        raise ValueError("cpu_figure needs at least one CPU")
    plt = load_pyplot()
    fig, axes = plt.subplots(1, len(cpus), figsize=(6.5 * len(cpus), 5.2), squeeze=False)
    n = np.geomspace(16, 32768, 300)
    colours = {"native": "tab:blue", "fp64/cpu-blas": "tab:green", "int8/cpu-onednn": "tab:red",
               "int7/cpu-onednn": "tab:orange"}
    for ax, dev in zip(axes[0], cpus):
        paths = {label: cpu_path(dev, label, mode, gamma=gamma) for label in CPU_PATHS}
        for label, path in paths.items():
            rate = [2 * x ** 3 / path.seconds(x) / 1e9 for x in n]
            what = "numpy DGEMM" if path.moduli is None else (
                f"{label}, N={path.moduli}, {path.gemms:g} GEMMs")
            ax.loglog(n, rate, color=colours[label], lw=2, label=what)
            ax.axhline(1 / path.c / 1e9, color=colours[label], lw=0.8, ls=":")
        for x, y in (pair for pair in CROSSOVERS if pair[0].endswith("cpu-onednn")):
            c = cpu_crossover(paths[x], paths[y])
            if c.n is not None:
                ax.axvline(c.n, color=colours[x], lw=0.8, ls="-.")
                ax.annotate(f"{x.split('/')[0]} vs {y.split('/')[0]}: n={c.n:.3g}", (c.n, 0.04),
                            xycoords=ax.get_xaxis_transform(), rotation=90, fontsize=7,
                            color=colours[x], ha="right", va="bottom")
        per = int8_gemms_per_product(dev)
        ax.set_title(f"{dev.name} [{dev.key}]\nisa {dev.isa}: INT8 GEMMs per exact product "
                     f"int8 {per}, int7 1; {mode} mode", fontsize=9)
        ax.set_xlabel("order n of the square GEMM")
        ax.set_ylabel("FP64 rate 2n^3 / T [GFLOP/s]")
        ax.grid(True, which="major", lw=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("TME model on CPUs: dotted lines are each path's compute ceiling; dash-dotted "
                 "lines the crossovers of int8 and int7 (in their colours)", fontsize=9)
    fig.tight_layout()
    return fig
