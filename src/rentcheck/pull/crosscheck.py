"""Checks across files: a sharded safetensors index against the shards' own headers."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from rentcheck.pull.formats.base import Issue
from rentcheck.pull.rules import SAFETENSORS_MALFORMED

__all__ = ["check_safetensors_index"]


def check_safetensors_index(
    index_rel: str, index: object, shards: Mapping[str, frozenset[str]]
) -> list[Issue]:
    """Every shard named by ``weight_map`` exists and holds exactly the tensors mapped to it.

    ``shards`` maps the rel path of every safetensors file whose header parsed to its tensor
    names.
    """
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        return [Issue(SAFETENSORS_MALFORMED, "index has no weight_map of tensor -> shard file")]
    base = posixpath.dirname(index_rel)
    by_shard: dict[str, set[str]] = {}
    for tensor, shard in weight_map.items():
        by_shard.setdefault(posixpath.normpath(posixpath.join(base, shard)), set()).add(tensor)
    issues: list[Issue] = []
    for shard, wanted in sorted(by_shard.items()):
        have = shards.get(shard)
        if have is None:
            issues.append(
                Issue(
                    SAFETENSORS_MALFORMED,
                    f"shard {shard!r} named by the index is missing or unreadable",
                    {"shard": shard},
                )
            )
            continue
        absent, unlisted = sorted(wanted - have), sorted(have - wanted)
        if absent:
            issues.append(
                Issue(
                    SAFETENSORS_MALFORMED,
                    f"shard {shard!r} lacks {len(absent)} "
                    f"tensors the index maps to it, e.g. {absent[0]!r}",
                    {"shard": shard, "missing": absent[:100]},
                )
            )
        if unlisted:
            issues.append(
                Issue(
                    SAFETENSORS_MALFORMED,
                    f"shard {shard!r} holds {len(unlisted)} "
                    f"tensors the index does not list, e.g. {unlisted[0]!r}",
                    {"shard": shard, "unlisted": unlisted[:100]},
                )
            )
    return issues
