"""TensorBoard event files, written as the run goes (no writer thread): an event is on disk, in order,
once `flush` returns, so that a checkpoint can record where the file had got to and a resumed run can
cut it back there and append, leaving the scalars an uninterrupted run would have written.

The format is TensorBoard's: records of (length, its masked CRC-32C, an `Event` protocol buffer, its
masked CRC-32C), the first event naming the file version (tensorboardX provides the protocol buffers
and the checksum). `tensorboard --logdir runs` reads them (pip install 'lfrl[tensorboard]').
"""

from __future__ import annotations

import os
import socket
import struct
import time
from typing import BinaryIO

from tensorboardX.proto import event_pb2, summary_pb2
from tensorboardX.record_writer import masked_crc32c


def new_file_name(folder: str) -> str:
    """TensorBoard's name for a new event file in `folder`, one that is not taken."""
    base = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}"
    name, n = base, 1
    while os.path.exists(os.path.join(folder, name)):
        name, n = f"{base}.{n}", n + 1
    return name


class EventFile:
    """Scalars appended to one event file. `offset` 0 starts it; a larger one (a resumed run) cuts
    the file back to that many bytes and goes on from there."""

    def __init__(self, path: str, offset: int = 0) -> None:
        self.path = path
        if offset:
            self.file: BinaryIO = open(path, "r+b")  # noqa: SIM115 - closed in close()
            self.file.truncate(offset)
            self.file.seek(offset)
        else:
            self.file = open(path, "wb")  # noqa: SIM115 - closed in close()
            self._write(event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2"))

    def scalar(self, tag: str, value: float, step: int) -> None:
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=float(value))])
        self._write(event_pb2.Event(wall_time=time.time(), step=int(step), summary=summary))

    def _write(self, event: event_pb2.Event) -> None:
        data = event.SerializeToString()
        header = struct.pack("<Q", len(data))
        self.file.write(header + struct.pack("<I", masked_crc32c(header)) + data +
                        struct.pack("<I", masked_crc32c(data)))

    def flush(self) -> int:
        """Write what is buffered; returns the file's length."""
        self.file.flush()
        return self.file.tell()

    def close(self) -> None:
        self.file.close()
