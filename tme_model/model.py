"""The Tensor-Memory Equilibrium model (:doc:`tme_model`, "The model"), numerically.

For a kernel with W FP64 flops, Q bytes and n_out outputs on hardware with FP64 peak
P64, low-precision peak Plow and bandwidth Bmem::

    T_native = max(W / P64, Q / Bmem)
    T_emul   = max(alpha W / Plow, beta Q / Bmem) + gamma n_out

Throughputs are W / T (useful FP64 flops per second).  The closed forms these functions
implement are derived in :mod:`tme_model.symbolic`, and the tests check one against the
other.  Units: inputs in TFLOP/s and TB/s as in the database, times in seconds.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from .schemes import SCHEMES
from .specs import Device
from .workloads import Kernel

__all__ = [
    "REGIMES",
    "Crossover",
    "Emulation",
    "Prediction",
    "crossover",
    "native_tflops",
    "predict",
    "roof_emulated",
    "roof_native",
]

#: The four regimes, keyed "native/emulated" by what bounds each side.
REGIMES: dict[str, str] = {
    "memory/memory": "both memory-bound: speedup 1/beta",
    "compute/memory": "native compute-bound, emulation memory-bound: speedup I Bmem / (beta P64)",
    "compute/compute": "both compute-bound: speedup Plow / (alpha P64)",
    "memory/compute": "native memory-bound, emulation compute-bound: speedup Plow / (alpha I Bmem)",
}
_TERA = 1e12
_REL_TIE = 1e-12


@dataclass(frozen=True)
class Emulation:
    """Parameters of one emulated FP64 configuration.

    Attributes
    ----------
    scheme : str
        Low-precision substrate, ``"int8"`` or ``"fp8"``: its device figure is Plow.
    alpha : float
        Compute multiplier, >= 1: low-precision GEMMs per emulated FP64 GEMM.
    beta : float
        Memory-traffic multiplier, >= 1 (1 when residues stay in registers).
    gamma : float
        Reconstruction time per output element, seconds, >= 0.
    moduli : int or None
        Number of moduli N, when known.
    mode : str or None
        ``"fast"`` or ``"accurate"``, when known.
    residue_s : float
        Residue generation time per input element (all moduli), seconds, >= 0: the
        extra term of an unfused library (0 in the TME model proper).
    fixed_s : float
        Fixed time per kernel call, seconds, >= 0 (0 in the TME model proper).
    gamma_source : str
        Where gamma comes from: ``"given"``, ``"preset"``, ``"estimate"``, ``"profile"``.
    """

    scheme: str
    alpha: float
    beta: float = 1.0
    gamma: float = 0.0
    moduli: int | None = None
    mode: str | None = None
    residue_s: float = 0.0
    fixed_s: float = 0.0
    gamma_source: str = "given"

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}, got {self.scheme!r}")
        checks = (("alpha", 1.0), ("beta", 1.0), ("gamma", 0.0), ("residue_s", 0.0), ("fixed_s", 0.0))
        for name, low in checks:
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= low):
                raise ValueError(f"{name} must be a finite number >= {low:g}, got {v!r}")


@dataclass(frozen=True)
class Crossover:
    """Where emulation starts to win, for a kernel's shape (W and n_out fixed, I varied).

    Attributes
    ----------
    kind : str
        ``"above"`` (emulation faster for I > intensity), ``"tie"`` (equal speed for
        I >= intensity, never faster) or ``"never"``.
    intensity : float or None
        The crossover intensity in FLOP/byte (``None`` when ``kind == "never"``).
    ties_below : bool
        ``True`` when at low intensity both sides are memory-bound at equal speed
        (beta = 1 and no overhead), so emulation ties rather than loses there.
    """

    kind: str
    intensity: float | None
    ties_below: bool = False

    def describe(self) -> str:
        """Return a one-line statement of the crossover."""
        if self.kind == "never":
            tail = "; ties where both are memory-bound" if self.ties_below else ""
            return ("emulation never wins (its compute and reconstruction time per flop is not "
                    f"below native's){tail}")
        verb = "wins" if self.kind == "above" else "ties"
        tail = "; ties below" if self.ties_below else ""
        return f"emulation {verb} for I {'>' if self.kind == 'above' else '>='} {self.intensity:.4g} FLOP/B{tail}"


@dataclass(frozen=True)
class Prediction:
    """The TME model's answer for one kernel on one device.

    Attributes
    ----------
    gpu, kernel : str
        Device key and kernel name.
    intensity : float
        I = W / Q, FLOP/byte.
    intensity_source : str
        Where the intensity comes from.
    scheme : str
        Substrate.
    moduli : int or None
        Number of moduli.
    mode : str or None
        Scaling mode.
    alpha, beta, gamma : float
        Model parameters (gamma in seconds per output).
    alpha_eff : float
        alpha times the kernel's emulated-work ratio.
    p64_tflops, plow_tflops, mem_tbps : float
        Hardware figures used.
    native_s, emulated_s : float
        T_native and T_emul, seconds.
    overhead_s : float
        The additive emulation term (gamma n_out plus any library terms), seconds.
    native_tflops, emulated_tflops : float
        W / T, TFLOP/s.
    speedup : float
        T_native / T_emul.
    regime : str
        A key of :data:`REGIMES`.
    emulated_limiter : str
        The largest term of T_emul: ``"compute"``, ``"memory"`` or ``"reconstruction"``.
    emulated_ceiling_tflops : float
        Plow / alpha_eff, TFLOP/s.
    ridge_native, ridge_emulated : float
        P64 / Bmem and beta Plow / (alpha_eff Bmem), FLOP/byte.
    crossover : Crossover
        Where emulation starts to win for this kernel's shape.
    break_even_beta : float or None
        The largest beta at which emulation is still no slower (``None``: slower even at
        beta = 1).
    """

    gpu: str
    kernel: str
    intensity: float
    intensity_source: str
    scheme: str
    moduli: int | None
    mode: str | None
    alpha: float
    beta: float
    gamma: float
    alpha_eff: float
    p64_tflops: float
    plow_tflops: float
    mem_tbps: float
    native_s: float
    emulated_s: float
    overhead_s: float
    native_tflops: float
    emulated_tflops: float
    speedup: float
    regime: str
    emulated_limiter: str
    emulated_ceiling_tflops: float
    ridge_native: float
    ridge_emulated: float
    crossover: Crossover
    break_even_beta: float | None

    @property
    def crossover_intensity(self) -> float | None:
        """The crossover intensity, FLOP/byte, or ``None`` if emulation never wins or ties."""
        return self.crossover.intensity

    def to_dict(self) -> dict:
        """Return a flat JSON-ready dict (crossover as ``crossover_*`` keys)."""
        d = asdict(self)
        cross = d.pop("crossover")
        d["crossover_intensity"] = cross["intensity"]
        d["crossover_kind"] = cross["kind"]
        d["crossover_ties_below"] = cross["ties_below"]
        return d


def crossover(p64: float, plow: float, bmem: float, alpha: float, beta: float,
              overhead_per_flop: float = 0.0) -> Crossover:
    """Crossover intensity of the TME model.

    Emulation is faster iff max(alpha/Plow, beta/(I Bmem)) + g < max(1/P64, 1/(I Bmem))
    with g the overhead per flop (gamma n_out / W).  Below the native ridge this needs
    (beta - 1)/(I Bmem) + g < 0, impossible (a tie when beta = 1 and g = 0); above it,
    I > beta P64 / (Bmem (1 - g P64)), provided alpha/Plow + g < 1/P64.

    Parameters
    ----------
    p64, plow : float
        Native FP64 and low-precision peaks, FLOP/s (any common unit with ``bmem``).
    bmem : float
        Memory bandwidth, byte/s (same scale as the peaks).
    alpha, beta : float
        Compute and memory multipliers.
    overhead_per_flop : float, optional
        g = (gamma n_out + other additive terms) / W, in seconds per flop at the peaks'
        scale.

    Returns
    -------
    Crossover
        The crossover.
    """
    g = overhead_per_flop
    emul = alpha / plow + g
    native = 1.0 / p64
    ties_below = beta == 1.0 and g == 0.0
    if math.isclose(emul, native, rel_tol=_REL_TIE):
        return Crossover("tie", beta * p64 / (bmem * (1.0 - g * p64)), ties_below)
    if emul > native:
        return Crossover("never", None, ties_below)
    return Crossover("above", beta * p64 / (bmem * (1.0 - g * p64)), ties_below)


def predict(kernel: Kernel, device: Device, emu: Emulation) -> Prediction:
    """Evaluate the TME model for one kernel on one device.

    Parameters
    ----------
    kernel : Kernel
        W, Q, n_out, k and whether FP64 matrix units apply.
    device : Device
        Hardware figures (P64 from :meth:`Device.p64`, Plow from the scheme's figure).
    emu : Emulation
        alpha, beta, gamma and the substrate.

    Returns
    -------
    Prediction
        Times, throughputs, speedup, regime, ridges, crossover and break-even beta.
    """
    p64_t = device.p64(kernel.matrix)
    plow_t = device.require(emu.scheme)
    bw_t = device.bandwidth()
    p64, plow, bw = p64_t * _TERA, plow_t * _TERA, bw_t * _TERA
    w, q = kernel.flops, kernel.bytes
    alpha_eff = emu.alpha * kernel.work_ratio

    t_nc, t_nm = w / p64, q / bw
    t_ec, t_em = alpha_eff * w / plow, emu.beta * q / bw
    t_over = emu.gamma * kernel.n_out + emu.residue_s * kernel.n_in + emu.fixed_s
    t_native = max(t_nc, t_nm)
    t_emul = max(t_ec, t_em) + t_over

    regime = f"{'compute' if t_nc >= t_nm else 'memory'}/{'compute' if t_ec >= t_em else 'memory'}"
    limiter = max((t_ec, "compute"), (t_em, "memory"), (t_over, "reconstruction"))[1]

    if t_ec + t_over <= t_native:
        beta_star = bw * (t_native - t_over) / q
        beta_star = beta_star if beta_star >= 1.0 else None
    else:
        beta_star = None

    return Prediction(
        gpu=device.key, kernel=kernel.name, intensity=kernel.intensity,
        intensity_source=kernel.intensity_source, scheme=emu.scheme, moduli=emu.moduli,
        mode=emu.mode, alpha=emu.alpha, beta=emu.beta, gamma=emu.gamma, alpha_eff=alpha_eff,
        p64_tflops=p64_t, plow_tflops=plow_t, mem_tbps=bw_t,
        native_s=t_native, emulated_s=t_emul, overhead_s=t_over,
        native_tflops=w / t_native / _TERA, emulated_tflops=w / t_emul / _TERA,
        speedup=t_native / t_emul, regime=regime, emulated_limiter=limiter,
        emulated_ceiling_tflops=plow_t / alpha_eff,
        ridge_native=p64 / bw, ridge_emulated=emu.beta * plow / (alpha_eff * bw),
        crossover=crossover(p64, plow, bw, alpha_eff, emu.beta, t_over / w),
        break_even_beta=beta_star,
    )


def native_tflops(kernel: Kernel, device: Device) -> float:
    """Native FP64 throughput W / max(W / P64, Q / Bmem) of a kernel, in TFLOP/s.

    Parameters
    ----------
    kernel : Kernel
        The kernel.
    device : Device
        The hardware.

    Returns
    -------
    float
        TFLOP/s; needs only the FP64 and bandwidth figures.
    """
    p64, bw = device.p64(kernel.matrix), device.bandwidth()
    return kernel.flops / max(kernel.flops / p64, kernel.bytes / bw)


def roof_native(intensity: np.ndarray, p64: float, bmem: float) -> np.ndarray:
    """Native roofline min(P64, I Bmem).

    Parameters
    ----------
    intensity : ndarray
        Intensities, FLOP/byte, any shape.
    p64 : float
        FP64 peak, TFLOP/s.
    bmem : float
        Bandwidth, TB/s.

    Returns
    -------
    ndarray
        Attainable TFLOP/s, same shape as ``intensity``.
    """
    return np.minimum(p64, np.asarray(intensity, dtype=float) * bmem)


def roof_emulated(intensity: np.ndarray, plow: float, bmem: float, alpha: float,
                  beta: float = 1.0) -> np.ndarray:
    """Emulated FP64 roofline min(Plow / alpha, I Bmem / beta) (gamma = 0).

    Parameters
    ----------
    intensity : ndarray
        Intensities, FLOP/byte, any shape.
    plow : float
        Low-precision peak, TFLOP/s.
    bmem : float
        Bandwidth, TB/s.
    alpha, beta : float
        Compute and memory multipliers.

    Returns
    -------
    ndarray
        Attainable emulated FP64 TFLOP/s, same shape as ``intensity``.
    """
    return np.minimum(plow / alpha, np.asarray(intensity, dtype=float) * bmem / beta)
