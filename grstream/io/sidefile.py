"""The side file ``NAME.json`` that keeps an edge file's vertex count beside it.

An edge list or ``.npy`` edge table holds edges only, so vertices without edges are not in it:
R-MAT at scale 21 leaves about a third of its 2,097,152 vertices isolated, and those after the
largest id that occurs would be lost. ``grstream generate`` writes the count it generated to
``NAME.json`` beside ``NAME``; the ``.npy`` and edge list readers take it as the file's declared
vertex count, as a ``.mtx`` size line is (README "Vertex ids"). The side file also records the
edge file's size: one that does not match (the edge file was replaced by other means) is
ignored with a warning.
"""
import json
import logging
import os

from ..errors import InputFormatError

log = logging.getLogger("grstream.io")

#: the side file's ``format`` value
SIDE_FORMAT = "grstream-edge-file"


def side_path(path):
    """The side file of the edge file ``path``."""
    return f"{path}.json"


def side_record(path, num_vertices, num_edges, generator=None):
    """What :func:`declared_vertices` reads back, for the complete edge file ``path``."""
    record = {"format": SIDE_FORMAT, "num_vertices": int(num_vertices),
              "num_edges": int(num_edges), "bytes": os.path.getsize(path)}
    if generator is not None:
        record["generator"] = generator
    return record


def declared_vertices(path):
    """The vertex count ``NAME.json`` declares for the edge file ``path``, or None (no side
    file, or one written for another version of the file).

    Raises
    ------
    InputFormatError
        A side file of this format that cannot be read or holds no valid count.
    """
    side = side_path(path)
    try:
        with open(side, encoding="utf-8") as f:
            text = f.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as exc:
        raise InputFormatError(f"cannot read the side file {side}: {exc.strerror or exc}",
                               path) from None
    try:
        record = json.loads(text)
    except ValueError:
        return None   # some other JSON file, not ours
    if not isinstance(record, dict) or record.get("format") != SIDE_FORMAT:
        return None
    count, size = record.get("num_vertices"), record.get("bytes")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise InputFormatError(f"the side file {side} holds no vertex count (num_vertices "
                               "must be an integer >= 0)", path)
    actual = os.path.getsize(path)
    if size != actual:
        log.warning("%s: ignoring the side file %s, written for a file of %s bytes (this one "
                    "has %d)", path, side, size, actual)
        return None
    return count
