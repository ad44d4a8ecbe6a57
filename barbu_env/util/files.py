"""Files a user keeps and files a user hands over: nothing lost, nothing unbounded.

Writing. Every file the project writes goes through :func:`write_text`,
:func:`write_bytes` or :func:`replacing`: the new content is written to a temporary file
in the target's folder, flushed to disk, and renamed over the target in one step. A write
that fails (a full disk, no permission, an interrupt) leaves the old file exactly as it
was, removes the temporary file, and raises :class:`OutputError`, an ``OSError`` whose
message is one line naming the file. A symbolic link is written through (the file it
points to is replaced); a device or a pipe (``/dev/null``) is refused, never replaced.
:func:`check_writable` refuses, before any work, an output whose folder is missing or not
writable, or that is a folder.

Reading. :func:`read_bytes` and :func:`read_text` read a file someone else may have
handed over (a record, a league cache, a checkpoint's side files): only a regular file (a
pipe or a device is refused without being opened) of at most ``limit`` bytes (a larger
one is refused before it is read). Refusals are :class:`InputError`, a ``ValueError`` of
one line naming the file.

:func:`safe_yaml` reads the user's own YAML (a rules file, a training config) with the
safe loader; a syntax error is one line. :func:`quote` shows a value in an error message,
cut with the standard library's ``reprlib``; :func:`printable` escapes what could drive
the terminal in a record's strings.
"""

from __future__ import annotations

import contextlib
import os
import reprlib
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: The default limit of :func:`read_bytes`: far above any record or cache file.
DEFAULT_READ_LIMIT = 16_000_000


class OutputError(OSError):
    """A file could not be written; the old file, if any, is unchanged."""


class InputError(ValueError):
    """A file handed over could not be read: not a regular file, too large, or unreadable."""


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxlong = _REPR.maxother = 200


def quote(value: object, width: int = 40) -> str:
    """``repr(value)`` (``reprlib``'s, for a container) cut to at most ``width`` characters,
    with ``...`` where it was cut; the type's name where the repr fails.

    >>> quote("runs/x.pt"), quote("a" * 100, 12), quote([1] * 100)
    ("'runs/x.pt'", "'aaaaaaaa...", '[1, 1, 1, 1, 1, 1, ...]')
    """
    try:
        text = repr(value[: width + 1]) if isinstance(value, (str, bytes)) else _REPR.repr(value)
    except Exception:  # an int too long for str(), an object whose repr fails
        text = f"<{type(value).__name__}>"
    return text if len(text) <= width else text[: max(width - 3, 1)] + "..."


def is_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names an existing file (through links); False where it cannot be looked at."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def _reason(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _mode_for(target: Path) -> int:
    """The permissions of the file replaced, or those ``open`` gives a new file."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path`` for a writer that takes a file name (``savefig``,
    ``torch.save``, an image's ``save``): on a normal exit it is flushed and renamed over
    ``path``; on any exception it is removed, ``path`` is untouched, and an ``OSError``
    becomes :class:`OutputError` naming ``path``. Yields the temporary path."""
    shown = os.fspath(path)
    target = Path(os.path.realpath(shown))  # through a symbolic link, dangling or not
    if target.exists() and not target.is_file():  # renamed over, a folder, a device or a pipe would be lost
        raise OutputError(f"cannot write {shown}: it is not a regular file (a folder, a device or a pipe)")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f"{target.suffix}.tmp", dir=target.parent)
    except OSError as e:
        raise OutputError(f"cannot write {shown}: {_reason(e)}") from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with open(tmp, "rb+") as f:  # the writer may have closed without flushing to disk
            os.fsync(f.fileno())
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError) and not isinstance(e, OutputError):
            raise OutputError(f"could not write {shown}: {_reason(e)} (any old file there is unchanged)") from None
        raise


def check_writable(path: str | None, option: str) -> None:
    """Refuse, before any game is played, an output file (``option``'s value) that could
    not be written: a missing or read-only folder, a folder or a device given as the file.
    Nothing is created or changed."""
    if path is None:
        return
    target = os.path.realpath(path)  # where the write lands, through links
    folder = os.path.dirname(target)
    if os.path.isdir(target):
        reason = "it is a folder"
    elif os.path.exists(target) and not os.path.isfile(target):
        reason = "it is not a regular file: a device or a pipe is never replaced"
    elif not os.path.isdir(folder):
        reason = f"no folder {folder}"
    elif not os.access(folder, os.W_OK | os.X_OK):  # the new file is made there, then renamed over the old
        reason = f"no permission to write in {folder}"
    else:
        return
    raise OSError(f"{option} {path}: cannot write there ({reason})")


def make_folder(path: str | None, option: str) -> None:
    """Make, before any work, the folder an option names, or refuse it in one line."""
    if path is None:
        return
    try:
        os.makedirs(path, exist_ok=True)
    except (OSError, ValueError) as e:
        raise OSError(f"{option} {path!r}: cannot make that folder ({_reason(e)})") from None


def cut_text(text: str, width: int = 200) -> str:
    """``text`` if it has at most ``width`` characters, else its start and ``...``.

    >>> cut_text("runs/x/best.pt"), cut_text("a" * 300, 10)
    ('runs/x/best.pt', 'aaaaaaa...')
    """
    return text if len(text) <= width else text[: max(width - 3, 1)] + "..."


def error_line(error: BaseException | str, width: int = 1000) -> str:
    r"""An error's message as one line of at most ``width`` characters: white space as one
    space, characters that are not printable as their escapes (a message that quotes input
    cannot drive the terminal).

    >>> error_line(ValueError("bad\nthing\x1b[31m"))
    'bad thing\\x1b[31m'
    """
    return cut_text(printable(" ".join(str(error).split())), width)


def printable(text: object) -> str:
    """``str(text)`` with every character that is not printable (ESC, BEL, line breaks,
    bidi overrides) written as its Python escape, so that a record's strings cannot drive
    the terminal they are shown on.

    >>> printable("P0\\x1b[31m red\\n"), printable("Zoé ♥")
    ('P0\\\\x1b[31m red\\\\n', 'Zoé ♥')
    """
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` whole or not at all (see the module's docstring); returns ``path``."""
    with replacing(path) as tmp, open(tmp, "wb") as f:
        f.write(data)
        f.flush()
    return Path(path)


def write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` whole or not at all; returns ``path``."""
    return write_bytes(path, text.encode(encoding))


def read_bytes(path: str | os.PathLike[str], limit: int = DEFAULT_READ_LIMIT, what: str = "file") -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes; otherwise
    :class:`InputError` (a ``FileNotFoundError`` if there is no such file)."""
    shown = os.fspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {shown}: no such file") from None
    except OSError as e:
        raise InputError(f"{what} {shown}: cannot read it ({_reason(e)})") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{what} {shown} is not a regular file (a folder, a pipe or a device?): refused unread")
    if st.st_size > limit:
        raise InputError(f"{what} {shown} is {st.st_size:,} bytes, over the limit of {limit:,}: refused unread")
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise InputError(f"{what} {shown}: cannot read it ({_reason(e)})") from None
    if len(data) > limit:  # grew while we read it
        raise InputError(f"{what} {shown} is over the limit of {limit:,} bytes: refused")
    return data


def read_text(path: str | os.PathLike[str], limit: int = DEFAULT_READ_LIMIT, what: str = "file") -> str:
    """The UTF-8 text of ``path`` (see :func:`read_bytes`); invalid UTF-8 is an :class:`InputError`."""
    data = read_bytes(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{what} {os.fspath(path)} is not UTF-8 text (byte {e.start})") from None


def safe_yaml(text: str, what: str = "YAML") -> object:
    """The value of the YAML document ``text`` (``None`` for an empty one), read with the
    safe loader (plain data, no Python tags); text that is not YAML is an
    :class:`InputError` of one line, with the line and column."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise InputError(f"{what} is not valid YAML: {error_line(getattr(e, 'problem', None) or e)}{where}") from None
