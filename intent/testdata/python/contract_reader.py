"""A reader of ToolIntent that knows only the beam-agents v1 contract.

It stands in for the Python runtime: Python's protobuf (Debian's
python3-protobuf), with the message built from the field table of
../beam-agents-v1/README.md (fields 1 to 14, nothing of toolreg's). It reads
one serialized ToolIntent, given as hex on stdin, and prints, one per line:

  - the hex of the message serialized again, deterministically (the runtime
    passing the intent on);
  - the hex of the unknown fields it kept, in the order it read them;
  - "verified" or "bad signature": the HMAC-SHA256, under the key given as
    hex in argv[1], of the message with fields 12, 13 and 14 cleared,
    serialized deterministically (unknown fields kept), checked against field
    14, as the runtime verifies a signed intent.
"""

import hashlib
import hmac
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto


def tool_intent_class():
    fd = descriptor_pb2.FileDescriptorProto(name="beam_v1_contract.proto", package="beam.v1", syntax="proto3")
    kind = fd.enum_type.add(name="Kind")
    for i, n in enumerate(["TOOL_KIND_UNSPECIFIED", "TOOL", "APPROVAL"]):
        kind.value.add(name=n, number=i)
    scheme = fd.enum_type.add(name="SignatureScheme")
    for i, n in enumerate(["SIGNATURE_SCHEME_UNSPECIFIED", "HMAC_SHA256"]):
        scheme.value.add(name=n, number=i)
    m = fd.message_type.add(name="ToolIntent")
    for name, num, typ, enum in [
        ("intent_id", 1, F.TYPE_STRING, None), ("entity_key", 2, F.TYPE_BYTES, None),
        ("seq", 3, F.TYPE_INT64, None), ("step_index", 4, F.TYPE_UINT32, None),
        ("tool_name", 5, F.TYPE_STRING, None), ("args_json", 6, F.TYPE_STRING, None),
        ("created_at_ms", 7, F.TYPE_INT64, None), ("expires_at_ms", 8, F.TYPE_INT64, None),
        ("attempt", 9, F.TYPE_UINT32, None), ("kind", 10, F.TYPE_ENUM, ".beam.v1.Kind"),
        ("trace_id", 11, F.TYPE_BYTES, None), ("signature_scheme", 12, F.TYPE_ENUM, ".beam.v1.SignatureScheme"),
        ("signing_key_id", 13, F.TYPE_STRING, None), ("signature", 14, F.TYPE_BYTES, None),
    ]:
        f = m.field.add(name=name, number=num, type=typ, label=F.LABEL_OPTIONAL)
        if enum:
            f.type_name = enum
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    desc = pool.FindMessageTypeByName("beam.v1.ToolIntent")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


def unknown_bytes(msg):
    # The fields the message does not know, as it keeps them: serializing a
    # copy with every known field cleared leaves exactly those.
    rest = type(msg)()
    rest.CopyFrom(msg)
    for field, _ in list(rest.ListFields()):
        rest.ClearField(field.name)
    return rest.SerializeToString(deterministic=True)


def main():
    key = bytes.fromhex(sys.argv[1])
    ToolIntent = tool_intent_class()
    msg = ToolIntent()
    msg.ParseFromString(bytes.fromhex(sys.stdin.read().strip()))
    print(msg.SerializeToString(deterministic=True).hex())
    print(unknown_bytes(msg).hex())
    body = ToolIntent()
    body.CopyFrom(msg)
    for name in ("signature_scheme", "signing_key_id", "signature"):
        body.ClearField(name)
    mac = hmac.new(key, body.SerializeToString(deterministic=True), hashlib.sha256).digest()
    print("verified" if hmac.compare_digest(mac, msg.signature) else "bad signature")


main()
