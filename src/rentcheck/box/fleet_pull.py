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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rentcheck.box.fleet import Host
from rentcheck.config import INVENTORY, Config, check_section_keys, section_error
from rentcheck.errors import UsageError

__all__ = ["PULL_KEYS", "PullPlace", "local_folders", "pull_places"]

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
    defaults = _defaults(config)
    folders = local_folders(config, hosts, local_root=local_root)
    places: list[PullPlace] = []
    for host in hosts:
        remote = remote_root or host.remote_root or defaults.get("remote_root")
        if not remote:
            raise UsageError(
                f"inventory host {host.name!r} has no remote root to pull",
                hint=f"set remote_root in [tool.rentcheck.hosts.{host.name}] (or in "
                "[tool.rentcheck.pull] for every host), or give REMOTE_ROOT LOCAL_ROOT",
            )
        places.append(PullPlace(host, str(remote), folders[host.name]))
    return places


def local_folders(
    config: Config, hosts: Sequence[Host], *, local_root: str | None = None
) -> dict[str, str]:
    """host name -> the folder its pull goes to (and teardown finds it in): LOCAL_ROOT/NAME,
    the host's ``local_root``, or ``[tool.rentcheck.pull] local_root``/NAME."""
    default = _defaults(config).get("local_root")
    folders: dict[str, str] = {}
    for host in hosts:
        if local_root is not None:
            folders[host.name] = os.path.join(local_root, _folder_name(host))
        elif host.local_root is not None:
            folders[host.name] = os.path.join(config.root, host.local_root)
        elif default:
            folders[host.name] = os.path.join(config.root, str(default), _folder_name(host))
        else:
            raise UsageError(
                f"inventory host {host.name!r} has no local root to pull into",
                hint='set local_root = "results" in [tool.rentcheck.pull] (each host into '
                "results/NAME), or give REMOTE_ROOT LOCAL_ROOT",
            )
    _refuse_shared_folders(config, folders)
    return folders


def _defaults(config: Config) -> Mapping[str, Any]:
    defaults = check_section_keys(config, SECTION, PULL_KEYS)
    for key in PULL_KEYS:
        value = defaults.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise section_error(config, SECTION, key, "must be a non-empty path")
    return defaults


def _folder_name(host: Host) -> str:
    """The host's name as the one path component of its folder under LOCAL_ROOT."""
    if not _FOLDER_NAME.fullmatch(host.name):
        raise UsageError(
            f"inventory host {host.name!r} cannot name a folder under LOCAL_ROOT",
            hint="use letters, digits, '.', '_' and '-' in inventory host names",
        )
    return host.name


def _refuse_shared_folders(config: Config, folders: Mapping[str, str]) -> None:
    seen: dict[str, str] = {}
    for name, folder in folders.items():
        key = os.path.normpath(os.path.abspath(folder))
        if key in seen:
            raise section_error(
                config, INVENTORY, f"{name}.local_root",
                f"{folder} is also the folder of host {seen[key]!r}: one pull would "
                "overwrite the other's files",
                "give each host its own local_root",
            )  # fmt: skip
        seen[key] = name
