"""Where a campaign's results go: ``{stem}_results.json``, ``{stem}_report.md`` and
``.rst`` and its figures in ``--out``, and with ``--docs`` the reports and figures the
docs include (``_generated/validation_{stem}_report.{md,rst}``, ``validation_*.png``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import ModuleType

from . import report as render
from .jsonsafe import floats

__all__ = ["write"]


def write(res: dict, out: Path, docs: str | None, stem: str, title: str, prog: str,
          report: ModuleType) -> None:
    """Write a campaign's results (JSON-safe, :func:`validation.jsonsafe.strict`).

    ``report`` is the campaign's report module: ``report.plot(res, out)`` draws the
    figures into ``out`` and returns ``[(file name, alt text)]``; ``report.blocks(res,
    images)`` the report's blocks (:mod:`validation.report`'s renderers). ``prog``
    names the command in the reStructuredText report.
    """
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}_results.json").write_text(json.dumps(res, indent=1))
    res = json.loads(json.dumps(res), parse_constant=float, object_hook=floats)
    images = report.plot(res, out)

    def rst(bl, image_prefix: str = "") -> str:
        text = render.rst(bl, image_prefix=image_prefix)
        return text.replace("``python -m validation``", f"``{prog}``", 1)

    bl = report.blocks(res, images)
    (out / f"{stem}_report.md").write_text(render.markdown(bl, title=title))
    (out / f"{stem}_report.rst").write_text(rst(bl))
    if docs:
        gen = Path(docs) / "_generated"
        gen.mkdir(parents=True, exist_ok=True)
        for n, _ in images:
            shutil.copyfile(out / n, gen / f"validation_{n}")
        dbl = report.blocks(res, [(f"validation_{n}", alt) for n, alt in images])
        (gen / f"validation_{stem}_report.md").write_text(render.markdown(dbl, title=title))
        (gen / f"validation_{stem}_report.rst").write_text(rst(dbl, "_generated/"))
