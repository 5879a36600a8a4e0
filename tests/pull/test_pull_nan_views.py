"""NaN/Inf is judged in the bytes some tensor's view covers, not in a whole storage:
``torch.save(t[:2])`` writes ``t``'s whole storage, and a NaN in its tail is no value of the
loaded tensor. A NaN inside any view (or in a storage saved as such) is still refused.

The oracle is the real loader: verify refuses a file exactly when some tensor or storage
that ``torch.load`` returns holds a NaN or Inf."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from rentcheck.model import Severity
from rentcheck.pull.filecheck import verify_file


def _tail_nan() -> torch.Tensor:
    t = torch.zeros(10)
    t[5:] = float("nan")
    return t


def _last_column_inf() -> torch.Tensor:
    m = torch.zeros(4, 4)
    m[:, 3] = float("inf")
    return m


def _both_views(t: torch.Tensor) -> dict[str, torch.Tensor]:
    return {"a": t[:2], "b": t}


CASES: dict[str, Callable[[], object]] = {
    "head-of-a-storage": lambda: _tail_nan()[:2],
    "two-views-before-the-nan": lambda: {"a": _tail_nan()[:2], "b": _tail_nan()[3:5]},
    "bf16-head": lambda: _tail_nan().to(torch.bfloat16)[:2],
    "columns-beside-an-inf-column": lambda: _last_column_inf()[:, :3],
    "empty-view": lambda: _tail_nan()[:0],
    # refused: the view reaches a NaN / Inf
    "view-over-the-nan": lambda: _tail_nan()[6:],
    "strided-onto-a-nan": lambda: _tail_nan()[::6],
    "columns-with-the-inf": lambda: _last_column_inf()[:, 2:],
    "one-of-two-views-over-it": lambda: _both_views(_tail_nan()),
}


def _nonfinite(value: object) -> bool:
    if isinstance(value, torch.Tensor):
        return not bool(torch.isfinite(value.float()).all())
    if isinstance(value, torch.TypedStorage):
        return _nonfinite(torch.tensor([], dtype=value.dtype).set_(value))
    if isinstance(value, dict):
        return any(_nonfinite(v) for v in value.values())
    return False


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_nan_counts_only_inside_a_view(tmp_path: Path, case: str, legacy: bool) -> None:
    path = tmp_path / "m.pt"
    torch.save(CASES[case](), path, _use_new_zipfile_serialization=not legacy)
    loaded = torch.load(path, weights_only=True)
    verdict, findings = verify_file(path)
    errors = {f.code for f in findings if f.severity >= Severity.ERROR}
    assert verdict.kind == ("torch-legacy" if legacy else "torch-zip")
    assert errors == ({"RC516"} if _nonfinite(loaded) else set()), findings


def test_a_storage_saved_as_such_is_scanned_whole(tmp_path: Path) -> None:
    t = _tail_nan()
    path = tmp_path / "m.pt"
    with warnings.catch_warnings():  # TypedStorage is deprecated (torch warns once)
        warnings.simplefilter("ignore", UserWarning)
        storage = t.storage()
    torch.save({"s": storage, "a": t[:2]}, path)
    assert _nonfinite(torch.load(path, weights_only=True)["s"])
    assert "RC516" in {f.code for f in verify_file(path)[1]}


def test_a_view_of_a_billion_rows_costs_one_range() -> None:
    """The runs a view covers have a budget: past it, one range from first to last byte."""
    from rentcheck.pull.formats.storage_views import StorageViews

    views = StorageViews()
    views.named("0")
    views.viewed("0", 0, [10**9, 3], [4, 1], 4)  # three columns of four, a billion rows
    assert views.spans("0", 4) == ((0, ((10**9 - 1) * 4 + 3) * 4),)
    views.named("1")
    views.viewed("1", 2, [3, 2], [4, 1], 4)  # two middle columns of three rows
    assert views.spans("1", 4) == ((8, 16), (24, 32), (40, 48))
    views.named("2")  # named twice, viewed once: the other reference reads it whole
    views.named("2")
    views.viewed("2", 0, [2], [1], 4)
    assert views.spans("2", 4) is None
