"""Shared pieces of the DGEMM benchmarks (pytest-benchmark suite and ``report.py``).

Not installed and not a test module: ``conftest.py`` and ``report.py`` import it
from this folder.

* :func:`make_inputs`: the validation convention's matrices
  ``a_ij = (U - 0.5) exp(phi Z)`` (phi = 1), seeded.
* :data:`CONFIGS`: the (scheme, num_moduli, mode) triples that are measured.
* :func:`run_config`: one timed ``ozaki.dgemm`` call, with its info.
* :func:`peak_memory`: peak extra resident memory of one call, measured in a
  fresh subprocess from the kernel's resident-set high-water mark.
* :func:`rotate`: median walls of several calls timed in rotation (the ratio
  benchmarks' baseline in the same run).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np

PHASES = ("scaling", "residues", "products", "reconstruction")
DEFAULT_SIZES = (1024, 2048, 4096)
SEED = 20240601


@dataclass(frozen=True)
class Config:
    """One measured configuration of ``ozaki.dgemm``."""

    scheme: str
    num_moduli: int | str
    mode: str
    engine: str = "auto"

    @property
    def label(self) -> str:
        return f"{self.scheme}-{self.num_moduli}-{self.mode}-{self.engine}"

    def available(self) -> bool:
        import ozaki
        return self.engine == "auto" or self.engine in ozaki.available_engines()


#: Every scheme with its default ("auto") count, and the fp64 scheme with 6
#: moduli named explicitly (the issue's goal), each in fast and accurate mode; the
#: int8 scheme on both CPU engines (INT8 GEMMs on ``cpu-onednn``, where installed,
#: and FP64 GEMMs on ``cpu-blas``: the same bits); and the default call (both
#: "auto": the machine's choice, int8 on cpu-onednn where oneDNN has VNNI or AMX).
#: (fp64 "auto" may pick 6 too; it is run anyway: the automatic choice has its
#: own cost, and the count it picks may depend on the inputs.)
CONFIGS: tuple[Config, ...] = tuple(
    Config(scheme, nm, mode, engine)
    for scheme, nm, engine in (("int8", "auto", "cpu-onednn"), ("int8", "auto", "cpu-blas"),
                               ("fp8", "auto", "auto"), ("fp64", 6, "cpu-blas"),
                               ("fp64", "auto", "cpu-blas"), ("auto", "auto", "auto"))
    for mode in ("fast", "accurate")
)


def sizes_from_env(default=DEFAULT_SIZES) -> tuple[int, ...]:
    """Sizes from ``OZAKI_BENCH_SIZES`` (comma separated), else ``default``."""
    text = os.environ.get("OZAKI_BENCH_SIZES", "").strip()
    return parse_sizes(text) if text else tuple(default)


def parse_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(s) for s in text.replace(" ", "").split(",") if s)
    except ValueError:
        raise ValueError(f"sizes must be comma-separated integers, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise ValueError(f"sizes must be positive integers, got {text!r}")
    return sizes


def make_inputs(n: int, seed: int = SEED, phi: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Square ``A``, ``B`` with ``a_ij = (U - 0.5) exp(phi Z)``, built in place
    (no temporaries beyond one plane, so the high-water mark stays near the
    resident size of the two inputs)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(2):
        X = rng.random((n, n))
        X -= 0.5
        Z = rng.standard_normal((n, n))
        if phi != 1.0:
            Z *= phi
        np.exp(Z, out=Z)
        X *= Z
        del Z
        out.append(X)
    return out[0], out[1]


def warm_up_compilation(configs=CONFIGS) -> None:
    """Compile (or load from numba's cache) every kernel on a small problem."""
    import ozaki
    A, B = make_inputs(64)
    for cfg in configs:
        if cfg.available():
            ozaki.dgemm(A, B, scheme=cfg.scheme, num_moduli=cfg.num_moduli, mode=cfg.mode,
                        engine=cfg.engine)
    A @ B


def run_config(cfg: Config, A: np.ndarray, B: np.ndarray):
    """One call: returns ``(wall seconds, info)``."""
    import ozaki
    t0 = time.perf_counter()
    _, info = ozaki.dgemm(A, B, scheme=cfg.scheme, num_moduli=cfg.num_moduli,
                          mode=cfg.mode, engine=cfg.engine, return_info=True)
    return time.perf_counter() - t0, info


def time_numpy(A: np.ndarray, B: np.ndarray) -> float:
    t0 = time.perf_counter()
    A @ B
    return time.perf_counter() - t0


def rotate(fns, rounds: int) -> list[float]:
    """Median walls of the calls ``fns``, timed in rotation after one warm-up call each
    (a load change then hits all of them alike)."""
    for f in fns:
        f()
    walls = [[] for _ in fns]
    for _ in range(rounds):
        for w, f in zip(walls, fns):
            t0 = time.perf_counter()
            f()
            w.append(time.perf_counter() - t0)
    return [statistics.median(w) for w in walls]


def summarize(walls, infos, numpy_median: float) -> dict:
    """Medians over rounds of wall time, phases and shares, plus the ratio to numpy.

    ``share_products``: the modular GEMMs (phase ``products``) over the wall time.
    ``share_scaling``: phase ``scaling`` (in accurate mode it contains the bound
    GEMM). ``bound_gemm_est_s``: accurate mode only, one numpy DGEMM of the same
    shape (the numpy baseline) capped by the scaling phase: an estimate of the
    bound GEMM's time. ``share_gemms``: (products + bound estimate) / wall time.
    """
    info = infos[-1]
    wall = statistics.median(walls)
    phase = {p: statistics.median(i.seconds[p] for i in infos) for p in PHASES}
    bound = min(phase["scaling"], numpy_median) if info.mode == "accurate" else 0.0
    share_products = statistics.median(i.seconds["products"] / w for i, w in zip(infos, walls))
    share_scaling = statistics.median(i.seconds["scaling"] / w for i, w in zip(infos, walls))
    share_gemms = statistics.median(
        (i.seconds["products"] + min(i.seconds["scaling"], bound)) / w
        for i, w in zip(infos, walls))
    modular = info.gemms - (1 if info.mode == "accurate" else 0)
    return {
        "scheme": info.scheme,
        "num_moduli": info.num_moduli,
        "mode": info.mode,
        "engine": info.engine,
        "gemms": info.gemms,
        "rounds": len(walls),
        "median_s": wall,
        "min_s": min(walls),
        "numpy_median_s": numpy_median,
        "ratio_to_numpy": wall / numpy_median,
        **{f"seconds_{p}": phase[p] for p in PHASES},
        "seconds_other": max(0.0, wall - sum(phase.values())),
        "bound_gemm_est_s": bound,
        "share_products": share_products,
        "share_scaling": share_scaling,
        "share_gemms": share_gemms,
        # How fast one modular GEMM runs against numpy's own DGEMM (1.0 = as fast).
        "modular_gemm_vs_numpy": phase["products"] / max(modular, 1) / numpy_median,
        "workspace_bytes": info.workspace_bytes,
        # The accuracy certificate, where this version of ozaki reports one.
        **{key: _plain(getattr(info, key)) for key in CERTIFICATE_FIELDS if hasattr(info, key)},
    }


#: ``OzakiInfo`` fields about the accuracy certificate and the fallback.
CERTIFICATE_FIELDS = ("bound_kind", "max_bound_ratio", "uncertified", "fallback",
                      "fallback_entries", "fallback_block")


def _plain(value):
    """JSON-friendly copy of an info field."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


# -- peak memory -------------------------------------------------------------

def _status_kib(*keys: str) -> dict[str, int]:
    with open("/proc/self/status") as fh:
        text = fh.read()
    return {k: int(re.search(rf"^{k}:\s+(\d+) kB", text, re.M).group(1)) for k in keys}


def _reset_hwm() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0: ``echo 5 > clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _memory_child(n: int, what: str, scheme: str, num_moduli, mode: str) -> dict:
    """Runs in a fresh interpreter: peak extra RSS of one product (see peak_memory)."""
    import gc

    import ozaki
    A, B = make_inputs(n)
    if what == "ozaki":
        # Compile / load the kernels on a small problem so that numba's and
        # LLVM's memory is not counted; the workspace for size n is not touched.
        a, b = make_inputs(64)
        ozaki.dgemm(a, b, scheme=scheme, num_moduli=num_moduli, mode=mode)
        del a, b

        def call():
            return ozaki.dgemm(A, B, scheme=scheme, num_moduli=num_moduli, mode=mode)
    else:
        def call():
            return A @ B
    # Touch OpenBLAS's own buffers first with a product of the same shape whose
    # result is freed at once: they are the BLAS's memory, paid by numpy too.
    (A @ B)
    gc.collect()
    out = {"reset_hwm": _reset_hwm()}
    before = _status_kib("VmRSS", "VmHWM")
    C = call()
    after = _status_kib("VmRSS", "VmHWM")
    out.update(rss_before_kib=before["VmRSS"], hwm_before_kib=before["VmHWM"],
               hwm_first_kib=after["VmHWM"], rss_after_first_kib=after["VmRSS"])
    # Second call: the workspace is already resident (steady state).
    del C
    gc.collect()
    _reset_hwm()
    before2 = _status_kib("VmRSS")
    C = call()
    after2 = _status_kib("VmHWM", "VmRSS")
    out.update(rss_before_second_kib=before2["VmRSS"], hwm_second_kib=after2["VmHWM"],
               rss_after_second_kib=after2["VmRSS"])
    del C  # held until the reading above
    return out


METHOD = ("VmHWM - VmRSS around the call in a fresh process (high-water mark reset "
          "through /proc/self/clear_refs, fixed glibc mmap threshold)")


def peak_memory(n: int, scheme: str = "fp64", num_moduli=6, mode: str = "fast",
                what: str = "ozaki", env: dict | None = None) -> dict:
    """Peak extra resident memory of one ``n x n`` product, in a fresh subprocess.

    Method: the child builds ``A`` and ``B``, compiles the kernels on a small
    problem, runs one numpy product of the full shape (so OpenBLAS's buffers are
    resident before the measurement), resets the kernel's high-water mark
    (``/proc/self/clear_refs``), reads ``VmRSS``, makes the call and reads
    ``VmHWM``. The difference is every page the call made resident at its
    peak: numpy arrays, numba-allocated arrays, the workspace and the result.
    (``tracemalloc`` would miss arrays that numba allocates inside compiled
    code, and the BLAS's buffers.) Figures are in units of ``n**2`` doubles.

    ``first``: the first call (the grow-only workspace is allocated in it);
    ``second``: a repeated call (workspace already resident: what it adds is
    the output and temporaries); ``retained``: resident after the first call
    beyond the inputs, result included (the workspace persists between calls).
    """
    args = json.dumps([n, what, scheme, num_moduli, mode])
    code = ("import json, sys; sys.path.insert(0, %r); import bench_common as b; "
            "print(json.dumps(b._memory_child(*json.loads(sys.argv[1]))))"
            % os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ if env is None else env)
    # A fixed mmap threshold: every large block is mapped on allocation and
    # unmapped on free, so a freed plane cannot hide a later one in the heap
    # (glibc otherwise raises the threshold to 32 MiB after the first free).
    env["MALLOC_MMAP_THRESHOLD_"] = "131072"
    proc = subprocess.run([sys.executable, "-c", code, args], capture_output=True,
                          text=True, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"memory probe failed:\n{proc.stderr[-4000:]}")
    raw = json.loads(proc.stdout.strip().splitlines()[-1])
    unit = n * n * 8 / 1024.0  # KiB per n^2 doubles
    res = {
        "n": n, "what": what, "scheme": scheme, "num_moduli": num_moduli, "mode": mode,
        "method": METHOD,
        "hwm_reset": raw["reset_hwm"],
        "first_n2": (raw["hwm_first_kib"] - raw["rss_before_kib"]) / unit,
        "second_n2": (raw["hwm_second_kib"] - raw["rss_before_second_kib"]) / unit,
        "retained_n2": (raw["rss_after_first_kib"] - raw["rss_before_kib"]) / unit,
        "raw_kib": raw,
    }
    if not raw["reset_hwm"]:
        # Without the reset the high-water mark may predate the call; the
        # figure is then an upper bound.
        res["method"] += " (reset unavailable: upper bound)"
    return res


def blas_info() -> list[dict]:
    """threadpoolctl's view of the BLAS that numpy runs (kernel, threads, version)."""
    from threadpoolctl import threadpool_info
    out = []
    for d in threadpool_info():
        path = d.get("filepath") or ""
        owner = os.path.basename(os.path.dirname(path)).replace(".libs", "")
        entry = {k: d.get(k) for k in ("user_api", "internal_api", "version", "architecture",
                                      "threading_layer", "num_threads")}
        entry["library"] = os.path.basename(path)
        entry["owner"] = owner if owner in ("numpy", "scipy") else "system"
        out.append(entry)
    # numpy's BLAS first: it is the one that runs A @ B and the modular GEMMs.
    return sorted(out, key=lambda e: (e["user_api"] != "blas", e["owner"] != "numpy"))


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        m = re.search(r"^Model name:\s+(.*)$", out, re.M)
        if m:
            return m.group(1).strip()
    except OSError:
        pass
    return "unknown"


#: ``lscpu`` flags that name the vector and matrix instruction sets, in order.
ISA_FLAGS = ("avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512_vnni",
             "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16")


def isa() -> dict:
    """The CPU's model and the vector/matrix instruction sets ``lscpu`` reports."""
    flags: set[str] = set()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        m = re.search(r"^Flags:\s+(.*)$", out, re.M)
        flags = set(m.group(1).split()) if m else set()
    except OSError:
        pass
    present = [f for f in ISA_FLAGS if f in flags]
    avx512 = [f.removeprefix("avx512").lstrip("_") for f in present if f.startswith("avx512")]
    parts = [f for f in ("avx2", "avx_vnni") if f in present]
    if avx512:
        parts.append("avx512" + "/".join(avx512))
    parts.append("AMX" if "amx_tile" in present else "no AMX")
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "flags": present,
            "summary": ", ".join(parts) if flags else "unknown (no lscpu flags)"}
