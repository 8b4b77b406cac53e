"""Measure and draw ``docs/_static/fft-time-vs-n.png``: time of a 1-D complex FFT
against its length N, for :func:`fft.fft` (emulated stages), the same plans on native
FP64 GEMMs (``fft.Plan(n, native=True)``), ``scipy.fft.fft`` (``workers=-1``) and the
TME prediction of the emulated and native-plan transforms
(:func:`tme_model.fft_workload.predict_fft`) from the calibrated profile
``docs/_generated/tme_profile.json``.

Usage (from the repository root)::

    .venv/bin/python docs/_scripts/fft_time_figure.py [--repeat 3] [--from-json]

The measurements go to ``docs/_generated/fft_time_vs_n.json`` (median of
``--repeat`` runs, the three transforms timed in rotation after a warm-up);
``--from-json`` redraws the figure from that file without measuring. Takes about a
minute on 2 cores (N = 2**8 .. 2**20, one transform each).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_common import rotate  # noqa: E402

DATA = ROOT / "docs" / "_generated" / "fft_time_vs_n.json"
FIGURE = ROOT / "docs" / "_static" / "fft-time-vs-n.png"
PROFILE = ROOT / "docs" / "_generated" / "tme_profile.json"
LENGTHS = [1 << e for e in range(8, 21, 2)]


def measure(repeat: int) -> dict:
    """Time the three transforms at each length and predict two of them from the profile."""
    import scipy.fft

    import fft
    from tme_model.fft_workload import fft_workload, predict_fft
    from tme_model.profile_file import load_profile

    profile = load_profile(PROFILE)
    rng = np.random.default_rng(0)
    rows = []
    for n in LENGTHS:
        x = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        native = fft.Plan(n, native=True)
        te, tp, ts = rotate([lambda: fft.fft(x), lambda: fft.fft(x, plan=native),
                              lambda: scipy.fft.fft(x, workers=-1)], repeat)
        pe = predict_fft(fft_workload((n,)), profile).total_s
        pp = predict_fft(fft_workload((n,), plans=native), profile).total_s
        rows.append({"n": n, "radices": fft.get_plan(n).radices, "emulated_s": te,
                     "native_plan_s": tp, "scipy_s": ts, "predicted_emulated_s": pe,
                     "predicted_native_plan_s": pp})
        print(f"N = {n:8d}: emulated {te:.3g} s, native plan {tp:.3g} s, scipy {ts:.3g} s, "
              f"predicted {pe:.3g} / {pp:.3g} s")
    return {"repeat": repeat, "profile": str(PROFILE.relative_to(ROOT)),
            "host": platform.node(), "created": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "rows": rows}


def draw(data: dict) -> None:
    """Draw the figure from measured (or stored) rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["rows"]
    n = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    ax.loglog(n, [r["emulated_s"] for r in rows], "o-", color="tab:blue", label="fft.fft (emulated stages)")
    ax.loglog(n, [r["native_plan_s"] for r in rows], "s-", color="tab:orange",
              label="same plan, native FP64 GEMMs")
    ax.loglog(n, [r["scipy_s"] for r in rows], "^-", color="tab:green", label="scipy.fft.fft")
    ax.loglog(n, [r["predicted_emulated_s"] for r in rows], "--", color="tab:blue",
              label="TME prediction, emulated (calibrated profile)")
    ax.loglog(n, [r["predicted_native_plan_s"] for r in rows], "--", color="tab:orange",
              label="TME prediction, native plan")
    ax.set_xlabel("N (one complex 1-D transform)")
    ax.set_ylabel("time [s] (median)")
    ax.set_xscale("log", base=2)
    ax.set_title(f"1-D complex FFT on this machine (median of {data['repeat']} runs)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    FIGURE.parent.mkdir(exist_ok=True)
    fig.savefig(FIGURE, dpi=90)
    plt.close(fig)
    print(f"wrote {FIGURE.relative_to(ROOT)}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--from-json", action="store_true", help="redraw from the stored measurements")
    a = p.parse_args(argv)
    if a.from_json:
        data = json.loads(DATA.read_text())
    else:
        data = measure(a.repeat)
        DATA.write_text(json.dumps(data, indent=2) + "\n")
    draw(data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
