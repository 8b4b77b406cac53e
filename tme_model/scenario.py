"""What the user asks for: a preset, or scheme / moduli / mode / alpha, with beta, gamma.

A :class:`Scenario` resolves, per device and kernel, to an
:class:`~tme_model.model.Emulation`.  Presets reproduce the TME paper:

- ``paper-v1``: alpha = 10 (its v1 draft, alpha = N), FP8, beta = 1, gamma = 0, the
  paper's intensities;
- ``paper-v3``: alpha = 37 = 3 x 12 + 1 (its corrected versions: FP8, 12 moduli,
  accurate), beta = 1, gamma = 0, the paper's intensities.

Without a preset the substrate is the best of INT8 and FP8 on each device at the
requested accuracy grade (:func:`~tme_model.schemes.choose_scheme`), and gamma, unless
given, is estimated: from a calibration profile's reconstruction cost when the device
has one, else as :data:`RECON_FLOPS_PER_MODULUS` x N FP64 operations per output on the
device's FP64 vector units (a non-fused explicit-CRT reconstruction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .model import Emulation
from .schemes import GRADES, MODES, SCHEMES, alpha_for, choose_scheme, gemms_per_modulus, moduli_for
from .workloads import DEFAULT_KERNELS, Kernel, catalog
from .specs import Device, MissingFigureError

__all__ = ["PRESETS", "RECON_FLOPS_PER_MODULUS", "Scenario"]

#: FP64 operations per output and modulus of an explicit-CRT reconstruction: one
#: residue times a double-word weight accumulated in double-word arithmetic (about two
#: FMAs and a TwoSum).  An estimate; a calibration profile replaces it by a measurement.
RECON_FLOPS_PER_MODULUS = 8.0


@dataclass(frozen=True)
class Scenario:
    """The model's parameters as the user sets them.

    Attributes
    ----------
    label : str
        Short name shown in titles (a preset's name, or ``"custom"``).
    scheme : str
        ``"auto"``, ``"int8"`` or ``"fp8"``.
    moduli : int or None
        Number of moduli; ``None``: FP64 grade for the kernel's k.
    mode : str
        ``"fast"`` or ``"accurate"``.
    alpha : float or None
        alpha given directly (overrides scheme-derived alpha).
    beta : float
        Memory-traffic multiplier, >= 1.
    gamma : float or None
        Seconds per output; ``None``: estimated (see module docstring).
    grade : str
        Accuracy grade for automatic moduli counts (``"2x-native"``, ``"certified"``).
    paper_intensities : bool
        Use the TME paper's kernel intensities.
    """

    label: str = "custom"
    scheme: str = "auto"
    moduli: int | None = None
    mode: str = "accurate"
    alpha: float | None = None
    beta: float = 1.0
    gamma: float | None = None
    grade: str = "2x-native"
    paper_intensities: bool = False

    def __post_init__(self) -> None:
        if self.scheme not in ("auto",) + SCHEMES:
            raise ValueError(f"scheme must be auto, {', '.join(SCHEMES)}; got {self.scheme!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.grade not in GRADES:
            raise ValueError(f"grade must be one of {', '.join(GRADES)}, got {self.grade!r}")
        if self.moduli is not None:
            if self.scheme == "auto":
                raise ValueError("moduli needs an explicit scheme (int8 or fp8)")
            m = self.moduli
            if isinstance(m, bool) or int(m) != m or m < 1:
                raise ValueError(f"moduli must be a positive integer, got {m!r}")
            # ozaki's range (2 to 20) is checked by alpha_for when the scenario is
            # resolved: checking it here would import ozaki with tme_model (PRESETS)
        _check("alpha", self.alpha, 1.0)
        _check("beta", self.beta, 1.0)
        _check("gamma", self.gamma, 0.0)

    @classmethod
    def preset(cls, name: str, beta: float | None = None, gamma: float | None = None) -> "Scenario":
        """Return a preset, optionally with beta or gamma overridden.

        Parameters
        ----------
        name : str
            A key of :data:`PRESETS`.
        beta, gamma : float, optional
            Overrides of the preset's beta = 1, gamma = 0.

        Returns
        -------
        Scenario
            The preset scenario.
        """
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
        base = PRESETS[name]
        return replace(base, beta=base.beta if beta is None else beta,
                       gamma=base.gamma if gamma is None else gamma)

    def kernels(self, names: tuple[str, ...] | list[str] = DEFAULT_KERNELS) -> list[Kernel]:
        """Return the scenario's kernels (paper intensities in the paper presets).

        Parameters
        ----------
        names : sequence of str, optional
            Kernel specs.

        Returns
        -------
        list of Kernel
            The kernels.
        """
        return catalog(names, paper=self.paper_intensities)

    def emulation(self, device: Device, kernel: Kernel) -> Emulation:
        """Resolve the scenario for one device and kernel.

        Parameters
        ----------
        device : Device
            The hardware (its figures pick the scheme when ``scheme == "auto"``).
        kernel : Kernel
            The kernel (its k sets the moduli count when not given).

        Returns
        -------
        Emulation
            Fully specified parameters.
        """
        scheme, moduli = self.scheme, self.moduli
        if self.alpha is not None:
            if scheme == "auto":
                known = [s for s in SCHEMES if device.get(s) is not None]
                if not known:
                    choose_scheme(device)  # raises with a clear message
                scheme = max(known, key=lambda s: device.get(s))
            alpha = float(self.alpha)
        elif scheme == "auto":
            pick = choose_scheme(device, max(kernel.k, 1), self.grade, self.mode)
            scheme, moduli, alpha = pick.scheme, pick.moduli, float(pick.alpha)
        else:
            if device.get(scheme) is None:
                device.require(scheme)  # raises MissingFigureError
            moduli = moduli if moduli is not None else moduli_for(scheme, self.grade, max(kernel.k, 1))
            alpha = float(alpha_for(scheme, moduli, self.mode))
        mode = self.mode if moduli is not None else None
        if self.gamma is not None:
            source = "preset" if self.label in PRESETS else "given"
            return Emulation(scheme, alpha, self.beta, self.gamma, moduli, mode, gamma_source=source)
        n_est = moduli if moduli is not None else max(1, round(alpha / gemms_per_modulus(scheme)))
        phases = device.phases.get(scheme)
        if phases is not None:
            return Emulation(scheme, alpha, self.beta, phases.recon_s_per_output_modulus * n_est,
                             moduli, mode,
                             residue_s=phases.scale_s_per_element + phases.residue_s_per_element_modulus * n_est,
                             fixed_s=phases.fixed_s, gamma_source="profile")
        vec = device.get("fp64_vector") or device.get("fp64_matrix")
        if vec is None:
            raise MissingFigureError(
                f"device {device.key!r}: no FP64 figure to estimate gamma from; give --gamma")
        gamma = RECON_FLOPS_PER_MODULUS * n_est / (vec * 1e12)
        return Emulation(scheme, alpha, self.beta, gamma, moduli, mode, gamma_source="estimate")

    def describe(self) -> str:
        """Return a one-line description for titles and table headers."""
        if self.alpha is not None:
            what = f"{self.scheme}, alpha={self.alpha:g}"
        elif self.scheme == "auto":
            what = f"best of int8/fp8 at {self.grade} grade, {self.mode}"
        elif self.moduli is not None:
            what = f"{self.scheme} N={self.moduli} {self.mode}"
        else:
            what = f"{self.scheme} at {self.grade} grade, {self.mode}"
        g = ("gamma=auto (profile or estimate)" if self.gamma is None
             else f"gamma={self.gamma:g} s/output")
        lab = f"{self.label}: " if self.label != "custom" else ""
        return f"{lab}{what}, beta={self.beta:g}, {g}"


def _check(name: str, value: float | None, low: float) -> None:
    if value is None:
        return
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= low):
        raise ValueError(f"{name} must be a finite number >= {low:g}, got {value!r}")


#: The TME paper's configurations (arXiv:2606.06510; :doc:`tme_model`,
#: "The TME paper, reproduced and checked").
PRESETS: dict[str, Scenario] = {
    "paper-v1": Scenario(label="paper-v1", scheme="fp8", alpha=10.0, beta=1.0, gamma=0.0,
                         paper_intensities=True),
    "paper-v3": Scenario(label="paper-v3", scheme="fp8", moduli=12, mode="accurate",
                         beta=1.0, gamma=0.0, paper_intensities=True),
}
