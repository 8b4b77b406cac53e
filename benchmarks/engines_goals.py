"""The integer engine against FP64 BLAS and numpy: ``python -m benchmarks.engines_goals 1024,2048,4096 3``.

``ozaki.dgemm`` with the int8 and int7 schemes on ``cpu-onednn`` (INT8 GEMMs with
INT32 accumulation through oneDNN) and the fp64 scheme on ``cpu-blas`` (FP64 GEMMs), in fast
and accurate mode, beside numpy's DGEMM, all timed in rotation in one run (median of the
rounds after one warm-up call each), on entries ``(U - 1/2) exp(N(0, 1))`` (``--entries
uniform``: ``U - 1/2``). Prints one JSON line per configuration (time, ratio to numpy,
moduli, seconds per phase, the share of the "products" phase, the refined block; on
``cpu-onednn`` also ``gemm_share``, the share of the call spent inside oneDNN's GEMM calls
themselves, in the median round) and the int8/fp64 and int7/fp64 ratios per mode, with
the instruction set and oneDNN's encodings.

Sizes are ``n`` (square) or ``MxKxN``. ``--configs int8/onednn/accurate`` times only the
configurations named (numpy's product always): one process per configuration keeps each
from running after another library's product, whose spinning threads slow the next call.
To see a CPU without VNNI on one that has it, hold the libraries to AVX2 in the
benchmark's own process: ``ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell
NUMBA_CPU_NAME=haswell``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time

import numpy as np

import ozaki
from benchmarks.bench_common import isa


def configurations() -> dict:
    cfgs = {"numpy": None}
    for mode in ("fast", "accurate"):
        if "cpu-onednn" in ozaki.available_engines():
            for scheme in ("int8", "int7"):
                cfgs[f"{scheme}/onednn/{mode}"] = dict(scheme=scheme, engine="cpu-onednn",
                                                       mode=mode)
        cfgs[f"fp64/blas/{mode}"] = dict(scheme="fp64", engine="cpu-blas", mode=mode)
    return cfgs


def shape_of(text: str) -> tuple[int, int, int]:
    """``"n"`` as ``(n, n, n)``, ``"MxKxN"`` as ``(M, K, N)``."""
    dims = [int(d) for d in text.lower().split("x")]
    if len(dims) not in (1, 3) or min(dims) < 1:
        raise ValueError(f"a size is n or MxKxN with positive integers, got {text!r}")
    return tuple(dims * 3 if len(dims) == 1 else dims)


@contextlib.contextmanager
def gemm_clock():
    """Seconds spent inside oneDNN's GEMM calls (``Library.call``) while the block runs,
    added to the yielded one-element list (nothing where oneDNN is missing)."""
    spent = [0.0]
    try:
        from ozaki.backends.onednn_library import Library
    except ImportError:  # pragma: no cover - the module ships with ozaki
        yield spent
        return
    call = Library.call

    def timed(self, *args):
        t0 = time.perf_counter()
        try:
            return call(self, *args)
        finally:
            spent[0] += time.perf_counter() - t0

    Library.call = timed
    try:
        yield spent
    finally:
        Library.call = call


def run(shape: tuple[int, int, int], rounds: int, only: list[str] | None = None,
        entries: str = "spread") -> list[dict]:
    m, k, n = shape
    rng = np.random.default_rng(n)
    A, B = rng.random((m, k)) - 0.5, rng.random((k, n)) - 0.5
    if entries == "spread":
        A *= np.exp(rng.standard_normal((m, k)))
        B *= np.exp(rng.standard_normal((k, n)))
    cfgs = configurations()
    if only:
        unknown = sorted(set(only) - set(cfgs))
        if unknown:
            raise ValueError(f"unknown configurations {unknown}; known: {sorted(cfgs)}")
        cfgs = {c: kw for c, kw in cfgs.items() if c == "numpy" or c in only}
    walls = {k: [] for k in cfgs}
    gemms = {k: [] for k in cfgs}
    infos = {}
    for kw in cfgs.values():  # warm: compiled passes, workspace, oneDNN's kernels
        A @ B if kw is None else ozaki.dgemm(A, B, **kw)
    for _ in range(rounds):
        for k, kw in cfgs.items():
            with gemm_clock() as spent:
                t0 = time.perf_counter()
                if kw is None:
                    A @ B
                else:
                    _, infos[k] = ozaki.dgemm(A, B, return_info=True, **kw)
                walls[k].append(time.perf_counter() - t0)
            gemms[k].append(spent[0])
    med = {k: statistics.median(v) for k, v in walls.items()}
    rows = []
    for k in cfgs:
        row = dict(shape="x".join(map(str, shape)), entries=entries, config=k,
                   seconds=med[k], vs_numpy=med[k] / med["numpy"])
        if k != "numpy":
            sec = infos[k].seconds
            row.update(num_moduli=infos[k].num_moduli, refined=infos[k].refined_block,
                       share_products=sec["products"] / max(sum(sec.values()), 1e-300),
                       phases={p: round(v, 4) for p, v in sec.items()})
            if infos[k].engine == "cpu-onednn":  # the median round's time inside oneDNN
                wall, inside = sorted(zip(walls[k], gemms[k]))[len(walls[k]) // 2]
                row.update(gemm_share=inside / wall)
        rows.append(row)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.engines_goals",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="?", default="1024,2048",
                        help="comma-separated n or MxKxN (default 1024,2048)")
    parser.add_argument("rounds", nargs="?", type=int, default=3)
    parser.add_argument("--configs", default="",
                        help="comma-separated configurations, e.g. int8/onednn/accurate")
    parser.add_argument("--entries", choices=("spread", "uniform"), default="spread")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    shapes = [shape_of(s) for s in args.sizes.split(",")]
    only = [c for c in args.configs.split(",") if c]
    print(f"# {isa()['cpu']}: {isa()['summary']}", flush=True)
    if "cpu-onednn" in ozaki.available_engines():
        eng = ozaki.get_engine("cpu-onednn")
        print(f"# cpu-onednn encodings: int8 residues {eng.encoding}, int7 residues "
              f"{eng.encoding_for(64)} ({eng.gemms_for(128)} and {eng.gemms_for(64)} INT8 "
              "GEMMs a modulus)", flush=True)
    for shape in shapes:
        rows = run(shape, args.rounds, only, args.entries)
        for row in rows:
            print(json.dumps(row), flush=True)
        med = {r["config"]: r["seconds"] for r in rows}
        size = shape[0] if len(set(shape)) == 1 else "x".join(map(str, shape))
        for mode in ("fast", "accurate"):
            for scheme in ("int8", "int7"):
                if f"{scheme}/onednn/{mode}" in med and f"fp64/blas/{mode}" in med:
                    ratio = med[f"{scheme}/onednn/{mode}"] / med[f"fp64/blas/{mode}"]
                    print(f"n={size} {mode}: {scheme}/cpu-onednn time / fp64/cpu-blas time = "
                          f"{ratio:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
