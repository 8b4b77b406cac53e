"""The file format of calibration profiles: :func:`load_profile` reads it, :func:`dump_profile`
writes it back (JSON, schema :data:`PROFILE_SCHEMA`)."""

from __future__ import annotations

import json
import math
from dataclasses import fields
from pathlib import Path
from typing import Any, Mapping

from .profile import PhaseCosts, Profile
from .specs import TMEError

__all__ = ["PROFILE_SCHEMA", "dump_profile", "load_profile"]

#: Value of the ``schema`` key of a version-1 profile.
PROFILE_SCHEMA = "tme-profile/1"


def _positive(data: Mapping, key: str, where: str, required: bool = True) -> float | None:
    if key not in data:
        if required:
            raise TMEError(f"{where}: missing key {key!r}")
        return None
    v = data[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise TMEError(f"{where}: {key} must be a positive number, got {v!r}")
    return float(v)


def _nonnegative(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise TMEError(f"{where} must be a number >= 0, got {v!r}")
    return float(v)


def load_profile(path: str | Path) -> Profile:
    """Read a calibration profile (JSON).

    Parameters
    ----------
    path : str or Path
        The profile file.

    Returns
    -------
    Profile
        The profile; :meth:`Profile.device` gives device ``local``.

    Raises
    ------
    TMEError
        If the file is missing, not JSON, or does not follow the schema; the message
        names the offending key.

    Notes
    -----
    Schema ``tme-profile/1`` (a JSON object; rates in TFLOP/s, bandwidth in TB/s, costs
    in seconds)::

        {
          "schema": "tme-profile/1",               required
          "name": "local",                         device key, default "local"
          "description": "...", "created": "ISO 8601 time", "host": {...},
          "fp64_tflops": 0.9,                      required: native FP64 GEMM rate
          "fp64_vector_tflops": 0.2,               non-GEMM FP64 rate, default fp64_tflops
          "mem_tbps": 0.02,                        required: STREAM triad bandwidth
          "fp64_n0": 300,                          optional: native rate at size s is
                                                   fp64_tflops * s / (s + fp64_n0)
          "lowp_tflops": {                         required, at least one rate:
            "int8": {"<engine>": 0.8, ...},        scheme -> engine -> rate of one exact
            "fp8": {"<engine>": 0.7, ...}          low-precision GEMM (2mnk / time)
          },
          "lowp_n0": {"int8": {"<engine>": 300}},  optional, as fp64_n0 per engine
          "gemms_per_modulus": {"fp8": {"<engine>": 1}},  optional, default the
                                                   scheme's count (int8 1, fp8 3)
          "fp32_tflops": {"cpu-blas": 0.2},        optional: engine -> rate of its FP32
                                                   path (blocks whose exact bound FP32
                                                   holds); predictions then follow
                                                   ozaki's GEMMs block by block
          "fp32_n0": {"cpu-blas": 300},            optional, as fp64_n0
          "phases": {                              optional, scheme -> costs:
            "int8": {
              "scale_s_per_element": 1e-9,         per input element
              "accurate_scale_s_per_element": 1e-9,    extra in accurate mode
              "residue_s_per_element_modulus": 1e-9,   per input element and modulus
              "recon_s_per_output_modulus": 2e-9,      per output and modulus
              "fixed_s": 1e-4                      per call
            }
          },
          "calibration": {...}                     free-form: sizes, raw timings
        }

    Scheme keys other than ``int8`` and ``fp8`` (e.g. ``fp64``) are kept in
    :attr:`Profile.lowp_tflops` but not shown as device figures.
    """
    path = Path(path)
    where = f"profile {path}"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise TMEError(f"{where}: file not found") from None
    except ValueError as exc:
        raise TMEError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise TMEError(f"{where}: top level must be a JSON object")
    if data.get("schema") != PROFILE_SCHEMA:
        raise TMEError(f"{where}: key 'schema' must be {PROFILE_SCHEMA!r}, got {data.get('schema')!r}")
    fp64 = _positive(data, "fp64_tflops", where)
    vec = _positive(data, "fp64_vector_tflops", where, required=False) or fp64
    mem = _positive(data, "mem_tbps", where)
    lowp_raw = data.get("lowp_tflops")
    if not isinstance(lowp_raw, dict) or not lowp_raw:
        raise TMEError(f"{where}: 'lowp_tflops' must map scheme -> engine -> TFLOP/s")
    lowp = {}
    for scheme, engines in lowp_raw.items():
        if not isinstance(engines, dict) or not engines:
            raise TMEError(f"{where}: lowp_tflops[{scheme!r}] must map engine -> TFLOP/s")
        lowp[scheme] = {e: _positive(engines, e, f"{where}: lowp_tflops[{scheme!r}]") for e in engines}
    fp64_n0 = _nonnegative(data.get("fp64_n0", 0.0), f"{where}: fp64_n0")
    lowp_n0 = {}
    for scheme, engines in (data.get("lowp_n0") or {}).items():
        if not isinstance(engines, dict):
            raise TMEError(f"{where}: lowp_n0[{scheme!r}] must map engine -> n0")
        lowp_n0[scheme] = {e: _nonnegative(v, f"{where}: lowp_n0[{scheme!r}][{e!r}]")
                           for e, v in engines.items()}
    gpm = {}
    for scheme, engines in (data.get("gemms_per_modulus") or {}).items():
        if not isinstance(engines, dict):
            raise TMEError(f"{where}: gemms_per_modulus[{scheme!r}] must map engine -> count")
        gpm[scheme] = {}
        for e, v in engines.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise TMEError(f"{where}: gemms_per_modulus[{scheme!r}][{e!r}] must be a "
                               f"positive integer, got {v!r}")
            gpm[scheme][e] = v
    fp32 = data.get("fp32_tflops") or {}
    if not isinstance(fp32, dict):
        raise TMEError(f"{where}: 'fp32_tflops' must map engine -> TFLOP/s")
    fp32 = {e: _positive(fp32, e, f"{where}: fp32_tflops") for e in fp32}
    fp32_n0 = data.get("fp32_n0") or {}
    if not isinstance(fp32_n0, dict):
        raise TMEError(f"{where}: 'fp32_n0' must map engine -> n0")
    fp32_n0 = {e: _nonnegative(v, f"{where}: fp32_n0[{e!r}]") for e, v in fp32_n0.items()}
    phases = {}
    names = {f.name for f in fields(PhaseCosts)}
    for scheme, costs in (data.get("phases") or {}).items():
        sub = f"{where}: phases[{scheme!r}]"
        if not isinstance(costs, dict):
            raise TMEError(f"{sub} must be an object")
        unknown = set(costs) - names
        if unknown:
            raise TMEError(f"{sub}: unknown keys {sorted(unknown)}; known: {sorted(names)}")
        vals = {}
        for key, v in costs.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise TMEError(f"{sub}: {key} must be a number >= 0, got {v!r}")
            vals[key] = float(v)
        phases[scheme] = PhaseCosts(**vals)
    known = {"schema", "name", "fp64_tflops", "fp64_vector_tflops", "mem_tbps", "lowp_tflops",
             "phases", "fp64_n0", "lowp_n0", "gemms_per_modulus", "fp32_tflops", "fp32_n0"}
    meta = {k: v for k, v in data.items() if k not in known}
    name = str(data.get("name", "local")).lower()
    return Profile(name, fp64, vec, mem, lowp, phases, meta, str(path), fp64_n0=fp64_n0,
                   lowp_n0=lowp_n0, gemms_per_modulus=gpm, fp32_tflops=fp32, fp32_n0=fp32_n0)


def dump_profile(profile: Profile, path: str | Path) -> None:
    """Write a profile in the format :func:`load_profile` reads.

    Parameters
    ----------
    profile : Profile
        The profile.
    path : str or Path
        Destination file (overwritten).
    """
    out: dict[str, Any] = {"schema": PROFILE_SCHEMA, "name": profile.name}
    out.update(profile.meta)
    out.update(fp64_tflops=profile.fp64_tflops, fp64_vector_tflops=profile.fp64_vector_tflops,
               mem_tbps=profile.mem_tbps, fp64_n0=profile.fp64_n0,
               lowp_tflops={s: dict(e) for s, e in profile.lowp_tflops.items()},
               lowp_n0={s: dict(e) for s, e in profile.lowp_n0.items()},
               gemms_per_modulus={s: dict(e) for s, e in profile.gemms_per_modulus.items()},
               fp32_tflops=dict(profile.fp32_tflops), fp32_n0=dict(profile.fp32_n0),
               phases={s: {f.name: getattr(c, f.name) for f in fields(PhaseCosts)}
                       for s, c in profile.phases.items()})
    Path(path).write_text(json.dumps(out, indent=2) + "\n")
