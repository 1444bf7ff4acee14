"""Canonical JSON, atomic writes and sha256 fingerprints.

These are the primitives every builder writes through, so that the same inputs give byte-identical
files and a crash never leaves a half-written file that looks finished (folders: ``core.resume``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from PIL import Image

from segbench.core.errors import InputError

FLOAT_DIGITS = 6


def _canonical(value: Any) -> Any:
    """Round floats to a fixed precision so platform noise never changes a file's bytes."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        rounded = round(value, FLOAT_DIGITS)
        return 0.0 if rounded == 0 else rounded
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _canonical(value.item())
    return value


def canonical_json(value: Any, *, indent: int | None = None) -> str:
    """Serialise ``value`` with sorted keys, fixed float precision and no NaN.

    Non-finite floats become ``null``: JSON has no NaN, and a metric that is undefined is null.
    """
    return json.dumps(
        _canonical(value),
        sort_keys=True,
        indent=indent,
        separators=(",", ": ") if indent is not None else (",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


def _new_file_mode() -> int:
    """What ``open()`` gives a new file: 0o666 less the umask (``mkstemp`` would keep it private).

    Read once, when this module is imported (at start-up, before any thread): reading the umask
    means setting it for a moment.
    """
    umask = os.umask(0o077)
    os.umask(umask)
    return 0o666 & ~umask


_NEW_FILE_MODE = _new_file_mode()


def atomic_write_bytes(path: str | Path, data: bytes, *, durable: bool = True) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same directory and a rename.

    ``durable=False`` skips the per-file fsync: for files inside a resumable stage (``core.resume``),
    which syncs once before it swaps the directory in.
    """
    path = Path(path)
    if path.is_dir():
        raise InputError("expected a file to write, found a directory", path=path,
                         hint=f"give a file name (e.g. {path / 'out.json'}), or move the folder away")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except (FileExistsError, NotADirectoryError, PermissionError, FileNotFoundError) as exc:  # the user's path
        raise _unwritable(exc, path) from exc
    try:
        os.fchmod(fd, _NEW_FILE_MODE)  # as the user's umask says: shared under 022, private under 077
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def _unwritable(exc: OSError, path: Path) -> InputError:
    if isinstance(exc, PermissionError):
        return InputError("permission denied: cannot write here", path=path,
                          hint=f"make {path.parent} writable by this user, or write somewhere else")
    if isinstance(exc, FileNotFoundError):  # a folder that takes no new files (/proc), or one removed meanwhile
        return InputError("cannot create a file in this folder", path=path,
                          hint="write to a folder on an ordinary disk")
    return InputError("cannot create the file: a part of its folder path is a file", path=path,
                      hint="check the path (is an output folder given where a file is expected?)")


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, value: Any, *, indent: int | None = None) -> Path:
    """Write canonical JSON atomically (a trailing newline keeps the file friendly to diff)."""
    return atomic_write_text(path, canonical_json(value, indent=indent) + "\n")


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> Path:
    return atomic_write_text(path, "".join(canonical_json(row) + "\n" for row in rows))


def unreadable(exc: OSError, path: str | Path, *, expect: str = "file", hint: str | None = None) -> InputError:
    """The :class:`InputError` for an ``OSError`` met while opening or reading ``path``.

    ``expect`` is what the path should be ("file" or "directory"); ``hint`` overrides the fix given
    for a missing path (e.g. "check --plan").
    """
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{expect} not found", path=path, hint=hint or "check the path")
    if isinstance(exc, IsADirectoryError):
        return InputError(f"expected a {expect}, found a directory", path=path,
                          hint=hint or f"give the path of the {expect} itself, not of its folder")
    if isinstance(exc, NotADirectoryError):
        return InputError(f"a part of the path is a file, not a directory (expected a {expect})", path=path,
                          hint=hint or "check the path")
    if isinstance(exc, PermissionError):
        return InputError("permission denied", path=path,
                          hint=f"make it readable by this user (e.g. chmod u+r {path}), or run as its owner")
    return InputError(f"cannot read the {expect} ({exc.strerror or exc})", path=path, hint=hint or "check the path")


# The largest input file segbench reads whole (JSON, CSV, TOML, images, arrays); larger ones are refused
# before reading, not met with MemoryError halfway. SEGBENCH_MAX_INPUT_MB raises it.
DEFAULT_MAX_INPUT_MB = 8192
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def max_input_bytes() -> int:
    """The size limit of :func:`check_input_file` (``SEGBENCH_MAX_INPUT_MB``, checked when read)."""
    raw = os.environ.get("SEGBENCH_MAX_INPUT_MB", "").strip()
    if not raw:
        return DEFAULT_MAX_INPUT_MB << 20
    try:
        megabytes = float(raw)
    except ValueError:
        megabytes = math.nan
    if not math.isfinite(megabytes) or megabytes <= 0:
        raise InputError(f"SEGBENCH_MAX_INPUT_MB={raw!r} is not a positive number of megabytes",
                         hint=f"set it to e.g. {DEFAULT_MAX_INPUT_MB}, or unset it")
    return int(megabytes * (1 << 20))


def check_input_file(path: str | Path, *, hint: str | None = None, whole: bool = True) -> int:
    """Check, before opening it, that ``path`` is a regular file segbench may read; its size.

    A FIFO would block the reader for ever and ``/dev/zero`` would never end: both are refused, as
    sockets and devices are (a symlink counts as what it points to), and so is a file read
    ``whole`` over :func:`max_input_bytes` (a streamed one may be larger).

    Raises:
        InputError: missing, a directory, not a regular file, unreadable, or too large.
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        raise unreadable(exc, path, hint=hint) from exc
    if stat.S_ISDIR(info.st_mode):
        raise unreadable(IsADirectoryError(str(path)), path, hint=hint)
    for test, kind in _KINDS:
        if test(info.st_mode):
            raise InputError(f"not a regular file: {kind}", path=path,
                             hint=hint or "give the path of a file (segbench does not read pipes, devices or sockets)")
    if whole and info.st_size > (limit := max_input_bytes()):
        raise InputError(f"{info.st_size / (1 << 20):,.0f} MB, more than the {limit / (1 << 20):,.0f} MB segbench "
                         "reads from one file", path=path,
                         hint="split the file, or raise the limit with SEGBENCH_MAX_INPUT_MB if the memory allows")
    return info.st_size


def read_bytes(path: str | Path, *, hint: str | None = None) -> bytes:
    """The bytes of a file (:func:`check_input_file` first); any problem is an :class:`InputError`."""
    check_input_file(path, hint=hint)
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise unreadable(exc, path, hint=hint) from exc
    except MemoryError:
        raise InputError("too large to read into this machine's memory", path=path,
                         hint="free memory, or split the file") from None


def read_text(path: str | Path, *, encoding: str = "utf-8", hint: str | None = None) -> str:
    """A UTF-8 text file (``encoding="utf-8-sig"`` also drops a byte-order mark).

    Raises:
        InputError: the file is missing, a directory, unreadable, or not UTF-8 (names the byte offset).
    """
    data = read_bytes(path, hint=hint)
    if (error := other_format(data, path)) is not None:
        raise error
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise not_utf8(exc, path) from exc


# What a file given as text is when it is not, told by its first bytes (UTF-32 LE before UTF-16 LE:
# its mark starts with UTF-16's). A zip full of zero bytes would even decode as UTF-8.
_OTHER_FORMATS = (
    ((b"\x1f\x8b",), "a gzip-compressed file", "decompress it first (gunzip FILE)"),
    ((b"PK\x03\x04",), "a zip archive named {suffix} (a spreadsheet workbook, or files packed together)",
     "unzip it and pass the file inside; a workbook: save it as CSV (comma-separated) from its program"),
    ((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"), "UTF-32 text (it starts with a UTF-32 byte-order mark)",
     "save the file as UTF-8 (e.g. iconv -f utf-32 -t utf-8)"),
    ((b"\xff\xfe", b"\xfe\xff"), "UTF-16 text (it starts with a UTF-16 byte-order mark)",
     "save the file as UTF-8 (e.g. iconv -f utf-16 -t utf-8)"),
)


def other_format(data: bytes | memoryview, path: str | Path) -> InputError | None:
    """The error for a file given as text that is compressed, an archive or UTF-16/32; None otherwise."""
    head = bytes(data[:4])
    for marks, what, fix in _OTHER_FORMATS:
        if head.startswith(marks):
            suffix = Path(path).suffix or "without a suffix"
            return InputError(f"not UTF-8 text: {what.format(suffix=suffix)}", path=path, hint=fix)
    return None


def not_utf8(exc: UnicodeDecodeError, path: str | Path) -> InputError:
    return other_format(exc.object, path) or InputError(
        f"not UTF-8 text (byte {exc.start}: {exc.reason})", path=path,
        hint="save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)")


UTF8_BOM = b"\xef\xbb\xbf"


def without_bom(data: bytes) -> bytes | memoryview:
    """``data`` without the UTF-8 byte-order mark some editors write first (a view: no copy of a large file)."""
    return memoryview(data)[len(UTF8_BOM):] if data.startswith(UTF8_BOM) else data


def read_json(path: str | Path, *, hint: str | None = None) -> Any:
    """Read a JSON file (a leading byte-order mark is accepted), turning a missing, unreadable or malformed
    file into an :class:`InputError`."""
    data = without_bom(read_bytes(path, hint=hint))
    try:
        # orjson parses COCO-size files about twice as fast as the standard library, and refuses
        # nesting deeper than 1,024 levels instead of recursing until the stack ends.
        return orjson.loads(data)
    except MemoryError:
        raise InputError("too large to parse in this machine's memory", path=path,
                         hint="free memory, or split the file") from None
    except orjson.JSONDecodeError as exc:
        if (error := other_format(data, path)) is not None:
            raise error from exc
        try:
            bytes(data).decode("utf-8")
        except UnicodeDecodeError as not_text:
            raise not_utf8(not_text, path) from not_text
        if bytes(data[exc.pos:exc.pos + 9]).lstrip(b"-").startswith((b"NaN", b"Infinity")):
            raise InputError(f"not valid JSON: a NaN or Infinity at line {exc.lineno}, column {exc.colno} (JSON has "
                             "no such numbers)", path=path, hint="write null (or a finite number) where the value is "
                                                            "undefined") from exc
        raise InputError(
            f"not valid JSON ({exc})", path=path, hint="re-download or regenerate the file"
        ) from exc


class NotAStreamedList(Exception):  # noqa: N818 -- a signal to read the file whole, not an error shown to anyone
    """The file does not stream as a JSON list: :func:`read_json` reads it whole and names the problem."""


def json_list_batches(path: str | Path, size: int) -> Iterator[tuple[int, list[Any]]]:
    """The items of the JSON list in ``path`` as ``(index of the first, items)``, ``size`` at a time,
    parsed as the file is read (by ijson's C parser): the whole file and its parse are never in memory
    at once, as they are with :func:`read_json`.

    Raises:
        InputError: the file is missing, unreadable or not a regular file (:func:`check_input_file`).
        NotAStreamedList: the file is not a JSON list, or not valid JSON, possibly after some batches.
    """
    import ijson

    check_input_file(path, whole=False)
    try:
        with Path(path).open("rb") as handle:
            start = len(UTF8_BOM) if handle.read(len(UTF8_BOM)) == UTF8_BOM else 0
            handle.seek(start)
            if handle.read(4096).lstrip()[:1] != b"[":
                raise NotAStreamedList
            handle.seek(start)
            first, batch = 0, []
            for item in ijson.items(handle, "item", use_float=True):
                batch.append(item)
                if len(batch) == size:
                    yield first, batch
                    first, batch = first + size, []
            yield first, batch
    except (ijson.JSONError, OSError, UnicodeDecodeError) as exc:
        raise NotAStreamedList from exc


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path, chunk_size: int = 1 << 20) -> str:
    """sha256 of a regular file, read in chunks (a FIFO or a device is refused: :func:`check_input_file`)."""
    check_input_file(path, whole=False)
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_tree(root: str | Path, *, exclude: Iterable[str] = ()) -> dict[str, str]:
    """sha256 of every file under ``root``, keyed by POSIX path relative to it, sorted."""
    root = Path(root)
    skip = set(exclude)
    out = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel not in skip:
            out[rel] = sha256_file(path)
    return out


def fingerprint(value: Any) -> str:
    """sha256 of the canonical JSON of ``value``: a stable key for params, configs, prompts."""
    return sha256_bytes(canonical_json(value).encode("utf-8"))


def png_bytes(array_or_image: np.ndarray | Image.Image, compress_level: int = 6) -> bytes:
    """PNG-encode without metadata, so equal pixels give equal bytes."""
    image = array_or_image if isinstance(array_or_image, Image.Image) else Image.fromarray(array_or_image)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False, compress_level=compress_level)
    return buffer.getvalue()


# --- reading images and the files a source names ---------------------------------------------------


def open_image(
    source: str | Path | bytes,
    *,
    path: str | Path | None = None,
    item: str | None = None,
    mode: str | None = None,
    hint: str = "restore or replace the image file",
    error: type[InputError] = InputError,
) -> Image.Image:
    """Open, fully decode and (with ``mode``) convert an image; the file is closed on return.

    ``source`` is a path, or the image's bytes (then ``path`` names where they came from). Pillow
    fails in many ways besides ``OSError`` (``DecompressionBombError`` for images over its pixel
    limit, ``SyntaxError`` for broken PNG chunks, ``ValueError``, ``EOFError``...): every one of
    them becomes ``error`` naming the file, so a bad image never ends a command with a traceback.
    """
    where = path if path is not None or isinstance(source, bytes) else source
    if not isinstance(source, bytes):
        _check_image_file(source, item, hint, error)
    try:
        with Image.open(io.BytesIO(source) if isinstance(source, bytes) else source) as image:
            image.load()
            return image.convert(mode) if mode is not None and image.mode != mode else image.copy()
    except Exception as exc:  # noqa: BLE001 — Pillow's failures have no common base class
        raise _image_error(exc, where, item, hint, error) from exc


def image_size(path: str | Path, *, item: str | None = None, hint: str = "restore or replace the image file",
               error: type[InputError] = InputError) -> tuple[int, int]:
    """``(width, height)`` from the image's header alone (cheap); failures as in :func:`open_image`.

    Pillow checks the pixel limit when it reads the header, so a decompression bomb is refused here
    before anything is decoded.
    """
    _check_image_file(path, item, hint, error)
    try:
        with Image.open(path) as image:
            return image.size
    except Exception as exc:  # noqa: BLE001 — see open_image
        raise _image_error(exc, path, item, hint, error) from exc


def _check_image_file(path: str | Path, item: str | None, hint: str, error: type[InputError]) -> None:
    """:func:`check_input_file` for an image that exists (a missing one is named by :func:`_image_error`),
    its error of the caller's type naming the item."""
    if not os.path.lexists(path):
        return
    try:
        check_input_file(path)
    except InputError as exc:
        raise error(f"image file cannot be read: {exc.message}", path=path, item=item, hint=exc.hint or hint) from None


def _image_error(exc: Exception, path: str | Path | None, item: str | None, hint: str,
                 error: type[InputError]) -> InputError:
    if isinstance(exc, InputError):
        return exc
    if isinstance(exc, FileNotFoundError):
        return error("image file not found", path=path, item=item, hint=hint)
    if isinstance(exc, Image.DecompressionBombError):
        return error(f"image refused: it is larger than the {(Image.MAX_IMAGE_PIXELS or 0) * 2:,}-pixel limit "
                     "(a decompression bomb, or not a photo)", path=path, item=item, hint=hint)
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
    return error(f"image file cannot be read: not a readable image ({reason})", path=path, item=item, hint=hint)


def source_path(root: str | Path, name: str, *, item: str | None = None, path: str | Path | None = None,
                error: type[InputError] = InputError) -> Path:
    """``root / name`` for a file a source lists (a COCO ``file_name``), refused when it leaves ``root``.

    See :func:`inside_name`; raises what it raises.
    """
    return Path(root) / inside_name(name, item=item, path=path, error=error, root=root)


def inside_name(name: str, *, item: str | None = None, path: str | Path | None = None,
                error: type[InputError] = InputError, root: str | Path | None = None) -> str:
    """``name`` normalised, when it names a file inside the folder it is relative to.

    The check is on the name itself: an absolute path, or one whose ``..`` steps climb above its
    folder, is refused, so a source file cannot make a build read (and export) files from
    elsewhere. Symbolic links inside the folder are followed as usual: whoever put them there chose
    where they lead.

    Args:
        item: what named the file (``"image 42"``), for the message.
        path: the file that listed the name (the annotations file), for the message.
        root: the folder, for the message.

    Raises:
        ``error`` (InputError by default) naming the item and the name.
    """
    text = str(name)
    normal = os.path.normpath(text) if text else ""
    if (not text or "\x00" in text or os.path.isabs(text) or normal in (".", "..")
            or normal.startswith(".." + os.sep)):
        folder = f"the images folder {root}" if root is not None else "the images folder"
        raise error(f"file_name {text!r} does not name a file inside {folder}", path=path, item=item,
                    hint="file names must be relative to the images folder and stay inside it; fix the "
                         "annotations, or build with --on-error skip to leave this image out")
    return normal
