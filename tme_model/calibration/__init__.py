"""``tme-calibrate``: measure this machine into a profile, and check it against ``ozaki``.

What is measured (every figure the median of ``repeats`` runs, the runs of all
configurations interleaved, so that a burst of load from other processes spreads over
them instead of hitting one), by :mod:`~tme_model.calibration.probes`:

* native FP64 GEMM (numpy ``@``) at each calibration size; the rate model
  ``r(s) = r_inf s / (s + n0)`` with s = (mnk)^(1/3) is fitted by least squares in the
  time, ``T = 2mnk (1 + n0 / s) / r_inf`` (BLAS is less efficient at small sizes);
* the exact-GEMM rate of each ``ozaki`` engine: ``cpu-blas`` (FP64 BLAS on
  integer-valued matrices) at the calibration sizes, fitted the same way to the median
  of every timing of one such GEMM: the standalone
  ``ozaki.get_engine("cpu-blas").matmul`` runs and the "products" phase of each
  ``ozaki.dgemm`` call below divided by its GEMM count; the simulations ``cpu-fp8``
  and ``cpu-int8`` at small sizes only (they are slow), with their GEMMs per modulus
  from ``ozaki`` (:func:`tme_model.schemes.gemms_per_modulus`);
* the FP32 path of ``cpu-blas`` (blocks whose exact bound is at most ``2**24`` run as
  SGEMM): ``BlasEngine().matmul`` on operands below ``sqrt(2**24 / n)``, fitted the
  same way; predictions then time each GEMM ``ozaki`` runs at its path's rate;
* memory bandwidth: a STREAM triad ``a = b + s c`` in numba (parallel), 24 bytes per
  element; the non-GEMM FP64 rate: a vectorised FMA loop in numba, in cache;
* the costs of ozaki's O(n^2) phases (``ozaki.PHASES``), by non-negative least squares
  (relative errors) on ``info.seconds`` of ``ozaki.dgemm`` calls at the calibration
  sizes, every scheme and mode (``ozaki.SCHEMES``, ``ozaki.MODES``, automatic moduli
  counts), in :mod:`~tme_model.calibration.fitting`:

  - residues  = r N (mk + kn) + f_r
  - reconstruction = c N mn + f_c
  - scaling = (s + s_acc [accurate]) (mk + kn) + f_s, after subtracting the predicted
    bound GEMM from the accurate-mode scaling time
  - fixed = f_r + f_c + f_s + the median time of a call outside its phases.

:func:`validate` then times ``ozaki.dgemm`` at held-out sizes and compares it with
:meth:`tme_model.profile.Profile.predict_gemm`, and times :func:`fft.fft` and
:func:`fft.fft2` (default and native plans, :mod:`~tme_model.calibration.fft_check`)
against :func:`tme_model.fft_workload.predict_fft` of their plans; :func:`calibrate_and_validate` (the
command's ``--validate`` without ``--profile``) does both in one interleaved schedule, so
that the calibration and the held-out runs see the same load of a shared machine.  The
moduli count of a prediction is the one ``ozaki`` chose (``info.num_moduli``: its
automatic count depends on the data); a native fallback of uncertified entries (none on
the standard-normal operands used here) is not modelled, and rows where it happened are
marked.  The statistic (median or minimum) is an argument of every function that
summarises runs.  Nothing here is imported by ``tme_model`` itself; ozaki, numba and
tqdm are imported inside the functions.  The command line is
:func:`tme_model.cli.calibrate_main`; the tables are in :mod:`tme_model.tables`.
"""

from .fft_check import FFT_CASES, QUICK_FFT_CASES
from .fitting import RateFit, fit_rate, refit
from .measure import calibrate, calibrate_and_validate
from .probes import (DEFAULT_SIZES, QUICK_SIM_SIZES, QUICK_SIZES, QUICK_VALIDATION_SIZES, SIM_SIZES,
                     VALIDATION_SIZES)
from .runner import STATISTICS
from .validation import restate, restate_minima, validate

__all__ = [
    "DEFAULT_SIZES",
    "FFT_CASES",
    "QUICK_FFT_CASES",
    "QUICK_SIM_SIZES",
    "QUICK_SIZES",
    "QUICK_VALIDATION_SIZES",
    "SIM_SIZES",
    "STATISTICS",
    "VALIDATION_SIZES",
    "RateFit",
    "calibrate",
    "calibrate_and_validate",
    "fit_rate",
    "refit",
    "restate",
    "restate_minima",
    "validate",
]
