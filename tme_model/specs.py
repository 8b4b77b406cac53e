"""Hardware database: sourced peak figures of GPUs and CPUs, loaded from TOML or JSON.

The shipped databases are ``tme_model/data/gpus.toml`` (:func:`load_devices`) and
``tme_model/data/cpus.toml`` (:func:`load_cpus`).  Each device holds up to ten figures
(:data:`FIELDS`); each figure carries its value, its source, a dense/sparse flag and
notes.  A figure the references do not give is *missing* (``None``), never zero; a unit
the hardware lacks is ``supported = false``.  A CPU also names the INT8 instruction path
of oneDNN's integer GEMM (``isa``, one of :data:`CPU_ISAS`) and may give the per-core
figures its peaks are derived from (:data:`CPU_FIELDS`).  A user file with the same
layout (``--specs FILE``) adds devices or overrides them whole; its entries with
``kind = "cpu"`` are CPUs.
"""

from __future__ import annotations

import difflib
import json
import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

__all__ = [
    "CPU_FIELDS",
    "CPU_ISAS",
    "FIELDS",
    "Device",
    "Figure",
    "MissingFigureError",
    "TMEError",
    "UnknownDeviceError",
    "get_device",
    "load_cpus",
    "load_devices",
    "parse_devices",
]

#: Figure keys with their units and meaning, in table order.
FIELDS: dict[str, str] = {
    "fp64_vector": "TFLOP/s FP64 on vector (SIMT) units",
    "fp64_matrix": "TFLOP/s FP64 on matrix (tensor) units",
    "fp32": "TFLOP/s FP32",
    "tf32": "TFLOP/s TF32 matrix",
    "bf16": "TFLOP/s BF16/FP16 matrix",
    "fp8": "TFLOP/s FP8 matrix (FP32 accumulation)",
    "int8": "TOP/s INT8 matrix (INT32 accumulation)",
    "fp4": "TFLOP/s FP4 matrix",
    "mem_bw": "TB/s memory bandwidth",
    "mem_size": "GB memory size",
}
#: Per-core figures of a CPU entry, from which its peaks follow (peak = cores x ghz x
#: per-cycle figure / 1000, in TFLOP/s or TOP/s).
CPU_FIELDS: dict[str, str] = {
    "cores": "physical cores",
    "ghz": "GHz, the clock the peaks assume",
    "fp64_per_cycle": "FP64 flops per cycle and core (FMA units x lanes x 2)",
    "int8_per_cycle": "INT8 operations (2 per multiply-add) per cycle and core on the ISA",
}
#: oneDNN 3's names of the x86 instruction paths of its integer GEMM, and whether each
#: has VNNI or AMX: where it has, each u8 x s8 product is added into an INT32 lane
#: directly; where not, pairs of products are summed into a saturating int16 first
#: (``vpmaddubsw``), and ``ozaki``'s ``cpu-onednn`` engine then runs its exact ``split``
#: encoding, one GEMM on twice the rows (:func:`tme_model.cpus.int8_gemms_per_product`).
CPU_ISAS: dict[str, bool] = {
    "sse41": False, "avx": False, "avx2": False, "avx512_core": False,
    "avx2_vnni": True, "avx2_vnni_2": True, "avx512_core_vnni": True,
    "avx512_core_bf16": True, "avx512_core_fp16": True, "avx512_core_amx": True,
    "avx512_core_amx_fp16": True,
}


class TMEError(ValueError):
    """Base class of the errors the TME model reports to users."""


class UnknownDeviceError(TMEError):
    """A device key that is not in the database."""


class MissingFigureError(TMEError):
    """A figure the model needs is missing or unsupported on a device."""


@dataclass(frozen=True)
class Figure:
    """One sourced hardware figure.

    Attributes
    ----------
    value : float or None
        The figure in the unit of its field (see :data:`FIELDS`); ``None`` when the
        hardware has no such unit.
    source : str
        Citation keys, e.g. ``"[7][9]"`` or ``"TME"``.
    source_text : str
        The citations resolved to their full text ("; "-separated).
    dense : bool or None
        ``True`` for dense throughput, ``False`` for 2:4-sparse, ``None`` where it does
        not apply (bandwidth, size).
    supported : bool
        ``False`` when the hardware lacks the unit ("none" in the reference).
    range : tuple of float or None
        ``(low, high)`` when the sources disagree; ``value`` is the chosen figure.
    note : str
        Free text (why this value, accumulation precision, ...).
    inferred : bool
        ``True`` when the figure is not stated by the source but follows from it.
    """

    value: float | None
    source: str = ""
    source_text: str = ""
    dense: bool | None = None
    supported: bool = True
    range: tuple[float, float] | None = None
    note: str = ""
    inferred: bool = False


@dataclass(frozen=True)
class Device:
    """A device of the database.

    Attributes
    ----------
    key : str
        Lookup key, e.g. ``"b300"`` or ``"paper:b300"``.
    name : str
        Human-readable name.
    vendor : str
        Vendor name.
    figures : dict of str to Figure
        Present figures by field name (:data:`FIELDS`); absent keys are unknown.
    origin : str
        Where the entry came from: the file path, or ``"builtin"``.
    phases : dict
        Measured per-phase costs by scheme (a calibration profile's
        :class:`~tme_model.profile.PhaseCosts`); empty for database devices.
    kind : str
        ``"gpu"`` or ``"cpu"``.
    isa : str or None
        CPUs: oneDNN's INT8 instruction path (a key of :data:`CPU_ISAS`).
    cpu : dict of str to Figure
        CPUs: the per-core figures given (:data:`CPU_FIELDS`).
    """

    key: str
    name: str
    vendor: str = ""
    figures: Mapping[str, Figure] = field(default_factory=dict)
    origin: str = "builtin"
    phases: Mapping[str, Any] = field(default_factory=dict)
    kind: str = "gpu"
    isa: str | None = None
    cpu: Mapping[str, Figure] = field(default_factory=dict)

    @property
    def vnni(self) -> bool:
        """Whether the CPU's INT8 path adds products into INT32 directly (VNNI or AMX);
        ``False`` for GPUs."""
        return self.isa is not None and CPU_ISAS[self.isa]

    def get(self, name: str) -> float | None:
        """Return the value of a figure, or ``None`` if missing or unsupported.

        Parameters
        ----------
        name : str
            A key of :data:`FIELDS`.

        Returns
        -------
        float or None
            The figure in its field's unit.
        """
        if name not in FIELDS:
            raise KeyError(f"unknown figure {name!r}; known: {', '.join(FIELDS)}")
        fig = self.figures.get(name)
        return None if fig is None else fig.value

    def require(self, name: str) -> float:
        """Return a figure, raising :class:`MissingFigureError` if it is not known.

        Parameters
        ----------
        name : str
            A key of :data:`FIELDS`.

        Returns
        -------
        float
            The figure in its field's unit.
        """
        value = self.get(name)
        if value is None:
            fig = self.figures.get(name)
            why = "has no such unit" if fig is not None and not fig.supported else "is not known"
            raise MissingFigureError(
                f"device {self.key!r}: {name} ({FIELDS[name]}) {why}; "
                "add it with --specs FILE"
            )
        return value

    def p64(self, matrix: bool) -> float:
        """Return the FP64 peak a kernel can use, in TFLOP/s.

        Parameters
        ----------
        matrix : bool
            ``True`` for GEMM-like kernels, which may use the matrix units: the peak is
            then max(vector, matrix) (:doc:`tme_model`, "The model"); otherwise the vector peak.

        Returns
        -------
        float
            P64 in TFLOP/s.
        """
        vec, mat = self.get("fp64_vector"), self.get("fp64_matrix")
        if matrix:
            known = [v for v in (vec, mat) if v is not None]
            if not known:
                return self.require("fp64_matrix")
            return max(known)
        if vec is None:
            return self.require("fp64_vector")
        return vec

    def bandwidth(self) -> float:
        """Return the memory bandwidth in TB/s."""
        return self.require("mem_bw")


def _resolve_sources(keys: str, table: Mapping[str, str]) -> str:
    parts = [p.strip("[] ") for p in keys.replace("][", "]|[").split("|") if p.strip()]
    return "; ".join(f"[{p}] {table[p]}" if p in table else f"[{p}]" for p in parts)


def _figure(name: str, raw: object, sources: Mapping[str, str], where: str) -> Figure:
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        raw = {"value": raw}
    if not isinstance(raw, Mapping):
        raise TMEError(f"{where}: figure {name!r} must be a number or a table")
    unknown = set(raw) - {"value", "source", "dense", "supported", "range", "note", "inferred"}
    if unknown:
        raise TMEError(f"{where}: figure {name!r} has unknown keys {sorted(unknown)}")
    supported = bool(raw.get("supported", True))
    value = raw.get("value")
    def number(v) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    rng = raw.get("range")
    if supported:
        if value is None:
            raise TMEError(f"{where}: figure {name!r} needs a value (or supported = false)")
        if not number(value) or value <= 0:
            raise TMEError(f"{where}: figure {name!r} must be a positive number, got {value!r}")
        value = float(value)
    elif value is not None or rng is not None:
        raise TMEError(f"{where}: figure {name!r} is unsupported but has a value or range")
    if rng is not None:
        if not isinstance(rng, (list, tuple)) or len(rng) != 2 or not all(number(x) for x in rng):
            raise TMEError(f"{where}: figure {name!r}: range must be [low, high], got {rng!r}")
        lo, hi = (float(x) for x in rng)
        if not lo <= value <= hi:
            raise TMEError(f"{where}: figure {name!r} = {value} lies outside its range {rng}")
        rng = (lo, hi)
    source = str(raw.get("source", ""))
    return Figure(
        value=value,
        source=source,
        source_text=_resolve_sources(source, sources),
        dense=raw.get("dense"),
        supported=supported,
        range=rng,
        note=str(raw.get("note", "")),
        inferred=bool(raw.get("inferred", False)),
    )


def parse_devices(data: Mapping, origin: str, known_sources: Mapping[str, str] | None = None,
                  default_kind: str = "gpu") -> dict[str, Device]:
    """Build devices from a parsed database (the TOML/JSON layout of ``gpus.toml``).

    Parameters
    ----------
    data : mapping
        ``{"sources": {key: text}, "devices": {key: {name, vendor, <figure>: ...}}}``.
    origin : str
        Recorded in each :class:`Device` (file path or ``"builtin"``).
    known_sources : mapping, optional
        Source keys a file may cite without defining them (a user file: the shipped
        databases' ``[sources]``); its own keys take precedence.
    default_kind : {"gpu", "cpu"}
        The kind of an entry without a ``kind`` key.

    Returns
    -------
    dict of str to Device
        Devices by key.
    """
    sources = {**(known_sources or {}), **{str(k): str(v) for k, v in data.get("sources", {}).items()}}
    devices = {}
    for key, entry in data.get("devices", {}).items():
        where = f"{origin}: device {key!r}"
        kind = str(entry.get("kind", default_kind))
        if kind not in ("gpu", "cpu"):
            raise TMEError(f"{where}: kind must be 'gpu' or 'cpu', got {kind!r}")
        extra = {"isa", *CPU_FIELDS} if kind == "cpu" else set()
        unknown = set(entry) - set(FIELDS) - {"name", "vendor", "kind"} - extra
        if unknown:
            hint = (f" (CPU keys {['isa', *CPU_FIELDS]} need kind = 'cpu')"
                    if unknown & {"isa", *CPU_FIELDS} else "")
            raise TMEError(f"{where}: unknown keys {sorted(unknown)}; figures are "
                           f"{list(FIELDS)}{hint}")
        isa = entry.get("isa")
        if kind == "cpu" and isa not in CPU_ISAS:
            raise TMEError(f"{where}: isa must be one of {', '.join(CPU_ISAS)} (oneDNN's names "
                           f"of its INT8 instruction paths), got {isa!r}")
        figures = {n: _figure(n, entry[n], sources, where) for n in FIELDS if n in entry}
        devices[key.lower()] = Device(
            key=key.lower(),
            name=str(entry.get("name", key)),
            vendor=str(entry.get("vendor", "")),
            figures=figures,
            origin=origin,
            kind=kind,
            isa=isa,
            cpu={n: _figure(n, entry[n], sources, where) for n in CPU_FIELDS if n in entry},
        )
    return devices


def _read(path: Path) -> Mapping:
    text = path.read_bytes()
    try:
        if path.suffix.lower() == ".json":
            return json.loads(text)
        return tomllib.loads(text.decode())
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise TMEError(f"cannot parse device file {path}: {exc}") from exc


def _shipped(name: str) -> Mapping:
    return tomllib.loads((resources.files("tme_model") / "data" / name).read_text())


def _load(database: str, kind: str, extra: Iterable[str | Path]) -> dict[str, Device]:
    """The shipped ``database``, then the entries of ``kind`` of each user file (an
    entry without a ``kind`` key is a GPU, as before CPUs were modelled)."""
    shipped = {name: _shipped(name) for name in ("gpus.toml", "cpus.toml")}
    devices = parse_devices(shipped[database], "builtin", default_kind=kind)
    known = {str(k): str(v) for db in shipped.values() for k, v in db.get("sources", {}).items()}
    for path in extra:
        path = Path(path)
        if not path.is_file():
            raise TMEError(f"device file not found: {path}")
        found = parse_devices(_read(path), str(path), known)
        devices.update({k: d for k, d in found.items() if d.kind == kind})
    return devices


def load_devices(extra: Iterable[str | Path] = ()) -> dict[str, Device]:
    """Load the shipped GPU database, then each user file in order.

    Parameters
    ----------
    extra : iterable of str or Path
        User files (``.toml`` or ``.json``, same layout as ``gpus.toml``).  A device in
        a later file replaces an earlier one with the same key.

    Returns
    -------
    dict of str to Device
        Devices by key, in file order.
    """
    return _load("gpus.toml", "gpu", extra)


def load_cpus(extra: Iterable[str | Path] = ()) -> dict[str, Device]:
    """Load the shipped CPU database, then the ``kind = "cpu"`` entries of each user file.

    Parameters
    ----------
    extra : iterable of str or Path
        User files (``.toml`` or ``.json``, the layout of ``cpus.toml``; an entry
        without ``kind = "cpu"`` is not a CPU and is skipped).

    Returns
    -------
    dict of str to Device
        CPUs by key (``kind == "cpu"``, ``isa`` set), in file order.
    """
    return _load("cpus.toml", "cpu", extra)


def get_device(key: str, devices: Mapping[str, Device]) -> Device:
    """Look up a device by key, case-insensitively.

    Parameters
    ----------
    key : str
        Device key.
    devices : mapping of str to Device
        The database (see :func:`load_devices`).

    Returns
    -------
    Device
        The device.

    Raises
    ------
    UnknownDeviceError
        With the known keys and the closest match.
    """
    found = devices.get(key.lower())
    if found is not None:
        return found
    close = difflib.get_close_matches(key.lower(), list(devices), n=1, cutoff=0.4)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise UnknownDeviceError(
        f"unknown device {key!r}.{hint} Known devices: {', '.join(devices)}"
    )
