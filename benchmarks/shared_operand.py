"""The wide shared-operand product, call by call: walls and phases against numpy.

Usage::

    python benchmarks/shared_operand.py [--mode fast|accurate] [--calls 9] [--cols 1048576]

Times ``ozaki.dgemm(A, B)`` for ``A`` (64, 64) and ``B`` (64, cols) (an FFT stage;
the case of ``test_products_bench.py``), each call followed by numpy's ``A @ B`` on
the same input, after one warm-up call of each. Prints the median walls, their ratio,
every emulated wall and the median phase seconds (thread-seconds: the pieces run on
worker threads). Results of every call are checked bitwise against the first.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import ozaki


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="fast", choices=ozaki.MODES)
    ap.add_argument("--calls", type=int, default=9)
    ap.add_argument("--cols", type=int, default=2 ** 20)
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    A = rng.standard_normal((64, 64))
    B = rng.standard_normal((64, args.cols))
    first = ozaki.dgemm(A, B, mode=args.mode)
    A @ B
    emulated, native, phases = [], [], {}
    for _ in range(args.calls):
        t0 = time.perf_counter()
        C, info = ozaki.dgemm(A, B, mode=args.mode, return_info=True)
        emulated.append(time.perf_counter() - t0)
        if C.tobytes() != first.tobytes():
            raise AssertionError("the bits changed between calls")
        del C
        t0 = time.perf_counter()
        A @ B
        native.append(time.perf_counter() - t0)
        for name, sec in info.seconds.items():
            phases.setdefault(name, []).append(sec)
    te, tn = statistics.median(emulated), statistics.median(native)
    print(f"{args.mode}: emulated {te:.3f} s, numpy {tn:.3f} s, ratio {te / tn:.2f}")
    print("  walls:", " ".join(f"{w:.3f}" for w in emulated))
    print("  phases (median thread-seconds):",
          ", ".join(f"{k} {statistics.median(v):.3f}" for k, v in phases.items()))


if __name__ == "__main__":
    main()
