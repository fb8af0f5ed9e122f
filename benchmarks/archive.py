"""The run archive shared by the benchmarks: a committed JSON file of finished runs, one record per key.

A benchmark whose runs take hours records each finished run under a key that names everything that changes its
result, and later invocations (on another day, in a fresh clone) take the runs whose key they would make
again instead of running them. Invariants:

- the file is one JSON object, key -> record (an object), written with sorted keys and indented, so that a change of
  one record is a small diff;
- it is rewritten atomically (srl_toolbox.files.writeJson) and only when a record is added, replaced or removed: an
  invocation that finds nothing new leaves the file, and its modification time, alone;
- a record is replaced only when it differs from the archived one in a field that is compared (a benchmark names the
  fields that describe where a record was seen, not what it holds, such as the machine that reported it).
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Sequence
from typing import Any

from srl_toolbox.files import readJson, writeJson

Records = dict[str, dict[str, Any]]


class ArchiveError(ValueError):
    """The file is not an archive of records (the message says why, on one line)."""


def loadRecords(path: str, check: Callable[[dict[str, Any]], str | None] | None = None) -> Records:
    """
    :param path: the archive file
    :param check: ``check(record)`` -> why the record is not one of the benchmark's (None: it is; the error names
        its key)
    :return: key -> record; empty when the file does not exist yet
    :raises ArchiveError: the file is not JSON, not an object of records, or a record fails ``check``
    """
    if not os.path.isfile(path):
        return {}
    try:
        data = readJson(path)
    except (ValueError, OSError) as error:
        raise ArchiveError(f"cannot be read as JSON ({error})") from None
    if not isinstance(data, dict):
        raise ArchiveError("not a JSON object of run records")
    for key, record in data.items():
        problem = "not a JSON object" if not isinstance(record, dict) else check(record) if check else None
        if problem:
            raise ArchiveError(f"the record {key!r} {problem}")
    return data


def writeRecords(path: str, entries: Records, dropped: Sequence[str] = (), not_compared: Collection[str] = (),
                 check: Callable[[dict[str, Any]], str | None] | None = None) -> tuple[Records, list[str]]:
    """
    Add records to the archive and remove others, rewriting the file only when something changed.

    :param path: the archive file (created when missing)
    :param entries: key -> record to add; one with the key of an archived record replaces it unless they differ
        only in ``not_compared`` fields
    :param dropped: keys to remove
    :param not_compared: fields that do not make a record new
    :param check: as for :func:`loadRecords`
    :return: (the archive as written, the keys added, replaced or removed)
    """
    archive = loadRecords(path, check)
    changed = [key for key in dropped if archive.pop(key, None) is not None]

    def compared(record: dict[str, Any]) -> dict[str, Any]:
        return {name: value for name, value in record.items() if name not in not_compared}

    for key, entry in entries.items():
        entry = json.loads(json.dumps(entry))  # as the file will hold it: tuples as lists, keys as strings
        if key in archive and compared(archive[key]) == compared(entry):
            continue
        archive[key] = entry
        changed.append(key)
    if changed:
        writeJson(path, archive, sort_keys=True)
    return archive, changed
