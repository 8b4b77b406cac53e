"""``python -m tme_model.calibration``: the same as ``tme-calibrate``."""

from ..cli import calibrate_main

raise SystemExit(calibrate_main())
