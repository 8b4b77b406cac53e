"""Regenerate the generated parts of ``docs/tme_model.rst`` and its figures.

Usage: ``python -m tme_model._docs [--check] [--figures]``.  Blocks between the comment
lines ``.. BEGIN GENERATED: <name>`` and ``.. END GENERATED: <name>`` are replaced by
:func:`render`; ``--check`` only reports stale blocks (exit status 1), ``--figures``
also redraws ``docs/_static/roofline-*.png`` through ``tme-plot``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from .kernels import DEFAULT_KERNELS, catalog
from .model import predict
from .scenario import Scenario
from .schemes import choose_scheme
from .specs import TMEError, load_devices

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGE = DOCS / "tme_model.rst"
FIGURES = {
    "roofline-b300.png": ["--gpu", "b300"],
    "roofline-h100.png": ["--gpu", "h100"],
    "roofline-paper-b300-v3.png": ["--gpu", "paper:b300", "--preset", "paper-v3"],
}
_FORMS = (
    ("t_native", "Native time", r"T_{\mathrm{native}}"),
    ("t_emul", "Emulated time", r"T_{\mathrm{emul}}"),
    ("p_native", "Native throughput at intensity I (W = I Q)", r"P_{\mathrm{native}}(I)"),
    ("p_emul", "Emulated throughput at gamma = 0", r"P_{\mathrm{emul}}(I)"),
    ("ridge_native", "Native ridge", r"I_{\mathrm{native}}"),
    ("ridge_emul", "Emulated ridge", r"I_{\mathrm{emul}}"),
    ("ceiling_emul", "Emulated FP64 ceiling", r"P_{\mathrm{emul}}^{\max}"),
    ("speedup_memory_memory", "Speedup, both memory-bound", "S"),
    ("speedup_compute_memory", "Speedup, native compute-bound, emulation memory-bound", "S"),
    ("speedup_compute_compute", "Speedup, both compute-bound", "S"),
    ("speedup_memory_compute", "Speedup, native memory-bound, emulation compute-bound", "S"),
    ("wins_if", "A crossover exists iff this margin is positive", r"m"),
    ("crossover_g", "Crossover intensity, with g = gamma n_out / W", r"I_{\times}"),
    ("crossover_gamma0", "Crossover intensity at gamma = 0", r"I_{\times}"),
    ("break_even_beta", "Break-even beta", r"\beta^{*}"),
    ("break_even_beta_gamma0", "Break-even beta at gamma = 0", r"\beta^{*}"),
)


def _rst_table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(c) for c in col) for col in zip(head, *rows)]
    rule = "  ".join("=" * w for w in widths)
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([rule, line(head), rule, *map(line, rows), rule])


def _forms() -> str:
    import sympy

    from .symbolic import latex

    tex = latex()
    out = [f".. printed by sympy {sympy.__version__}", ""]
    for key, title, lhs in _FORMS:
        out += [f"{title} (``{key}``):", "", ".. math::", "", f"   {lhs} = {tex[key]}", ""]
    return "\n".join(out).rstrip()


def _paper(preset: str, gpus: list[str], baseline: str | None = None) -> str:
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
                from .model import native_tflops

                row.append(f"{p.emulated_tflops / native_tflops(kern, devices[baseline]):.3g}")
            rows.append(row)
    return _rst_table(head, rows)


def _devices(gamma: float | None) -> str:
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
    return _rst_table(head, rows)


def _kernels() -> str:
    from .kernels import PAPER_INTENSITY

    head = ["kernel", "W [flop]", "Q [byte]", "I", "paper I", "n_out", "k", "GEMM work / W"]
    rows = [[k.name, f"{k.flops:.4g}", f"{k.bytes:.4g}", f"{k.intensity:.4g}",
             f"{PAPER_INTENSITY[k.name]:g}", f"{k.n_out:.4g}", str(k.k), f"{k.work_ratio:.4g}"]
            for k in catalog(DEFAULT_KERNELS)]
    return _rst_table(head, rows)


def render() -> dict[str, str]:
    """Return the generated blocks of ``docs/tme_model.rst`` by name.

    Returns
    -------
    dict of str to str
        reStructuredText of each block.
    """
    return {
        "forms": _forms(),
        "kernels": _kernels(),
        "paper-v3": _paper("paper-v3", ["paper:b300", "paper:r200"], baseline="paper:h100"),
        "paper-v1": _paper("paper-v1", ["paper:b300", "paper:r200"]),
        "devices-gamma0": _devices(0.0),
        "devices-gamma-auto": _devices(None),
    }


def _replace(text: str, blocks: dict[str, str]) -> tuple[str, list[str]]:
    stale = []
    for name, body in blocks.items():
        pat = re.compile(rf"^\.\. BEGIN GENERATED: {re.escape(name)}\n(.*?)^\.\. END GENERATED: "
                         rf"{re.escape(name)}$", re.S | re.M)
        m = pat.search(text)
        if m is None:
            raise ValueError(f"{PAGE}: no generated block {name!r}")
        new = f"\n{body}\n\n"
        if m.group(1) != new:
            stale.append(name)
            text = text[: m.start(1)] + new + text[m.end(1):]
    return text, stale


def forms_printed_by(path: Path = PAGE) -> str | None:
    """The sympy version that printed the page's closed forms (its printing varies)."""
    m = re.search(r"^\.\. printed by sympy (\S+)$", path.read_text(), re.M)
    return m.group(1) if m else None


def stale_blocks(path: Path = PAGE) -> list[str]:
    """Return the names of generated blocks whose text is out of date.

    Parameters
    ----------
    path : Path, optional
        The docs page.

    Returns
    -------
    list of str
        Block names; empty when the page is current.
    """
    return _replace(path.read_text(), render())[1]


def main(argv: list[str] | None = None) -> int:
    """Regenerate (or with ``--check`` verify) the docs page; ``--figures`` redraws figures."""
    argv = sys.argv[1:] if argv is None else argv
    text, stale = _replace(PAGE.read_text(), render())
    if "--check" in argv:
        print("stale: " + ", ".join(stale) if stale else "up to date")
        return 1 if stale else 0
    PAGE.write_text(text)
    print(f"updated {', '.join(stale) or 'nothing'} in {PAGE}")
    if "--figures" in argv:
        from .cli import plot_main

        (DOCS / "_static").mkdir(exist_ok=True)
        for name, args in FIGURES.items():
            plot_main(args + ["-o", str(DOCS / "_static" / name), "--dpi", "90"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
