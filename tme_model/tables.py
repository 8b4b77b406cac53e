"""Every table the package writes: ``tme-table`` (text, Markdown), ``--list-gpus``, the
``tme-calibrate`` summary and validation tables, and the docs' reStructuredText tables.

Writers take rows and return text; what fills the rows is computed elsewhere.
"""

from __future__ import annotations

import math
import os
from typing import Sequence

from .cpus import CPU_PATHS, CROSSOVERS, cpu_crossover, cpu_path, int8_gemms_per_product
from .model import native_tflops, predict
from .profile import Profile
from .scenario import Scenario
from .schemes import choose_scheme
from .specs import Device, TMEError, load_cpus, load_devices
from .workloads import DEFAULT_KERNELS, PAPER_INTENSITY, Kernel, catalog

__all__ = [
    "CPU_SIZES",
    "cpu_list",
    "cpu_rows",
    "cpu_table",
    "cpus_rst",
    "device_list",
    "cpu_crossovers",
    "devices_rst",
    "fft_projection_rst",
    "kernels_rst",
    "paper_rst",
    "prediction_rows",
    "prediction_table",
    "profile_summary",
    "rst_table",
    "validation_markdown",
    "validation_rst",
]


def rst_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A reStructuredText simple table (columns left-aligned, padded to their widest cell)."""
    widths = [max(len(c) for c in col) for col in zip(head, *rows)]
    rule = "  ".join("=" * w for w in widths)

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    return "\n".join([rule, line(head), rule, *map(line, rows), rule])


# ------------------------------------------------------------------ tme-table

_TEXT_COLUMNS = (
    ("kernel", "kernel", "{}"), ("I [F/B]", "intensity", "{:.4g}"), ("scheme", "scheme", "{}"),
    ("N", "moduli", "{}"), ("alpha", "alpha", "{:.4g}"), ("native [s]", "native_s", "{:.3g}"),
    ("emul [s]", "emulated_s", "{:.3g}"), ("native TF/s", "native_tflops", "{:.4g}"),
    ("emul TF/s", "emulated_tflops", "{:.4g}"), ("speedup", "speedup", "{:.3g}"),
    ("regime", "regime", "{}"), ("emul bound", "emulated_limiter", "{}"),
    ("emul ridge I", "ridge_emulated", "{:.4g}"),
    ("crossover I", "crossover_intensity", "{:.4g}"), ("break-even beta", "break_even_beta", "{:.4g}"),
)


def prediction_rows(results, kernels: list[Kernel], baseline: Device | None) -> list[dict]:
    """Flat rows (:meth:`~tme_model.model.Prediction.to_dict`) of ``[(device, predictions)]``,
    with columns relative to ``baseline``'s native FP64 when given."""
    rows = []
    for _, preds in results:
        for kern, pred in zip(kernels, preds):
            row = pred.to_dict()
            if baseline is not None:
                base = native_tflops(kern, baseline)
                row.update(baseline=baseline.key, baseline_native_tflops=base,
                           native_vs_baseline=pred.native_tflops / base,
                           emulated_vs_baseline=pred.emulated_tflops / base)
            rows.append(row)
    return rows


def _cell(row: dict, key: str, fmt: str) -> str:
    if key == "crossover_intensity":
        kind = row["crossover_kind"]
        if kind == "never":
            return "never"
        tail = " (tie)" if kind == "tie" else (" (tie below)" if row["crossover_ties_below"] else "")
        return fmt.format(row[key]) + tail
    if row[key] is None:
        return "-" if key == "moduli" else "none"
    return fmt.format(row[key])


def prediction_table(rows: list[dict], markdown: bool, baseline: str | None) -> str:
    """``tme-table``'s text (right-aligned) or Markdown table, one block per device."""
    cols = list(_TEXT_COLUMNS)
    if baseline:
        cols += [(f"native/{baseline}", "native_vs_baseline", "{:.3g}"),
                 (f"emul/{baseline}", "emulated_vs_baseline", "{:.3g}")]
    out = []
    for gpu in dict.fromkeys(r["gpu"] for r in rows):
        body = [[_cell(r, k, f) for _, k, f in cols] for r in rows if r["gpu"] == gpu]
        head = [h for h, _, _ in cols]
        if markdown:
            out.append(f"**{gpu}**\n")
            out.append("| " + " | ".join(head) + " |")
            out.append("|" + "|".join("---" for _ in head) + "|")
            out += ["| " + " | ".join(line) + " |" for line in body]
        else:
            widths = [max(len(x) for x in col) for col in zip(head, *body)]
            out.append(f"== {gpu}")
            out += ["  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in [head] + body]
        out.append("")
    return "\n".join(out)


def device_list(devices: dict[str, Device]) -> str:
    """``--list-gpus``: key, FP64 vector and matrix, FP8, INT8, bandwidth and name."""
    cols = ("fp64_vector", "fp64_matrix", "fp8", "int8", "mem_bw")
    rows = [("key", "vec64", "mat64", "fp8", "int8", "TB/s", "name")]
    for d in devices.values():
        vals = [d.get(c) for c in cols]
        rows.append((d.key, *("-" if v is None else f"{v:g}" for v in vals), d.name))
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[6] for r in rows)


# -------------------------------------------------------------- tme-calibrate

def profile_summary(profile: Profile, path: str) -> str:
    """What ``tme-calibrate`` prints after writing a profile to ``path``."""
    from .profile_file import PROFILE_SCHEMA

    cal = profile.meta.get("calibration", {})
    out = [f"tme-calibrate: wrote {os.path.abspath(path)} (schema {PROFILE_SCHEMA}, device "
           f"'{profile.name}', {cal.get('seconds', '?')} s)",
           f"  native FP64 GEMM  {profile.fp64_tflops * 1e3:.1f} GFLOP/s asymptotic, n0 = "
           f"{profile.fp64_n0:.0f}",
           f"  FP64 non-GEMM     {profile.fp64_vector_tflops * 1e3:.1f} GFLOP/s (numba FMA loop)",
           f"  STREAM triad      {profile.mem_tbps * 1e3:.1f} GB/s"]
    for scheme, engines in profile.lowp_tflops.items():
        for engine, rate in engines.items():
            out.append(f"  {scheme:4s} {engine:9s}    {rate * 1e3:.3g} GFLOP/s per GEMM, "
                       f"{profile.gemms_per(scheme, engine)} GEMM(s) per modulus")
    for engine, rate in profile.fp32_tflops.items():
        out.append(f"  {engine} FP32 path {rate * 1e3:.3g} GFLOP/s asymptotic, n0 = "
                   f"{profile.fp32_n0.get(engine, 0.0):.0f} (blocks whose exact bound FP32 holds)")
    for scheme, c in profile.phases.items():
        out.append(f"  {scheme:4s} phases      scale {c.scale_s_per_element * 1e9:.2f} "
                   f"(+{c.accurate_scale_s_per_element * 1e9:.2f} accurate) ns/elt, residues "
                   f"{c.residue_s_per_element_modulus * 1e9:.2f} ns/elt/modulus, recon "
                   f"{c.recon_s_per_output_modulus * 1e9:.2f} ns/out/modulus, fixed {c.fixed_s * 1e3:.2f} ms")
    return "\n".join(out)


def _moduli_cell(r: dict) -> str:
    return "-" if r["num_moduli"] is None else str(r["num_moduli"])


def _scheme_cell(r: dict) -> str:
    return r["scheme"] + (" (fallback)" if r.get("fallback_entries") else "")


def validation_markdown(rows: list[dict]) -> str:
    """Rows of :func:`tme_model.calibration.validate` as a Markdown table, with a summary line."""
    head = ["n", "scheme", "mode", "N", "GEMMs", "predicted [s]", "measured [s]", "pred/meas"]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(["---:"] * 2 + ["---"] * 2 + ["---:"] * 4) + "|"]
    for r in rows:
        cells = [str(r["n"]), _scheme_cell(r), r["mode"] or "-", _moduli_cell(r), str(r["gemms"]),
                 f"{r['predicted_s']:.3g}", f"{r['measured_s']:.3g}", f"{r['ratio']:.2f}"]
        out.append("| " + " | ".join(cells) + " |")
    emu = [r for r in rows if r["scheme"] != "native" and r.get("kind") != "fft"]
    ffts = [r for r in rows if r.get("kind") == "fft"]
    if emu:
        worst = max(emu, key=lambda r: abs(math.log(r["ratio"])))
        within = all(0.75 <= r["ratio"] <= 1.25 for r in emu)
        out.append("")
        out.append(f"ozaki.dgemm: pred/meas from {min(r['ratio'] for r in emu):.2f} to "
                   f"{max(r['ratio'] for r in emu):.2f} (worst: n={worst['n']} {worst['scheme']} "
                   f"{worst['mode']}); within +-25%: {'yes' if within else 'no'}")
    if ffts:
        out.append("")
        out.append("FFT (predicted from the plans: " + ", ".join(
            f"{r['n']} {r['scheme']} {r['ratio']:.2f}" for r in ffts) + ")")
    return "\n".join(out)


def validation_rst(rows: list[dict], minima: list[dict] | None = None) -> str:
    """Rows of :func:`tme_model.calibration.validate` as a reStructuredText table (the docs').

    Parameters
    ----------
    rows : list of dict
        The rows, summarised by their median (or the statistic they name).
    minima : list of dict, optional
        The same rows restated from minima
        (:func:`tme_model.calibration.restate_minima`), shown as three more columns.

    Returns
    -------
    str
        The table (simple-table syntax).
    """
    head = ["n", "scheme", "mode", "N", "GEMMs", "pred [s]", f"{rows[0].get('statistic', 'median')} [s]",
            "pred/meas"]
    if minima:
        head += ["pred [s]", "min [s]", "pred/meas"]
    body = []
    for i, r in enumerate(rows):
        cells = [str(r["n"]), _scheme_cell(r), r["mode"] or "-", _moduli_cell(r), str(r["gemms"])]
        for x in [r] + ([minima[i]] if minima else []):
            cells += [f"{x['predicted_s']:.3g}", f"{x['measured_s']:.3g}", f"{x['ratio']:.2f}"]
        body.append(cells)
    return rst_table(head, body)


# ------------------------------------------------------------------- the docs

def paper_rst(preset: str, gpus: list[str], baseline: str | None = None) -> str:
    """The TME paper's projection (a preset) on its own devices, optionally relative to
    a baseline device's native FP64."""
    devices = load_devices()
    sc = Scenario.preset(preset)
    head = ["device", "kernel", "I", "native TF/s", "emulated TF/s", "speedup", "regime"]
    if baseline:
        head += [f"emulated / {baseline} native"]
    rows = []
    for gpu in gpus:
        dev = devices[gpu]
        for kern in sc.kernels():
            p = predict(kern, dev, sc.emulation(dev, kern))
            row = [gpu, kern.name, f"{p.intensity:g}", f"{p.native_tflops:.4g}",
                   f"{p.emulated_tflops:.4g}", f"{p.speedup:.3g}", p.regime]
            if baseline:
                row.append(f"{p.emulated_tflops / native_tflops(kern, devices[baseline]):.3g}")
            rows.append(row)
    return rst_table(head, rows)


def devices_rst(gamma: float | None) -> str:
    """Every shipped device: its substrate, FP64 peak, emulated ceiling, crossover and the
    speedup of each default kernel (default scenario, ``gamma`` given or estimated)."""
    devices = load_devices()
    sc = Scenario(gamma=gamma)
    kernels = catalog(DEFAULT_KERNELS)
    head = ["device", "substrate", "P64", "ceiling", "crossover I"] + list(DEFAULT_KERNELS)
    rows = []
    for key, dev in devices.items():
        try:
            pick = choose_scheme(dev)
        except TMEError:
            rows.append([key, "no INT8/FP8 figure"] + ["n/a"] * (len(head) - 2))
            continue
        p64 = dev.p64(True)
        cross = (f"{p64 / dev.bandwidth():.3g}" if pick.ceiling > p64 else "never")
        speed = [f"{predict(k, dev, sc.emulation(dev, k)).speedup:.3g}" for k in kernels]
        rows.append([key, f"{pick.scheme} N={pick.moduli} a={pick.alpha}", f"{p64:g}",
                     f"{pick.ceiling:.4g}", cross] + speed)
    return rst_table(head, rows)


def kernels_rst() -> str:
    """The default kernels: W, Q, I (and the paper's), n_out, k and the emulated work ratio."""
    head = ["kernel", "W [flop]", "Q [byte]", "I", "paper I", "n_out", "k", "GEMM work / W"]
    rows = [[k.name, f"{k.flops:.4g}", f"{k.bytes:.4g}", f"{k.intensity:.4g}",
             f"{PAPER_INTENSITY[k.name]:g}", f"{k.n_out:.4g}", str(k.k), f"{k.work_ratio:.4g}"]
            for k in catalog(DEFAULT_KERNELS)]
    return rst_table(head, rows)


#: Devices and workloads of the FFT projection on the docs page.
FFT_PROJECTION_GPUS: tuple[str, ...] = ("b300", "gb300", "b200", "h200", "mi355x", "rtx4090",
                                        "paper:b300")
FFT_PROJECTION_CASES: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...] = (
    ("16 x 2^20", (16, 1 << 20), (-1,)), ("256^3", (256, 256, 256), (0, 1, 2)))


def fft_projection_rst(gpus: Sequence[str] = FFT_PROJECTION_GPUS, cases=FFT_PROJECTION_CASES) -> str:
    """Modelled native FP64 FFT against the emulated stages of ``fft``'s plans, per device:
    with a fused reconstruction (gamma = 0) and an unfused one (gamma estimated), fast
    mode (:func:`tme_model.fft_projection.project_fft`; needs the ``fft`` package)."""
    from .fft_projection import project_fft
    from .fft_workload import fft_workload

    devices = load_devices()
    head = ["workload", "device", "substrate", "native [ms]", "native bound",
            "emulated, gamma=0 [ms]", "winner", "emulated, gamma est. [ms]", "winner"]
    rows = []
    for label, shape, axes in cases:
        w = fft_workload(shape, axes, counts=False)
        for gpu in gpus:
            fused, unfused = (project_fft(w, devices[gpu], Scenario(mode="fast", gamma=g))
                              for g in (0.0, None))
            rows.append([label, gpu, f"{fused.scheme} N={fused.moduli}", f"{fused.native_s * 1e3:.3g}",
                         fused.native_bound, f"{fused.emulated_s * 1e3:.3g}",
                         f"{fused.winner} ({fused.speedup:.2g}x)", f"{unfused.emulated_s * 1e3:.3g}",
                         f"{unfused.winner} ({unfused.speedup:.2g}x)"])
    return rst_table(head, rows)


# ------------------------------------------------------------------- CPUs

#: Orders n of the square GEMMs of the CPU tables.
CPU_SIZES: tuple[int, ...] = (256, 512, 1024, 2048, 4096, 8192, 16384)


def cpu_list(cpus: dict[str, Device]) -> str:
    """``--cpu list``: key, ISA, cores, GHz, FP64, INT8, bandwidth, INT8 GEMMs per product
    on ``cpu-onednn`` and name."""
    rows = [("key", "isa", "cores", "GHz", "fp64", "int8", "TB/s", "i8/prod", "name")]
    for d in cpus.values():
        cpu = {k: (None if f is None else f.value) for k, f in
               ((k, d.cpu.get(k)) for k in ("cores", "ghz"))}
        vals = [cpu["cores"], cpu["ghz"], d.get("fp64_vector"), d.get("int8"), d.get("mem_bw")]
        rows.append((d.key, d.isa or "-", *("-" if v is None else f"{v:g}" for v in vals),
                     str(int8_gemms_per_product(d)), d.name))
    widths = [max(len(r[i]) for r in rows) for i in range(8)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[8] for r in rows)


def cpu_rows(device: Device, mode: str = "accurate", gamma: float | None = None,
             sizes: Sequence[int] = CPU_SIZES) -> list[dict]:
    """Predicted seconds of the CPU paths (:data:`tme_model.cpus.CPU_PATHS`) for
    square GEMMs of each order in ``sizes`` (N and k-blocks at k = n).

    Returns
    -------
    list of dict
        Per n: ``n``, ``<path>_s`` and ``<path>_moduli`` / ``<path>_gemms`` per path,
        ``int8_over_fp64``, ``int8_over_native``, ``int7_over_fp64`` and
        ``int7_over_native`` (time ratios).
    """
    rows = []
    for n in sizes:
        row: dict = {"cpu": device.key, "mode": mode, "n": int(n)}
        for label in CPU_PATHS:
            path = cpu_path(device, label, mode, k=int(n), gamma=gamma)
            row[f"{label}_s"] = path.seconds(n)
            row[f"{label}_moduli"], row[f"{label}_gemms"] = path.moduli, path.gemms
        for s in ("int8", "int7"):
            row[f"{s}_over_fp64"] = row[f"{s}/cpu-onednn_s"] / row["fp64/cpu-blas_s"]
            row[f"{s}_over_native"] = row[f"{s}/cpu-onednn_s"] / row["native_s"]
        rows.append(row)
    return rows


def cpu_crossovers(device: Device, mode: str = "accurate", gamma: float | None = None) -> list:
    """The crossovers in n of :data:`tme_model.cpus.CROSSOVERS`, in its order: the int8
    scheme against the fp64 scheme and native DGEMM, the fp64 scheme against native,
    the int7 scheme against the fp64 scheme and native (paths at
    :data:`~tme_model.schemes.REFERENCE_K`)."""
    p = {label: cpu_path(device, label, mode, gamma=gamma) for label in CPU_PATHS}
    return [cpu_crossover(p[x], p[y]) for x, y in CROSSOVERS]


def cpu_table(device: Device, mode: str = "accurate", gamma: float | None = None,
              sizes: Sequence[int] = CPU_SIZES) -> str:
    """The text ``tme-plot --cpu`` and ``tme-table --cpu`` print for one CPU."""
    rows = cpu_rows(device, mode, gamma, sizes)
    per = int8_gemms_per_product(device)
    r0 = rows[-1]
    head = ["n", "native [s]", "fp64/cpu-blas [s]", "int8/cpu-onednn [s]", "int7/cpu-onednn [s]",
            "int8/fp64", "int8/native", "int7/fp64", "int7/native"]
    body = [[str(r["n"])] + [f"{r[f'{p}_s']:.3g}" for p in CPU_PATHS]
            + [f"{r[f'{s}_over_{b}']:.3g}" for s in ("int8", "int7") for b in ("fp64", "native")]
            for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    out = [f"== {device.key}: {device.name}",
           f"isa {device.isa} ({'VNNI/AMX: one INT8 GEMM' if per == 1 else 'no VNNI: two INT8 GEMMs'} "
           f"per int8 product on cpu-onednn, one per int7 product); {mode} mode; fp64 scheme "
           f"N={r0['fp64/cpu-blas_moduli']} ({r0['fp64/cpu-blas_gemms']:g} GEMMs), int8 scheme "
           f"N={r0['int8/cpu-onednn_moduli']} ({r0['int8/cpu-onednn_gemms']:g} INT8 GEMMs), int7 "
           f"scheme N={r0['int7/cpu-onednn_moduli']} ({r0['int7/cpu-onednn_gemms']:g} INT8 GEMMs); "
           f"gamma {'estimated' if gamma is None else f'{gamma:g} s/output'}"]
    out += ["  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in [head] + body]
    out += ["crossovers: " + "; ".join(c.describe() for c in cpu_crossovers(device, mode, gamma))]
    return "\n".join(out)


def cpus_rst(mode: str = "accurate", n: int = 2048) -> str:
    """Every shipped CPU: ISA, INT8 GEMMs per int8 product, peaks, the int8 and int7
    schemes' time ratios at order ``n`` and their crossovers against the fp64 scheme and
    native DGEMM (the docs' table; gamma estimated)."""
    schemes = ("int8", "int7")
    head = (["cpu", "isa", "i8/prod", "FP64 TF/s", "INT8 TOP/s"]
            + [f"{s}/{b} (n={n})" for s in schemes for b in ("fp64", "native")]
            + [f"{s} beats {b}" for s in schemes for b in ("fp64 scheme", "native")])
    rows = []
    for key, dev in load_cpus().items():
        (r,) = cpu_rows(dev, mode, None, (n,))
        cross = cpu_crossovers(dev, mode)
        rows.append([key, dev.isa, str(int8_gemms_per_product(dev)), f"{dev.get('fp64_vector'):g}",
                     f"{dev.get('int8'):g}"]
                    + [f"{r[f'{s}_over_{b}']:.3g}" for s in schemes for b in ("fp64", "native")]
                    + [("never" if c.kind == "never" else f"n > {c.n:.3g}" if c.kind == "above"
                        else c.describe()) for c in cross[:2] + cross[3:]])
    return rst_table(head, rows)
