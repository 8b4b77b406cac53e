"""The entry points that measure this machine: :func:`calibrate`, and
:func:`calibrate_and_validate` (calibration and held-out runs in one schedule)."""

from __future__ import annotations

from typing import Sequence

from ..profile import Profile
from .fft_check import FFT_CASES, fft_tasks
from .fitting import fit_calibration
from .probes import DEFAULT_SIZES, SIM_SIZES, VALIDATION_SIZES, calibration_tasks, ozaki_names, validation_tasks
from .runner import Runner, check_statistic
from .validation import validation_rows

__all__ = ["calibrate", "calibrate_and_validate"]


def calibrate(sizes: Sequence[int] = DEFAULT_SIZES, *, repeats: int = 3,
              sim_sizes: Sequence[int] = SIM_SIZES, stream_elements: int = 1 << 25,
              progress: bool = True, seed: int = 0, statistic: str = "median") -> Profile:
    """Measure this machine and return its profile (device ``local``).

    Parameters
    ----------
    sizes : sequence of int
        Square calibration sizes n for native GEMM, the ``cpu-blas`` engine and the
        ``ozaki.dgemm`` phase timings.
    repeats : int
        Runs per measurement (rounds, interleaved); medians are kept.
    sim_sizes : sequence of int
        Sizes at which the simulation engines ``cpu-fp8`` and ``cpu-int8`` are timed.
    stream_elements : int
        Elements of each STREAM-triad array.
    progress : bool
        Show a tqdm progress bar on stderr (the ``[calibrate]`` extra).
    seed : int
        Seed of the random test matrices and of the run order.
    statistic : {"median", "min"}
        How the runs of one measurement are summarised.

    Returns
    -------
    Profile
        With the summarised timings, every run, and the fits under
        ``meta["calibration"]``.
    """
    check_statistic(statistic)
    run = Runner(repeats, progress, "tme-calibrate", seed)
    plan = calibration_tasks(run, sizes, sim_sizes, stream_elements, seed)
    return fit_calibration(run.run(), plan, statistic)


def calibrate_and_validate(sizes: Sequence[int] = DEFAULT_SIZES,
                           validation_sizes: Sequence[int] = VALIDATION_SIZES, *,
                           repeats: int = 3, sim_sizes: Sequence[int] = SIM_SIZES,
                           stream_elements: int = 1 << 25, progress: bool = True,
                           seed: int = 0, statistic: str = "median",
                           fft_cases: Sequence = FFT_CASES) -> tuple[Profile, list[dict]]:
    """Calibrate and validate in one interleaved schedule.

    The calibration runs (at ``sizes``) and the validation runs (at
    ``validation_sizes``) are done in the same rounds, in a shuffled order, so that both
    see the same load of a shared machine; the profile is fitted from the calibration
    runs only and then predicts the validation runs (held-out sizes).

    Parameters
    ----------
    sizes, validation_sizes : sequence of int
        Calibration and held-out sizes.
    repeats, sim_sizes, stream_elements, progress, seed, statistic
        As in :func:`calibrate`.
    fft_cases : sequence of (shape, axes)
        Held-out FFT cases (see :func:`~tme_model.calibration.validate`).

    Returns
    -------
    tuple of (Profile, list of dict)
        The profile and the rows of :func:`~tme_model.calibration.validate`.
    """
    check_statistic(statistic)
    schemes, modes, _ = ozaki_names()
    run = Runner(repeats, progress, "tme-calibrate --validate", seed)
    plan = calibration_tasks(run, sizes, sim_sizes, stream_elements, seed)
    validation_tasks(run, validation_sizes, schemes, modes, seed + 1)
    fft_tasks(run, fft_cases, seed + 1)
    res = run.run()
    held_out = {"interleaved_with_validation": sorted({int(n) for n in validation_sizes})}
    profile = fit_calibration(res, plan, statistic, held_out)
    return profile, validation_rows(res, profile, statistic)
