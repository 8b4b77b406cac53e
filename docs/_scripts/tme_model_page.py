"""Regenerate the generated parts of ``docs/tme_model.rst``, its validation table and
its figures, from :mod:`tme_model`.

Usage (from the repository root)::

    .venv/bin/python docs/_scripts/tme_model_page.py [--check] [--figures]

Blocks between the comment lines ``.. BEGIN GENERATED: <name>`` and
``.. END GENERATED: <name>`` are replaced by :func:`render`;
``docs/_generated/tme_validation.rst`` and ``tme_fft_validation.rst`` are rewritten from
the stored rows and profile (``tme_validation.json``, ``tme_fft_validation.json``,
``tme_profile.json``, measured by ``tme-calibrate --validate``: they are not
re-measured here). ``--check`` only reports what is stale (exit status 1),
``--figures`` also redraws ``docs/_static/roofline-*.png`` through ``tme-plot``. Needs
the ``[symbolic]`` extra (sympy) for the closed forms and ``[plot]`` for the figures.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tme_model import tables  # noqa: E402

DOCS = ROOT / "docs"
PAGE = DOCS / "tme_model.rst"
GENERATED = DOCS / "_generated"
FIGURES = {
    "roofline-b300.png": ["--gpu", "b300"],
    "roofline-h100.png": ["--gpu", "h100"],
    "roofline-paper-b300-v3.png": ["--gpu", "paper:b300", "--preset", "paper-v3"],
}
FORMS = (
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


def forms() -> str:
    """The closed forms of :func:`tme_model.symbolic.latex`, one math block each."""
    from tme_model.extras import require
    from tme_model.symbolic import latex

    tex = latex()
    out = [f".. printed by sympy {require('sympy').__version__}", ""]
    for key, title, lhs in FORMS:
        out += [f"{title} (``{key}``):", "", ".. math::", "", f"   {lhs} = {tex[key]}", ""]
    return "\n".join(out).rstrip()


def render() -> dict[str, str]:
    """Return the generated blocks of ``docs/tme_model.rst`` by name."""
    return {
        "forms": forms(),
        "kernels": tables.kernels_rst(),
        "paper-v3": tables.paper_rst("paper-v3", ["paper:b300", "paper:r200"], baseline="paper:h100"),
        "paper-v1": tables.paper_rst("paper-v1", ["paper:b300", "paper:r200"]),
        "devices-gamma0": tables.devices_rst(0.0),
        "devices-gamma-auto": tables.devices_rst(None),
        "fft-projection": tables.fft_projection_rst(),
    }


def validation_table() -> str:
    """``_generated/tme_validation.rst`` from the stored rows and profile."""
    from tme_model.calibration import restate_minima
    from tme_model.profile_file import load_profile

    rows = json.loads((GENERATED / "tme_validation.json").read_text())
    profile = load_profile(GENERATED / "tme_profile.json")
    return tables.validation_rst(rows, restate_minima(rows, profile)) + "\n"


def fft_validation_table() -> str:
    """``_generated/tme_fft_validation.rst``: the stored FFT rows of ``--validate``."""
    from tme_model.calibration import restate_minima
    from tme_model.profile_file import load_profile

    rows = json.loads((GENERATED / "tme_fft_validation.json").read_text())
    profile = load_profile(GENERATED / "tme_profile.json")
    return tables.validation_rst(rows, restate_minima(rows, profile)) + "\n"


def replace_blocks(text: str, blocks: dict[str, str]) -> tuple[str, list[str]]:
    """Return ``text`` with its generated blocks replaced, and the names of those that changed."""
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
    """Names of the page's generated blocks whose text is out of date (empty: current)."""
    return replace_blocks(path.read_text(), render())[1]


def main(argv: list[str] | None = None) -> int:
    """Regenerate (or with ``--check`` verify) the page; ``--figures`` redraws figures."""
    argv = sys.argv[1:] if argv is None else argv
    text, stale = replace_blocks(PAGE.read_text(), render())
    written = {GENERATED / "tme_validation.rst": validation_table(),
               GENERATED / "tme_fft_validation.rst": fft_validation_table()}
    for path, table in written.items():
        if not path.exists() or path.read_text() != table:
            stale.append(str(path.relative_to(ROOT)))
    if "--check" in argv:
        print("stale: " + ", ".join(stale) if stale else "up to date")
        return 1 if stale else 0
    PAGE.write_text(text)
    for path, table in written.items():
        path.write_text(table)
    print(f"updated {', '.join(stale) or 'nothing'}")
    if "--figures" in argv:
        from tme_model.cli import plot_main

        (DOCS / "_static").mkdir(exist_ok=True)
        for name, args in FIGURES.items():
            plot_main(args + ["-o", str(DOCS / "_static" / name), "--dpi", "90"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
