"""rentcheck's fork server for resume relaunches: the program (``serve.py``) runs in the
*project's* interpreter, so, like the shim, it is stdlib-only Python 3.8 and never imported by
rentcheck itself; ``rentcheck.run.forking`` starts and drives it.
"""

from __future__ import annotations

import os

__all__ = ["SERVER_PATH"]

SERVER_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve.py")
