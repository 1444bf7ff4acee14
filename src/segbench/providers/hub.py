"""The one module that talks to the Hugging Face Hub: push a release folder and tag it.

``huggingface_hub`` does the HTTP (create the repository, upload the folder in one commit, tag
it); ``endpoint`` points it at another Hub (a mirror, or a local server in tests). The token comes
from the caller (``HF_TOKEN`` or the settings) and never reaches a message: errors are reported
with the token removed.
"""

from __future__ import annotations

from pathlib import Path

from segbench.core.errors import SegbenchError


class HubError(SegbenchError):
    """The Hub refused or could not be reached; ``permanent`` when asking again cannot help (a 4xx answer)."""

    permanent = False


def _clean(text: str, token: str | None) -> str:
    return text.replace(token, "***") if token else text


def push_folder(folder: Path, repo_id: str, *, tag: str, endpoint: str | None = None, token: str | None = None) -> str:
    """Upload ``folder`` to the dataset repository ``repo_id`` and tag the commit; return the repository URL."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi(endpoint=endpoint, token=token or None)
    try:
        url = api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
        commit = api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset",
                                   commit_message=f"Release {tag}")
        api.create_tag(repo_id, tag=tag, repo_type="dataset", revision=commit.oid, exist_ok=True)
    except (HfHubHTTPError, OSError, ValueError) as exc:
        error = HubError(f"cannot push the release to {repo_id} ({_clean(str(exc), token)})", path=str(folder),
                         hint="check the repository name, that the token may write to it (HF_TOKEN), and the network")
        status = getattr(getattr(exc, "response", None), "status_code", None)
        error.permanent = isinstance(exc, ValueError) or (status is not None and status < 500)
        raise error from None  # unchained: the cause's text can carry the token
    return str(url)
