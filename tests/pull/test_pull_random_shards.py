"""Random data named like a checkpoint (token shards, raw weights: ``part-00001.bin``) whose
first bytes happen to be pickle opcodes: judged the same on every path (inline, the forked
small-file pool, the pull's verify), and "data" when every loader its name implies runs
nothing on it. About 1 random 64-byte ``.bin`` file in 2,000 was refused before (RC513,
RC514, RC533, RC538): a pull of 60 random shards failed in CI about one run in 30.

The oracle is the real loaders: CPython's unpickler never resolves a name on these bytes,
and torch.load refuses them in both modes."""

from __future__ import annotations

import contextlib
import io
import pickle
import random
from pathlib import Path

import pytest
import torch

from rentcheck.payload import manifest_builder as builder
from rentcheck.pull.verify import verify_pull, verify_tree
from tests.pull.pullkit import validate_bytes

#: Random 64-byte files each path refused, by what their first opcodes do.
FOUND = {
    # NONE, BINPERSID: no loader of a file's first pickle has a persistent_load
    "persid": b"\x80\x02NQx%\xb3\xc2\xd2\xc0\x14\x08s\xc3|\x80\xf9o2\x10\xe2\xe9q.:S\x87[\xde\xbf",
    # an int, STOP, then junk: pickle.load returns 89, torch.load: "Invalid magic number"
    "plain-then-junk": b"\x80\x02KY.\x9f\x81,<\xf5\xa8\xa1\xec\xdb\xae\xb9wP%\xb4\xa3\xc7\xd0\xd1",
    # a GLOBAL whose second line never ends: the C unpickler raises, no name is decoded
    "global-no-newline": b"\x80\x02c\xd9\xa9u\nh^\x81H\xfc\xd6\x02\xe0\xc6\x7f\xa7\xf7\x90\xd3",
    # an INST without its MARK and without its second newline
    "inst-no-newline": b"\x80\x02i\x0e\n\xa3i\xba\xc8\xca\xde\xa8\xa8\x14\x84\xe8C2\xbc\xe3",
    # NEXT_BUFFER: nobody passes out-of-band buffers
    "next-buffer": b"]\x97.\x11Q^e\x84(\xe3\x11\x88\x07\x9a\xf0",
    # STACK_GLOBAL on a dict and its copy (DUP): it needs two strings
    "stack-global": b"}2\x93\t>\x82\tv\xfa\xaa\x9d\x9f\x01\x02",
    # an int, STOP, then a second pickle with an EXT4 (pickle.load reads only the first)
    "second-pickle": b"M\xf6\xb5.\x84G\xcb.\xd3\x05\x83\x1f",
}


class _Watch(pickle.Unpickler):
    reached = False

    def find_class(self, module: str, name: str) -> object:
        _Watch.reached = True
        raise pickle.UnpicklingError("no globals here")


def _tree(root: Path, shards: dict[str, bytes]) -> None:
    root.mkdir()
    for name, data in shards.items():
        (root / name).write_bytes(data)
    builder.write_manifest(str(root), str(root / builder.MANIFEST_NAME), None, 1, False)


@pytest.mark.parametrize("case", sorted(FOUND))
def test_the_real_loaders_run_nothing_on_each_case(case: str, tmp_path: Path) -> None:
    data = FOUND[case]
    _Watch.reached = False
    with contextlib.suppress(Exception):
        _Watch(io.BytesIO(data)).load()
    assert not _Watch.reached  # pickle.load, np.load and torch's first pickle resolve nothing
    path = tmp_path / "part-00001.bin"
    path.write_bytes(data)
    for weights_only in (True, False):
        with pytest.raises(Exception):  # noqa: B017 - any refusal will do
            torch.load(path, weights_only=weights_only)


def test_random_shards_are_judged_alike_inline_and_in_the_pool(tmp_path: Path) -> None:
    shards = {f"part-{i:05d}.bin": data for i, data in enumerate(FOUND.values())}
    rng = random.Random(27)  # noqa: S311 - seeded data, not secrets
    for i in range(len(shards), 400):
        shards[f"part-{i:05d}.bin"] = rng.randbytes(64)
    root = tmp_path / "run"
    _tree(root, shards)
    inline = verify_pull(root, jobs=1)
    manifest = inline.manifest
    pooled = verify_tree(root, manifest, jobs=2, pool_min_files=0)  # the pull's >= 4096 path
    assert [(f.code, f.path) for f in inline.findings] == []
    assert [(f.code, f.path) for f in pooled.findings] == []
    kinds = {v.path: v.kind for v in inline.files}
    assert {v.path: v.kind for v in pooled.files} == kinds
    assert all(kinds[name] == "data" for name in shards if name.startswith("part-0000"))


def test_random_64_byte_shards_are_never_refused() -> None:
    """The validator every path chooses (``choose_validator``), over 20,000 seeded random
    64-byte ``.bin`` and ``.npy`` files: before, about 10 of them were refused."""
    rng = random.Random(64)  # noqa: S311 - seeded data, not secrets
    refused = []
    for i in range(20_000):
        data = rng.randbytes(64)
        issues = validate_bytes(f"shard/part-{i:05d}" + (".bin", ".npy")[i % 2], data)
        if issues:
            refused.append((data, [issue.code for issue in issues]))
    assert refused == []
