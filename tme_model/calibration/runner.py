"""The schedule of a calibration: tasks run in interleaved, shuffled rounds, and the
statistic that summarises the runs of one measurement (passed as an argument)."""

from __future__ import annotations

import statistics as _statistics
import sys
import time
from typing import Any, Callable, Sequence

import numpy as np

from ..extras import require

__all__ = ["STATISTICS", "Runner", "check_statistic", "summarise", "timed"]

#: Statistics a measurement can be summarised by: the median (default) or the minimum
#: (the run least disturbed by other processes).
STATISTICS: tuple[str, ...] = ("median", "min")


def check_statistic(statistic: str) -> str:
    """Return ``statistic`` if it is one of :data:`STATISTICS`, else raise ValueError."""
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, got {statistic!r}")
    return statistic


def summarise(runs: Sequence[float], statistic: str) -> float:
    """Summarise the runs of one measurement.

    Parameters
    ----------
    runs : sequence of float
        The runs (at least one).
    statistic : {"median", "min"}
        See :data:`STATISTICS`.

    Returns
    -------
    float
        Their median or minimum.
    """
    check_statistic(statistic)
    return float(_statistics.median(runs) if statistic == "median" else min(runs))


class Runner:
    """Runs named tasks in ``repeats`` rounds, each task once per round in a shuffled
    (seeded) order, with one tqdm bar; keeps every result.

    Interleaving spreads slow drifts of the machine's load over all tasks alike instead
    of letting them hit one configuration.

    Parameters
    ----------
    repeats : int
        Rounds (at least 1).
    progress : bool
        Show a tqdm progress bar on stderr (tqdm is needed only then).
    desc : str
        The bar's label.
    seed : int
        Seed of the run order.
    """

    def __init__(self, repeats: int, progress: bool, desc: str, seed: int = 0):
        self.repeats = max(1, int(repeats))
        self.progress = progress
        self.desc = desc
        self.seed = seed
        self.tasks: list[tuple[str, Callable[[], Any]]] = []
        self.results: dict[str, list[Any]] = {}

    def add(self, key: str, fn: Callable[[], Any]) -> None:
        """Add a task: ``fn()`` is called once per round, its results kept under ``key``."""
        self.tasks.append((key, fn))

    def run(self) -> dict[str, list[Any]]:
        """Run every round; return task key -> its results, in run order."""
        bar = None
        if self.progress:
            bar = require("tqdm").tqdm(total=len(self.tasks) * self.repeats, desc=self.desc,
                                       unit="run", file=sys.stderr, leave=True)
        order = np.random.default_rng(self.seed)
        try:
            for rep in range(self.repeats):
                for i in order.permutation(len(self.tasks)):
                    key, fn = self.tasks[i]
                    if bar is not None:
                        bar.set_postfix_str(f"{key} ({rep + 1}/{self.repeats})", refresh=False)
                    self.results.setdefault(key, []).append(fn())
                    if bar is not None:
                        bar.update()
        finally:
            if bar is not None:
                bar.close()
        return self.results


def timed(fn: Callable[[], Any]) -> Callable[[], float]:
    """Wrap ``fn`` into a task that returns its wall time in seconds."""
    def run() -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    return run
