"""RC117 watcher-remote-probe-without-timeout and RC118 gpu-wait-on-the-wrong-node: a watcher
or launcher that asks the wrong machine, or asks without a limit."""

from __future__ import annotations

from collections.abc import Iterator

from rentcheck.lint.shell.common import hit, shell_check
from rentcheck.lint.shell.redirects import ssh_options
from rentcheck.lint.shell.words import text
from rentcheck.model import Applicability, Rule, Severity

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from tree_sitter import Node

    from rentcheck.lint.shell.common import Hit
    from rentcheck.lint.shell.tree import Command, ShellScript

PROBE_RULE = Rule(
    code="RC117",
    name="watcher-remote-probe-without-timeout",
    family="shell",
    summary="A watch loop runs `ssh host nvidia-smi` (or `df`/`ls` of a mount) with no timeout",
    why=(
        "A GPU that fell off the bus makes `nvidia-smi` hang, and `df`, `ls` or `du` on a "
        "network mount whose server went away hang in the kernel. ssh then waits for the "
        "remote command forever: the connection is healthy, so ConnectTimeout and "
        "ServerAliveInterval never fire. The watcher loop stops at that line, and with it "
        "the alert, the restart or the teardown it was there for, while the meter runs. "
        "`timeout 60 ssh …` (or `ssh host timeout 30 nvidia-smi`) bounds each probe."
    ),
    example_bad="while sleep 60; do\n    ssh box nvidia-smi --query-gpu=utilization.gpu\ndone",
    example_good=(
        "while sleep 60; do\n    timeout 60 ssh box nvidia-smi --query-gpu=utilization.gpu"
        ' || echo "probe failed"\ndone'
    ),
    fix="Wrap the probe in `timeout N ssh …`, or run `timeout N` on the far side.",
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)

WRONG_NODE_RULE = Rule(
    code="RC118",
    name="gpu-wait-on-the-wrong-node",
    family="shell",
    summary="A GPU wait polls this machine, then `srun -w NODE`/`ssh NODE` starts work elsewhere",
    why=(
        "`until nvidia-smi; do sleep 2; done` asks the machine running the script: in a "
        "Slurm batch script that is the first node of the allocation, in a launcher it is "
        "your workstation. When the next line starts the work on another node (`srun -w "
        '"$node"`, `ssh "$node"`), the wait proved nothing about that node: it passes at '
        "once (or never ends, on a head without GPUs) and the job starts where the GPUs "
        "are not ready yet. Poll the node the work goes to. (Reported inside a loop over "
        "nodes, where the polled machine cannot be every target.)"
    ),
    example_bad=(
        'until nvidia-smi > /dev/null 2>&1; do sleep 2; done\nsrun -w "$node" ray start --block &'
    ),
    example_good=(
        'until srun -w "$node" nvidia-smi > /dev/null 2>&1; do sleep 2; done\n'
        'srun -w "$node" ray start --block &'
    ),
    fix='Run the probe on the target node: `srun -w "$node" nvidia-smi` or `ssh "$node" …`.',
    fix_applicability=Applicability.NONE,
    default_severity=Severity.WARNING,
)

# Probes that hang with the thing they look at: a lost GPU, a dead network mount.
_HANGING_PROBES = frozenset({"nvidia-smi", "rocm-smi", "df", "du", "ls", "stat", "find", "mount"})
_LOOPS = ("while_statement", "for_statement", "c_style_for_statement")
_GPU_PROBES = frozenset({"nvidia-smi", "rocm-smi"})


def _remote_words(command: Command) -> list[str]:
    return " ".join(ssh_options(command.argv)[1][1:]).replace(";", " ; ").split()


def _unbounded_probe(words: list[str]) -> str | None:
    """The hanging probe the remote command runs without a `timeout` before it, if any."""
    bounded = False
    for word in words:
        name = word.rsplit("/", 1)[-1]
        if name == "timeout":
            bounded = True
        elif name in (";", "&&", "||", "|"):
            bounded = False
        elif name in _HANGING_PROBES and not bounded:
            return name
    return None


def _probe_hits(script: ShellScript) -> Iterator[Hit]:
    for command in script.commands_named(("ssh",)):
        if not script.within_any(command.node, _LOOPS):
            continue  # a one-off probe hangs in front of a person, who sees it
        probe = _unbounded_probe(_remote_words(command))
        if probe is None:
            continue
        yield hit(
            command.line,
            command.col,
            f"`ssh … {probe}` in a watch loop has no timeout: a lost GPU or a dead mount makes "
            f"`{probe}` hang and the watcher stops here; use `timeout 60 ssh …`",
            probe=probe,
        )


def _polls_local_gpu(loop: Node, script: ShellScript) -> bool:
    condition = loop.children[1] if len(loop.children) > 1 else None
    if condition is None:
        return False
    probes = script.commands_in(condition, _GPU_PROBES)
    return bool(probes) and not script.commands_in(condition, ("ssh", "srun"))


def _elsewhere(statement: Node, script: ShellScript) -> Command | None:
    """The command in ``statement`` that starts work on a named node, if any."""
    for command in script.commands_in(statement, ("srun", "ssh")):
        argv = command.argv
        if command.name == "ssh" or any(
            a in ("-w", "--nodelist") or a.startswith(("--nodelist=", "-w")) for a in argv
        ):
            return command
    return None


def _wrong_node_hits(script: ShellScript) -> Iterator[Hit]:
    if not script.has_command(_GPU_PROBES):
        return
    for loop in script.of("while_statement"):
        if not _polls_local_gpu(loop, script):
            continue
        # Inside a loop over nodes the wait is surely on the wrong one; before a single
        # `srun -w "$head"` the batch host may well be that node (Slurm runs it there).
        if not any(p.type in _LOOPS for p in _ancestors(loop)):
            continue
        statement = loop
        while statement.parent is not None and statement.parent.type == "redirected_statement":
            statement = statement.parent
        following = statement.next_named_sibling
        while following is not None and following.type == "comment":
            following = following.next_named_sibling
        target = _elsewhere(following, script) if following is not None else None
        if target is None:
            continue
        yield hit(
            int(loop.start_point[0]) + 1,
            int(loop.start_point[1]) + 1,
            f"this loop waits for GPUs on the machine running the script, but line "
            f"{target.line} starts the work on another node (`{target.name} "
            f"{' '.join(target.argv[:3])}`); poll that node instead",
            node_command=text(target.node)[:80],
        )


def _ancestors(node: Node) -> Iterator[Node]:
    current = node.parent
    while current is not None:
        yield current
        current = current.parent


PROBE = shell_check(PROBE_RULE, _probe_hits)
WRONG_NODE = shell_check(WRONG_NODE_RULE, _wrong_node_hits)
