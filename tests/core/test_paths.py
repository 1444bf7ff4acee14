"""Output folders are checked before any work: files in the way, names the file system cannot hold
(with room for the working copies beside them), paths too deep for what is written inside."""

from __future__ import annotations

import errno

import pytest

from segbench.core.errors import InputError, OutputError, file_system_error
from segbench.core.paths import SIBLING_NAME_EXTRA, check_output_folder, check_writable_folder


def test_a_new_folder_under_a_writable_one_passes(tmp_path):
    assert check_output_folder(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert check_output_folder(None) is None


def test_a_file_in_the_way_is_named(tmp_path):
    (tmp_path / "a").write_text("x")
    with pytest.raises(InputError, match="expected a folder, found a file") as caught:
        check_output_folder(tmp_path / "a" / "b")
    assert caught.value.path == str(tmp_path / "a")


@pytest.mark.parametrize("length", [256, 255 - SIBLING_NAME_EXTRA + 1])
def test_a_name_without_room_for_the_working_copies_is_refused(tmp_path, length):
    with pytest.raises(InputError, match=f"name of {length} bytes") as caught:
        check_writable_folder(tmp_path / ("n" * length), "report folder")
    assert "shorter name" in caught.value.hint


def test_a_name_with_room_passes(tmp_path):
    check_writable_folder(tmp_path / ("n" * (255 - SIBLING_NAME_EXTRA)), "report folder")


def test_a_path_too_deep_for_the_files_inside_is_refused(tmp_path):
    deep = tmp_path.joinpath(*["d" * 150] * 26)  # 3,900 bytes and more: no room for what goes inside
    with pytest.raises(InputError, match="path is too long"):
        check_writable_folder(deep, "output folder")


@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC, errno.ENAMETOOLONG, errno.EACCES, errno.ENOENT])
def test_a_file_system_failure_becomes_an_error_naming_the_file(code):
    error = file_system_error(OSError(code, "what the OS said", "/data/coco_cd/x.json"))
    assert isinstance(error, OutputError) and error.path == "/data/coco_cd/x.json" and error.hint


def test_other_os_errors_are_not_disguised():
    assert file_system_error(OSError(errno.ECONNREFUSED, "refused")) is None


def test_a_name_longer_than_the_file_system_takes_is_named_not_raised(tmp_path):
    with pytest.raises(InputError, match="name of 300 bytes"):
        check_output_folder(tmp_path / ("n" * 300) / "report")
