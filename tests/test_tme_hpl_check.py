"""Tests of tme_model.hpl_check: the model against a synthetic record of
benchmarks/mpi/hpl.py (its time the model's times a known factor, its traffic the
model's), and the command lines (python -m tme_model.hpl_check, and python -m
tme_model.hpl_network --check)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tme_model import hpl_check as C
from tme_model import hpl_network as H
from tme_model.network import Network, RankRates
from tme_model.profile import PhaseCosts, Profile
from tme_model.specs import TMEError

PROFILE = Profile("local", 0.05, 0.01, 0.012, {"fp64": {"cpu-blas": 0.04}},
                  phases={"fp64": PhaseCosts(2e-9, 4e-9, 1.5e-9, 3e-9, 1e-3)}, fp64_n0=300.0)
NET = Network("x", "x", 5e-6, 2e9)


def _record(n=96, nb=16, P=2, Q=2, kind="emulated", scale=1.1):
    """A run as benchmarks/mpi/hpl.py writes it, its time the model's times ``scale``."""
    machine = C.ProfileMachine(PROFILE, 1.0, "fp64", 6, "accurate", None, True)
    t = H.hpl_time(n, nb, P, Q, machine, NET, emulated=kind == "emulated", panel="cached")
    per = []
    for p in range(P):
        for q in range(Q):
            f, s = H.hpl_traffic(n, nb, P, Q, p, q), H.solve_traffic(n, nb, P, Q, p, q)
            per.append({k: [int(round(f.get(k, (0, 0))[0] + s.get(k, (0, 0))[0])),
                            f.get(k, (0, 0))[1] + s.get(k, (0, 0))[1]] for k in {*f, *s}})
    return {"kind": kind, "n": n, "nb": nb, "grid": f"{P}x{Q}", "P": P, "Q": Q,
            "seconds": scale * t["total_s"], "factor_seconds": scale * t["factor_s"],
            "phases": {"panel": 0.1, "triangular": 0.0, "updates": 0.2, "other": 0.0,
                       "communication": 0.1},
            "traffic_rank0": per[0],
            "traffic_max": {k: [max(r[k][0] for r in per), max(r[k][1] for r in per)]
                            for k in per[0]}}


def test_check_on_a_synthetic_record():
    doc = {"meta": {"ozaki": "Resolved(scheme='fp64', num_moduli='auto', mode='accurate')",
                    "small_products": True},
           "runs": [_record(), _record(kind="native", scale=2.0), _record(P=1, Q=4)]}
    emu, nat, wide = C.check_runs(doc, PROFILE, NET)
    assert emu["ratio"] == pytest.approx(1 / 1.1, rel=1e-9) and emu["within_target"]
    assert emu["factor_ratio"] == pytest.approx(1 / 1.1, rel=1e-9)
    assert nat["ratio"] == pytest.approx(0.5, rel=1e-9) and not nat["within_target"]
    assert emu["traffic_exact"] and nat["traffic_exact"] and wide["traffic_exact"]
    assert emu["scheme"] == "fp64" and emu["moduli"] == 6  # ozaki.auto_num_moduli("fp64", 16)
    bad = _record()
    bad["traffic_rank0"]["panels"][0] += 8
    assert C.check_runs([bad], PROFILE, NET)[0]["traffic_exact"] is False
    with pytest.raises(TMEError, match="grid 'PxQ'"):
        C.check_runs([{"kind": "native", "n": 8}], PROFILE, NET)
    with pytest.raises(TMEError, match="runs"):
        C.check_runs({"meta": {}}, PROFILE, NET)


def test_check_command_line(tmp_path, capsys):
    from tme_model.profile_file import dump_profile
    prof, out = tmp_path / "profile.json", tmp_path / "out.json"
    dump_profile(PROFILE, prof)
    out.write_text(json.dumps({"meta": {}, "runs": [_record()]}))
    assert H.main(["--check", str(out), "--profile", str(prof), "--alpha", "5e-6",
                   "--beta", "2e9"]) == 0
    text = capsys.readouterr().out
    assert "MEASURED" in text and "| emulated | 96 | 16 | 2x2 |" in text and "| 0.91 |" in text
    assert H.main(["--check", str(out), "--profile", str(prof), "--alpha", "5e-6",
                   "--beta", "2e9", "--format", "json"]) == 0
    row, = json.loads(capsys.readouterr().out)  # plain JSON types throughout
    assert row["ratio"] == pytest.approx(1 / 1.1) and row["traffic_exact"] is True
    assert H.main(["--check", str(out), "--profile", str(prof), "--alpha", "5e-6",
                   "--beta", "2e9", "--format", "json", "--panel", "streamed"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["predicted_s"] > row["predicted_s"]
    assert C.main(["--check", str(out), "--profile", str(prof), "--alpha", "5e-6",
                   "--beta", "2e9", "--format", "json"]) == 0  # its own entry
    assert json.loads(capsys.readouterr().out) == [row]
    with pytest.raises(SystemExit):
        H.main(["--check", str(tmp_path / "missing.json"), "--profile", str(prof),
                "--alpha", "1e-6", "--beta", "1e9"])



# --- the measured inputs --------------------------------------------------------------

STEPS = C.StepCosts(16, (48, 16), (0.02, 0.008), 4.0e6, 2.0e-3)


def test_step_costs_by_hand():
    # the line through (48, 0.02) and (16, 0.008): b = 0.012 / 32, a = 0.008 - 16 b = 0.002
    a, b = STEPS.line
    assert b == pytest.approx(0.012 / 32, rel=1e-12) and a == pytest.approx(0.002, rel=1e-12)
    assert STEPS.panel_s(48, 16) == pytest.approx(0.02, rel=1e-12)  # the probes themselves
    assert STEPS.panel_s(16, 16) == pytest.approx(0.008, rel=1e-12)
    assert STEPS.panel_s(32, 16) == pytest.approx(0.014, rel=1e-12)  # between them
    # a narrower panel: the fixed cost per column, the row work per column and per column
    assert STEPS.panel_s(32, 8) == pytest.approx(0.002 / 2 + 32 * b / 4, rel=1e-12)
    assert STEPS.interchange_s(1.0e6) == pytest.approx(0.5e-3, rel=1e-12)  # 2 GB/s
    got = STEPS.summary()
    assert got["step_overhead_s"] == pytest.approx(0.002 / 16, rel=1e-12)
    assert got["panel_row_s"] == pytest.approx(b) and got["interchange_gbps"] == pytest.approx(2)
    one = C.StepCosts(16, (40,), (0.01,), 1.0, 1.0)  # one panel: through the origin
    assert one.panel_s(20, 16) == pytest.approx(0.005, rel=1e-12) and one.line[0] == 0


@pytest.mark.parametrize("args", [
    (0, (48, 16), (0.02, 0.008), 1.0, 1.0), (16, (48, 16, 8), (0.02, 0.01, 0.008), 1.0, 1.0),
    (16, (48, 16), (0.02,), 1.0, 1.0), (16, (48, -1), (0.02, 0.008), 1.0, 1.0),
    (16, (48, 16), (0.02, 0.0), 1.0, 1.0), (16, (48, 16), (0.02, 0.008), 0.0, 1.0),
    (16, (48, 16), (0.02, float("nan")), 1.0, 1.0), (16, (), (), 1.0, 1.0)])
def test_step_costs_reject_bad_measurements(args):
    with pytest.raises(TMEError, match="StepCosts needs"):
        C.StepCosts(*args)


def test_step_costs_from_a_record():
    rec = {"panel_probe": {"width": 16, "rows": [48, 16], "seconds": [0.02, 0.008]},
           "interchange_probe": {"bytes": 4.0e6, "seconds": 2.0e-3}}
    assert C.StepCosts.from_record(rec) == STEPS
    assert C.StepCosts.from_record({"panel_probe": rec["panel_probe"]}) is None
    with pytest.raises(TMEError, match="panel_probe"):
        C.StepCosts.from_record({**rec, "interchange_probe": {"bytes": 1.0}})


def _tallest(n, nb, P, k):
    from ozaki.distributed.cyclic import cyclic_indices
    return max(int(np.sum(cyclic_indices(n, nb, P, p) >= k)) for p in range(P))


@pytest.mark.parametrize("n,nb,P,Q", [(96, 16, 2, 2), (100, 16, 1, 2), (90, 16, 3, 1)])
@pytest.mark.parametrize("emulated", [True, False])
def test_measured_steps_replace_the_panel_and_the_interchanges(n, nb, P, Q, emulated):
    machine = C.ProfileMachine(PROFILE, 0.7)
    base = H.hpl_time(n, nb, P, Q, machine, NET, emulated=emulated)
    got = H.hpl_time(n, nb, P, Q, machine, NET, emulated=emulated, steps=STEPS)
    want = sum(STEPS.panel_s(_tallest(n, nb, P, k), min(nb, n - k)) for k in range(0, n, nb))
    assert got["phases"]["panel"] == pytest.approx(want, rel=1e-12)
    for k in ("broadcasts", "triangular", "updates"):  # the other steps as modelled
        assert got["phases"][k] == base["phases"][k]
    assert got["solve_phases"] == base["solve_phases"]
    gathers = sum(min(nb, n - k) * (P - 1) * NET.message_s(8 * (3 + 2 * min(nb, n - k)))
                  for k in range(0, n, nb))
    if P == 1:  # no all-gather, no all-to-all: the messages are the same
        assert got["communication_s"] == pytest.approx(base["communication_s"], rel=1e-12)
    else:  # the measured steps hold the all-gathers and the all-to-alls
        assert got["communication_s"] < base["communication_s"] - gathers * (1 - 1e-9)
    # at the streaming rate and without messages, the measured interchanges are the modelled
    free, rate = Network("free", "free", 0.0, 1e300), PROFILE.mem_tbps * 1e12 * 0.7
    same = C.StepCosts(16, (48, 16), (0.02, 0.008), rate, 1.0)
    a = H.hpl_time(n, nb, P, Q, machine, free, emulated=emulated)["phases"]["interchanges"]
    b = H.hpl_time(n, nb, P, Q, machine, free, emulated=emulated, steps=same)
    assert b["phases"]["interchanges"] == pytest.approx(a, rel=1e-12) and a > 0


def test_check_prices_a_run_with_its_measured_inputs():
    rates = [{"gemm": 0.5, "products": 0.4, "scaling": 1.2, "residues": 1.0,
              "reconstruction": 1.5, "passes": 1.3, "stream": 0.9, "shape": [40, 16, 40]},
             {"gemm": 0.6, "products": 0.3, "scaling": 1.4, "residues": 0.8,
              "reconstruction": 1.6, "passes": 1.1, "stream": 1.2, "shape": [48, 16, 40]}]
    rec = {**_record(P=2, Q=1), "rank_rates": rates,
           "panel_probe": {"width": 16, "rows": [48, 16], "seconds": [0.02, 0.008]},
           "interchange_probe": {"bytes": 4.0e6, "seconds": 2.0e-3}}
    row, = C.check_runs([rec], PROFILE, NET)
    slowest = RankRates(0.5, 0.3, 1.2, 0.8, 1.5, 1.1, 0.9)  # field by field
    machine = C.ProfileMachine(PROFILE, slowest, "fp64", 6, "accurate", None, True)
    t = H.hpl_time(96, 16, 2, 1, machine, NET, emulated=True, panel="cached", steps=STEPS,
                   decisions=tuple(rec["traffic_max"].get("decisions", (0, 0))))
    assert row["predicted_s"] == pytest.approx(t["total_s"], rel=1e-12)
    assert row["ratio"] == pytest.approx(t["total_s"] / rec["seconds"], rel=1e-12)
    assert row["inputs"]["rank_rates"] == vars(slowest)
    assert row["inputs"]["step_overhead_s"] == pytest.approx(0.002 / 16, rel=1e-12)
    plain, = C.check_runs([_record(P=2, Q=1)], PROFILE, NET)
    assert plain["inputs"] == dict.fromkeys(("rank_rates", "step_overhead_s", "panel_row_s",
                                             "interchange_gbps"))
    assert plain["predicted_s"] != row["predicted_s"]
    text = C.check_table([row, plain])
    assert "| 125 | 375 | 2 |" in text and "| - | - | - |" in text  # us, us/row, GB/s
    assert text.count("| emulated | 96 | 16 | 2x1 |") == 2  # a line per run, twice
    got = row["phases_predicted"]
    assert (f"| emulated | 2x1 | 0.1 / {got['panel']:.3g} | 0 / {got['triangular']:.3g} | "
            f"0.2 / {got['updates']:.3g} | 0 / {got['other']:.3g} | "
            f"0.1 / {got['broadcasts'] + got['interchanges']:.3g} |") in text
