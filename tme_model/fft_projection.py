"""The device projection of FFT workloads: native FP64 FFT against the emulated stages of
:mod:`fft`'s plans on a GPU of the database, in the TME model.

The workload (:func:`tme_model.fft_workload.fft_workload`) gives the stage shapes; each
stage is a GEMM kernel of the TME model (:func:`tme_model.model.predict`) with the
device's best substrate at FP64 grade, and the native FFT is the larger of its flops
on the FP64 vector units and its compulsory traffic.  Modelled figures, not measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .fft_workload import FFTWorkload
from .model import predict
from .scenario import Scenario
from .specs import Device
from .workloads import Kernel

__all__ = ["FFTProjection", "NATIVE_PASS_BYTES", "TWIDDLE_FLOPS", "project_fft"]

#: FP64 flops per complex point of a twiddle multiply (4 multiplies, 2 adds).
TWIDDLE_FLOPS = 6.0
#: Bytes per complex point and axis of a native FFT on a GPU in the device projection:
#: one read and one write of 16 bytes per axis (the TME paper's 3-D FFT: 96 per point).
NATIVE_PASS_BYTES = 32.0


@dataclass(frozen=True)
class FFTProjection:
    """A GPU's modelled time for an FFT workload, native FP64 against emulated.

    Attributes
    ----------
    gpu, scheme : str
        Device key and the emulation's substrate.
    moduli : int or None
        Moduli per stage product (the largest over the stages).
    native_s : float
        max(5 N log2 N / P64 (vector), 32 bytes per point and axis / Bmem).
    stage_s : tuple of float
        Each stage product's emulated time (TME model, :func:`tme_model.model.predict`).
    twiddle_s : float
        Twiddle multiplies, 6 flops per point on the FP64 vector units (fused into the
        stores: no traffic).
    gamma_source : str
        How the reconstruction cost was set (``"given"``, ``"estimate"``, ``"profile"``).
    native_bound : str
        ``"compute"`` or ``"memory"``: the larger of the native terms.
    """

    gpu: str
    scheme: str
    moduli: int | None
    native_s: float
    stage_s: tuple[float, ...]
    twiddle_s: float
    gamma_source: str
    native_bound: str = "memory"

    @property
    def emulated_s(self) -> float:
        """Sum of the stage products and the twiddles."""
        return sum(self.stage_s) + self.twiddle_s

    @property
    def speedup(self) -> float:
        """native_s / emulated_s."""
        return self.native_s / self.emulated_s

    @property
    def winner(self) -> str:
        """``"emulated"``, ``"native"`` or ``"tie"``."""
        return ("tie" if math.isclose(self.native_s, self.emulated_s, rel_tol=1e-9) else
                "emulated" if self.emulated_s < self.native_s else "native")


def project_fft(workload: FFTWorkload, device: Device,
                scenario: Scenario | None = None) -> FFTProjection:
    """Model an FFT workload on a device: native FP64 FFT against the emulated stages.

    Parameters
    ----------
    workload : FFTWorkload
        Its stage shapes are used (not its CPU moduli counts).
    device : Device
        A database device (or a profile's).
    scenario : Scenario, optional
        Default ``Scenario(mode="fast")`` (the plans' mode): the best substrate at FP64
        grade for each stage's k, gamma estimated (unfused reconstruction); give
        ``gamma=0.0`` for the fused ideal.

    Returns
    -------
    FFTProjection
        Native: the FFT's flops on the FP64 vector units or its compulsory traffic (one
        read and one write per axis), whichever is larger. Emulated: each stage as a
        GEMM kernel (W = 2mnk, Q = 8 (kn + mn), n_out = mn, n_in = kn) in the TME model,
        plus the twiddle multiplies on the FP64 vector units.
    """
    sc = scenario or Scenario(mode="fast")
    vec = device.p64(False) * 1e12
    compute = workload.flops / vec
    memory = NATIVE_PASS_BYTES * workload.points * len(workload.lengths) / (device.bandwidth() * 1e12)
    times, moduli, scheme, source = [], [], "", ""
    for i, s in enumerate(workload.stages):
        kern = Kernel(f"stage{i}:r{s.radix}", s.flops, 8.0 * (s.k * s.n + s.m * s.n), s.m * s.n,
                      s.k, matrix=True, n_in=s.k * s.n)
        emu = sc.emulation(device, kern)
        times.append(predict(kern, device, emu).emulated_s)
        scheme, source = emu.scheme, emu.gamma_source
        moduli.append(emu.moduli)
    known = [m for m in moduli if m is not None]
    return FFTProjection(device.key, scheme, max(known) if known else None, max(compute, memory),
                         tuple(times), TWIDDLE_FLOPS * workload.twiddle_points / vec, source,
                         "compute" if compute > memory else "memory")
