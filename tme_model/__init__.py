"""Tensor-Memory Equilibrium (TME) model: when does emulated FP64 beat native FP64?

The Roofline with emulation parameters (:doc:`tme_model`, "The model")::

    T_native = max(W / P64, Q / Bmem)
    T_emul   = max(alpha W / Plow, beta Q / Bmem) + gamma n_out

Modules: :mod:`~tme_model.specs` (sourced hardware database), :mod:`~tme_model.workloads`
(W, Q, n_out, k per kernel), :mod:`~tme_model.schemes` (moduli counts and alpha, read
from ``ozaki``; substrate choice), :mod:`~tme_model.scenario` (presets and user
parameters), :mod:`~tme_model.model` (the numbers), :mod:`~tme_model.symbolic` (sympy
closed forms), :mod:`~tme_model.profile` and :mod:`~tme_model.profile_file` (calibration
profiles), :mod:`~tme_model.calibration` (measuring them),
:mod:`~tme_model.fft_workload` and :mod:`~tme_model.fft_projection` (``fft`` plans as
stage GEMMs and passes, on this machine and on GPUs), :mod:`~tme_model.lu_projection`
(the blocked LU of an HPL run on GPUs, native against emulated updates, ``python -m
tme_model.lu_projection``), :mod:`~tme_model.tables`,
:mod:`~tme_model.cpus` (CPUs: the int8 scheme on oneDNN's integer GEMM against the
fp64 scheme and native DGEMM), :mod:`~tme_model.plot` and :mod:`~tme_model.cli`
(``tme-plot``, ``tme-table``, ``tme-calibrate``; :mod:`~tme_model.cli_cpu`,
:mod:`~tme_model.cli_calibrate`, :mod:`~tme_model.cli_common`),
:mod:`~tme_model.network` (the alpha-beta network term of the distributed SUMMA, its
traffic and network roof) and :mod:`~tme_model.cluster` (its modelled cluster
projection, ``python -m tme_model.cluster``). Importing the package loads neither
matplotlib, sympy, ozaki nor fft.
"""

from .model import REGIMES, Crossover, Emulation, Prediction, predict
from .profile import Profile
from .profile_file import load_profile
from .scenario import PRESETS, Scenario
from .schemes import alpha_for, choose_scheme, moduli_for
from .specs import Device, TMEError, UnknownDeviceError, get_device, load_devices
from .workloads import Kernel, catalog, parse_kernel

__all__ = [
    "PRESETS",
    "REGIMES",
    "Crossover",
    "Device",
    "Emulation",
    "Kernel",
    "Prediction",
    "Profile",
    "Scenario",
    "TMEError",
    "UnknownDeviceError",
    "alpha_for",
    "catalog",
    "choose_scheme",
    "get_device",
    "load_devices",
    "load_profile",
    "moduli_for",
    "parse_kernel",
    "predict",
]
