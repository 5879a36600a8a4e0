"""Checkpoint names learned from the reference run; durable steps; temp files."""

from __future__ import annotations

from pathlib import Path

from rentcheck.run import ckptdir


def _dir(root: Path, names: dict[str, int]) -> ckptdir.Listing:
    for name, size in names.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
    return ckptdir.list_checkpoint_dir(str(root))


def test_names_steps_and_durable_checkpoints(tmp_path: Path) -> None:
    reference = _dir(tmp_path / "ref", {"ckpt-000004.pt": 5, "ckpt-000008.pt": 5, "config.json": 1})
    patterns = ckptdir.checkpoint_patterns(reference)
    assert patterns == {"ckpt-#.pt"}
    killed = _dir(
        tmp_path / "killed",
        {"ckpt-000004.pt": 5, "ckpt-000008.pt": 2, ".ckpt-000012.pt.tmp-77": 1, "config.json": 1},
    )
    assert ckptdir.durable_step(killed, patterns) == 8
    # The file a kill cut in half is not durable, whatever its name says.
    assert ckptdir.durable_step(killed, patterns, exclude="ckpt-000008.pt") == 4
    assert ckptdir.temp_files(killed) == [".ckpt-000012.pt.tmp-77"]
    assert not ckptdir.list_checkpoint_dir(str(tmp_path / "missing")).exists


def test_directory_checkpoints_and_commit_markers(tmp_path: Path) -> None:
    listing = _dir(
        tmp_path,
        {
            "checkpoint-500/model.safetensors": 3,
            "checkpoint-1000/.metadata": 1,
            "tmp-checkpoint-1500/optimizer.pt": 1,
            "runs/events.out.tfevents.1700000000.host.1.0": 1,
        },
    )
    assert ckptdir.checkpoint_patterns(listing) == {"checkpoint-#"}
    assert ckptdir.durable_step(listing, {"checkpoint-#"}) == 1000
    assert ckptdir.temp_files(listing) == ["tmp-checkpoint-1500/optimizer.pt"]  # not .metadata
    assert ckptdir.step_of("epoch=0-step=8.ckpt") == 8 and ckptdir.step_of("last.ckpt") is None
    assert (
        ckptdir.entry_of(str(tmp_path / "checkpoint-500" / "x.pt"), str(tmp_path))
        == "checkpoint-500"
    )
    assert ckptdir.entry_of("/elsewhere/x.pt", str(tmp_path)) is None
