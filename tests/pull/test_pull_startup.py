"""Start-up: nothing heavy is imported before the first byte is hashed (numpy, isal, torch are
imported at the first float bytes and the first CRC, not at import or dispatch)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import torch


def test_dispatch_imports_nothing_heavy_until_float_bytes_arrive(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(1000)}, path)
    code = textwrap.dedent(f"""
        import os, sys
        from rentcheck.pull import verify
        from rentcheck.pull.formats.dispatch import choose_validator
        heavy = ("numpy", "isal", "torch", "safetensors")
        assert not [m for m in heavy if m in sys.modules], sys.modules.keys()
        data = open({str(path)!r}, "rb").read()
        choice = choose_validator("model.pt", len(data), data[:512],
                                  lambda off, n: data[off:off + n])
        assert choice.kind == "torch-zip"
        assert not [m for m in heavy if m in sys.modules]
        choice.validator.feed(memoryview(data))
        assert choice.validator.finish() == []
        assert "numpy" in sys.modules  # the finite scan ran once float bytes arrived
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
