"""test_proto_fields.py: checks schemas/onnx.proto (the subset of ONNX's schema
that cellc compiles with protoc-c) against the message descriptors of the
installed onnx package: every message, field (name, number, type, label,
message/enum type, oneof membership, packed encoding) and enum value we
declare must exist there with the same meaning.  A wrong field number would
make cellc silently read the wrong data, so each message is its own test.

usage: test_proto_fields.py [schemas/onnx.proto]   (PASS/FAIL lines; exit 1 on failure)
"""
import re
import sys

from google.protobuf.descriptor import FieldDescriptor as FD
import onnx

SCALARS = {
    "double": FD.TYPE_DOUBLE, "float": FD.TYPE_FLOAT, "int64": FD.TYPE_INT64,
    "uint64": FD.TYPE_UINT64, "int32": FD.TYPE_INT32, "fixed64": FD.TYPE_FIXED64,
    "fixed32": FD.TYPE_FIXED32, "bool": FD.TYPE_BOOL, "string": FD.TYPE_STRING,
    "bytes": FD.TYPE_BYTES, "uint32": FD.TYPE_UINT32, "sfixed32": FD.TYPE_SFIXED32,
    "sfixed64": FD.TYPE_SFIXED64, "sint32": FD.TYPE_SINT32, "sint64": FD.TYPE_SINT64,
}


def tokenize(text):
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.findall(r'"[^"]*"|[A-Za-z_][\w.]*|-?\d+|[{}\[\]=;]', text)


class Msg:
    def __init__(self, name):
        self.name = name            # full name, e.g. onnx.TypeProto.Tensor
        self.fields = []            # (label, type, name, number, oneof, packed)
        self.enums = {}             # full name -> {value name: number}
        self.nested = []


def parse(tokens):
    """Returns (package, [Msg...] flattened, {enum full name: values})."""
    pos = 0
    package = ""
    msgs, enums = [], {}

    def expect(t):
        nonlocal pos
        if tokens[pos] != t:
            raise SyntaxError("expected %r, got %r at token %d" % (t, tokens[pos], pos))
        pos += 1

    def parse_enum(full):
        nonlocal pos
        expect("{")
        vals = {}
        while tokens[pos] != "}":
            name = tokens[pos]
            pos += 1
            expect("=")
            vals[name] = int(tokens[pos])
            pos += 1
            expect(";")
        expect("}")
        enums[full] = vals

    def parse_field(m, label, oneof):
        nonlocal pos
        ftype, name = tokens[pos], tokens[pos + 1]
        pos += 2
        expect("=")
        number = int(tokens[pos])
        pos += 1
        packed = False
        if tokens[pos] == "[":
            pos += 1
            while tokens[pos] != "]":
                if tokens[pos] == "packed" and tokens[pos + 2] == "true":
                    packed = True
                pos += 1
            pos += 1
        expect(";")
        m.fields.append((label, ftype, name, number, oneof, packed))

    def parse_message(full):
        nonlocal pos
        m = Msg(full)
        msgs.append(m)
        expect("{")
        while tokens[pos] != "}":
            t = tokens[pos]
            if t == "message":
                pos += 1
                name = tokens[pos]
                pos += 1
                parse_message(full + "." + name)
            elif t == "enum":
                pos += 1
                name = tokens[pos]
                pos += 1
                parse_enum(full + "." + name)
            elif t == "oneof":
                pos += 1
                oneof = tokens[pos]
                pos += 1
                expect("{")
                while tokens[pos] != "}":
                    parse_field(m, "optional", oneof)
                expect("}")
            elif t in ("optional", "repeated", "required"):
                pos += 1
                parse_field(m, t, None)
            else:
                raise SyntaxError("unexpected %r in message %s" % (t, full))
        expect("}")

    while pos < len(tokens):
        t = tokens[pos]
        if t == "syntax":
            pos += 4                # syntax = "proto2" ;
        elif t == "package":
            package = tokens[pos + 1]
            pos += 3
        elif t == "message":
            pos += 2
            parse_message(package + "." + tokens[pos - 1])
        elif t == "enum":
            pos += 2
            parse_enum(package + "." + tokens[pos - 1])
        else:
            raise SyntaxError("unexpected top-level token %r" % t)
    return package, msgs, enums


def installed_pool():
    return onnx.ModelProto.DESCRIPTOR.file.pool


def resolve(pool, scope, tname):
    """protobuf name resolution: innermost scope first."""
    parts = scope.split(".")
    while parts:
        cand = ".".join(parts + [tname])
        for finder in (pool.FindMessageTypeByName, pool.FindEnumTypeByName):
            try:
                return finder(cand).full_name
            except KeyError:
                pass
        parts.pop()
    return None


def check_message(pool, m):
    try:
        desc = pool.FindMessageTypeByName(m.name)
    except KeyError:
        return ["message %s does not exist in onnx %s" % (m.name, onnx.__version__)]
    errs = []
    seen = set()
    for label, ftype, name, number, oneof, packed in m.fields:
        if number in seen:
            errs.append("field number %d used twice" % number)
        seen.add(number)
        f = desc.fields_by_name.get(name)
        if f is None:
            errs.append("no field %s" % name)
            continue
        if f.number != number:
            errs.append("%s: number %d, onnx has %d" % (name, number, f.number))
        want_label = FD.LABEL_REPEATED if label == "repeated" else FD.LABEL_OPTIONAL
        if label == "required":
            want_label = FD.LABEL_REQUIRED
        if f.label != want_label:
            errs.append("%s: label %s differs from onnx" % (name, label))
        if ftype in SCALARS:
            if f.type != SCALARS[ftype]:
                errs.append("%s: type %s, onnx type code %d" % (name, ftype, f.type))
        else:
            full = resolve(pool, m.name, ftype)
            other = f.message_type or f.enum_type
            if full is None or other is None or other.full_name != full:
                errs.append("%s: type %s (%s), onnx has %s" % (name, ftype, full,
                                                               other.full_name if other else f.type))
        f_oneof = f.containing_oneof.name if f.containing_oneof else None
        if f_oneof != oneof:
            errs.append("%s: oneof %s, onnx has %s" % (name, oneof, f_oneof))
        if label == "repeated" and ftype in SCALARS and ftype not in ("string", "bytes"):
            onnx_packed = f.GetOptions().packed if f.GetOptions().HasField("packed") else False
            if packed != onnx_packed:
                errs.append("%s: packed=%s, onnx packed=%s" % (name, packed, onnx_packed))
    return errs


def check_enum(pool, full, vals):
    try:
        desc = pool.FindEnumTypeByName(full)
    except KeyError:
        return ["enum %s does not exist in onnx" % full]
    errs = []
    for name, num in vals.items():
        v = desc.values_by_name.get(name)
        if v is None:
            errs.append("no value %s" % name)
        elif v.number != num:
            errs.append("%s = %d, onnx has %d" % (name, num, v.number))
    return errs


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "schemas/onnx.proto"
    with open(path) as f:
        _, msgs, enums = parse(tokenize(f.read()))
    pool = installed_pool()
    failed = 0
    if len(msgs) < 10:
        print("FAIL proto/parse only %d messages found in %s" % (len(msgs), path))
        return 1
    for m in msgs:
        errs = check_message(pool, m)
        ok = not errs
        print("%s proto/%s %s" % ("PASS" if ok else "FAIL", m.name,
                                  "%d fields" % len(m.fields) if ok else "; ".join(errs)))
        failed += not ok
    for full, vals in enums.items():
        errs = check_enum(pool, full, vals)
        ok = not errs
        print("%s proto/%s %s" % ("PASS" if ok else "FAIL", full,
                                  "%d values" % len(vals) if ok else "; ".join(errs)))
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
