#!/usr/bin/env python3
"""An independent reader of tfevents files: the TFRecord framing and its masked CRC32C are
checked here, and the Event protos decoded with Debian's python3-protobuf from descriptors
built here with TensorFlow's field numbers (not from the .proto trib compiles).

    read_tfevents.py FILE   prints one line per scalar: TAG STEP VALUE; exits 1 on a bad record.
"""
import struct
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data: bytes) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def event_class():
    f = descriptor_pb2.FileDescriptorProto(name="tb_event_reader.proto", package="reader", syntax="proto3")
    summary = f.message_type.add(name="Summary")
    value = summary.nested_type.add(name="Value")
    value.field.add(name="tag", number=1, type=9, label=1)            # string
    value.field.add(name="simple_value", number=2, type=2, label=1)   # float
    summary.field.add(name="value", number=1, type=11, label=3, type_name=".reader.Summary.Value")
    event = f.message_type.add(name="Event")
    event.field.add(name="wall_time", number=1, type=1, label=1)      # double
    event.field.add(name="step", number=2, type=3, label=1)           # int64
    event.field.add(name="file_version", number=3, type=9, label=1)
    event.field.add(name="summary", number=5, type=11, label=1, type_name=".reader.Summary")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    desc = pool.FindMessageTypeByName("reader.Event")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


def main(path):
    Event = event_class()
    data = open(path, "rb").read()
    at, records = 0, 0
    while at < len(data):
        if len(data) - at < 12:
            print(f"record {records}: truncated header at byte {at}", file=sys.stderr)
            return 1
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        if masked(header) != length_crc:
            print(f"record {records}: bad length CRC", file=sys.stderr)
            return 1
        body = data[at + 12:at + 12 + length]
        (body_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        if len(body) != length or masked(body) != body_crc:
            print(f"record {records}: bad data CRC", file=sys.stderr)
            return 1
        e = Event()
        e.ParseFromString(body)
        if records == 0 and e.file_version != "brain.Event:2":
            print(f"the first record is not the file version: {e}", file=sys.stderr)
            return 1
        for v in e.summary.value:
            print(f"{v.tag} {e.step} {v.simple_value}")
        at += 16 + length
        records += 1
    print(f"records {records}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
