"""Run the selected lint checks over files: findings, suppressions, per-file ignores, fixes."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from rentcheck.atomic import write_atomic
from rentcheck.config import Config, code_matches, selected_rules
from rentcheck.lint.cache import FindingsCache
from rentcheck.lint.check import FileCheck, Project, ProjectCheck
from rentcheck.lint.source import FileKind, SourceFile
from rentcheck.lint.suppress import apply_suppressions
from rentcheck.lint.walk import Candidate, collect
from rentcheck.model import Applicability, Edit, Finding, Rule
from rentcheck.pathmatch import matcher, matches_any
from rentcheck.registry import RuleSet

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["LintResult", "Linter"]

_MAX_FIX_ROUNDS = 5
# Below this many files forking workers costs more than it saves. (Measured over random
# samples of system scripts, all shell rules, cold: even at 16 files, 1.2x faster at 32,
# 1.35x at 64, 1.7x at 128 with two workers.)
_PARALLEL_MIN_FILES = 32


class _FileOutcome:
    """What checking one file produced; sent back from a worker process when forked."""

    __slots__ = (
        "cache_entries",
        "diffs",
        "findings",
        "fixed",
        "path",
        "project_source",
        "repo_root",
        "skipped",
        "suppressed",
    )

    def __init__(self, path: str, repo_root: str | None) -> None:
        self.path = path
        self.skipped: str | None = None  # why no rule could read it (binary, too large)
        self.repo_root = repo_root
        self.findings: list[Finding] = []
        self.suppressed = 0
        self.fixed: list[Finding] = []
        self.diffs: list[str] = []
        self.project_source: SourceFile | None = None  # only for files a project check reads
        self.cache_entries: dict[str, list[dict[str, Any]]] = {}


def _workers(files: int, jobs: int | None) -> int:
    if jobs is not None:
        return max(1, jobs)
    if files < _PARALLEL_MIN_FILES or not sys.platform.startswith("linux"):
        return 1
    return max(1, min(len(os.sched_getaffinity(0)), 8, files // (_PARALLEL_MIN_FILES // 2)))


class LintResult:
    """Everything one lint run found, fixed and suppressed."""

    __slots__ = ("checked", "diffs", "findings", "fixed", "skipped", "suppressed")

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.checked: list[str] = []
        # Files a rule wanted by their name but could not read: (path, why). Not "checked".
        self.skipped: list[tuple[str, str]] = []
        self.fixed: list[Finding] = []
        self.suppressed = 0
        self.diffs: list[str] = []


class _Plan:
    """The checks one file gets, split by whether their findings may be cached by content."""

    __slots__ = ("cache_kind", "checks", "content", "direct")

    def __init__(self, kind: FileKind, checks: Sequence[FileCheck]) -> None:
        self.checks = tuple(checks)
        self.direct = tuple(c for c in checks if not c.content_only)
        self.content = tuple(c for c in checks if c.content_only)
        # Cached findings are keyed by content and by which rules produced them.
        self.cache_kind = f"{kind.value}|{','.join(c.rule.code for c in self.content)}"


class Linter:
    """The selected rules of one configuration, ready to run on files or whole trees."""

    def __init__(self, config: Config, rules: RuleSet) -> None:
        self.config = config
        self.known: Mapping[str, Rule] = rules.rules
        self.enabled: Mapping[str, Rule] = selected_rules(config, rules.rules, _gate_codes)
        self.file_checks = [c for c in rules.file_checks if c.rule.code in self.enabled]
        self.project_checks = [c for c in rules.project_checks if c.rule.code in self.enabled]
        self.training_paths = _training_paths(config)
        # The findings cache of the run in progress (run() sets it; None outside a run).
        self.cache: FindingsCache | None = None
        self._in_training = None if self.training_paths is None else matcher(self.training_paths)
        # Per kind of file, the checks grouped by their ``applies`` function: most rules of a
        # family share one, so a file costs one call per family, not one per rule.
        self._by_kind: dict[FileKind, list[tuple[Callable[[SourceFile], bool], list[FileCheck]]]]
        self._by_kind = {}
        for kind in FileKind:
            # Keyed by identity: a plugin's applies may be a callable that cannot be hashed.
            groups: dict[int, tuple[Callable[[SourceFile], bool], list[FileCheck]]] = {}
            for c in self.file_checks:
                if c.kinds is None or kind in c.kinds:
                    groups.setdefault(id(c.applies), (c.applies, []))[1].append(c)
            self._by_kind[kind] = list(groups.values())
        self._plans: dict[tuple[FileKind, tuple[bool, ...], bool], _Plan] = {}

    # -- one file -------------------------------------------------------------------------
    def in_scope(self, rule: Rule, source: SourceFile) -> bool:
        """Python rules look only at the training code, when the config names it."""
        return rule.family != "python" or self._is_training(source.path)

    def _is_training(self, path: str) -> bool:
        return self._in_training is None or self._in_training(path)

    def plan(self, source: SourceFile) -> _Plan:
        """The checks that apply to ``source``; one call per group of checks, and the plan
        itself is shared by every file that answers the same way."""
        groups = self._by_kind[source.kind]
        answers = tuple([applies(source) for applies, _ in groups])
        training = self._is_training(source.path)
        key = (source.kind, answers, training)
        plan = self._plans.get(key)
        if plan is None:
            checks = [
                c for (_, members), yes in zip(groups, answers, strict=True) if yes for c in members
            ]
            if not training:
                checks = [c for c in checks if c.rule.family != "python"]
            plan = self._plans[key] = _Plan(source.kind, checks)
        return plan

    def applicable(self, source: SourceFile) -> list[FileCheck]:
        return list(self.plan(source).checks)

    def wants(self, source: SourceFile, plan: _Plan | None = None) -> bool:
        """Whether any selected rule looks at this file. Only such files are checked, and
        only their directives count: text that merely mentions one is not a directive."""
        return bool((plan or self.plan(source)).checks) or any(
            check.applies(source) and self.in_scope(check.rule, source)
            for check in self.project_checks
        )

    def _ignored_here(self, finding: Finding) -> bool:
        if finding.path is None:
            return False
        return any(
            matches_any(finding.path, [glob]) and any(code_matches(finding.code, c) for c in codes)
            for glob, codes in self.config.per_file_ignores.items()
        )

    def finalize(
        self, source: SourceFile, findings: Iterable[Finding]
    ) -> tuple[list[Finding], int]:
        """Per-file ignores, then inline suppressions (which may add RC900/RC901)."""
        kept = [f for f in findings if not self._ignored_here(f)]
        result, suppressed = apply_suppressions(source, kept, self.enabled, self.known)
        return [f for f in result if not self._ignored_here(f)], suppressed

    def check_source(
        self, source: SourceFile, plan: _Plan | None = None, cache: FindingsCache | None = None
    ) -> tuple[list[Finding], int]:
        plan = plan or self.plan(source)
        raw = [f for check in plan.direct for f in check.run(source)]
        raw.extend(self._content_findings(source, plan, cache))
        if not raw and b"rentcheck:" not in source.data:
            return raw, 0  # the common case: nothing to filter or suppress
        return self.finalize(source, raw)

    def projects(
        self, git_root: str | None, files: Sequence[SourceFile]
    ) -> Iterator[tuple[ProjectCheck, Project]]:
        """Each selected repository check with the files of one work tree it looks at."""
        for check in self.project_checks:
            mine = [f for f in files if check.applies(f) and self.in_scope(check.rule, f)]
            if mine:
                yield check, Project(self.config.root, git_root, mine, self.cache)

    def project_findings(self, git_root: str | None, files: Sequence[SourceFile]) -> list[Finding]:
        """Repository-level findings without fixing anything (the pytest status item)."""
        return [
            finding
            for check, project in self.projects(git_root, files)
            for finding in check.run(project)
            if not self._ignored_here(finding) and finding.code in self.enabled
        ]

    def _content_findings(
        self, source: SourceFile, plan: _Plan, cache: FindingsCache | None
    ) -> list[Finding]:
        if not plan.content:
            return []
        key = None
        if cache is not None:
            key = cache.key(source.data, plan.cache_kind)
            cached = cache.get(key, source.path)
            if cached is not None:
                return cached
        found = [finding for check in plan.content for finding in check.run(source)]
        if cache is not None and key is not None:
            cache.put(key, found)
        return found

    # -- trees ----------------------------------------------------------------------------
    def run(
        self,
        paths: Sequence[str],
        *,
        fix: bool = False,
        diff: bool = False,
        jobs: int | None = None,
        cache: bool = True,
    ) -> LintResult:
        result = LintResult()
        candidates = collect(paths, self.config.root, self.config.excludes)
        store = FindingsCache(self.config.root if cache else None, sorted(self.enabled))
        # --no-cache: no keys to hash and no entries to keep (or to send back from workers).
        self.cache = store if store.enabled else None
        repos: dict[str | None, list[SourceFile]] = {}
        for outcome in self._outcomes(candidates, store, fix=fix, diff=diff, jobs=jobs):
            if outcome is None:
                continue
            if outcome.skipped is not None:
                result.skipped.append((outcome.path, outcome.skipped))
                continue
            result.checked.append(outcome.path)
            result.findings.extend(outcome.findings)
            result.suppressed += outcome.suppressed
            result.fixed.extend(outcome.fixed)
            result.diffs.extend(outcome.diffs)
            store.merge(outcome.cache_entries)
            if outcome.project_source is not None:
                repos.setdefault(outcome.repo_root, []).append(outcome.project_source)
        for git_root, files in repos.items():
            by_path = {f.path: f for f in files}
            for check, project in self.projects(git_root, files):
                self._project_findings(check, project, by_path, result, fix=fix, diff=diff)
        # A check may also emit companion notes (e.g. RC209); honour the selection for them.
        result.findings = [f for f in result.findings if f.code in self.enabled]
        result.findings.sort(key=Finding.sort_key)
        store.save()
        return result

    def _outcomes(
        self,
        candidates: Sequence[Candidate],
        store: FindingsCache,
        *,
        fix: bool,
        diff: bool,
        jobs: int | None,
    ) -> Iterable[_FileOutcome | None]:
        workers = _workers(len(candidates), jobs)
        if jobs is None and len(store.entries) >= len(candidates) // 2:
            workers = 1  # mostly cached: forking costs more than the few parses it would share
        if jobs is None and not any(c.content_only for c in self.file_checks):
            workers = 1  # byte-level checks only: a file costs less than sending it to a worker
        if workers <= 1:
            return [self.lint_candidate(c, fix=fix, diff=diff) for c in candidates]
        from rentcheck.forked import fork_map

        # Workers are forked: they inherit this Linter (plugin checks need not be picklable).
        # Largest files first: the workers then finish together instead of one of them
        # parsing a big script alone at the end (sizes stand in for cost).
        order = sorted(range(len(candidates)), key=lambda i: -candidates[i].size)
        return fork_map(
            lambda candidate: self.lint_candidate(candidate, fix=fix, diff=diff),
            candidates,
            workers,
            order,
        )

    def lint_candidate(self, candidate: Candidate, *, fix: bool, diff: bool) -> _FileOutcome | None:
        """Read, check (and fix) one file; None when no selected rule looks at it."""
        source = read_candidate(candidate)
        if source is None:
            return None
        plan = self.plan(source)
        if not self.wants(source, plan):
            return None
        outcome = _FileOutcome(source.path, candidate.repo.root if candidate.repo else None)
        if source.is_binary or source.truncated:
            # A binary `.sh` (or one over MAX_TEXT_BYTES) is no script any rule can read:
            # saying it was checked would be a pass nothing proved.
            outcome.skipped = "binary" if source.is_binary else "too large"
            return outcome
        cache = self.cache
        for _ in range(_MAX_FIX_ROUNDS):
            findings, suppressed = self.check_source(source, plan, cache)
            fixable = next((f for f in findings if _safe_edits(f)), None)
            if fixable is None or not (fix or diff):
                break
            if diff:
                outcome.diffs.extend(_diff(e) for e in _safe_edits(fixable))
                break
            for edit in _safe_edits(fixable):
                write_atomic(edit.path, edit.content)
            outcome.fixed.append(fixable)
            # A fix rewrites content only: keep judging the mode the first read established.
            source = SourceFile.read(source.path, source.abspath, source.mode)
        outcome.findings, outcome.suppressed = findings, suppressed
        if cache is not None:  # hand new entries back: a forked worker's cache is its own
            outcome.cache_entries = cache.take_recent()
        source.memo.clear()  # parse trees are per run and cannot cross a process boundary
        # The file goes back for the repository checks that will look at it (not to a check
        # that judges git work trees only, for a file outside one).
        in_git = candidate.repo is not None
        if any(
            check.applies(source) and (in_git or not check.needs_git)
            for check in self.project_checks
        ):
            outcome.project_source = source
        return outcome

    def _project_findings(
        self,
        check: ProjectCheck,
        project: Project,
        by_path: Mapping[str, SourceFile],
        result: LintResult,
        *,
        fix: bool,
        diff: bool,
    ) -> None:
        for finding in check.run(project):
            if self._ignored_here(finding):
                continue
            edits = _safe_edits(finding)
            if edits and diff:
                result.diffs.extend(_diff(e) for e in edits)
            elif edits and fix:
                for edit in edits:
                    write_atomic(edit.path, edit.content)
                result.fixed.append(finding)
                continue
            holder = by_path.get(finding.path or "")
            if holder is not None:
                kept, suppressed = apply_suppressions(holder, [finding], {}, self.known)
                result.suppressed += suppressed
                result.findings.extend(kept)
            else:
                result.findings.append(finding)


def _gate_codes() -> list[str]:
    from rentcheck.registry import gate_rules

    return [rule.code for rule in gate_rules()]


def _training_paths(config: Config) -> tuple[str, ...] | None:
    from rentcheck.config import check_section_keys, section_error

    table = check_section_keys(config, "python", ("training-paths",))
    paths = table.get("training-paths")
    if paths is None:
        return None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise section_error(
            config, "python", "training-paths", "must be a list of globs", 'e.g. ["train.py"]'
        )
    return tuple(paths)


def read_candidate(candidate: Candidate) -> SourceFile | None:
    """The file a walk listed, read once (None when it vanished or cannot be read)."""
    index_mode = None
    if candidate.repo is not None:
        rel = os.path.relpath(candidate.abspath, candidate.repo.root).replace(os.sep, "/")
        index_mode = candidate.repo.index_mode(rel)
    try:
        return SourceFile.read(candidate.path, candidate.abspath, index_mode)
    except OSError:
        return None


def _safe_edits(finding: Finding) -> tuple[Edit, ...]:
    if finding.fix is None or finding.fix.applicability is not Applicability.SAFE:
        return ()
    return finding.fix.edits


def _diff(edit: Edit) -> str:
    import difflib

    try:
        with open(edit.path, "rb") as handle:
            old = handle.read()
    except FileNotFoundError:
        old = b""
    name = os.path.relpath(edit.path).replace(os.sep, "/")
    lines = difflib.unified_diff(
        old.decode("utf-8", "replace").splitlines(keepends=True),
        edit.content.decode("utf-8", "replace").splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    # CR is invisible in a terminal; show it so a CRLF fix reads as a change.
    return "".join(line.replace("\r", "\\r") for line in lines)
