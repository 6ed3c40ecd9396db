"""TFRecord framing, the container of TensorBoard event files.

Each record is ``uint64 length | masked crc32c(length) | data | masked crc32c(data)``, little
endian, where the mask is TensorFlow's rotate-and-add over CRC-32C (Castagnoli). Writing these few
kilobytes ourselves spares every conversion the import of ``tensorboard.summary`` (and numpy),
which took longer than converting a small dump.
"""
from __future__ import annotations

import struct
from typing import BinaryIO


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C of ``data`` (bitwise table form: event files are kilobytes, not megabytes)."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """The checksum TFRecord stores: CRC-32C rotated right by 15 bits plus a constant, so that
    a CRC computed over data that itself holds CRCs is not trivially zero."""
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def write_record(f: BinaryIO, data: bytes) -> None:
    """Append one framed record to ``f``."""
    header = struct.pack("<Q", len(data))
    f.write(header)
    f.write(struct.pack("<I", masked_crc32c(header)))
    f.write(data)
    f.write(struct.pack("<I", masked_crc32c(data)))
