"""Each shell rule's "why", reproduced with the real bash: the flagged script fails the way the
rule says, and the fixed one (which the rule leaves alone) does not."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.lint.reproduce import bash, flagged, wait_for, write


def test_rc101_crlf_puts_a_carriage_return_into_the_last_argument(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.sh", b"#!/usr/bin/env bash\r\nmkdir -p runs\r\ntouch runs/out\r\n")
    good = write(tmp_path / "good.sh", b"#!/usr/bin/env bash\nmkdir -p good\ntouch good/out\n")
    assert flagged(bad, "RC101") and not flagged(good, "RC101")
    run = bash(bad, cwd=tmp_path)
    bash(good, cwd=tmp_path)
    # `runs\r` was made, so `runs/out\r` has no directory to go into.
    assert (tmp_path / "runs\r").is_dir() and not (tmp_path / "runs").exists()
    assert run.returncode != 0 and "No such file or directory" in run.stderr
    assert (tmp_path / "good" / "out").exists()


def test_rc103_mode_and_shebang_disagreeing_stops_the_launch(tmp_path: Path) -> None:
    not_exec = write(tmp_path / "run.sh", "#!/usr/bin/env bash\necho started\n", mode=0o644)
    no_shebang = write(tmp_path / "job.sh", 'if [[ -n "$HOME" ]]; then echo bash-only; fi\n')
    assert flagged(not_exec, "RC103") == [1] and flagged(no_shebang, "RC103") == [1]
    assert bash("./run.sh", cwd=tmp_path).returncode == 126  # Permission denied
    # nohup and setsid hand a script without #! to /bin/sh (execvp's ENOEXEC fallback) ...
    run = subprocess.run(["nohup", "./job.sh"], cwd=tmp_path, capture_output=True, text=True)
    if os.path.realpath("/bin/sh").endswith("dash"):
        assert "bash-only" not in run.stdout and "[[" in run.stderr + run.stdout
    # ... and a launcher that execs it directly gets ENOEXEC.
    with pytest.raises(OSError, match="Exec format error"):
        subprocess.run(["./job.sh"], cwd=tmp_path, check=False)
    # Data files nobody executes are not judged, whatever their mode.
    assert not flagged(write(tmp_path / "conf.yml", "lr: 1\n"), "RC103")


def test_rc104_success_is_printed_after_a_failed_copy(tmp_path: Path) -> None:
    body = "#!/usr/bin/env bash\n{copy}\necho 'backup done'\n"
    bad = write(tmp_path / "bad.sh", body.format(copy="cp -r ckpt /nonexistent/dir/"))
    good = write(tmp_path / "good.sh", body.format(copy="cp -r ckpt /nonexistent/dir/ || exit 1"))
    (tmp_path / "ckpt").mkdir()
    assert flagged(bad, "RC104") == [2] and not flagged(good, "RC104")
    run = bash(bad, cwd=tmp_path)
    assert "backup done" in run.stdout and "cannot" in run.stderr  # said done, copied nothing
    assert "backup done" not in bash(good, cwd=tmp_path).stdout


def test_rc105_unquoted_pipe_splits_the_grep_pattern(tmp_path: Path) -> None:
    (tmp_path / "run.log").write_text("eval loss 1.0\n")
    bad = write(tmp_path / "bad.sh", "#!/usr/bin/env bash\ngrep -c train|eval run.log\n")
    good = write(tmp_path / "good.sh", "#!/usr/bin/env bash\ngrep -cE 'train|eval' run.log\n")
    assert flagged(bad, "RC105") == [2] and not flagged(good, "RC105")
    # grep got no file (it read the empty stdin), and `eval run.log` ran the log as a command.
    run = bash(bad, cwd=tmp_path)
    assert "run.log: command not found" in run.stderr
    assert bash(good, cwd=tmp_path).stdout.strip() == "1"
    # With a terminal-like stdin that never ends (a pipe held open), the grep waits forever.
    held = subprocess.Popen(["bash", str(bad)], cwd=tmp_path, stdin=subprocess.PIPE)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            held.wait(timeout=3)
    finally:
        held.kill()
        held.wait()
        assert held.stdin is not None
        held.stdin.close()


def _own_shell_matches(script: str, *args: str, stdin: str | None = None) -> bool:
    """Whether `pgrep -f` run by this bash finds a process other than the ones we know of."""
    proc = subprocess.run(
        ["bash", *args] if stdin is not None else ["bash", "-c", script, *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    return bool(proc.stdout.strip())


def test_rc106_pgrep_finds_the_shell_that_runs_it(tmp_path: Path) -> None:
    marker = f"zz-rc106-{os.getpid()}"
    # A string bash keeps running (the pgrep is not its last command) holds the pattern ...
    assert _own_shell_matches(f"pgrep -fa {marker}; true")
    assert _own_shell_matches(f"pgrep -fa {marker} && true")
    # ... and so does `bash -s ARG` reading a heredoc, where "$1" is the pattern.
    assert _own_shell_matches("", "-s", marker, stdin='pgrep -fa "$1"\n')
    # bash execs a string's last simple command: no shell is left to match (not flagged).
    assert not _own_shell_matches(f"true; pgrep -fa {marker}")
    bad = write(
        tmp_path / "bad.sh",
        f"#!/usr/bin/env bash\nssh box bash -s {marker} <<'EOF'\npkill -f \"$1\"\nsleep 1\nEOF\n"
        f"ssh box 'pgrep -f {marker} && echo running'\n",
    )
    good = write(
        tmp_path / "good.sh",
        f"#!/usr/bin/env bash\nssh box 'sleep 1; pgrep -f {marker}'\n"
        f"ssh box 'pgrep -f \"[{marker[0]}]{marker[1:]}\" && echo running'\n",
    )
    assert flagged(bad, "RC106") == [3, 6] and not flagged(good, "RC106")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_rc108_detached_shell_sees_an_unexported_variable_empty(tmp_path: Path) -> None:
    body = "#!/usr/bin/env bash\n{assign}\ntmux new-session -d -s rc108 'echo \"[$DATA]\" > seen'\n"
    bad = write(tmp_path / "bad.sh", body.format(assign="DATA=/root/data"))
    good = write(tmp_path / "good.sh", body.format(assign="export DATA=/root/data"))
    assert flagged(bad, "RC108") == [3] and not flagged(good, "RC108")
    env = {"TMUX_TMPDIR": str(tmp_path), "TMUX": ""}  # a tmux server of this test's own
    try:
        for script, expected in ((bad, "[]"), (good, "[/root/data]")):
            bash(script, cwd=tmp_path, env=env)
            wait_for((tmp_path / "seen").exists, "the tmux job")
            wait_for(lambda: (tmp_path / "seen").read_text().strip() != "", "its output")
            assert (tmp_path / "seen").read_text().strip() == expected
            (tmp_path / "seen").unlink()
            wait_for(
                lambda: bash("tmux has-session -t rc108", cwd=tmp_path, env=env).returncode != 0,
                "the session to end",
            )
    finally:
        bash("tmux kill-server", cwd=tmp_path, env=env)


def test_rc109_a_plain_script_gives_background_jobs_dev_null_as_stdin(tmp_path: Path) -> None:
    """Why RC109 no longer fires outside ssh: job control off, `cmd &` reads /dev/null."""
    script = write(
        tmp_path / "launch.sh",
        "#!/usr/bin/env bash\nreadlink /proc/self/fd/0 > stdin.txt &\nwait\n",
    )
    assert not flagged(script, "RC109")
    for shell in ("bash", "dash"):
        if shutil.which(shell):
            subprocess.run([shell, str(script)], cwd=tmp_path, input="", text=True, check=True)
            assert (tmp_path / "stdin.txt").read_text().strip() == "/dev/null"


def test_rc110_python_logs_nothing_to_a_file_until_its_buffer_fills(tmp_path: Path) -> None:
    program = "import time\nprint('step 1', flush=False)\ntime.sleep(60)\n"
    # The job's own path in its command line: the cleanup kills these two and nothing else.
    train = tmp_path / tmp_path.name
    train.write_text(program)
    bad = write(tmp_path / "bad.sh", '#!/usr/bin/env bash\nnohup python3 "$1" > a.log 2>&1 &\n')
    good = write(
        tmp_path / "good.sh", '#!/usr/bin/env bash\nnohup python3 -u "$1" > b.log 2>&1 &\n'
    )
    assert flagged(bad, "RC110") == [2] and not flagged(good, "RC110")
    try:
        bash(bad, str(train), cwd=tmp_path)
        bash(good, str(train), cwd=tmp_path)
        wait_for(lambda: "step 1" in (tmp_path / "b.log").read_text(), "the unbuffered log")
        # Both printed at once; only the -u one reached its log.
        assert "step 1" not in (tmp_path / "a.log").read_text()
    finally:
        subprocess.run(["pkill", "-f", str(train)], check=False)


def test_rc111_colon_dash_turns_an_empty_off_switch_back_on(tmp_path: Path) -> None:
    body = (
        '#!/usr/bin/env bash\nEVAL_EVERY=""\n'
        'echo "every=${{EVAL_EVERY{op}500}}"  # empty disables eval\n'
    )
    bad = write(tmp_path / "bad.sh", body.format(op=":-"))
    good = write(tmp_path / "good.sh", body.format(op="-"))
    assert flagged(bad, "RC111") == [3] and not flagged(good, "RC111")
    assert bash(bad, cwd=tmp_path).stdout.strip() == "every=500"  # evaluation is back on
    assert bash(good, cwd=tmp_path).stdout.strip() == "every="


def test_rc112_a_stdin_reader_in_the_loop_swallows_the_remaining_lines(tmp_path: Path) -> None:
    (tmp_path / "hosts.txt").write_text("a\nb\nc\n")
    body = (
        "#!/usr/bin/env bash\nwhile read -r host; do\n"
        "    python3 -c 'import sys; sys.stdin.read()'{redirect}\n    echo \"$host\"\n"
        "done < hosts.txt\n"
    )
    bad = write(tmp_path / "bad.sh", body.format(redirect=""))
    good = write(tmp_path / "good.sh", body.format(redirect=" < /dev/null"))
    assert flagged(bad, "RC112") == [3] and not flagged(good, "RC112")
    assert bash(bad, cwd=tmp_path).stdout.split() == ["a"]  # b and c were eaten
    assert bash(good, cwd=tmp_path).stdout.split() == ["a", "b", "c"]


def test_rc114_a_poll_loop_without_a_bound_never_ends(tmp_path: Path) -> None:
    bad = write(
        tmp_path / "bad.sh",
        "#!/usr/bin/env bash\nuntil [ -f ready ]; do\n    sleep 0.1\ndone\n",
    )
    good = write(
        tmp_path / "good.sh",
        '#!/usr/bin/env bash\ntries=0\nuntil [ -f ready ] || [ "$tries" -ge 5 ]; do\n'
        "    tries=$((tries + 1))\n    sleep 0.1\ndone\n",
    )
    assert flagged(bad, "RC114") == [2] and not flagged(good, "RC114")
    with pytest.raises(subprocess.TimeoutExpired):
        bash(bad, cwd=tmp_path, timeout=3)
    assert bash(good, cwd=tmp_path, timeout=30).returncode == 0


_OLD = "#!/usr/bin/env bash\ntouch started; sleep 2\necho first > out.txt\n"
_NEW = "#!/usr/bin/env bash\ntouch started; sleep 2\necho second > out.txt; touch EXTRA\n"
_WRAPPED = (
    "#!/usr/bin/env bash\nmain() {\ntouch started; sleep 2\necho first > out.txt\n}\nmain; exit\n"
)


def _run_while_replacing(tmp_path: Path, script: Path, replacement: str, how: str) -> str:
    """Start the script, replace it while its `sleep` runs, and say what it wrote."""
    for leftover in ("started", "out.txt", "EXTRA"):
        (tmp_path / leftover).unlink(missing_ok=True)
    proc = subprocess.Popen(["bash", str(script)], cwd=tmp_path, stdin=subprocess.DEVNULL)
    try:
        wait_for((tmp_path / "started").exists, "the script to start")
        staged = tmp_path / "staged.sh"
        staged.write_text(replacement)
        if how == "cp":  # cp onto the file: the same inode, truncated and rewritten
            subprocess.run(["cp", str(staged), str(script)], check=True)
        else:  # what git pull and rsync do: a new file renamed over the name
            os.replace(staged, script)
        assert proc.wait(timeout=60) == 0
    finally:
        _kill(proc)
    extra = "+EXTRA" if (tmp_path / "EXTRA").exists() else ""
    return (tmp_path / "out.txt").read_text().strip() + extra


def test_rc116_a_file_written_in_place_changes_what_the_running_bash_runs(
    tmp_path: Path,
) -> None:
    bad = write(tmp_path / "bad.sh", _OLD)
    good = write(tmp_path / "good.sh", _WRAPPED)
    assert flagged(bad, "RC116") == [1] and not flagged(good, "RC116")
    # bash goes on reading at its offset in the new text: it runs what it was never given.
    assert _run_while_replacing(tmp_path, bad, _NEW, "cp") == "second+EXTRA"
    write(bad, _OLD)
    assert _run_while_replacing(tmp_path, bad, _NEW, "rename") == "first"  # old inode kept
    # Wrapped: bash parsed `main; exit` before main ran, so nothing after it is read.
    assert _run_while_replacing(tmp_path, good, _WRAPPED.replace("first", "second"), "cp") == (
        "first"
    )


def test_rc116_sbatch_and_single_final_command_are_not_flagged(tmp_path: Path) -> None:
    sbatch = write(
        tmp_path / "job.sh",
        "#!/usr/bin/env bash\n#SBATCH --nodes=1\nsrun python -u train.py\necho done\n",
    )
    final = write(tmp_path / "run.sh", "#!/usr/bin/env bash\nexport X=1\npython -u train.py\n")
    assert not flagged(sbatch, "RC116") and not flagged(final, "RC116")


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def test_rc119_the_line_reported_is_where_bash_itself_gives_up(tmp_path: Path) -> None:
    fixtures = Path(__file__).parent.parent / "fixtures" / "lint" / "RC119"
    bad = write(tmp_path / "bad.sh", (fixtures / "bad_python_behind_sh.sh").read_bytes())
    assert flagged(bad, "RC119") == [3]
    # Python behind an sh shebang: bash's parser stops at the same line, and run as a
    # script it executes the lines before that as commands, then dies.
    check = subprocess.run(["bash", "-n", str(bad)], capture_output=True, text=True, check=False)
    assert check.returncode == 2 and "line 3: syntax error" in check.stderr
    run = bash(bad, "x", cwd=tmp_path)
    assert run.returncode == 2 and "line 3: syntax error" in run.stderr
    assert "import" in run.stderr  # line 2 ran as a command first
    # What the rule leaves alone bash reads whole, and runs.
    for name, expected in (
        ("good_python_behind_sh.sh", "hello ['x']"),
        ("good_trailing_continuation.sh", ""),
    ):
        good = write(tmp_path / name, (fixtures / name).read_bytes())
        assert not flagged(good, "RC119")
        ok = subprocess.run(["bash", "-n", str(good)], capture_output=True, check=False)
        assert ok.returncode == 0
        if expected:
            assert bash(good, "x", cwd=tmp_path).stdout.strip() == expected


def test_rc210_a_python_heredoc_fails_on_the_line_reported_in_the_script(tmp_path: Path) -> None:
    fixtures = Path(__file__).parent.parent / "fixtures" / "lint" / "RC210"
    bad = write(tmp_path / "bad.sh", (fixtures / "bad_heredoc.sh").read_bytes())
    good = write(tmp_path / "good.sh", (fixtures / "good_heredoc.sh").read_bytes())
    lines = flagged(bad, "RC210")
    if not lines:
        pytest.skip("ruff is not installed (extra lint-python)")
    assert lines == [9] and not flagged(good, "RC210")
    run = bash(bad, cwd=tmp_path)
    # Python numbers the heredoc's lines from its first: line 5 of the body is line 9 here.
    assert run.returncode == 1 and 'File "<stdin>", line 5' in run.stderr
    assert "NameError: name 'stpes'" in run.stderr
    assert bad.read_text().splitlines()[8] == 'print(f"trained {stpes} steps")'
    # The unquoted heredoc runs as bash expands it: its `$X` are not Python's to judge.
    fine = bash(good, cwd=tmp_path, env={"OUT": "/ckpt"})
    assert fine.returncode == 0 and fine.stdout.splitlines()[0].startswith("/ckpt/ckpt-3.pt ")


def _rc102_findings(repo: Path) -> list[str]:
    from rentcheck.config import Config
    from rentcheck.lint.engine import Linter
    from rentcheck.registry import load_rule_set

    config = Config(root=str(repo), select=("RC102",))
    result = Linter(config, load_rule_set(with_plugins=False)).run([str(repo)], cache=False)
    return [f.path or "" for f in result.findings]


def test_rc102_an_autocrlf_checkout_brings_crlf_back_unless_attributes_pin_lf(
    tmp_path: Path,
) -> None:
    from tests.conftest import git, make_repo

    script = "#!/usr/bin/env bash\nmkdir -p out\ntouch out/done\n"
    for name, attributes in (("bad", None), ("good", "*.sh text eol=lf\n")):
        files = {"run.sh": script} | ({".gitattributes": attributes} if attributes else {})
        origin = make_repo(tmp_path / f"{name}-origin", files, executable=("run.sh",))
        git(origin, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
        assert _rc102_findings(origin) == ([".gitattributes"] if attributes is None else [])
        # A collaborator's checkout with core.autocrlf=true (Git for Windows' default).
        clone = tmp_path / f"{name}-clone"
        subprocess.run(
            ["git", "-c", "core.autocrlf=true", "clone", "-q", str(origin), str(clone)],
            check=True,
        )
        crlf = b"\r\n" in (clone / "run.sh").read_bytes()
        run = bash(clone / "run.sh", cwd=clone)
        if attributes is None:  # the copy that goes to the box breaks there
            assert crlf and run.returncode != 0 and not (clone / "out" / "done").exists()
        else:
            assert not crlf and run.returncode == 0 and (clone / "out" / "done").exists()


def test_rc113_a_key_in_the_script_is_in_git_history_and_in_every_users_ps(
    tmp_path: Path,
) -> None:
    from tests.conftest import git, make_repo

    key = "0123456789abcdef0123456789abcdef01234567"
    # A stand-in for the wandb CLI: it stays up while the test looks at the process table.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # Run by its interpreter with its arguments, as the real (Python) one is.
    write(
        bin_dir / "wandb",
        f"#!/bin/sh\ntouch {tmp_path}/$1.started\nwhile :; do sleep 0.1; done\n",
    )
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "WANDB_API_KEY": key}
    for name, line in (("bad", f"wandb login {key}"), ("good", "wandb login")):
        repo = make_repo(tmp_path / name, {"launch.sh": f"#!/usr/bin/env bash\n{line}\n"})
        assert flagged(repo / "launch.sh", "RC113") == ([2] if name == "bad" else [])
        git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "launch")
        in_history = key in git(repo, "log", "-p")
        proc = subprocess.Popen(
            ["bash", str(repo / "launch.sh")],
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
        )
        try:
            wait_for((tmp_path / "login.started").exists, "the login")
            # What any user of a shared host sees (/proc/PID/cmdline is world-readable).
            seen = subprocess.run(
                ["ps", "-eww", "-o", "args"], capture_output=True, text=True
            ).stdout
        finally:
            proc.kill()
            proc.wait()
            subprocess.run(["pkill", "-f", f"{tmp_path}/"], check=False)
            (tmp_path / "login.started").unlink()
        assert (in_history, key in seen) == ((True, True) if name == "bad" else (False, False))
