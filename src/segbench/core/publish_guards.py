"""What publishing must refuse before anything is pushed or committed.

``dvc add`` follows symbolic links: a link in the data folder to a file outside it (``/etc/passwd``,
a key in the home folder) would be pushed to the remote and recorded in the version. And
``publish --commit`` commits DVC's git files, ``.dvc/config`` among them: a remote's credentials
written there (``dvc remote modify`` without ``--local``) would be published with the commit.
"""

from __future__ import annotations

import configparser
import os
from pathlib import Path

from segbench.core.errors import InputError, VersioningError

# Options of DVC remotes that hold a secret (S3, Azure, GCS, SSH, HTTP, WebDAV, OSS, ...).
SECRET_OPTIONS = frozenset({
    "access_key_id", "secret_access_key", "session_token", "password", "token", "key_secret", "connection_string",
    "account_key", "sas_token", "client_secret", "gdrive_client_secret", "oss_key_secret", "passphrase",
})


def links_out(data: Path) -> list[tuple[Path, Path]]:
    """Every symbolic link under ``data`` whose target lies outside it, with that target."""
    root = data.resolve()
    found = []
    for folder, dirs, files in os.walk(data):  # links to folders are listed in dirs and not entered
        for name in (*dirs, *files):
            path = Path(folder) / name
            if path.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(root):
                    found.append((path, target))
    return sorted(found)


def check_links_stay_inside(data: Path) -> None:
    """Refuse a data folder holding a link to something outside it.

    Raises:
        InputError: naming the first such link and its target.
    """
    found = links_out(data)
    if found:
        link, target = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise InputError(f"links to {target}, outside the data folder{more}: publishing would push what it points to",
                         path=link, hint="remove the link, or replace it with a copy of what belongs in the dataset")


def committed_secrets(repo: Path) -> list[str]:
    """``'remote "NAME"' OPTION`` for each secret option in ``.dvc/config`` (the committed config)."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read(repo / ".dvc" / "config", encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise VersioningError(f"cannot read .dvc/config ({type(exc).__name__})", path=repo / ".dvc" / "config",
                              hint="fix its syntax (`dvc config --list` shows where)") from None
    return [f"{section.strip()} {option}" for section in parser.sections() for option in parser[section]
            if option.lower() in SECRET_OPTIONS]


def check_no_committed_secrets(repo: Path) -> None:
    """Refuse to commit a ``.dvc/config`` that holds a remote's credentials.

    Raises:
        VersioningError: naming the remote and option (never the value).
    """
    found = committed_secrets(repo)
    if found:
        raise VersioningError(
            f".dvc/config holds credentials ({', '.join(found)}); committing it would publish them",
            path=repo / ".dvc" / "config",
            hint="move them to .dvc/config.local, which is never committed: `dvc remote modify --local NAME OPTION "
                 "VALUE`, then delete them from .dvc/config (`dvc remote modify --unset NAME OPTION`)")
