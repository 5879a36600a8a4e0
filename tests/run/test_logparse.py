"""Step/loss lines of the frameworks the gates know, NaN losses, and the last traceback."""

from __future__ import annotations

import pytest

from rentcheck.run.logparse import (
    DEFAULT_DIGEST_PATTERNS,
    DEFAULT_STEP_PATTERNS,
    compile_patterns,
    find_digest,
    last_traceback,
    nonfinite_loss_lines,
    parse_steps,
)

PATTERNS = compile_patterns(DEFAULT_STEP_PATTERNS)

CASES = {
    "tinytrain": (
        ["starting from scratch", "step=1 loss=1.377954364e+00", "saved x/ckpt-1.pt step=1",
         "step=2 loss=1.387462497e+00", "done step=2 weights_sha256=" + "a" * 64],
        0, [(1, "1.377954364e+00"), (2, "1.387462497e+00")],
    ),
    "torchtitan": (
        ["\x1b[31mstep:  1  \x1b[32mloss: 10.8932  \x1b[33mmemory:  1.2GiB(3%)",
         "step:  2  loss:  9.1000  memory: 1.2GiB"],
        0, [(1, "10.8932"), (2, "9.1000")],
    ),
    "hf-trainer": (
        ["{'loss': 2.3012, 'grad_norm': 1.5, 'learning_rate': 5e-05, 'epoch': 0.01}",
         "{'loss': nan, 'grad_norm': nan, 'learning_rate': 5e-05, 'epoch': 0.02}",
         "{'train_runtime': 1.0, 'train_loss': 2.3}"],
        1, [(None, "2.3012"), (None, "nan")],
    ),
    # transformers 5 prints the values as strings (captured from test_resume_hf's project).
    "hf-trainer-5": (
        ["{'loss': '1.768', 'grad_norm': '2.79', 'learning_rate': '1.667e-05', 'epoch': '1.8'}",
         "{'loss': '1.463', 'grad_norm': '2.691', 'learning_rate': '1.25e-05', 'epoch': '2'}",
         "{'train_runtime': '0.0838', 'train_loss': '2.039', 'epoch': '2.4'}"],
        1, [(None, "1.768"), (None, "1.463")],
    ),
    "lightning": (
        ["Epoch 0:  50%|#####     | 1/2 [00:00<00:00,  3.1it/s, v_num=0, train_loss=1.230]",
         "Epoch 0: 100%|##########| 2/2 [00:00<00:00,  3.3it/s, v_num=0, train_loss=1.110]",
         "Epoch 1:  50%|#####     | 1/2 [00:00<00:00,  3.1it/s, v_num=0, train_loss=0.990]"],
        2, [(1, "1.230"), (2, "1.110"), (3, "0.990")],
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_default_patterns_read_each_framework(name: str) -> None:
    lines, index, expected = CASES[name]
    used, records = parse_steps(lines, PATTERNS)
    assert used == index
    assert [(r.step, r.loss) for r in records] == expected


def test_a_redrawn_progress_bar_keeps_the_last_value_per_step() -> None:
    lines = ["step=1 loss=3.0", "step=1 loss=2.0", "step=2 loss=1.0"]
    assert [(r.step, r.loss) for r in parse_steps(lines, PATTERNS)[1]] == [(1, "2.0"), (2, "1.0")]


def test_patterns_need_a_step_or_loss_group() -> None:
    with pytest.raises(ValueError, match="none of the named groups"):
        compile_patterns([r"step (\d+)"])
    assert compile_patterns([r"it (?P<step>\d+)"])


def test_non_finite_losses_in_any_common_spelling() -> None:
    lines = [
        "step=1 loss=nan",
        "{'loss': inf, 'epoch': 1.0}",
        "train_loss: -Infinity",
        "loss=1.5 nan_count=0",
        "learning_rate=nan",
        "loss=nan.ckpt saved",
    ]
    assert nonfinite_loss_lines(lines) == lines[:3]


def test_the_last_traceback_and_its_exception() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/old.py", line 1, in <module>',
        "ValueError: an earlier, handled one",
        "step=1 loss=1.0",
        "Traceback (most recent call last):",
        '  File "/p/train.py", line 361, in <module>',
        "    sys.exit(main())",
        "             ^^^^^^",
        '  File "/p/model.py", line 26, in forward',
        "    logits = self.net(x)",
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x16 and 17x64)",
    ]
    tb = last_traceback(lines)
    assert tb is not None
    assert tb.frames == (("/p/train.py", 361, "<module>"), ("/p/model.py", 26, "forward"))
    assert tb.exception_type == "RuntimeError" and "mat1 and mat2" in tb.exception
    assert last_traceback(["all good"]) is None


def test_the_runs_own_weights_digest() -> None:
    digests = compile_patterns(DEFAULT_DIGEST_PATTERNS, "digest")
    lines = ["done step=3 weights_sha256=" + "b" * 64, "done step=4 weights_sha256=" + "c" * 64]
    assert find_digest(lines, digests) == "c" * 64
    assert find_digest(["weights_sha256=short"], digests) is None


def test_a_max_steps_truncated_last_epoch_keeps_counting_from_the_full_epochs() -> None:
    """5 batches an epoch, max_steps=7: Lightning's last bar reads 2/2, which is step 7."""
    pattern = compile_patterns(DEFAULT_STEP_PATTERNS)[2]
    bar = "Epoch {e}: 100%|##########| {s}/{t} [00:00<00:00,  3.3it/s, train_loss={v}]"
    lines = [bar.format(e=0, s=s, t=5, v=s) for s in range(1, 6)]
    lines += [bar.format(e=1, s=s, t=2, v=5 + s) for s in (1, 2)]
    _, records = parse_steps(lines, [pattern])
    assert [r.step for r in records] == [1, 2, 3, 4, 5, 6, 7]
    # A relaunch that only printed the truncated epoch, read with the reference's epoch size.
    _, relaunch = parse_steps(lines[-2:], [pattern], known_epoch_size=5)
    assert [r.step for r in relaunch] == [6, 7]
