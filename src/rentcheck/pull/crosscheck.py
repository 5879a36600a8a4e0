"""Checks across files: a sharded model's index (``*.safetensors.index.json``,
``pytorch_model.bin.index.json``) against the shards' own tensors."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from rentcheck.pull.formats.base import Issue
from rentcheck.pull.rules import SAFETENSORS_MALFORMED, SHARD_INDEX_MISMATCH

__all__ = ["SHARD_KINDS", "check_index", "check_safetensors_index"]

#: Kinds whose tensor names a shard index is checked against.
SHARD_KINDS = frozenset({"safetensors", "torch-zip", "torch-legacy"})


def check_index(index_rel: str, index: object, shards: Mapping[str, frozenset[str]]) -> list[Issue]:
    """The cross-check for an index file by its name; nothing for other JSON."""
    if index_rel.endswith(".safetensors.index.json"):
        return check_safetensors_index(index_rel, index, shards)
    if index_rel.endswith((".bin.index.json", ".pt.index.json", ".pth.index.json")):
        return check_safetensors_index(index_rel, index, shards, code=SHARD_INDEX_MISMATCH)
    return []


def check_safetensors_index(
    index_rel: str,
    index: object,
    shards: Mapping[str, frozenset[str]],
    *,
    code: str = SAFETENSORS_MALFORMED,
) -> list[Issue]:
    """Every shard named by ``weight_map`` exists and holds exactly the tensors mapped to it.

    ``shards`` maps the rel path of every shard that was read without error to its tensor
    names (empty when they could not be named: then only its presence is checked).
    """
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        return [Issue(code, "index has no weight_map of tensor -> shard file")]
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
                    code,
                    f"shard {shard!r} named by the index is missing or unreadable",
                    {"shard": shard},
                )
            )
            continue
        if not have and code != SAFETENSORS_MALFORMED:
            continue  # a torch shard whose tensors could not be named
        absent, unlisted = sorted(wanted - have), sorted(have - wanted)
        if absent:
            issues.append(
                Issue(
                    code,
                    f"shard {shard!r} lacks {len(absent)} "
                    f"tensors the index maps to it, e.g. {absent[0]!r}",
                    {"shard": shard, "missing": absent[:100]},
                )
            )
        if unlisted:
            issues.append(
                Issue(
                    code,
                    f"shard {shard!r} holds {len(unlisted)} "
                    f"tensors the index does not list, e.g. {unlisted[0]!r}",
                    {"shard": shard, "unlisted": unlisted[:100]},
                )
            )
    return issues
