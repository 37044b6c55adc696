"""Byte sizes: binary units in every spelling, fractions of a unit, never a silent truncation."""
import pytest

from grstream.cli import main
from grstream.errors import UsageError
from grstream.units import format_bytes, parse_bytes


@pytest.mark.parametrize("text, expected", [
    ("0", 0), ("1048576", 1 << 20), (4096, 4096), ("1e3", 1000), ("2B", 2), ("2 b", 2),
    ("1K", 1024), ("1k", 1024), ("1KB", 1024), ("1kb", 1024), ("1KiB", 1024), ("1kib", 1024),
    ("64M", 64 << 20), ("64MB", 64 << 20), ("64 MiB", 64 << 20),
    ("2G", 2 << 30), ("2GB", 2 << 30), ("2GiB", 2 << 30), ("1T", 1 << 40), ("1TiB", 1 << 40),
    ("1P", 1 << 50), ("1.5M", 1572864), ("1.5K", 1536), ("0.5G", 1 << 29),
    ("0.3G", 322122547),  # 322122547.2 bytes: rounded to the nearest byte
    ("1e-3K", 1), (".25M", 1 << 18),
])
def test_sizes_are_binary_in_every_spelling(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text, message", [
    ("1.5", "not a whole number of bytes"), ("0.5B", "not a whole number of bytes"),
    ("lots", "cannot read"), ("-5M", "cannot read"), ("5Q", "cannot read"), ("M", "cannot read"),
    ("1.2.3M", "cannot read"), (-1, "negative"),
    ("99999P", "beyond the largest"), ("8192P", "beyond the largest"),
    ("9223372036854775808", "beyond the largest"), (1 << 63, "beyond the largest"),
])
def test_bad_sizes_are_refused_not_truncated(text, message):
    with pytest.raises(UsageError, match=message):
        parse_bytes(text)


def test_the_largest_size_is_what_an_int64_holds():
    assert parse_bytes("9223372036854775807") == parse_bytes((1 << 63) - 1) == (1 << 63) - 1
    assert parse_bytes("8191P") == 8191 << 50


def test_what_is_printed_reads_back():
    for n in (1 << 20, 3 << 30, 1536):
        number, unit = format_bytes(n).split()
        assert parse_bytes(number + unit) == n


def test_fractional_size_on_the_command_line_is_refused(tmp_path, capsys):
    import numpy as np
    np.save(tmp_path / "e.npy", np.array([[0, 1]]))
    assert main(["shard", str(tmp_path / "e.npy"), "-o", str(tmp_path / "e.h5"),
                 "--shard-size", "1.5"]) == 2
    assert "not a whole number of bytes" in capsys.readouterr().err
    assert not (tmp_path / "e.h5").exists()
