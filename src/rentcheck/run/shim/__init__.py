"""The directory rentcheck puts first on a supervised run's ``PYTHONPATH``.

Its ``sitecustomize.py`` is imported by every Python process of the run at start-up (see that
module). Nothing else here is meant to be imported by the user's program.
"""

from __future__ import annotations

import os

__all__ = ["SHIM_DIR"]

SHIM_DIR = os.path.dirname(os.path.abspath(__file__))
