"""The profile commands stay light: no requests unless --check-sources, yaml only when a
profile's frontmatter is read, and importing the API pulls neither."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_ROOT


def _modules_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    return set(proc.stdout.split())


def test_importing_the_api_and_commands_pulls_no_yaml_or_requests() -> None:
    loaded = _modules_after(
        "import rentcheck.profiles, rentcheck.commands.profiles, rentcheck.commands.stale"
    )
    assert not loaded & {"yaml", "requests", "urllib3"}


def test_stale_without_sources_never_imports_requests() -> None:
    loaded = _modules_after(
        "from rentcheck.cli import main\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['stale', '--today', '2026-11']) == 1\n"  # RC914: no profiles
        "    assert main(['profiles', 'check']) == 0"
    )
    assert "yaml" in loaded and not loaded & {"requests", "urllib3"}


def test_every_public_name_resolves() -> None:
    import rentcheck.profiles as api

    assert all(getattr(api, name) is not None for name in api.__all__)
    assert set(api.__all__) <= set(dir(api))
