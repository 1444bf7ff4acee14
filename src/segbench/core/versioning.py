"""Dataset versions: DVC tracking of ``data/``, publishing it, and reading a published version back.

This module is the only one that runs ``git`` or ``dvc`` or imports ``dvc.api``. Commands run as
argument lists (never shell strings), DVC through ``sys.executable -m dvc`` so no PATH lookup
decides which DVC runs, and every exit code is checked: a failure raises
:class:`~segbench.core.errors.VersioningError` with the command, the tail of its stderr and a hint.
Remote URLs may carry credentials, so they are redacted from every message and log line, and
records name a remote, never its location.

Publishing is split into steps (:func:`ensure_repo`, :func:`describe_datasets`, :func:`track_data`,
:func:`push_data`, :func:`commit_version`) so the Prefect flow can wrap each in a task;
:func:`publish` runs them in order for callers without Prefect. Flows and the CLI own settings;
nothing here reads them. The module runs past 400 lines on purpose: keeping every git and
DVC call in one file is what makes "one owner of versioning" checkable.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shlex
import subprocess
import sys
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any

import orjson
from pydantic import ValidationError

from segbench.core.errors import InputError, VersioningError
from segbench.core.io import atomic_write_text, not_utf8, read_bytes
from segbench.core.manifest import MANIFEST_NAME, read_manifest
from segbench.core.redaction import redact
from segbench.schemas.versioning import CommitInfo, DatasetEntry, PublishRecord, TrackedData

logger = logging.getLogger(__name__)

# Links instead of copies between the DVC cache and data/. Safe because DVC makes linked files
# read-only and segbench's writers (core/io.py) replace files by rename and directories by swap,
# so a rebuild creates new inodes instead of writing through a link into the cache. Anything that
# edits a tracked file in place must `dvc unprotect` it first (root ignores the read-only bit).
CACHE_TYPE = "reflink,hardlink,symlink,copy"
UNFINISHED_BUILDS = ".*.partial"  # resumable stages: see core.resume
BUILD_LOCKS = ".*.build.lock"  # an output's lock file, left behind only by a killed build: see segbench.locking
DEFAULT_REMOTE = "storage"
_STDERR_TAIL = 12  # lines of stderr kept in an error message
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _run(args: list[str], *, cwd: Path, hint: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    shown = redact(" ".join(shlex.quote(a) for a in (["dvc", *args[3:]] if args[0] == sys.executable else args)))
    logger.debug("running %s (in %s)", shown, cwd)
    try:
        proc = subprocess.run(
            args, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
        )
    except FileNotFoundError as exc:
        raise VersioningError(f"cannot run `{shown}` ({exc.strerror})", path=cwd, hint="install git") from exc
    if check and proc.returncode != 0:
        # DVC ends every error with a support banner; it says nothing about the failure.
        lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip() and "dvc.org/support" not in ln]
        tail = "\n".join(lines[-_STDERR_TAIL:])
        raise VersioningError(
            f"`{shown}` failed (exit code {proc.returncode}): {redact(tail) or 'no output'}",
            path=cwd,
            hint=hint,
        )
    return proc


def _git(repo: Path, *args: str, hint: str = "read git's message, fix the cause and run again", check: bool = True):
    return _run(["git", *args], cwd=repo, hint=hint, check=check)


def _dvc(repo: Path, *args: str, hint: str = "read DVC's message, fix the cause and run again"):
    return _run([sys.executable, "-m", "dvc", *args], cwd=repo, hint=hint)


def _dvc_config(repo: Path) -> Any:
    """The merged DVC config of the working tree (system, global, .dvc/config, .dvc/config.local)."""
    from dvc.config import Config, ConfigError

    try:
        # Loading through DVC resolves relative remote paths against the file that declares them.
        return Config(dvc_dir=str(repo / ".dvc"))
    except ConfigError as exc:
        raise VersioningError(f"invalid DVC config ({exc})", path=repo / ".dvc", hint="fix it with `dvc config`") from None  # unchained: its text can carry a secret


def default_remote(repo: str | Path) -> str | None:
    """Name of the default DVC remote configured in the working tree, or ``None``."""
    return _dvc_config(Path(repo).resolve())["core"].get("remote")


def revision_label(repo: str | Path, rev: str | None) -> str:
    """How a report folder names the data it evaluated: ``worktree``; a tag by its name; any other
    revision (``HEAD``, a branch, ``HEAD~2``: names that move) by its commit's first 12 digits. A
    revision git does not know keeps its name: reading it fails with its own message."""
    if rev is None:
        return "worktree"
    if rev.startswith("-"):  # never handed to git as an option
        return rev
    repo = Path(repo)
    if _git(repo, "rev-parse", "-q", "--verify", f"refs/tags/{rev}", check=False).returncode == 0:
        return rev.replace("/", "-")
    found = _git(repo, "rev-parse", "-q", "--verify", f"{rev}^{{commit}}", check=False)
    return found.stdout.strip()[:12] if found.returncode == 0 else rev


def check_repo(repo: str | Path, *, init_git: bool = False) -> bool:
    """Refuse a folder that cannot be published from, before anything runs; True if it needs ``git init``.

    A folder that is not in git is refused unless ``init_git`` is set: running ``git init`` in the
    wrong folder (a home directory, a download folder) is a mistake better caught than made. A folder
    inside another repository but not at its root is refused too (DVC would track paths relative to
    the outer root).

    Raises:
        VersioningError: not a git repository (and ``init_git`` is false), or not its root.
    """
    repo = Path(repo).resolve()
    if not repo.is_dir():
        if init_git:
            return True
        raise VersioningError("repository folder not found", path=repo, hint="check the path")
    top = _git(repo, "rev-parse", "--show-toplevel", check=False)
    if top.returncode != 0:
        if not init_git:
            raise VersioningError(
                "not a git repository",
                path=repo,
                hint="run `git init` there, or `segbench publish --init-git`",
            )
        return True
    if Path(top.stdout.strip()).resolve() != repo:
        raise VersioningError(
            f"inside the git repository {top.stdout.strip()} but not at its root",
            path=repo,
            hint="publish from the repository root",
        )
    return False


def ensure_repo(repo: str | Path, *, init_git: bool = False) -> Path:
    """Make ``repo`` a git + DVC repository with link-based cache, and return its resolved path.

    The folder must pass :func:`check_repo`. ``git init`` runs there if ``init_git`` and it is not
    in git; ``dvc init`` runs when ``.dvc/`` is missing; ``cache.type`` is set in ``.dvc/config`` so
    every clone links instead of copying.

    Raises:
        VersioningError: what :func:`check_repo` refuses, or a command failed.
    """
    repo = Path(repo).resolve()
    if check_repo(repo, init_git=init_git):
        repo.mkdir(parents=True, exist_ok=True)
        _git(repo, "init", "-q")
        logger.info("initialised git repository in %s", repo)
    if not (repo / ".dvc").is_dir():
        _dvc(repo, "init")
        logger.info("initialised DVC in %s", repo)
    if _dvc_config(repo)["cache"].get("type") != CACHE_TYPE.split(","):
        _dvc(repo, "config", "cache.type", CACHE_TYPE)
    _ignore_unfinished_builds(repo)
    return repo


def _ignore_unfinished_builds(repo: Path) -> None:
    """Keep the stages of interrupted builds (``.<name>.<key>.partial``, kept to resume) and the lock
    files of killed builds (``.<name>.build.lock``) out of versions."""
    ignore = repo / ".dvcignore"
    lines = ignore.read_text().splitlines() if ignore.is_file() else []
    missing = [pattern for pattern in (UNFINISHED_BUILDS, BUILD_LOCKS) if pattern not in lines]
    if missing:
        atomic_write_text(ignore, "\n".join([*lines, "# what interrupted builds leave behind; never published",
                                             *missing]) + "\n")


def _normalise_url(url: str) -> str:
    # DVC takes a relative local path relative to the directory it runs in (the repository);
    # a caller means relative to its own working directory.
    if "://" in url or Path(url).is_absolute():
        return url
    return str(Path(url).resolve())


def configure_remote(repo: str | Path, url: str, name: str = DEFAULT_REMOTE, local: bool = False) -> None:
    """Add (or replace) the DVC remote ``name`` at ``url`` and make it the default.

    Args:
        url: any DVC remote URL; a relative local path is taken from the current directory.
        local: write ``.dvc/config.local`` (not committed; right for credentials and
            machine-specific paths) instead of ``.dvc/config`` (committed with the next publish).

    Raises:
        InputError: ``name`` is not a valid remote name.
        VersioningError: the repository is not set up or DVC refused the remote.
    """
    if not _NAME_RE.match(name):
        raise InputError(f"invalid remote name {name!r}", hint="use letters, digits, '.', '_' or '-'")
    repo = Path(repo).resolve()
    level = ["--local"] if local else ["--project"]
    _dvc(repo, "remote", "add", *level, "--default", "--force", name, _normalise_url(url),
         hint="check the remote URL (see https://dvc.org/doc/command-reference/remote/add)")
    logger.info("default DVC remote is now %r (%s)", name, ".dvc/config.local" if local else ".dvc/config")


def _data_paths(repo: Path, data_dir: str) -> tuple[Path, Path]:
    data = (repo / data_dir).resolve()
    if not data.is_relative_to(repo) or data == repo:
        raise InputError("data directory must be inside the repository", path=data_dir)
    if not data.is_dir():
        raise InputError("data directory not found", path=data, hint="build a dataset first")
    return data, data.with_name(data.name + ".dvc")


def describe_datasets(data: str | Path) -> list[DatasetEntry]:
    """The datasets under ``data``: folders at any depth holding a ``manifest.json``, sorted by path.

    Nested datasets (``spin/dataset``, ``vocab/coco_cd``) count; the stages of interrupted builds
    (hidden folders) do not.

    Raises:
        InputError: ``data`` is not a directory, or a manifest is not valid JSON or not a valid manifest (names the file).
    """
    data = Path(data)
    if not data.is_dir():
        raise InputError("data directory not found", path=data, hint="build a dataset first")
    entries = []
    manifests = (m for m in data.rglob(MANIFEST_NAME)
                 if not any(part.startswith(".") for part in m.relative_to(data).parts))
    for folder in sorted(m.parent for m in manifests):
        try:
            manifest = read_manifest(folder)
        except ValidationError as exc:
            raise InputError(f"invalid manifest ({exc.errors()[0]['msg']})", path=folder / MANIFEST_NAME,
                             hint="rebuild the dataset") from exc
        entries.append(DatasetEntry(folder=folder.relative_to(data).as_posix(), dataset=manifest.dataset,
                                    builder_version=manifest.builder_version, counts=manifest.counts))
    return entries


def _read_dvc_file(path: Path) -> dict[str, Any] | None:
    from dvc.utils.serialize import load_yaml

    if not path.is_file():
        return None
    outs = load_yaml(str(path)).get("outs") or [{}]
    return outs[0]


def track_data(repo: str | Path, data_dir: str = "data") -> TrackedData:
    """``dvc add`` the data directory (writing ``<data_dir>.dvc``) and report what it recorded.

    Unchanged data leaves the ``.dvc`` file as it was. New content is relinked afterwards: DVC 3
    copies files into the cache on ``add`` and links them only on checkout.

    Raises:
        InputError: the data directory is missing or outside the repository.
        VersioningError: ``dvc add`` failed.
    """
    repo = Path(repo).resolve()
    data, dvc_file = _data_paths(repo, data_dir)
    before = _read_dvc_file(dvc_file) or {}
    rel = data.relative_to(repo).as_posix()
    _dvc(repo, "add", rel, hint="run `dvc doctor`; is a file in the data folder unreadable?")
    after = _read_dvc_file(dvc_file)
    if not after or "md5" not in after:
        raise VersioningError("dvc add wrote no hash", path=dvc_file, hint="inspect the .dvc file")
    changed = after["md5"] != before.get("md5")
    if changed:
        _dvc(repo, "checkout", "--relink", dvc_file.relative_to(repo).as_posix())
    logger.info("tracked %s: %s (%s files, %s bytes%s)", rel, after["md5"], after.get("nfiles"),
                after.get("size"), "" if changed else ", unchanged")
    return TrackedData(md5=after["md5"], nfiles=int(after.get("nfiles", 1)), size=int(after.get("size", 0)),
                       changed=changed)


def push_data(repo: str | Path, data_dir: str = "data", remote: str | None = None) -> str | None:
    """Push the tracked data to ``remote`` (default: the configured default remote).

    Returns:
        The name of the remote pushed to, or ``None`` when no remote is configured or given.

    Raises:
        VersioningError: ``remote`` is not configured, or the push failed.
    """
    repo = Path(repo).resolve()
    config = _dvc_config(repo)
    name = remote or config["core"].get("remote")
    if name is None:
        logger.info("no DVC remote configured: the version stays in the local cache only")
        return None
    if name not in config["remote"]:
        known = ", ".join(sorted(config["remote"])) or "none"
        raise VersioningError(f"DVC remote {name!r} is not configured (configured: {known})",
                              path=repo, hint="add it with configure_remote / `segbench publish --remote-url`")
    _, dvc_file = _data_paths(repo, data_dir)
    _dvc(repo, "push", "-r", name, dvc_file.relative_to(repo).as_posix(),
         hint=f"check that remote {name!r} is reachable and writable (`dvc remote list`), then publish again")
    logger.info("pushed %s to DVC remote %r", data_dir, name)
    return name


def commit_version(repo: str | Path, data_dir: str = "data", message: str = "Publish data",
                   tag: str | None = None) -> CommitInfo:
    """Commit the ``.dvc`` file and DVC's git files (only those paths), then optionally tag.

    Other changes the user has staged stay staged and uncommitted. When nothing changed, no commit
    is made ("nothing to commit") and HEAD is reported. A tag that already names that commit is
    kept; one naming another commit is an error (tags are not moved).

    Raises:
        VersioningError: git failed (e.g. no committer identity) or the tag exists elsewhere.
    """
    repo = Path(repo).resolve()
    data, dvc_file = _data_paths(repo, data_dir)
    candidates = [dvc_file, data.parent / ".gitignore", repo / ".dvc" / "config",
                  repo / ".dvc" / ".gitignore", repo / ".dvcignore"]
    paths = [p.relative_to(repo).as_posix() for p in candidates if p.is_file()]
    _git(repo, "add", "--", *paths)
    staged = _git(repo, "diff", "--cached", "--quiet", "--", *paths, check=False)
    if staged.returncode not in (0, 1):
        raise VersioningError("`git diff --cached` failed", path=repo, hint=staged.stderr.strip())
    created = staged.returncode == 1
    if created:
        _git(repo, "commit", "-q", "-m", message, "--", *paths,
             hint="set user.name and user.email (`git config`), or GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL")
    else:
        logger.info("nothing to commit: %s is unchanged since HEAD", dvc_file.name)
    sha = _git(repo, "rev-parse", "HEAD").stdout.strip()
    if tag:
        _tag(repo, tag, sha, message)
    return CommitInfo(sha=sha, created=created, tag=tag)


def check_new_tag(repo: str | Path, tag: str | None, *, commit: bool) -> None:
    """Refuse a tag that publishing could not create, before anything is changed.

    The name must pass ``git check-ref-format`` and must not already name a commit other than HEAD
    (published tags are never moved). Runs outside a repository too (only the name is checked then).

    Raises:
        VersioningError: a tag without ``commit``, an invalid name, or a tag that names another commit.
    """
    if not tag:
        return
    if not commit:
        raise VersioningError("a tag needs a commit", item=tag, hint="pass --commit with --tag")
    cwd = Path(repo) if Path(repo).is_dir() else Path.cwd()
    # `git tag` also refuses a leading '-' (it would read the name as an option).
    if tag.startswith("-") or _git(cwd, "check-ref-format", f"refs/tags/{tag}", check=False).returncode != 0:
        raise VersioningError(f"{tag!r} is not a valid git tag name", item=tag,
                              hint="use letters, digits, '.', '-', '_' and '/' (no spaces, '..', '~', '^', ':', "
                                   "'?', '*', '[', '\\', no leading '-' or trailing '.lock'), e.g. v1.0")
    existing = _git(cwd, "rev-parse", "-q", "--verify", f"refs/tags/{tag}^{{commit}}", check=False)
    head = _git(cwd, "rev-parse", "-q", "--verify", "HEAD", check=False)
    if existing.returncode == 0 and existing.stdout.strip() != head.stdout.strip():
        raise VersioningError(f"tag {tag!r} already names commit {existing.stdout.strip()[:12]}", item=tag,
                              path=cwd, hint="choose a new tag; published tags are never moved")


def check_publishable(repo: str | Path, data_dir: str, tag: str | None, *, commit: bool) -> None:
    """Everything publishing checks before it changes anything: the tag (:func:`check_new_tag`), no
    link out of the data folder, and no remote credentials in a ``.dvc/config`` about to be committed.

    Raises:
        InputError: a link out of the data folder.
        VersioningError: a bad tag, or credentials in ``.dvc/config`` with ``commit``.
    """
    from segbench.core.publish_guards import check_links_stay_inside, check_no_committed_secrets

    check_new_tag(repo, tag, commit=commit)
    data = Path(repo) / data_dir
    if data.is_dir():
        check_links_stay_inside(data)
    if commit:
        check_no_committed_secrets(Path(repo))


def check_tag_for(repo: str | Path, tag: str | None, tracked: TrackedData) -> None:
    """Refuse, before the push, a tag that already names HEAD when ``tracked`` is new data (a new
    version would need the tag moved).

    Raises:
        VersioningError: naming the tag.
    """
    if tag and tracked.changed and _git(Path(repo), "rev-parse", "-q", "--verify", f"refs/tags/{tag}",
                                        check=False).returncode == 0:
        raise VersioningError(f"tag {tag!r} already names the previous version; this data is new (nothing was "
                              "pushed or committed)", item=tag, path=repo, hint="publish again with a new tag")


def check_remote(repo: str | Path, remote: str | None, *, remote_url: str | None = None) -> None:
    """Refuse a ``remote`` name that is not configured, before anything is tracked or committed.

    A remote given together with ``remote_url`` is about to be configured, so it passes.

    Raises:
        VersioningError: the named remote is not in the repository's DVC config.
    """
    if remote is None or remote_url:
        return
    repo = Path(repo).resolve()
    known = sorted(_dvc_config(repo)["remote"]) if (repo / ".dvc").is_dir() else []
    if remote not in known:
        raise VersioningError(f"DVC remote {remote!r} is not configured (configured: {', '.join(known) or 'none'})",
                              item=remote, path=repo,
                              hint="add it with `dvc remote add NAME URL`, or pass --remote-url URL to configure it")


def _tag(repo: Path, tag: str, sha: str, message: str) -> None:
    _git(repo, "check-ref-format", f"refs/tags/{tag}", hint=f"{tag!r} is not a valid git tag name")
    existing = _git(repo, "rev-parse", "-q", "--verify", f"refs/tags/{tag}^{{commit}}", check=False)
    if existing.returncode == 0:
        if existing.stdout.strip() != sha:
            raise VersioningError(f"tag {tag!r} already names commit {existing.stdout.strip()[:12]}",
                                  path=repo, hint="choose a new tag; published tags are never moved")
        return
    _git(repo, "tag", "-a", tag, "-m", message, sha)


def default_message(data_dir: str, tracked: TrackedData, datasets: list[DatasetEntry]) -> str:
    names = ", ".join(d.dataset for d in datasets) or "no datasets"
    return f"Publish {data_dir} {tracked.md5[:8]} ({names}; {tracked.nfiles} files)"


def publish(repo: str | Path, data_dir: str = "data", remote: str | None = None, commit: bool = False,
            message: str | None = None, tag: str | None = None, remote_url: str | None = None) -> PublishRecord:
    """Track ``data_dir`` with DVC, push it, and optionally commit and tag the pointer in git.

    Args:
        repo: the git + DVC repository root (``git init`` is not done here; see :func:`ensure_repo`).
        remote: name of a configured DVC remote to push to; default: the default remote, if any.
        commit: commit ``<data_dir>.dvc`` and DVC's git files (nothing else).
        message: the commit message (default names the hash and the datasets).
        tag: an annotated git tag for the commit; needs ``commit``.
        remote_url: first configure it as the default remote ``remote or "storage"`` in
            ``.dvc/config.local`` (machine-specific, never committed; see :func:`configure_remote`).

    Returns:
        The :class:`PublishRecord`. Publishing unchanged data changes nothing and returns the record.

    Raises:
        InputError: no data directory, or a dataset's manifest is invalid.
        VersioningError: a git or DVC command failed, or ``tag`` without ``commit``.
    """
    check_publishable(repo, data_dir, tag, commit=commit)
    repo = ensure_repo(repo)
    if remote_url:
        remote = remote or DEFAULT_REMOTE
        configure_remote(repo, remote_url, remote, local=True)
    datasets = describe_datasets(_data_paths(repo, data_dir)[0])
    tracked = track_data(repo, data_dir)
    check_tag_for(repo, tag, tracked)
    pushed_to = push_data(repo, data_dir, remote)
    info = None
    if commit:
        info = commit_version(repo, data_dir, message or default_message(data_dir, tracked, datasets), tag)
    return PublishRecord.from_steps(data_dir, tracked, datasets, pushed_to, info)


def parse_json(data: bytes, relpath: str) -> Any:
    """A data file's JSON (InputError naming the file when it is not)."""
    try:
        return orjson.loads(data)  # builds write no NaN: the faster parser reads all of them
    except orjson.JSONDecodeError as exc:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as not_text:
            raise not_utf8(not_text, relpath) from not_text
        raise InputError(f"not valid JSON ({exc})", path=relpath,
                         hint="rebuild or republish the dataset; outputs are never written half") from exc


class DatasetSource:
    """Read files of the project's data, either from the working tree or at a git revision.

    Args:
        repo: the project (git + DVC) root; paths are given relative to it, e.g.
            ``"data/<dataset>/splits/rho_0.95/test.json"``.
        rev: a git revision (commit, tag, branch). ``None`` reads the working tree directly.

    With a revision, files are read through DVC, from the local cache or a remote. DVC takes the
    remote from the config at that revision (plus ``.dvc/config.local``); when that names no default
    remote (e.g. a version committed before the remote was added), the working tree's default remote
    is used, so old versions stay readable. Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, repo: str | Path, rev: str | None = None) -> None:
        self.repo = Path(repo).resolve()
        self.rev = rev

    @cached_property
    def _fs(self) -> Any:
        from dvc.api import DVCFileSystem

        try:
            fs = DVCFileSystem(str(self.repo), rev=self.rev)
            if fs.repo.config["core"].get("remote") is None:
                config = _dvc_config(self.repo)
                name = config["core"].get("remote")
                if name is not None:
                    fs.close()
                    logger.debug("revision %s names no remote; using the working tree's %r", self.rev, name)
                    fs = DVCFileSystem(str(self.repo), rev=self.rev, config={
                        "core": {"remote": name}, "remote": {name: dict(config["remote"][name])}})
            return fs
        except VersioningError:
            raise
        except Exception as exc:  # dvc raises many unrelated types for a bad repo or rev
            raise VersioningError(
                f"cannot open revision {self.rev!r} ({redact(str(exc))})",
                path=self.repo,
                hint="check the revision with `git log`, and that the folder is a git + DVC repo",
            ) from None  # unchained: its text can carry a secret

    def close(self) -> None:
        if "_fs" in self.__dict__:
            self.__dict__.pop("_fs").close()

    def __enter__(self) -> DatasetSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> str:
        return f"{self.repo}@{self.rev}" if self.rev else str(self.repo)

    def exists(self, relpath: str) -> bool:
        if self.rev is None:
            return (self.repo / relpath).is_file()
        try:
            return bool(self._fs.isfile(relpath))
        except VersioningError:
            raise
        except Exception as exc:
            raise VersioningError(f"cannot list at revision {self.rev} ({redact(str(exc))})", path=relpath) from None  # unchained: its text can carry a secret

    def listdir(self, relpath: str, kind: str = "file") -> list[str]:
        """The names of the files (``kind="directory"``: folders) directly in a folder of the data, sorted;
        none when it does not exist."""
        if self.rev is None:
            folder = self.repo / relpath
            wanted = Path.is_file if kind == "file" else Path.is_dir
            return sorted(p.name for p in folder.iterdir() if wanted(p)) if folder.is_dir() else []
        try:
            if not self._fs.isdir(relpath):
                return []
            return sorted(Path(entry["name"]).name for entry in self._fs.ls(relpath, detail=True)
                          if entry["type"] == kind)
        except VersioningError:
            raise
        except Exception as exc:
            raise VersioningError(f"cannot list at revision {self.rev} ({redact(str(exc))})", path=relpath) from None  # unchained: its text can carry a secret

    def read_bytes(self, relpath: str) -> bytes:
        """The bytes of one file.

        Raises:
            InputError: the file is not part of the data (at that revision).
            VersioningError: the revision is unknown, or the content is in neither cache nor remote.
        """
        if self.rev is None:
            # a missing file, a directory or an unreadable one: InputError naming it
            return read_bytes(self.repo / relpath, hint="build or publish the dataset first")
        # Existence comes from git + .dvc metadata; asking first separates "no such file" from
        # "content not available" (DVC reports both as FileNotFoundError).
        if not self.exists(relpath):
            self._check_listable(relpath)
            raise InputError(
                f"file not found at revision {self.rev}",
                path=relpath,
                hint="check the dataset path and that this revision published it",
            )
        try:
            with self._fs.open(relpath, mode="rb") as handle:
                return handle.read()
        except Exception as exc:
            raise VersioningError(
                f"cannot read at revision {self.rev} ({redact(str(exc))})",
                path=relpath,
                hint="configure the DVC remote that holds this version (configure_remote), or `dvc pull`",
            ) from None  # unchained: its text can carry a secret

    def copy_to(self, relpath: str, target: Path) -> str:
        """Put the file at ``target`` (a new path, in a folder that exists), byte for byte; its sha256.

        From the working tree it is a hard link where the filesystem allows one: creating and
        filling thousands of files costs far more than linking them, and a build is replaced whole,
        never written in place, so neither copy changes under the other. Otherwise its bytes are
        written (a version read through DVC, another filesystem).
        """
        data = self.read_bytes(relpath)  # first: a checked source refuses a file its build did not write
        self._put(relpath, target, data)
        return hashlib.sha256(data).hexdigest()

    def _put(self, relpath: str, target: Path, data: bytes | None) -> None:
        """Link ``relpath`` at ``target`` from the working tree, else write its bytes (read if not given)."""
        if self.rev is None:
            try:
                os.link(self.repo / relpath, target)
                return
            except OSError:
                pass  # another filesystem, or one without hard links
        with open(target, "xb") as handle:
            handle.write(self.read_bytes(relpath) if data is None else data)

    def _check_listable(self, relpath: str) -> None:
        """Raise when a folder above ``relpath`` is tracked but its listing is in neither the DVC
        cache nor a reachable remote: the file may well be there, so "not found" would mislead.

        Raises:
            VersioningError: naming the folder whose content is missing.
        """
        for parent in reversed(PurePosixPath(relpath).parents[:-1]):  # "data", then "data/demo", ...
            folder = str(parent)
            try:
                if not self._fs.isdir(folder):
                    return
                self._fs.ls(folder)
            except Exception:
                raise VersioningError(
                    f"the data of revision {self.rev} under {folder} is in neither the local DVC cache nor a "
                    "reachable remote", path=relpath,
                    hint="run `dvc pull` (segbench publish pushed it to the default remote); if it went to "
                         "another remote, add that one: `dvc remote add -d NAME URL`") from None

    def read_json(self, relpath: str) -> Any:
        return parse_json(self.read_bytes(relpath), relpath)
