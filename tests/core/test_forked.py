"""Work forked beside the command (``core.process.Forked``, ``InProcess.beside``): its answer, its failure,
its death, and the thread it falls back to when a fork would not be safe."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from segbench.core import process
from segbench.core.errors import InputError
from segbench.core.steps import InProcess


def _write_and_answer(folder: Path) -> tuple[int, list[str]]:
    (folder / "drawn.txt").write_text("from the child")
    return os.getpid(), sorted(p.name for p in folder.iterdir())


def _refuse(name: str) -> None:
    raise FileExistsError(f"{name} is taken")


def _unreadable(name: str) -> None:
    raise InputError("cannot decode the image", path=name, item="42", hint="replace the file")


def _die_once(marker: Path) -> str:
    if not marker.exists():
        marker.write_text("")
        os.kill(os.getpid(), signal.SIGKILL)
    return f"answered by {os.getpid()}"


def test_a_forked_call_answers_from_another_process_and_its_files_stay(tmp_path):
    pid, names = process.Forked(_write_and_answer, tmp_path).result()
    assert pid != os.getpid() and names == ["drawn.txt"] and (tmp_path / "drawn.txt").read_text() == "from the child"


def test_a_forked_failure_is_raised_here_with_its_type():
    with pytest.raises(FileExistsError, match="gallery is taken"):
        process.Forked(_refuse, "gallery").result()
    with pytest.raises(InputError) as raised:  # a typed error keeps what it names
        process.Forked(_unreadable, "images/a.png").result()
    assert (raised.value.path, raised.value.item, raised.value.hint) == ("images/a.png", "42", "replace the file")


def test_a_child_that_dies_without_answering_is_replaced_by_the_same_call_here(tmp_path):
    assert process.Forked(_die_once, tmp_path / "died").result() == f"answered by {os.getpid()}"


def test_beside_forks_only_without_other_threads():
    assert process.may_fork()
    assert isinstance(InProcess().beside("work", os.getpid), process.Forked)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, name="someone-elses-thread")
    other.start()
    try:
        assert not process.may_fork()
        pending = InProcess().beside("work", os.getpid)
        assert not isinstance(pending, process.Forked) and pending.result() == os.getpid()
    finally:
        stop.set()
        other.join()
