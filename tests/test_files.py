"""barbu_env.util.files: a failed write leaves the old file as it was and names the file in one
line; a link is written through, never replaced; a reader refuses pipes, devices and
oversized files unread. The full disk is a file-size limit (``RLIMIT_FSIZE``) set in a
subprocess, so no root is needed."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from barbu_env.util.files import InputError, OutputError, quote, read_bytes, read_text, replacing, safe_yaml, write_text

OLD = '{"old": "result", "kept": true}\n' * 200  # 6.4 kB


def run_with_file_size_limit(code: str, limit: int) -> subprocess.CompletedProcess[str]:
    prelude = f"import resource\nresource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=120)


def test_a_write_that_fills_the_disk_leaves_the_old_file_whole_and_names_it(tmp_path):
    out = tmp_path / "res.json"
    out.write_text(OLD)
    code = (
        "from barbu_env.util.files import write_text, OutputError\n"
        "try:\n"
        f"    write_text({str(out)!r}, 'x' * 100_000)\n"
        "except OutputError as e:\n"
        "    print('ERR', e)\n"
    )
    done = run_with_file_size_limit(code, 8192)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == OLD
    line = done.stdout.strip()
    assert line.startswith("ERR") and str(out) in line and "\n" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res.json"]  # no temporary file left


def test_a_writer_that_raises_leaves_the_old_file_and_no_temporary(tmp_path):
    out = tmp_path / "plot.png"
    out.write_text(OLD)
    with pytest.raises(RuntimeError), replacing(out) as tmp:
        tmp.write_text("half")
        raise RuntimeError("the plotting library failed")
    assert out.read_text() == OLD
    assert [p.name for p in tmp_path.iterdir()] == ["plot.png"]


def test_a_new_file_appears_whole_with_the_usual_permissions(tmp_path):
    out = tmp_path / "new.json"
    write_text(out, "{}\n")
    assert out.read_text() == "{}\n"
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_symbolic_link_is_written_through_even_when_dangling(tmp_path):
    target, link = tmp_path / "t.json", tmp_path / "dl.json"
    link.symlink_to(target)
    write_text(link, "new\n")
    assert link.is_symlink() and target.read_text() == "new\n"


def test_a_folder_as_the_output_is_refused_in_one_line(tmp_path):
    with pytest.raises(OutputError, match="folder"):
        write_text(tmp_path, "x")


def test_a_pipe_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "record.json"
    os.mkfifo(fifo)
    result: list[BaseException] = []

    def read() -> None:
        try:
            read_text(fifo, what="record")
        except InputError as e:
            result.append(e)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "reading a FIFO hung"
    assert "not a regular file" in str(result[0])


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_dev_zero_is_refused_unread():
    with pytest.raises(InputError, match="not a regular file"):
        read_bytes("/dev/zero")


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "rules.yaml"
    big.write_bytes(b"a" * 1001)
    with pytest.raises(InputError, match="1,001 bytes, over the limit of 1,000"):
        read_bytes(big, limit=1000, what="rules file")
    assert read_bytes(big, limit=1001) == b"a" * 1001


def test_invalid_utf8_and_a_missing_file_are_one_line_each(tmp_path):
    bad = tmp_path / "r.json"
    bad.write_bytes(b"\xff\xfe{")
    with pytest.raises(InputError, match="not UTF-8"):
        read_text(bad)
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_text(tmp_path / "missing.json")


@pytest.mark.parametrize("value", ["x" * 900_000, 10**5000, [[[[[]]]]] * 100_000], ids=["long", "huge-int", "wide"])
def test_quote_names_any_value_in_a_few_dozen_characters(value):
    assert len(quote(value)) <= 40


@pytest.mark.parametrize("width", [-1, 0, 1, 4, 5, 6, 7.5, True])
def test_quote_is_never_longer_than_its_width_or_six_and_cuts_big_bytes_unread(width):
    for value in ("abcdefghijklmnop", None, 12345678901234, bytearray(10**7), 10**5000):
        shown = quote(value, width)
        assert len(shown) <= max(6, int(width)), (value if not isinstance(value, (bytearray, int)) else "", shown)
    assert quote("abcdefghijklmnop", width).endswith("...'")


@pytest.mark.parametrize("text", ["x" * 900, "it's " * 100, 'say "x" ' * 100])
def test_a_text_quote_cuts_keeps_its_closing_quote(text):
    shown = quote(text, 30)
    assert len(shown) == 30 and shown[0] == shown[-1] in "'\"" and shown.endswith("..." + shown[0])


@pytest.mark.parametrize(
    "value", ["\x00" * 99, "é\u2028" * 40, "a\\" * 60, "\n\t" * 50, "\U000e0001" * 30, b"\xff" * 90]
)
def test_a_quote_is_cut_between_escapes_and_keeps_its_closing_quote(value):
    for width in range(6, 40):
        shown = quote(value, width)
        assert len(shown) <= width and shown[-4:-1] == "..."
        start = ast.literal_eval(shown[:-4] + shown[-1])  # what is shown before the cut reads back
        assert value.startswith(start), (width, shown)


@pytest.mark.parametrize("item", ["\x00" * 10**6, b"\xff" * 10**6])
def test_a_quote_of_a_container_cuts_its_texts_and_bytes_between_escapes(item):
    for width in range(6, 40):
        shown = quote([item], width)
        assert len(shown) <= width and shown.endswith("...")
        (start,) = ast.literal_eval(shown[:-3] + "']")  # what is shown before the cut reads back
        assert item.startswith(start), (width, shown)


class _ReprFails(int):
    def __repr__(self):
        raise RuntimeError("no repr")


class _SliceFails(str):
    def __getitem__(self, key):
        raise RuntimeError("no slice")


class _NameFails(type):
    @property
    def __name__(cls):
        raise RuntimeError("no name")


class _Nameless(metaclass=_NameFails):
    def __repr__(self):
        raise RuntimeError("no repr")


class _ClassFails:
    __class__ = property(lambda self: 1 / 0)

    def __repr__(self):
        raise RuntimeError("no repr")


def test_a_quote_never_raises_and_cuts_any_value_at_its_end():
    shown = [quote(_Nameless()), quote(_ClassFails(), 8)]  # strings: pytest cannot show these objects
    assert shown == ["<object>", "<_Cla..."]
    from unittest import mock

    for value in (_ReprFails(3), _SliceFails("abc"), mock.Mock(spec=int), [_ReprFails(1)]):
        assert quote(value, 20).startswith(("<", "[<"))  # its type, where its own methods fail
    assert quote(1.2345678901234567, 12) == "1.2345678..."  # the start, never a middle cut out
    assert quote([1.2345678901234567] * 3, 24) == "[1.2345678901234567, ..."


def test_a_quote_of_a_big_set_or_dict_shows_its_first_items_without_sorting_them():
    compared = []

    class Counted:  # reprlib sorted every item (time growing with the set) before showing 16
        def __lt__(self, other):
            compared.append(1)
            return id(self) < id(other)

        def __repr__(self):
            return "U"

    items = [Counted() for _ in range(40)]
    assert quote(set(items), 30) == "{U, U, U, U, U, U, U, U, U,..."
    assert quote(frozenset(items), 30).startswith("frozenset({U, U")
    assert quote(dict.fromkeys(items, 1), 30) == "{U: 1, U: 1, U: 1, U: 1, U:..."
    assert not compared


def _alias_bomb(levels: int, width: int = 9) -> str:
    lines = ["l0: &l0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines)


def test_safe_yaml_refuses_an_alias_bomb_before_building_it():
    text = _alias_bomb(9)  # about 540 bytes, 9**10 leaves once expanded
    assert len(text) < 600
    with pytest.raises(InputError, match="rules file r.yaml: over 100,000 values once its aliases are expanded"):
        safe_yaml(text, "rules file r.yaml")


def test_safe_yaml_reads_ordinary_aliases_and_merges():
    assert safe_yaml("a: &x [1, 2]\nb: *x\nc: {<<: {d: 1}, e: 2}") == {"a": [1, 2], "b": [1, 2], "c": {"d": 1, "e": 2}}
    assert safe_yaml(_alias_bomb(3)) is not None  # 9**4 leaves: under the limit
    assert safe_yaml("") is None


def test_safe_yaml_refuses_recursive_aliases_and_bad_yaml_in_one_line():
    with pytest.raises(InputError, match="refers to a node that contains it"):
        safe_yaml("a: &x [1, *x]")
    with pytest.raises(InputError, match=r"config c.yaml is not valid YAML: .*\(line 2, column 2\)") as e:
        safe_yaml("a: [1,\nb", "config c.yaml")
    assert "\n" not in str(e.value)


def test_safe_yaml_refuses_a_key_given_twice_in_one_mapping():
    with pytest.raises(InputError, match=r"^config c.yaml: the key 'lr' is given twice \(again on line 3\): refused$"):
        safe_yaml("lr: 0.1\nseed: 1\nlr: 0.2\n", "config c.yaml")
    with pytest.raises(InputError, match="the key 'b' is given twice"):
        safe_yaml("a: [{b: 1, b: 2}]")
    # the same key in two mappings, a merge key and the same text as a number and a string are fine
    assert safe_yaml("x: {a: 1}\ny: {a: 2}\nz: {<<: {a: 1}, <<: {b: 2}}\nw: {1: a, '1': b}") == {
        "x": {"a": 1},
        "y": {"a": 2},
        "z": {"a": 1, "b": 2},
        "w": {1: "a", "1": "b"},
    }


@pytest.mark.parametrize("kind", ["fifo", "link to a fifo"])
def test_a_write_never_replaces_a_pipe_or_a_device(tmp_path, kind):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    target = fifo if kind == "fifo" else tmp_path / "link"
    if kind != "fifo":
        target.symlink_to(fifo)
    with pytest.raises(OutputError, match="is not a regular file"):
        write_text(target, "x")
    assert fifo.is_fifo() and list(tmp_path.glob(".*tmp")) == []


@pytest.mark.parametrize("name", ["a" * 5000 + ".json", "a" * 240 + ".json", "r." + "j" * 148, "x\0y.json"])
def test_an_output_name_no_file_can_have_is_refused_before_any_work_in_a_short_line(name, tmp_path, capsys):
    """A name too long for the file system (or for the temporary file written beside it)
    or with a NUL byte is refused before the games are played, not after."""
    from barbu_env.cli.main import main
    from barbu_env.util.files import check_writable

    with pytest.raises(OSError, match="cannot write there") as refused:
        check_writable(str(tmp_path / name), "--out")
    assert len(str(refused.value)) < 400
    out = str(tmp_path / name) if "\0" not in name else name
    assert main(["eval", "--agents", "random,random,random,random", "--games", "4", "--out", out, "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert "cannot write there" in captured.err and len(captured.err) < 600 and "Mean score" not in captured.out
    check_writable(str(tmp_path / ("a" * 200 + ".json")), "--out")  # a long name that fits is taken


@pytest.mark.parametrize(
    "argv",
    [
        ["replay", "a" * 5000 + ".json"],
        ["train", "--config", "a" * 5000 + ".yaml"],
        ["exploit", "--target", "random", "--config", "a" * 5000 + ".yaml"],
        ["train", "--init", "a" * 5000 + ".pt", "--total-decisions", "1000"],
    ],
)
def test_a_command_given_a_path_too_long_to_open_says_so_in_one_bounded_line(argv, capsys):
    from barbu_env.cli.main import main

    assert main(argv) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 1100 and "Traceback" not in err, err[:300]


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--games", "x" * 5000],
        ["x" * 5000],
        ["eval", "--agents", "random", "x" * 5000],
        ["train", "--gamma", "abc"],
    ],
)
def test_an_option_refused_by_argparse_is_one_short_line(argv, capsys):
    from barbu_env.cli.main import main

    with pytest.raises(SystemExit) as done:
        main(argv)
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1 and len(err) < 800, err[:300]


def test_a_loop_of_symbolic_links_or_a_name_ending_in_a_slash_is_refused_and_the_links_stay(tmp_path):
    from barbu_env.util.files import check_writable

    (tmp_path / "one").symlink_to(tmp_path / "two")
    (tmp_path / "two").symlink_to(tmp_path / "one")
    (tmp_path / "self").symlink_to(tmp_path / "self")
    for name in ("one", "self"):
        with pytest.raises(OSError, match="go round in a loop"):
            check_writable(str(tmp_path / name), "--out")
        with pytest.raises(OutputError, match="go round in a loop"):
            write_text(tmp_path / name, "x")
        assert (tmp_path / name).is_symlink()
    with pytest.raises(OSError, match="does not end in a folder separator"):
        check_writable(str(tmp_path / "new.json") + "/", "--out")


@pytest.mark.parametrize("option", ["--cache", "--records"])
@pytest.mark.parametrize("kind", ["long", "file-on-path", "loop", "empty"])
def test_a_folder_that_cannot_be_made_is_refused_before_any_game(option, kind, tmp_path, capsys):
    from barbu_env.cli.main import main

    (tmp_path / "afile").write_text("x")
    (tmp_path / "one").symlink_to(tmp_path / "two")
    (tmp_path / "two").symlink_to(tmp_path / "one")
    folder = {
        "long": str(tmp_path / ("x" * 300)),
        "file-on-path": str(tmp_path / "afile" / "sub"),
        "loop": str(tmp_path / "one" / "x"),
        "empty": "",
    }[kind]
    command = (
        ["league", "--agents", "random,heuristic"]
        if option == "--cache"
        else ["eval", "--agents", "random,random,random,random"]
    )
    assert main([*command, "--games", "4", "--no-progress", option, folder]) == 1
    captured = capsys.readouterr()
    said = "an empty name is no folder" if kind == "empty" else "cannot make that folder"
    assert said in captured.err and captured.err.count("\n") == 1 and not captured.out


def test_an_error_line_with_its_prefix_is_at_most_1000_characters(capsys):
    from barbu_env.cli.main import main

    assert main(["serve", "--agents", "x" * 5000]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err.rstrip("\n")) <= 1000, len(err)
