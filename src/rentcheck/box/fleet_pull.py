"""Where the pull gate brings each inventory host's run from and to: one answer for
``rentcheck pull --hosts`` and the pytest pull items.

    [tool.rentcheck.pull]
    remote_root = "/root/run"     # on every box, unless a host says its own
    local_root = "results"        # each host into results/NAME

    [tool.rentcheck.hosts.h100-1]
    remote_root = "/workspace/run"
    local_root = "results/h100"   # this host's own folder, exactly

The command line's REMOTE_ROOT and LOCAL_ROOT (LOCAL_ROOT/NAME per host) come first, then the
host's keys, then the ``[tool.rentcheck.pull]`` defaults. Paths from the config are relative
to the project (the config file's folder), LOCAL_ROOT to where the command runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rentcheck.box.fleet import Host
from rentcheck.config import INVENTORY, Config, check_section_keys, section_error
from rentcheck.errors import UsageError

__all__ = ["PULL_KEYS", "PullPlace", "pull_places"]

SECTION = "pull"
PULL_KEYS = ("remote_root", "local_root")
_FOLDER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class PullPlace:
    host: Host
    remote_root: str  # on the box
    local_root: str  # this host's own folder here


def pull_places(
    config: Config,
    hosts: Sequence[Host],
    *,
    remote_root: str | None = None,
    local_root: str | None = None,
) -> list[PullPlace]:
    """Each host's remote root and local folder; a host with neither said anywhere, a host
    name that cannot be a folder, or two hosts into one folder is an error with the fix."""
    defaults = check_section_keys(config, SECTION, PULL_KEYS)
    for key in PULL_KEYS:
        value = defaults.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise section_error(config, SECTION, key, "must be a non-empty path")
    places: list[PullPlace] = []
    for host in hosts:
        remote = remote_root or host.remote_root or defaults.get("remote_root")
        if not remote:
            raise UsageError(
                f"inventory host {host.name!r} has no remote root to pull",
                hint=f"set remote_root in [tool.rentcheck.hosts.{host.name}] (or in "
                "[tool.rentcheck.pull] for every host), or give REMOTE_ROOT LOCAL_ROOT",
            )
        if local_root is not None:
            local = os.path.join(local_root, _folder_name(host))
        elif host.local_root is not None:
            local = os.path.join(config.root, host.local_root)
        elif defaults.get("local_root"):
            local = os.path.join(config.root, str(defaults["local_root"]), _folder_name(host))
        else:
            raise UsageError(
                f"inventory host {host.name!r} has no local root to pull into",
                hint='set local_root = "results" in [tool.rentcheck.pull] (each host into '
                "results/NAME), or give REMOTE_ROOT LOCAL_ROOT",
            )
        places.append(PullPlace(host, str(remote), local))
    _refuse_shared_folders(config, places)
    return places


def _folder_name(host: Host) -> str:
    """The host's name as the one path component of its folder under LOCAL_ROOT."""
    if not _FOLDER_NAME.fullmatch(host.name):
        raise UsageError(
            f"inventory host {host.name!r} cannot name a folder under LOCAL_ROOT",
            hint="use letters, digits, '.', '_' and '-' in inventory host names",
        )
    return host.name


def _refuse_shared_folders(config: Config, places: Sequence[PullPlace]) -> None:
    seen: dict[str, str] = {}
    for place in places:
        key = os.path.normpath(os.path.abspath(place.local_root))
        if key in seen:
            raise section_error(
                config, INVENTORY, f"{place.host.name}.local_root",
                f"{place.local_root} is also the folder of host {seen[key]!r}: one pull "
                "would overwrite the other's files",
                "give each host its own local_root",
            )  # fmt: skip
        seen[key] = place.host.name
