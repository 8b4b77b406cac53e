"""Command-line tools: ``tme-plot``, ``tme-table`` and ``tme-calibrate``.

Each ``*_main`` takes an argument list (``None``: ``sys.argv[1:]``) and returns the
exit status; usage errors exit with status 2 and a message on stderr.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
from pathlib import Path
from typing import Sequence

from .kernels import DEFAULT_KERNELS, Kernel, intensity_kernel
from .model import native_tflops, predict
from .profile import load_profile
from .scenario import PRESETS, Scenario
from .schemes import GRADES, MODES, SCHEMES
from .specs import Device, TMEError, get_device, load_devices

__all__ = ["calibrate_main", "plot_main", "table_main"]

_PLOT_FORMATS = (".png", ".svg", ".pdf")


def _gamma(text: str) -> float | None:
    if text.lower() == "auto":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"gamma must be a number of seconds or 'auto', got {text!r}")


def _parser(prog: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=description)
    dev = p.add_argument_group("devices")
    dev.add_argument("--gpu", action="append", metavar="KEY",
                     help="device key (repeatable: one panel or block each); see --list-gpus")
    dev.add_argument("--list-gpus", action="store_true", help="list the known devices and exit")
    dev.add_argument("--specs", action="append", default=[], metavar="FILE",
                     help="TOML/JSON device file adding or overriding devices (repeatable)")
    dev.add_argument("--profile", metavar="FILE",
                     help="calibration profile (JSON), shown as device 'local'")
    mod = p.add_argument_group("model")
    mod.add_argument("--preset", choices=sorted(PRESETS),
                     help="the TME paper's configurations (alpha 10 or 37, FP8, its intensities)")
    mod.add_argument("--scheme", choices=("auto",) + SCHEMES,
                     help="low-precision substrate (default auto: the best on each device)")
    mod.add_argument("--moduli", type=int, help="number of moduli N (default: FP64 grade)")
    mod.add_argument("--mode", choices=MODES, help="scaling mode (default accurate)")
    mod.add_argument("--alpha", type=float, help="compute multiplier, given directly (>= 1)")
    mod.add_argument("--beta", type=float, help="memory-traffic multiplier (>= 1, default 1)")
    mod.add_argument("--gamma", type=_gamma, default=argparse.SUPPRESS, metavar="SECONDS|auto",
                     help="reconstruction seconds per output (default auto: estimated, or "
                          "from --profile; 0 in the presets)")
    mod.add_argument("--grade", choices=GRADES, help="accuracy for automatic moduli (default 2x-native)")
    ker = p.add_argument_group("kernels")
    ker.add_argument("--kernels", default=",".join(DEFAULT_KERNELS),
                     help="comma-separated kernels, e.g. dgemm,dgemm:4096,gemv-b8,spmv "
                          f"(default {','.join(DEFAULT_KERNELS)})")
    ker.add_argument("--intensity", type=float, action="append", default=[], metavar="I",
                     help="add a kernel given only by its intensity in FLOP/byte (repeatable)")
    return p


def _scenario(p: argparse.ArgumentParser, a: argparse.Namespace) -> Scenario:
    gamma_given = hasattr(a, "gamma")
    gamma = a.gamma if gamma_given else None
    try:
        if a.preset:
            clash = [f"--{n}" for n in ("scheme", "moduli", "mode", "alpha", "grade")
                     if getattr(a, n) is not None]
            if clash:
                p.error(f"--preset {a.preset} fixes the substrate; drop {', '.join(clash)}")
            sc = Scenario.preset(a.preset, beta=a.beta)
            return sc if not gamma_given else Scenario(**{**sc.__dict__, "gamma": gamma})
        return Scenario(scheme=a.scheme or "auto", moduli=a.moduli, mode=a.mode or "accurate",
                        alpha=a.alpha, beta=1.0 if a.beta is None else a.beta, gamma=gamma,
                        grade=a.grade or "2x-native")
    except ValueError as exc:
        p.error(str(exc))


def _devices(p: argparse.ArgumentParser, a: argparse.Namespace) -> dict[str, Device]:
    try:
        devices = load_devices(a.specs)
        if a.profile:
            dev = load_profile(a.profile).device()
            devices[dev.key] = dev
    except TMEError as exc:
        p.error(str(exc))
    return devices


def _kernels(p: argparse.ArgumentParser, a: argparse.Namespace, sc: Scenario) -> list[Kernel]:
    names = [n.strip() for n in a.kernels.split(",") if n.strip()]
    try:
        kernels = sc.kernels(names) + [intensity_kernel(i) for i in a.intensity]
    except ValueError as exc:
        p.error(str(exc))
    if not kernels:
        p.error("no kernels selected")
    return kernels


def _list(devices: dict[str, Device]) -> str:
    cols = ("fp64_vector", "fp64_matrix", "fp8", "int8", "mem_bw")
    rows = [("key", "vec64", "mat64", "fp8", "int8", "TB/s", "name")]
    for d in devices.values():
        vals = [d.get(c) for c in cols]
        rows.append((d.key, *("-" if v is None else f"{v:g}" for v in vals), d.name))
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[6] for r in rows)


def _run(prog: str, description: str, argv: Sequence[str] | None, extra) -> tuple:
    p = _parser(prog, description)
    extra(p)
    a = p.parse_args(argv)
    devices = _devices(p, a)
    if a.list_gpus:
        print(_list(devices))
        return p, a, None, None
    sc = _scenario(p, a)
    kernels = _kernels(p, a, sc)
    gpus = a.gpu or ([load_profile(a.profile).name] if a.profile else None)
    if not gpus:
        p.error("give at least one --gpu (see --list-gpus)")
    results = []
    try:
        for key in gpus:
            dev = get_device(key, devices)
            results.append((dev, [predict(k, dev, sc.emulation(dev, k)) for k in kernels]))
    except (TMEError, ValueError) as exc:
        p.error(str(exc))
    return p, a, sc, results


def plot_main(argv: Sequence[str] | None = None) -> int:
    """``tme-plot``: draw TME rooflines, one panel per ``--gpu``.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status (0).
    """
    def extra(p):
        p.add_argument("-o", "--output", metavar="FILE",
                       help="output file, .png/.svg/.pdf (default tme-<gpu>.png in the cwd)")
        p.add_argument("--dpi", type=int, default=110, help="resolution of raster output")

    p, a, sc, results = _run("tme-plot", "Roofline of native vs emulated FP64 (TME model).",
                             argv, extra)
    if results is None:
        return 0
    if a.output:
        out = Path(a.output)
        if out.suffix.lower() not in _PLOT_FORMATS:
            p.error(f"output must end in {', '.join(_PLOT_FORMATS)}, got {out.name!r}")
    else:
        out = Path.cwd() / ("tme-" + "_".join(re.sub(r"[^a-z0-9.-]+", "-", d.key)
                                              for d, _ in results) + ".png")
    from .plot import roofline_figure, save_figure

    save_figure(roofline_figure(results, sc.describe()), str(out), dpi=a.dpi)
    print(f"tme-plot: wrote {out.resolve()}")
    return 0


_TEXT_COLUMNS = (
    ("kernel", "kernel", "{}"), ("I [F/B]", "intensity", "{:.4g}"), ("scheme", "scheme", "{}"),
    ("N", "moduli", "{}"), ("alpha", "alpha", "{:.4g}"), ("native [s]", "native_s", "{:.3g}"),
    ("emul [s]", "emulated_s", "{:.3g}"), ("native TF/s", "native_tflops", "{:.4g}"),
    ("emul TF/s", "emulated_tflops", "{:.4g}"), ("speedup", "speedup", "{:.3g}"),
    ("regime", "regime", "{}"), ("emul bound", "emulated_limiter", "{}"),
    ("emul ridge I", "ridge_emulated", "{:.4g}"),
    ("crossover I", "crossover_intensity", "{:.4g}"), ("break-even beta", "break_even_beta", "{:.4g}"),
)


def _rows(results, kernels: list[Kernel], baseline: Device | None) -> list[dict]:
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


def _table(rows: list[dict], markdown: bool, baseline: str | None) -> str:
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


def table_main(argv: Sequence[str] | None = None) -> int:
    """``tme-table``: one row per kernel with the TME model's predictions.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status (0).
    """
    def extra(p):
        p.add_argument("--format", choices=("text", "markdown", "json", "csv"), default="text")
        p.add_argument("--baseline", metavar="KEY",
                       help="add columns relative to this device's native FP64 (e.g. paper:h100)")

    p, a, sc, results = _run("tme-table", "Native vs emulated FP64 per kernel (TME model).",
                             argv, extra)
    if results is None:
        return 0
    baseline = None
    if a.baseline:
        try:
            baseline = get_device(a.baseline, _devices(p, a))
        except TMEError as exc:
            p.error(str(exc))
    try:
        rows = _rows(results, _kernels(p, a, sc), baseline)
    except TMEError as exc:
        p.error(str(exc))
    if a.format == "json":
        print(json.dumps(rows, indent=2))
    elif a.format == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        print(buf.getvalue(), end="")
    else:
        print(f"TME model: {sc.describe()}\n")
        print(_table(rows, a.format == "markdown", baseline.key if baseline else None))
    return 0


def calibrate_main(argv: Sequence[str] | None = None) -> int:
    """``tme-calibrate``: measure this machine into a profile (see :mod:`tme_model.calibrate`).

    ``tme-calibrate [-o profile.json] [--sizes 1536,3072] [--quick]`` writes a profile for
    ``--profile FILE``; ``--validate`` then compares its predictions of ``ozaki.dgemm``
    with measured times at held-out sizes.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status (0; usage errors exit with 2).
    """
    from .calibrate import main

    return main(argv)
