"""``segbench publish``: version the data root with DVC, and the summary every publishing command prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from segbench import console
from segbench.cli.common import flow_command_lock, relative_to_repo, settings_of


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add ``publish`` to the root command group."""
    app.command("publish")(publish_command)


def publish_command(
    ctx: typer.Context,
    remote: str = typer.Option(None, "--remote", help="Name of a configured DVC remote (default: the default remote)."),
    remote_url: str = typer.Option(None, "--remote-url", help="URL or path of a remote to use as the default "
                                                              "(saved in .dvc/config.local)."),
    commit: bool = typer.Option(False, "--commit", help="Commit data.dvc to git."),
    message: str = typer.Option(None, "--message", "-m", help="Commit message."),
    tag: str = typer.Option(None, "--tag", help="Tag the commit (needs --commit)."),
    init_git: bool = typer.Option(False, "--init-git", help="Run git init first if the folder is not a repository."),
) -> None:
    """Version the data root with DVC (dvc add, push) and optionally commit and tag it."""
    from segbench.core.versioning import check_publishable, check_remote, check_repo, ensure_repo

    settings = settings_of(ctx)
    repo = Path(".").resolve()
    # A refused folder, tag or remote leaves the repository as it was, and is said before Prefect starts.
    check_repo(repo, init_git=init_git)
    check_publishable(repo, relative_to_repo(settings.data_root, repo), tag, commit=commit)
    check_remote(repo, remote, remote_url=remote_url or settings.dvc_remote)
    from segbench.flows.publish import publish_data  # Prefect, and its server, only past the checks

    with flow_command_lock(ctx):
        ensure_repo(repo, init_git=init_git)
        record = publish_data(repo=str(repo), data_dir=relative_to_repo(settings.data_root, repo), remote=remote,
                              remote_url=remote_url or settings.dvc_remote, commit=commit, message=message, tag=tag)
        print_publish(record)


def print_publish(record: Any) -> None:
    """What a publish did: the data version, where it went, the commit and the datasets in it."""
    console.out.print(console.key_values("Published", {
        "data version (md5)": record.md5,
        "files": f"{record.nfiles} ({record.size / 1e6:.1f} MB)",
        "changed since last publish": record.changed,
        "pushed to": record.remote or "no remote configured (dvc remote add -d NAME URL)",
        "commit": record.commit if record.committed else (
            f"{record.commit or '–'} (no new commit: the data did not change)" if not record.changed
            else f"{record.commit or '–'} (no new commit; commit with --commit or git add data.dvc)"),
        "tag": record.tag,
        "datasets": ", ".join(d.folder for d in record.datasets) or "none",
    }))
