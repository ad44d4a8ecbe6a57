"""barbu_env.util.files: a failed write leaves the old file as it was and names the file in one
line; a reader refuses oversized files unread. The full disk is a file-size limit
(``RLIMIT_FSIZE``) set in a subprocess, so no root is needed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from barbu_env.util.files import InputError, OutputError, read_bytes, read_text, replacing, safe_yaml, write_text

OLD = '{"old": "result", "kept": true}\n' * 200  # 6.4 kB


def run_with_file_size_limit(code: str, limit: int) -> subprocess.CompletedProcess[str]:
    prelude = f"import resource\nresource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # an interpreter with a file-size limit
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


def test_a_folder_as_the_output_is_refused_in_one_line(tmp_path):
    with pytest.raises(OutputError, match="folder"):
        write_text(tmp_path, "x")


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


def test_safe_yaml_reads_plain_data_and_refuses_bad_yaml_in_one_line():
    assert safe_yaml("a: &x [1, 2]\nb: *x") == {"a": [1, 2], "b": [1, 2]} and safe_yaml("") is None
    with pytest.raises(InputError, match=r"config c.yaml is not valid YAML: .*\(line 2, column 2\)") as e:
        safe_yaml("a: [1,\nb", "config c.yaml")
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match="not valid YAML"):
        safe_yaml("!!python/object/apply:os.system ['true']")
