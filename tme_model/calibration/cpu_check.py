"""The CPU model's prediction for this machine, checked against measured runs.

``python -m tme_model.calibration.cpu_check [--n 2048] [--cpu zen4-vm2]`` times, in
interleaved rounds (:class:`~.runner.Runner`), on square standard-normal operands of
order n:

* numpy's DGEMM (``A @ B``);
* ``ozaki.dgemm`` with the fp64 scheme on ``cpu-blas`` and the int8 scheme on
  ``cpu-onednn``, fast and accurate mode, ``num_moduli="auto"`` (its phases too);
* one exact GEMM of each engine (``ozaki.get_engine(...).matmul`` on integers of
  magnitude at most 127, the residues' range): the measured INT8 / FP64 GEMM rate.

and prints, beside each measured ratio, the one the model predicts for the CPU entry
(:func:`tme_model.cpus.cpu_path`): the int8 call's time over the fp64 call's, and the
exact-GEMM rate ratio ``int8 peak / (fp64 peak x INT8 GEMMs per product)``.  Ratios
are taken within each round (the same load), then summarised; nothing here is a unit
test: the figures are recorded in :doc:`tme_model` ("CPUs").  ozaki is imported inside
the functions.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Sequence

import numpy as np

from ..cpus import cpu_path, int8_gemms_per_product
from ..specs import Device, get_device, load_cpus
from .probes import host, loadavg
from .runner import STATISTICS, Runner, summarise, timed

__all__ = ["cpu_check_rows", "cpu_check_tasks", "main"]

_PATHS = (("fp64", "cpu-blas"), ("int8", "cpu-onednn"))
_MODES = ("fast", "accurate")


def cpu_check_tasks(run: Runner, n: int, seed: int = 0) -> None:
    """Add the runs to ``run`` (keys ``native``, ``dgemm:SCHEME:MODE``,
    ``engine:ENGINE``); every configuration runs once before anything is timed."""
    import ozaki

    rng = np.random.default_rng(seed)
    A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    X = rng.integers(-127, 128, size=(n, n)).astype(np.float64)
    Y = rng.integers(-127, 128, size=(n, n)).astype(np.float64)

    def call(scheme: str, engine: str, mode: str):
        def go() -> dict:
            t0 = time.perf_counter()
            _, info = ozaki.dgemm(A, B, scheme=scheme, engine=engine, mode=mode,
                                  num_moduli="auto", return_info=True)
            return {"wall": time.perf_counter() - t0, "num_moduli": info.num_moduli,
                    **{k: float(v) for k, v in info.seconds.items()}}
        return go

    def gemm(engine: str):
        eng = ozaki.get_engine(engine)
        return lambda: eng.matmul(X, Y, 127, 127)

    tasks = [("native", timed(lambda: A @ B))]
    tasks += [(f"dgemm:{s}:{m}", call(s, e, m)) for s, e in _PATHS for m in _MODES]
    tasks += [(f"engine:{e}", timed(gemm(e))) for _, e in _PATHS]
    for key, fn in tasks:
        fn()  # warm-up: compile, load oneDNN, touch BLAS
        run.add(key, fn)


def _ratios(num: list, den: list) -> list[float]:
    return [a / b for a, b in zip(num, den)]


def cpu_check_rows(res: dict, device: Device, n: int, statistic: str = "median") -> list[dict]:
    """Measured against predicted ratios from the runs of :func:`cpu_check_tasks`.

    Returns
    -------
    list of dict
        One row per comparison: ``what``, ``mode``, ``predicted``, ``measured`` (the
        statistic of the per-round ratios), ``low``/``high`` (their range), ``runs``,
        and the measured seconds it came from.
    """
    rows = []
    for mode in _MODES:
        i8 = [r["wall"] for r in res[f"dgemm:int8:{mode}"]]
        f64 = [r["wall"] for r in res[f"dgemm:fp64:{mode}"]]
        ratios = _ratios(i8, f64)
        pred = (cpu_path(device, "int8/cpu-onednn", mode, k=n).seconds(n)
                / cpu_path(device, "fp64/cpu-blas", mode, k=n).seconds(n))
        phases = {k: summarise([r[k] for r in res[f"dgemm:int8:{mode}"]], statistic)
                  for k in res[f"dgemm:int8:{mode}"][0] if k not in ("wall", "num_moduli")}
        rows.append({"what": "dgemm time int8/cpu-onednn / fp64/cpu-blas", "mode": mode,
                     "predicted": pred, "measured": summarise(ratios, statistic),
                     "low": min(ratios), "high": max(ratios), "runs": len(ratios),
                     "int8_s": summarise(i8, statistic), "fp64_s": summarise(f64, statistic),
                     "int8_phases_s": phases})
    rate = _ratios(res["engine:cpu-blas"], res["engine:cpu-onednn"])
    rows.append({"what": "exact GEMM rate cpu-onednn / cpu-blas", "mode": "-",
                 "predicted": device.require("int8") / device.require("fp64_vector")
                 / int8_gemms_per_product(device),
                 "measured": summarise(rate, statistic), "low": min(rate), "high": max(rate),
                 "runs": len(rate)})
    native = _ratios(res["native"], res["engine:cpu-blas"])
    rows.append({"what": "numpy DGEMM time / cpu-blas exact GEMM time", "mode": "-",
                 "predicted": 1.0, "measured": summarise(native, statistic),
                 "low": min(native), "high": max(native), "runs": len(native)})
    return rows


def _markdown(rows: list[dict]) -> str:
    out = ["| comparison | mode | predicted | measured | range | runs |",
           "|---|---|---:|---:|---|---:|"]
    for r in rows:
        out.append(f"| {r['what']} | {r['mode']} | {r['predicted']:.3g} | {r['measured']:.3g} | "
                   f"{r['low']:.3g}-{r['high']:.3g} | {r['runs']} |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: measure, print the comparison as Markdown (``--json FILE``: rows)."""
    p = argparse.ArgumentParser(prog="python -m tme_model.calibration.cpu_check",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=2048, help="order of the square GEMMs (default 2048)")
    p.add_argument("--cpu", default="zen4-vm2", help="the CPU entry to predict with (default "
                                                     "zen4-vm2)")
    p.add_argument("--repeats", type=int, default=3, help="rounds (default 3)")
    p.add_argument("--statistic", choices=STATISTICS, default="median")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    a = p.parse_args(argv)
    if a.n < 8 or a.repeats < 1:
        p.error(f"--n must be >= 8 and --repeats >= 1, got {a.n} and {a.repeats}")
    try:
        device = get_device(a.cpu, load_cpus())
    except ValueError as exc:
        p.error(str(exc))
    import ozaki

    if "cpu-onednn" not in ozaki.available_engines():
        p.error("the cpu-onednn engine is not available here: pip install 'ozaki-emu[onednn]'")
    before = loadavg()
    run = Runner(a.repeats, not a.no_progress, "cpu check")
    cpu_check_tasks(run, a.n)
    rows = cpu_check_rows(run.run(), device, a.n, a.statistic)
    print(f"n = {a.n}, {a.repeats} interleaved rounds, {a.statistic} of per-round ratios; "
          f"model: {device.key} ({device.isa}); load average before {before}, after "
          f"{loadavg()}; host {host().get('processor')}, {host().get('cpus')} CPUs\n")
    print(_markdown(rows))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=2)
            fh.write("\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
