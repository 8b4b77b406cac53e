"""Speed of the exactly rounded dot product (:mod:`ozaki.backends.cpu.exactdot`), per term.

``python benchmarks/exactdot_speed.py`` prints nanoseconds per term on one numba
thread for normal data and for values ``+-2**e`` spread over the whole exponent
range (the work per term does not depend on the data).
"""

from __future__ import annotations

import numpy as np

import ozaki
# the pass measured on purpose: ozaki's internal exact dot product
from ozaki.backends.cpu.exactdot import dot_rows_cols


def main(k: int = 4096, entries: int = 256, repeat: int = 5) -> None:
    """Time one-thread dot products of length ``k`` (the figures in the module docstring)."""
    import time

    rng = np.random.default_rng(0)
    data = {
        "normal": rng.standard_normal((2, entries, k)),
        "wide 2**e": np.ldexp(np.where(rng.random((2, entries, k)) < 0.5, -1.0, 1.0),
                              rng.integers(-1074, 1024, (2, entries, k))),
    }
    with ozaki.set_workers(1):
        idx = np.arange(entries, dtype=np.int64)
        tiny = np.ones((1, 1))
        dot_rows_cols(tiny, tiny, [0], [0])  # compile / load the cache
        for name, (X, Y) in data.items():
            best = np.inf
            for _ in range(repeat):
                t0 = time.perf_counter()
                dot_rows_cols(X, Y, idx, idx)
                best = min(best, time.perf_counter() - t0)
            print(f"{name:10s} k={k} entries={entries}: {best / entries * 1e6:8.2f} us/entry, "
                  f"{best / (entries * k) * 1e9:6.2f} ns/term")
        Z = np.zeros((1, 0))
        t0 = time.perf_counter()
        for _ in range(20):
            dot_rows_cols(Z, Z, np.zeros(4096, np.int64), np.zeros(4096, np.int64))
        dt = (time.perf_counter() - t0) / (20 * 4096)
        print(f"per-entry overhead (k=0): {dt * 1e6:.2f} us")


if __name__ == "__main__":
    main()
