"""Limits every HTTP client of segbench shares: a deadline per request, bounded redirects, and
requests in flight that never hold the program when the user presses Ctrl-C (:func:`map_requests`).

httpx's timeouts bound each read, so a server that sends a byte every few seconds keeps a request
alive for ever. :func:`keep_deadlines` gives a client sockets whose every read and write is cut short
by the deadline of the request in progress (:func:`deadline`), so a request ends by then whatever
the server does: httpx raises its ``ReadTimeout`` (a ``TransportError``), which the clients turn
into their typed errors. The deadline is per thread (a context variable): the OpenAI provider's
worker threads each have their own.

    client = keep_deadlines(httpx.Client(max_redirects=MAX_REDIRECTS, ...))
    with deadline(120):
        client.get(...)
"""

from __future__ import annotations

import contextlib
import contextvars
import ssl
import sys
import threading
import time
import typing
from collections.abc import Iterator

MAX_REDIRECTS = 5
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("segbench_http_deadline", default=None)


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Requests made in this block, on this thread, end within ``seconds`` of its start (a nested
    block may shorten it, never lengthen it)."""
    end = time.monotonic() + seconds
    outer = _deadline.get()
    token = _deadline.set(end if outer is None else min(end, outer))
    try:
        yield
    finally:
        _deadline.reset(token)


def _bounded(timeout: float | None, expired: type[Exception]) -> float | None:
    """``timeout`` shortened to what is left of the deadline; raises ``expired`` once it has passed."""
    end = _deadline.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise expired("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream:
    """A network stream whose reads and writes keep the deadline (the httpcore interface, duck-typed
    so that it serves httpcore and httpcore2 alike)."""

    def __init__(self, inner: typing.Any, expired: type[Exception]) -> None:
        self._inner, self._expired = inner, expired

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bounded(timeout, self._expired))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, self._expired))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> _Stream:
        inner = self._inner.start_tls(ssl_context, server_hostname, _bounded(timeout, self._expired))
        return _Stream(inner, self._expired)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class _Backend:
    def __init__(self, inner: typing.Any, expired: type[Exception]) -> None:
        self._inner, self._expired = inner, expired

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: typing.Iterable[typing.Any] | None = None) -> _Stream:
        stream = self._inner.connect_tcp(host, port, _bounded(timeout, self._expired), local_address, socket_options)
        return _Stream(stream, self._expired)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: typing.Iterable[typing.Any] | None = None) -> _Stream:
        stream = self._inner.connect_unix_socket(path, _bounded(timeout, self._expired), socket_options)
        return _Stream(stream, self._expired)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def keep_deadlines(client: typing.Any) -> typing.Any:
    """``client`` (an ``httpx`` or ``httpx2`` client) with its sockets, its own transport's and the
    proxies' it mounted, keeping deadlines. A passed deadline raises the ``ReadTimeout`` of the
    client's own httpcore, which the client turns into its ``TransportError``."""
    for mounted in [client._transport, *client._mounts.values()]:
        pool = getattr(mounted, "_pool", None)
        if pool is not None:  # httpx builds its pools without a way to pass the network backend
            core = sys.modules[type(pool).__module__.partition(".")[0]]  # httpcore or httpcore2
            pool._network_backend = _Backend(core.SyncBackend(), core.ReadTimeout)
    return client


T = typing.TypeVar("T")
R = typing.TypeVar("R")


def map_requests(fn: typing.Callable[[T], R], items: typing.Sequence[T], workers: int) -> list[R]:
    """``[fn(item) for item in items]`` on up to ``workers`` threads, in order; the first exception
    (in item order) is raised once every item is done.

    The threads are daemons: Ctrl-C in the caller ends the program at once, where a thread pool
    would hold it until every request in flight (and every wait before a retry) is over.
    """
    items = list(items)
    results: list[typing.Any] = [None] * len(items)
    errors: list[BaseException | None] = [None] * len(items)
    pending = iter(range(len(items)))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                index = next(pending, None)
            if index is None:
                return
            try:
                results[index] = fn(items[index])
            except BaseException as exc:  # handed to the caller below
                errors[index] = exc

    threads = [threading.Thread(target=work, daemon=True, name=f"segbench-request-{n}")
               for n in range(max(1, min(workers, len(items))))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results
