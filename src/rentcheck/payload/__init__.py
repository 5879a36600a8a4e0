"""The payload room: programs rentcheck sends to run under other laws than its own code.

Each runs where rentcheck is not installed, in an interpreter rentcheck does not choose:
- ``probe.py`` (Python 3.6+) and ``jobprobe.py`` (appended to the probe) on the rented box,
  sent over SSH on stdin by the audit, launch and watch gates;
- ``manifest_builder.py`` (Python 3.7+) on the box, hashing the run's files into the roster
  (rentcheck also imports it locally: one definition of the roster's rules), and
  ``roster_answer.py`` (Python 3.7+) that runs it there and streams its answer back;
- ``shim/sitecustomize.py`` (Python 3.8+) in every Python process of a smoke or resume run,
  put first on its ``PYTHONPATH`` (the directory ``SHIM_DIR``);
- ``zygote_serve.py`` (Python 3.8+), the fork server of a resume chain, in the project's
  interpreter.

The laws, held by ``tests/test_payload.py``: the standard library only (no rentcheck import,
no third-party import at module level), syntax and library calls of the oldest Python each
promises (each runs under that interpreter where this machine has it), and ruff checks them at
that target (``per-file-target-version`` in pyproject.toml).
"""

from __future__ import annotations

import os

__all__ = ["PAYLOAD_DIR", "SERVER_PATH", "SHIM_DIR"]

PAYLOAD_DIR = os.path.dirname(os.path.abspath(__file__))
SHIM_DIR = os.path.join(PAYLOAD_DIR, "shim")
SERVER_PATH = os.path.join(PAYLOAD_DIR, "zygote_serve.py")
