"""The event-file framing agrees with TensorBoard's own reader and checksum."""
from __future__ import annotations

import io
import random

from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as tb_masked

from tb_ad_layer.store.tfrecord import crc32c, masked_crc32c, write_record


def test_crc32c_known_value() -> None:
    # The CRC-32C check value from RFC 3720 (iSCSI), appendix B.4.
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0


def test_masked_crc_matches_tensorboard() -> None:
    rng = random.Random(7)
    for n in (0, 1, 8, 100, 4096):
        data = bytes(rng.randrange(256) for _ in range(n))
        assert masked_crc32c(data) == tb_masked(data)


def test_record_layout() -> None:
    f = io.BytesIO()
    write_record(f, b"abc")
    raw = f.getvalue()
    assert len(raw) == 8 + 4 + 3 + 4
    assert raw[:8] == (3).to_bytes(8, "little")
    assert raw[12:15] == b"abc"
    assert int.from_bytes(raw[15:], "little") == masked_crc32c(b"abc")
