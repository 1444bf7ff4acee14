"""The one module that talks to the Hugging Face Hub: push a release folder and tag it.

``huggingface_hub`` does the HTTP (create the repository, upload the folder in one commit, tag
it); ``endpoint`` points it at another Hub (a mirror, or a local server in tests). Its client gets
segbench's limits (:mod:`segbench.core.http_limits`): a read timeout, bounded redirects and a
deadline per call; and the whole push, its retries included, runs on a daemon thread the command
waits for at most :func:`push_deadline`, because ``huggingface_hub`` honours any ``Retry-After`` in
full (an hour, if a server asks) and does not stop for Ctrl-C while it sleeps. The token arrives as
a ``SecretStr`` (a flow parameter Prefect records masked) and never reaches a message.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from segbench.core.errors import SegbenchError
from segbench.core.http_limits import MAX_REDIRECTS, deadline, keep_deadlines

READ_TIMEOUT = 60.0  # seconds a connection or a read may wait
CALL_SECONDS = 120.0  # what one small call (create the repository, tag) may take, retries included
MIN_UPLOAD_RATE = 1_000_000  # bytes a second: the slowest upload the folder's deadline allows for
RETRY_PAUSES = (2.0, 10.0)  # seconds before each new attempt after a failure that may pass (network, 5xx)


class HubError(SegbenchError):
    """The Hub refused or could not be reached; ``permanent`` when asking again cannot help (a 4xx answer)."""

    permanent = False


def _clean(text: str, token: str | None) -> str:
    return text.replace(token, "***") if token else text


def _bounded_client() -> Any:
    from huggingface_hub.utils._http import default_client_factory

    client = default_client_factory()  # keeps the library's request hook (user agent, request ids)
    client.timeout = READ_TIMEOUT
    client.max_redirects = MAX_REDIRECTS
    return keep_deadlines(client)


def push_deadline(folder: Path) -> float:
    """Seconds a push of ``folder`` may take: the small calls, and its bytes at :data:`MIN_UPLOAD_RATE`."""
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return 3 * CALL_SECONDS + size / MIN_UPLOAD_RATE


def _push(folder: Path, repo_id: str, tag: str, endpoint: str | None, token: str | None) -> str:
    from huggingface_hub import HfApi
    from huggingface_hub.utils import set_client_factory

    set_client_factory(_bounded_client)
    api = HfApi(endpoint=endpoint, token=token or None)
    with deadline(CALL_SECONDS):
        url = api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
    with deadline(push_deadline(folder) - 2 * CALL_SECONDS):
        commit = api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset",
                                   commit_message=f"Release {tag}")
    with deadline(CALL_SECONDS):
        api.create_tag(repo_id, tag=tag, repo_type="dataset", revision=commit.oid, exist_ok=True)
    return str(url)


def push_folder(folder: Path, repo_id: str, *, tag: str, endpoint: str | None = None,
                token: SecretStr | None = None) -> str:
    """Upload ``folder`` to the dataset repository ``repo_id`` and tag the commit; return the repository URL.

    A failure that may pass (the network, a 5xx) is tried again after each of :data:`RETRY_PAUSES`
    (an upload is idempotent: commits are content-addressed), all within the one :func:`push_deadline`.
    """
    secret = token.get_secret_value() if token else None
    outcome: dict[str, Any] = {}
    where, limit = f"{repo_id} at {endpoint or 'huggingface.co'}", push_deadline(folder)
    end = time.monotonic() + limit

    def work() -> None:
        for pause in (*RETRY_PAUSES, None):
            try:
                with deadline(end - time.monotonic()):
                    outcome["url"] = _push(folder, repo_id, tag, endpoint, secret)
                return
            except BaseException as exc:
                permanent = getattr(_typed(exc, folder, where, secret), "permanent", True)
                if pause is None or permanent or time.monotonic() + pause >= end:
                    outcome["error"] = exc  # handed to the command below
                    return
                time.sleep(pause)

    worker = threading.Thread(target=work, daemon=True, name="segbench-hub-push")
    worker.start()
    worker.join(limit + 2)  # its own deadline ends a request first, with the reason; a sleep it cannot cut, here
    if worker.is_alive():
        raise HubError(f"the push to {where} did not finish within {limit:.0f} s (the Hub may have asked to wait)",
                       path=str(folder), hint="try again later, or check SEGBENCH_HUB_ENDPOINT and the network")
    if "error" in outcome:  # unchained: the cause's text can carry the token
        raise _typed(outcome["error"], folder, where, secret) from None
    return outcome["url"]


def _typed(exc: BaseException, folder: Path, where: str, token: str | None) -> BaseException:
    """The push's failure as a :class:`HubError` (what it says cleaned of the token); anything else as it came."""
    import httpx2

    if not isinstance(exc, (httpx2.HTTPError, OSError, ValueError, KeyError, TypeError, AttributeError)):
        return exc
    status = getattr(getattr(exc, "response", None), "status_code", None)
    what = str(exc) if isinstance(exc, (httpx2.HTTPError, OSError, ValueError)) else \
        f"an answer of an unexpected shape ({type(exc).__name__}: {exc})"
    error = HubError(f"cannot push the release to {where} ({_clean(what, token)})", path=str(folder),
                     hint="check the repository name, that the token may write to it (HF_TOKEN), and the network")
    error.permanent = isinstance(exc, ValueError) or (status is not None and status < 500)
    return error
