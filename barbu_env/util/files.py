"""Files a user keeps and files a user hands over: nothing lost, nothing unbounded.

Writing. Every file the project writes goes through :func:`write_text`,
:func:`write_bytes` or :func:`replacing`: the new content is written to a temporary file
in the target's folder, flushed to disk, and renamed over the target in one step. A write
that fails (a full disk, a file-size limit, no permission, an interrupt) leaves the old
file exactly as it was, removes the temporary file, and raises :class:`OutputError`, an
``OSError`` whose message is one line naming the file. A target that is a symbolic link is
written where the link points (as ``open(path, "w")`` would), so a link is never replaced
by a file; a target that is a device or a pipe (``/dev/null``, a FIFO) is refused, never
replaced; a new file gets the permissions ``open`` would give it, a replaced file keeps
its own. :func:`check_writable` refuses, before any work, a target that such a write could
not replace (an ``OSError`` naming the option and why), without touching the disk.

Reading. :func:`read_bytes` and :func:`read_text` read a file a stranger may hand over (a
record, a rules file, a cache, a config): only a regular file (a FIFO, a device or a
folder is refused without being opened for reading, so ``/dev/zero`` or a pipe neither
fills memory nor hangs), and at most ``limit`` bytes (a larger file is refused before it
is read). Refusals are :class:`InputError`, a ``ValueError`` with one line naming the file.

:func:`safe_yaml` parses YAML a stranger wrote (a rules file, a training config) with the
safe loader, refusing before it builds anything a document whose aliases expand past a
stated number of nodes (a "billion laughs" file of a few hundred bytes) or refer to
themselves.

:func:`quote` shortens a value for an error message, so that a bad value of any size is
named in a few dozen characters.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import reprlib
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "InputError",
    "OutputError",
    "check_writable",
    "cut_text",
    "error_line",
    "is_file",
    "make_folder",
    "printable",
    "quote",
    "read_bytes",
    "read_text",
    "replacing",
    "safe_yaml",
    "write_bytes",
    "write_text",
]

#: The default limit of :func:`read_bytes`: far above any record, rules file or config.
DEFAULT_READ_LIMIT = 16_000_000

#: The default limit of :func:`safe_yaml`: nodes of the document with every alias expanded.
DEFAULT_YAML_NODES = 100_000


class OutputError(OSError):
    """A file could not be written; the old file, if any, is unchanged."""


class InputError(ValueError):
    """A file handed over could not be read: not a regular file, too large, or unreadable."""


def quote(value: object, width: int = 40) -> str:
    """``repr(value)`` cut to at most ``width`` characters (6 at least; with ``...`` where
    it was cut), in time and memory bounded by ``width`` however large ``value`` is (a
    container shows its first items, a long text, bytes or number its start; a cut text or
    bytes keeps its closing quote, and no escape is cut in two). Only an object's own
    ``__repr__`` can take longer.

    >>> quote("runs/x.pt"), quote("a" * 100, 12), quote(10**40, 12)
    ("'runs/x.pt'", "'aaaaaaa...'", '100000000...')
    >>> quote(10**5000)
    '<int of about 5,000 digits>'
    """
    width = max(6, int(width))
    shown = _Shown(width)
    try:
        if isinstance(value, (str, bytes, bytearray)):
            text = repr(value[: width + 2])
        elif isinstance(value, int) and value.bit_length() > 14_000:  # over 4,200 digits: str() is slow or refused
            text = f"<int of about {int(value.bit_length() * 0.30103):,} digits>"
        elif isinstance(value, int):
            text = repr(value)
        else:
            text = shown.repr(value)
    except Exception:  # a deep structure, or a value whose own methods fail: its type
        text = _type_name(value)
    if len(text) <= width:
        return text
    if issubclass(type(value), (str, bytes)) and text[-1:] in ("'", '"'):
        return _cut(text, width - 4) + "..." + text[-1]
    return _cut(text, width - 3) + "..."


def _type_name(value: object) -> str:
    """``<type name>``, or ``<object>`` where even that fails (a metaclass's own ``__name__``)."""
    try:
        return f"<{type(value).__name__}>"
    except Exception:
        return "<object>"


class _Shown(reprlib.Repr):
    """``reprlib``'s bounded repr, with texts and bytes inside containers sliced before
    their repr is made (reprlib cuts a text's repr in its middle, escapes and all, and
    makes the whole repr of bytes), and other values shown whole (``quote`` cuts the end):
    three levels deep, 16 items of each container, texts and numbers a little over ``width``."""

    def __init__(self, width: int):
        super().__init__()
        self.maxlevel = 3
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = self.maxdeque = 16
        self.maxdict = self.maxarray = 16
        self.maxstring = self.maxlong = self.maxother = width + 2

    def repr_str(self, x: str, level: int) -> str:
        return repr(x[: self.maxstring])

    def repr_bytes(self, x: bytes, level: int) -> str:
        return repr(x[: self.maxstring])

    def repr_bytearray(self, x: bytearray, level: int) -> str:
        return repr(x[: self.maxstring])

    def repr_set(self, x: set, level: int) -> str:
        return self._first_items(x, level, "{", "}", "set()", self.maxset)

    def repr_frozenset(self, x: frozenset, level: int) -> str:
        return self._first_items(x, level, "frozenset({", "})", "frozenset()", self.maxfrozenset)

    def repr_dict(self, x: dict, level: int) -> str:
        return self._first_items(x, level, "{", "}", "{}", self.maxdict)

    def _first_items(self, x: set | frozenset | dict, level: int, left: str, right: str, empty: str, most: int) -> str:
        """A set's or dict's first ``most`` items in its own order (reprlib sorts them all first)."""
        if not x:
            return empty
        if level <= 0:
            return left + "..." + right
        if isinstance(x, dict):
            pairs = itertools.islice(x.items(), most)
            items = [f"{self.repr1(k, level - 1)}: {self.repr1(v, level - 1)}" for k, v in pairs]
        else:
            items = [self.repr1(item, level - 1) for item in itertools.islice(x, most)]
        return left + ", ".join(items) + (", ..." if len(x) > most else "") + right

    def repr_instance(self, x: object, level: int) -> str:  # whole: quote cuts its end
        try:
            return repr(x)
        except Exception:
            return _type_name(x)


#: One character of a repr, an escape (``\\x00``, ``\\u00e9``, ``\\n``) counted as one.
_REPR_CHARACTER = re.compile(r"\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|.)|.", re.DOTALL)


def _cut(text: str, width: int) -> str:
    """The start of a repr ``text`` in at most ``width`` characters, never half an escape."""
    end = 0
    for character in _REPR_CHARACTER.finditer(text, 0, width + 10):
        if character.end() > width:
            break
        end = character.end()
    return text[:end]


def is_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names an existing file (through links); False for a name no file can
    have (too long, a NUL byte) or one that cannot be looked at."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def _reason(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _target(path: str | os.PathLike[str]) -> Path:
    """Where a write to ``path`` lands: through a symbolic link (dangling or not) to its target."""
    return Path(os.path.realpath(os.fspath(path)))


def _mode_for(target: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path`` (same suffix) for a writer that takes a file name
    (``savefig``, ``torch.save``, an image's ``save``): on a normal exit it is flushed and
    renamed over ``path``; on any exception it is removed, ``path`` is untouched, and an
    ``OSError`` becomes :class:`OutputError` naming ``path``. Yields the temporary path."""
    shown = cut_text(os.fspath(path))
    target = _target(path)
    if _link_loop(path):
        raise OutputError(f"cannot write {shown}: its symbolic links go round in a loop")
    if target.is_dir():
        raise OutputError(f"cannot write {shown}: it is a folder")
    if target.exists() and not target.is_file():  # renamed over, a device or a pipe would be replaced by a file
        raise OutputError(f"cannot write {shown}: it is not a regular file (a device or a pipe is never replaced)")
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
    except OSError as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OutputError):
            raise
        raise OutputError(f"could not write {shown}: {_reason(e)} (any old file there is unchanged)") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def check_writable(path: str | None, option: str) -> None:
    """Refuse, before any game is played, an output file (``option``'s value) that cannot
    be written: a missing folder, a folder given as the file, a file or a folder without
    write permission, a device or a pipe (a write replaces the file, and would replace
    ``/dev/null`` itself when run as root). Checked without writing: nothing is created, changed or removed (a
    dangling symbolic link stays dangling; the file it points to is where the output will
    go, as every write follows links)."""
    if path is None:
        return
    try:
        target = os.path.realpath(path)  # where the write lands, through links (dangling ones too)
    except ValueError:  # a NUL byte
        raise OSError(f"{option} {quote(path, 200)}: cannot write there (a file name holds no NUL byte)") from None
    folder = os.path.dirname(target)
    too_long = _too_long(target)
    if too_long:
        reason = too_long
    elif os.fspath(path).endswith(("/", os.sep)):
        reason = "a file's name does not end in a folder separator"
    elif _link_loop(path):
        reason = "its symbolic links go round in a loop"
    elif os.path.isdir(target):
        reason = "it is a folder"
    elif not os.path.isdir(folder):
        reason = f"no folder {folder}"
    elif os.path.exists(target) and not os.path.isfile(target):
        reason = "it is not a regular file: a device or a pipe is never replaced"
    elif os.path.exists(target) and not os.access(target, os.W_OK):
        reason = "the file is read-only"
    elif not os.access(folder, os.W_OK | os.X_OK):  # the new file is made there, then renamed over the old
        reason = f"no permission to write in {folder}"
    else:
        return
    raise OSError(f"{option} {cut_text(os.fspath(path), 200)}: cannot write there ({reason})")


def _link_loop(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a symbolic link that leads back to itself (a write would
    replace the link by a file)."""
    try:
        os.stat(path)
    except OSError as e:
        return e.errno == errno.ELOOP
    except ValueError:
        return False
    return False


def make_folder(path: str | None, option: str) -> None:
    """Make, before any work, the folder an option names (``option``'s value; the command
    would make it anyway), or refuse it in one line: an empty name, a NUL byte, a name
    over the file system's limit, a file on its path, a loop of links, a place where no
    folder can be made."""
    if path is None:
        return
    shown = cut_text(os.fspath(path), 200)
    if not os.fspath(path):
        raise OSError(f"{option}: an empty name is no folder")
    try:
        os.makedirs(path, exist_ok=True)
    except ValueError:  # a NUL byte
        raise OSError(f"{option} {quote(path, 200)}: cannot make that folder (a name holds no NUL byte)") from None
    except OSError as e:
        raise OSError(f"{option} {shown}: cannot make that folder ({_reason(e)})") from None


#: What ``replacing`` adds to a file's name for its temporary file besides a second copy
#: of its suffix: ``.`` before the name, ``.`` and ``mkstemp``'s 8 random characters after
#: it, ``.tmp`` at the end; with room to spare.
_TEMPORARY_EXTRA = 16


def _too_long(target: str) -> str:
    """Why no file (or its temporary twin) can be written at the absolute path ``target``
    for its length (``""`` if it can): a name over the file system's ``NAME_MAX`` less what
    the temporary name adds, or a path over ``PATH_MAX``."""
    name_max, path_max = 255, 4096
    folder = os.path.dirname(target)
    asked = folder if os.path.isdir(folder) else "/"  # the file system the file will be on
    with contextlib.suppress(OSError, ValueError, AttributeError):
        name_max, path_max = os.pathconf(asked, "PC_NAME_MAX"), os.pathconf(asked, "PC_PATH_MAX")
    extra = _TEMPORARY_EXTRA + len(os.fsencode(Path(target).suffix))  # the temporary name's growth
    name = len(os.fsencode(os.path.basename(target)))
    whole = len(os.fsencode(target))
    if name + extra > name_max:
        return f"its name is {name:,} bytes long; at most {name_max - extra:,} can be written here"
    if whole + extra > path_max:
        return f"the path is {whole:,} bytes long; at most {path_max - extra:,}"
    return ""


def cut_text(text: str, width: int = 200) -> str:
    """``text`` if it has at most ``width`` characters, else its start and ``...``: a path
    or a message shown in one line of bounded length.

    >>> cut_text("runs/x/best.pt"), cut_text("a" * 300, 10)
    ('runs/x/best.pt', 'aaaaaaa...')
    """
    return text if len(text) <= width else text[: max(width - 3, 1)] + "..."


#: The longest error line the commands print (a long path is cut, a refusal never is).
ERROR_LINE = 1000


def error_line(error: BaseException | str, width: int = ERROR_LINE) -> str:
    r"""An error's message as one line of at most ``width`` characters: line breaks and
    runs of white space as one space, other characters that are not printable as their
    escapes (a message that quotes input cannot drive the terminal), cut with ``...``.

    >>> error_line(ValueError("bad\nthing\x1b[31m"))
    'bad thing\\x1b[31m'
    """
    return cut_text(printable(" ".join(str(error).split())), width)


def printable(text: object) -> str:
    """``str(text)`` with every character that is not printable (control characters such
    as ESC or BEL, line breaks, format characters such as bidi overrides) written as its
    Python escape, so that a record's strings cannot drive the terminal they are shown on.

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
    shown = cut_text(os.fspath(path))
    try:
        st = os.stat(path)
    except ValueError:  # a NUL byte
        raise FileNotFoundError(f"{what} {quote(path, 200)}: no such file") from None
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {shown}: no such file") from None
    except OSError as e:
        raise InputError(f"{what} {shown}: cannot read it ({_reason(e)})") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{what} {shown} is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{what} {shown} is not a regular file (a pipe or a device?): refused unread")
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


def safe_yaml(text: str, what: str = "YAML", max_nodes: int = DEFAULT_YAML_NODES) -> object:
    """The value of the YAML document ``text`` (``None`` for an empty one), read with the safe
    loader. A document whose nodes, counted with every alias expanded, number over
    ``max_nodes``, or whose aliases refer to a node that contains them, or a mapping of which
    gives one key twice (the YAML spec's keys are unique; the loader would keep the last),
    is refused with an :class:`InputError` before any value is built; so is text that is not
    YAML (one line, with the line and column)."""
    import yaml

    try:
        loader = yaml.SafeLoader(text)
    except yaml.YAMLError as e:  # the reader checks the characters at once: a control character
        raise InputError(f"{what} is not valid YAML: {_reason(e)}") from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_yaml_size(node, what, max_nodes)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise InputError(f"{what} is not valid YAML: {e.problem or e.context}{where}") from None
    except yaml.YAMLError as e:
        raise InputError(f"{what} is not valid YAML: {_reason(e)}") from None
    finally:
        loader.dispose()


def _check_yaml_size(root: object, what: str, max_nodes: int) -> None:
    """Refuse ``root`` if its expanded size is over ``max_nodes``, it is recursive, or a
    mapping gives one key twice."""
    import yaml

    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise InputError(f"{what}: an alias refers to a node that contains it: refused")
        open_nodes.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            for child in node.value:
                total += size(child)
                if total > max_nodes:
                    break
        elif isinstance(node, yaml.MappingNode):
            keys: set[tuple[str, str]] = set()
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.tag != "tag:yaml.org,2002:merge":
                    if (k.tag, k.value) in keys:  # YAML's keys are unique; PyYAML would keep the last silently
                        line = k.start_mark.line + 1
                        raise InputError(f"{what}: the key {k.value!r} is given twice (again on line {line}): refused")
                    keys.add((k.tag, k.value))
                total += size(k) + size(v)
                if total > max_nodes:
                    break
        open_nodes.discard(key)
        if total > max_nodes:
            raise InputError(
                f"{what}: over {max_nodes:,} values once its aliases are expanded: refused before building it"
            )
        sizes[key] = total
        return total

    size(root)
