"""Zip archives from elsewhere (a trace's .npz, an uploaded checkpoint .zip), bounded before they are parsed.

`zipfile.ZipFile` reads every entry of the central directory when it opens an archive: 185,000 empty entries cost
seconds of CPU before the first one could be refused. `entry_count` reads the count the archive's end record
declares, from its last 64 KiB, so a caller refuses too many entries before opening it; `npy_header` reads one
.npy entry's shape and dtype without its data.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

import numpy as np

# The end of central directory record: signature, this disk, the directory's disk, entries on this disk, entries,
# directory size, directory offset, comment length; a comment of up to 65,535 bytes may follow it.
END_RECORD = struct.Struct("<4s4H2LH")
END_SIGNATURE = b"PK\x05\x06"
# An archive in zip64 form (over 65,535 entries) has a zip64 end record (56 bytes) and its locator (20 bytes)
# before the end record; zipfile believes the count of the zip64 record.
ZIP64_RECORD = struct.Struct("<4sQ2H2L4Q")  # signature, size, versions, disks, entries here, entries, size, offset
ZIP64_SIGNATURE, ZIP64_LOCATOR = b"PK\x06\x06", b"PK\x06\x07"


def entry_count(file: BinaryIO) -> int | None:
    """The number of entries the end record of the zip archive `file` declares (None: it has no end record).
    Reads only the last 64 KiB; leaves `file` at its start."""
    file.seek(0, 2)
    size = file.tell()
    tail_size = min(size, END_RECORD.size + 65_535)
    file.seek(size - tail_size)
    tail = file.read(tail_size)
    file.seek(0)
    at = tail.rfind(END_SIGNATURE)
    if at < 0 or len(tail) - at < END_RECORD.size:
        return None
    if at >= 20 and tail[at - 20:at - 16] == ZIP64_LOCATOR:
        record = at - 20 - ZIP64_RECORD.size
        if record < 0 or tail[record:record + 4] != ZIP64_SIGNATURE:
            return None
        return ZIP64_RECORD.unpack_from(tail, record)[7]
    return END_RECORD.unpack_from(tail, at)[4]


def npy_header(member: BinaryIO) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, fortran_order, dtype) of the .npy file `member`, read from its header only (format 1.0 or 2.0,
    as numpy writes them); the file is left at the start of the data. ValueError for anything else."""
    version = np.lib.format.read_magic(member)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(member)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(member)
    raise ValueError(f"an .npy header of version {version}, which numpy.save does not write")


def read_exactly(member: BinaryIO, size: int) -> bytearray:
    """`size` bytes of `member` into one writable buffer (no second copy); ValueError if it holds fewer."""
    buffer = bytearray(size)
    view, done = memoryview(buffer), 0
    while done < size:
        got = member.readinto(view[done:])
        if not got:
            raise ValueError(f"it holds {done} bytes of data where its header announces {size}")
        done += got
    return buffer
