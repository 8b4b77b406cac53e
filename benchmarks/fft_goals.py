"""The FFT goal's two cases against scipy.fft: ``python -m benchmarks.fft_goals 5``.

``fft.fft`` of 2**20 complex points and ``fft.fftn`` of a 128**3 complex cube (the
default plans: :func:`fft.plan.plan_scheme` resolves ``"auto"``) beside
``scipy.fft`` with ``workers=-1`` (both cores, as the emulated stages use), timed in
rotation in one process (medians of the rounds after one warm-up call each). Prints
the instruction set, the plans, the medians, the ratios to scipy and SHA-256 digests of
the two results (the same digests before and after a change that keeps the bits).
"""

from __future__ import annotations

import hashlib
import statistics
import sys
import time

import numpy as np
import scipy.fft

import fft
from benchmarks.bench_common import isa


def cases() -> dict:
    rng = np.random.default_rng(1)
    line = rng.standard_normal(1 << 20) + 1j * rng.standard_normal(1 << 20)
    cube = rng.standard_normal((128,) * 3) + 1j * rng.standard_normal((128,) * 3)
    return {"fft 2^20": (lambda: fft.fft(line), lambda: scipy.fft.fft(line, workers=-1)),
            "fftn 128^3": (lambda: fft.fftn(cube),
                           lambda: scipy.fft.fftn(cube, workers=-1))}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    rounds = int(argv[0]) if argv else 5
    print(f"# {isa()['cpu']}: {isa()['summary']}", flush=True)
    print(f"# plans: {fft.get_plan(1 << 20)}, {fft.get_plan(128)} "
          f"(scheme {fft.get_plan(1 << 20).options.scheme})", flush=True)
    calls = {f"{name} {who}": f for name, pair in cases().items()
             for who, f in zip(("emulated", "scipy"), pair)}
    for f in calls.values():  # warm: plans, compiled passes, workspace
        f()
    times = {k: [] for k in calls}
    for _ in range(rounds):
        for k, f in calls.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    for name in cases():
        emu, ref = med[f"{name} emulated"], med[f"{name} scipy"]
        digest = hashlib.sha256(np.ascontiguousarray(calls[f"{name} emulated"]()).tobytes())
        print(f"{name}: emulated {emu * 1e3:.1f} ms, scipy {ref * 1e3:.1f} ms, "
              f"{emu / ref:.2f}x; digest {digest.hexdigest()[:16]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
