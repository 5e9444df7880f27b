#!/usr/bin/env python3
"""Ports the cases of upstream's TestValidationExpressions (k8s.io/apiextensions-apiserver
v0.32.1, pkg/apiserver/schema/cel/validation_test.go) to validation_cases.json.

Run: port_validation_tables.py path/to/validation_test.go > validation_cases.json

Each case keeps its name, its schema translated from upstream's Go constructors
(objectTypePtr, listType, mapType, withNullable, schema.Structural{...}, ...) into the OpenAPI
JSON a CRD carries, its object (and old object) as JSON, its `valid` rules, its `errors` rules
with the text upstream's error must contain, and `isRoot`, `expectSkipped`, `expectedCost`,
`costBudget` where the case sets them.

The Go source is read with a small tokenizer and expression evaluator that knows only the
constructs the table uses (composite literals, upstream's schema helpers, fmt.Sprintf, numeric
conversions, math constants). Whatever it does not know stops that case: the case is listed
on stderr with the reason and left out, never guessed."""
import json
import math
import re
import sys


class Untranslatable(Exception):
    pass


# ---------------------------------------------------------------- tokens

TOKEN = re.compile(r"""
    (?P<ws>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<raw>`[^`]*`)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<rune>'(?:[^'\\\n]|\\.)+')
  | (?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>\.\.\.|&&|\|\||==|!=|<=|>=|:=|[{}()\[\],:;.&*+\-/%!<>=])
""", re.S | re.X)


def go_unquote(s):
    """An interpreted Go string literal's value."""
    body = s[1:-1]
    i = 0
    simple = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a",
              "b": "\b", "f": "\f", "v": "\v"}
    raw = bytearray()
    while i < len(body):
        c = body[i]
        if c != "\\":
            raw.extend(c.encode())
            i += 1
            continue
        d = body[i + 1]
        if d in simple:
            raw.extend(simple[d].encode())
            i += 2
        elif d == "x":
            raw.append(int(body[i + 2:i + 4], 16))
            i += 4
        elif d == "u":
            raw.extend(chr(int(body[i + 2:i + 6], 16)).encode())
            i += 6
        elif d == "U":
            raw.extend(chr(int(body[i + 2:i + 10], 16)).encode())
            i += 10
        elif d in "01234567":
            raw.append(int(body[i + 1:i + 4], 8))
            i += 4
        else:
            raise Untranslatable(f"string escape \\{d}")
    return raw.decode()


def tokenize(text):
    pos = 0
    tokens = []
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise Untranslatable(f"cannot tokenize at {text[pos:pos + 20]!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        tokens.append((kind, m.group(0)))
    return tokens


# ---------------------------------------------------------------- Go values

class Struct:
    """A Go struct value: its type name and set fields."""

    def __init__(self, type_name, fields):
        self.type_name = type_name
        self.fields = fields


class Ptr:
    def __init__(self, value):
        self.value = value


class Float(float):
    """A Go float value (kept apart from ints, which JSON prints differently)."""


MATH = {
    "MaxInt64": 2**63 - 1, "MinInt64": -2**63, "MaxInt32": 2**31 - 1, "MinInt32": -2**31,
    "MaxFloat64": Float(sys.float_info.max), "MaxFloat32": Float(3.4028234663852886e+38),
}


def structural(**fields):
    return Struct("schema.Structural", fields)


def primitive(typ, fmt=""):
    fields = {"Generic": Struct("schema.Generic", {"Type": typ})}
    if fmt:
        fields["ValueValidation"] = Ptr(Struct("schema.ValueValidation", {"Format": fmt}))
    return structural(**fields)


GLOBALS = {
    "integerType": primitive("integer"), "int32Type": primitive("integer", "int32"),
    "int64Type": primitive("integer", "int64"), "numberType": primitive("number"),
    "floatType": primitive("number", "float"), "doubleType": primitive("number", "double"),
    "stringType": primitive("string"), "byteType": primitive("string", "byte"),
    "booleanType": primitive("boolean"), "durationFormat": primitive("string", "duration"),
    "dateFormat": primitive("string", "date"), "dateTimeFormat": primitive("string", "date-time"),
}


def deref(v):
    return v.value if isinstance(v, Ptr) else v


def clone_struct(s):
    fields = dict(s.fields)
    return Struct(s.type_name, fields)


def with_value_validation(s, key, value):
    s = clone_struct(deref(s))
    vv = deref(s.fields.get("ValueValidation")) or Struct("schema.ValueValidation", {})
    vv = clone_struct(vv)
    vv.fields[key] = deref(value)
    s.fields["ValueValidation"] = Ptr(vv)
    return s


def with_generic(s, key, value):
    s = clone_struct(deref(s))
    g = clone_struct(s.fields.get("Generic") or Struct("schema.Generic", {}))
    g.fields[key] = value
    s.fields["Generic"] = g
    return s


def array_type(list_type, keys, items):
    ext = {"XListType": Ptr(list_type)}
    if keys and list_type == "map":
        ext["XListMapKeys"] = keys
    return structural(Generic=Struct("schema.Generic", {"Type": "array"}),
                      Extensions=Struct("schema.Extensions", ext), Items=items)


def object_type(props):
    return structural(Generic=Struct("schema.Generic", {"Type": "object"}), Properties=props)


def map_type(values):
    return structural(Generic=Struct("schema.Generic", {"Type": "object"}),
                      AdditionalProperties=Ptr(Struct("schema.StructuralOrBool",
                                                      {"Bool": True, "Structural": values})))


def go_sprintf(fmt, *args):
    out = []
    args = list(args)
    i = 0
    while i < len(fmt):
        c = fmt[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        verb = fmt[i + 1]
        i += 2
        if verb == "%":
            out.append("%")
            continue
        a = args.pop(0)
        if verb == "d":
            out.append(str(int(a)))
        elif verb == "s" or verb == "v":
            if isinstance(a, Float):
                raise Untranslatable("%v of a float")
            out.append(str(a))
        elif verb == "f":
            out.append("%f" % float(a))
        elif verb == "q":
            out.append(json.dumps(a, ensure_ascii=False))
        else:
            raise Untranslatable(f"fmt verb %{verb}")
    if args:
        raise Untranslatable("fmt.Sprintf extra arguments")
    return "".join(out)


def vals_equal(v1, v2, lit):
    return f"{v1} == {lit} && {lit} == {v1} && {v1} == {v2}"


def objs(*vals):
    return {f"val{i + 1}": v for i, v in enumerate(vals)}


def schemas(*vals):
    return Ptr(object_type({f"val{i + 1}": v for i, v in enumerate(vals)}))


FUNCS = {
    "primitiveType": primitive,
    "listType": lambda items: array_type("atomic", None, items),
    "listTypePtr": lambda items: Ptr(array_type("atomic", None, items)),
    "listSetType": lambda items: array_type("set", None, items),
    "listMapType": lambda keys, items: array_type("map", keys, items),
    "listMapTypePtr": lambda keys, items: Ptr(array_type("map", keys, items)),
    "arrayType": array_type,
    "objectType": object_type,
    "objectTypePtr": lambda props: Ptr(object_type(props)),
    "mapType": map_type,
    "mapTypePtr": lambda values: Ptr(map_type(values)),
    "intOrStringType": lambda: structural(Extensions=Struct("schema.Extensions", {"XIntOrString": True})),
    "withMaxLength": lambda s, n: with_value_validation(s, "MaxLength", n),
    "withMaxItems": lambda s, n: with_value_validation(s, "MaxItems", n),
    "withMaxProperties": lambda s, n: with_value_validation(s, "MaxProperties", n),
    "withDefault": lambda d, s: with_generic(s, "Default", Struct("schema.JSON", {"Object": d})),
    "withNullable": lambda n, s: with_generic(s, "Nullable", n),
    "withNullablePtr": lambda n, s: Ptr(with_generic(s, "Nullable", n)),
    "nilInterfaceOfStringSlice": lambda: None,
    "ValsEqualThemselvesAndDataLiteral": vals_equal,
    "objs": objs,
    "schemas": schemas,
    "fmt.Sprintf": go_sprintf,
    "int64": int, "int32": int, "int": int, "uint64": int,
    "float64": lambda v: Float(v), "float32": lambda v: Float(v),
    "ptr.To": lambda v: Ptr(v), "ptr.To[int64]": lambda v: Ptr(v),
    "strings.Repeat": lambda s, n: s * n,
}


# ---------------------------------------------------------------- parser

class Parser:
    def __init__(self, tokens):
        self.t = tokens
        self.i = 0

    def peek(self, k=0):
        return self.t[self.i + k] if self.i + k < len(self.t) else (None, None)

    def next(self):
        tok = self.peek()
        self.i += 1
        return tok

    def expect(self, text):
        tok = self.next()
        if tok[1] != text:
            raise Untranslatable(f"expected {text!r}, found {tok[1]!r}")
        return tok

    def accept(self, text):
        if self.peek()[1] == text:
            self.i += 1
            return True
        return False

    # types: ("map", K, V) ("slice", T) ("ptr", T) ("named", name) ("iface",)
    def parse_type(self):
        kind, text = self.peek()
        if text == "map":
            self.next()
            self.expect("[")
            k = self.parse_type()
            self.expect("]")
            return ("map", k, self.parse_type())
        if text == "[":
            self.next()
            self.expect("]")
            return ("slice", self.parse_type())
        if text == "*":
            self.next()
            return ("ptr", self.parse_type())
        if text == "interface":
            self.next()
            self.expect("{")
            self.expect("}")
            return ("iface",)
        if kind == "ident":
            self.next()
            name = text
            if self.peek()[1] == "." and self.peek(1)[0] == "ident":
                self.next()
                name += "." + self.next()[1]
            return ("named", name)
        raise Untranslatable(f"type starting {text!r}")

    def composite(self, typ):
        """The literal body `{...}` of a value of type `typ`."""
        self.expect("{")
        if typ[0] == "map":
            out = {}
            while not self.accept("}"):
                key = self.element(typ[1])
                self.expect(":")
                out[key] = self.element(typ[2])
                if not self.accept(","):
                    self.expect("}")
                    break
            return out
        if typ[0] == "slice":
            out = []
            while not self.accept("}"):
                out.append(self.element(typ[1]))
                if not self.accept(","):
                    self.expect("}")
                    break
            return out
        if typ[0] == "named":
            fields = {}
            while not self.accept("}"):
                name = self.next()
                if name[0] != "ident":
                    raise Untranslatable(f"positional struct literal of {typ[1]}")
                self.expect(":")
                fields[name[1]] = self.element(FIELD_TYPES.get((typ[1], name[1]), ("iface",)))
                if not self.accept(","):
                    self.expect("}")
                    break
            return Struct(typ[1], fields)
        if typ[0] == "ptr":
            return Ptr(self.composite(typ[1]))
        raise Untranslatable(f"composite literal of {typ}")

    def element(self, typ):
        """An element of a composite literal, whose type may be elided."""
        if self.peek()[1] == "{":
            return self.composite(typ)
        if self.peek()[1] == "&" and self.peek(1)[1] == "{" and typ[0] == "ptr":
            self.next()
            return self.composite(typ)
        return self.expr()

    def expr(self):
        left = self.unary()
        while self.peek()[1] in ("+", "-", "*", "/"):
            op = self.next()[1]
            right = self.unary()
            if op == "+":
                left = left + right
            elif op == "-":
                left = left - right
            elif op == "*":
                left = left * right
            else:
                raise Untranslatable("division in Go source")
        return left

    def unary(self):
        if self.accept("-"):
            v = self.unary()
            return Float(-v) if isinstance(v, Float) else -v
        if self.accept("&"):
            return Ptr(self.unary())
        return self.primary()

    def primary(self):
        kind, text = self.peek()
        if kind == "str":
            self.next()
            return go_unquote(text)
        if kind == "raw":
            self.next()
            return text[1:-1]
        if kind == "num":
            self.next()
            if re.fullmatch(r"\d+", text):
                return int(text)
            return Float(float(text))
        if text in ("map", "[", "interface"):
            typ = self.parse_type()
            return self.composite(typ)
        if kind == "ident":
            if text in ("true", "false"):
                self.next()
                return text == "true"
            if text == "nil":
                self.next()
                return None
            # a qualified name: pkg.Name
            name = text
            save = self.i
            self.next()
            if self.peek()[1] == "." and self.peek(1)[0] == "ident":
                self.next()
                name += "." + self.next()[1]
            if name.startswith("math."):
                if name[5:] not in MATH:
                    raise Untranslatable(f"unknown constant {name}")
                return MATH[name[5:]]
            if self.peek()[1] == "[" and name == "ptr.To":
                self.next()
                self.parse_type()
                self.expect("]")
            if self.peek()[1] == "(":
                self.next()
                args = []
                while not self.accept(")"):
                    args.append(self.expr())
                    if not self.accept(","):
                        self.expect(")")
                        break
                if name not in FUNCS:
                    raise Untranslatable(f"unknown function {name}")
                return FUNCS[name](*args)
            if self.peek()[1] == "{" and name.startswith("schema."):
                self.i = save
                return self.composite(self.parse_type())
            if name in GLOBALS:
                return GLOBALS[name]
            raise Untranslatable(f"unknown name {name}")
        raise Untranslatable(f"unexpected {text!r}")


S = ("named", "schema.Structural")
FIELD_TYPES = {
    ("schema.Structural", "Generic"): ("named", "schema.Generic"),
    ("schema.Structural", "Extensions"): ("named", "schema.Extensions"),
    ("schema.Structural", "ValueValidation"): ("ptr", ("named", "schema.ValueValidation")),
    ("schema.Structural", "Properties"): ("map", ("named", "string"), S),
    ("schema.Structural", "Items"): ("ptr", S),
    ("schema.Structural", "AdditionalProperties"): ("ptr", ("named", "schema.StructuralOrBool")),
    ("schema.ValueValidation", "Enum"): ("slice", ("named", "schema.JSON")),
    ("schema.Extensions", "XListMapKeys"): ("slice", ("named", "string")),
}


# ---------------------------------------------------------------- schema to OpenAPI

def openapi(s):
    """An upstream schema.Structural as OpenAPI v3 JSON."""
    s = deref(s)
    if s is None:
        return None
    if not isinstance(s, Struct) or s.type_name != "schema.Structural":
        raise Untranslatable(f"schema is not a schema.Structural: {s!r}")
    out = {}
    known = {"Generic", "Extensions", "ValueValidation", "Properties", "Items",
             "AdditionalProperties"}
    for k in s.fields:
        if k not in known:
            raise Untranslatable(f"schema field {k}")
    g = s.fields.get("Generic")
    if g:
        for k, v in g.fields.items():
            if k == "Type":
                if v:
                    out["type"] = v
            elif k == "Nullable":
                if v:
                    out["nullable"] = True
            elif k == "Default":
                out["default"] = deref(v).fields["Object"]
            else:
                raise Untranslatable(f"schema.Generic field {k}")
    vv = deref(s.fields.get("ValueValidation"))
    if vv:
        names = {"Format": "format", "MaxLength": "maxLength", "MaxItems": "maxItems",
                 "MaxProperties": "maxProperties", "MinLength": "minLength",
                 "MinItems": "minItems", "Pattern": "pattern"}
        for k, v in vv.fields.items():
            if k == "Enum":
                out["enum"] = [deref(j).fields["Object"] for j in v]
            elif k in names:
                if v not in (None, ""):
                    out[names[k]] = deref(v)
            else:
                raise Untranslatable(f"schema.ValueValidation field {k}")
    ext = s.fields.get("Extensions")
    if ext:
        names = {"XEmbeddedResource": "x-kubernetes-embedded-resource",
                 "XPreserveUnknownFields": "x-kubernetes-preserve-unknown-fields",
                 "XIntOrString": "x-kubernetes-int-or-string",
                 "XListType": "x-kubernetes-list-type",
                 "XListMapKeys": "x-kubernetes-list-map-keys",
                 "XMapType": "x-kubernetes-map-type"}
        for k, v in ext.fields.items():
            if k not in names:
                raise Untranslatable(f"schema.Extensions field {k}")
            v = deref(v)
            if v not in (None, False, "", []):
                out[names[k]] = v
    props = s.fields.get("Properties")
    if props is not None:
        out["properties"] = {k: openapi(v) for k, v in props.items()}
    items = s.fields.get("Items")
    if items is not None:
        out["items"] = openapi(items)
    add = deref(s.fields.get("AdditionalProperties"))
    if add is not None:
        if add.fields.get("Structural") is not None:
            out["additionalProperties"] = openapi(add.fields["Structural"])
        elif add.fields.get("Bool"):
            out["additionalProperties"] = True
    return out


def to_json(v):
    v = deref(v)
    if isinstance(v, Struct):
        raise Untranslatable(f"a {v.type_name} where a value is expected")
    if isinstance(v, dict):
        return {k: to_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_json(x) for x in v]
    if isinstance(v, Float):
        if math.isinf(v) or math.isnan(v):
            raise Untranslatable("a non-finite float")
        return float(v)
    return v


# ---------------------------------------------------------------- the table

def table_text(source):
    start = source.index("func TestValidationExpressions(")
    open_at = source.index("}{", start) + 1
    depth = 0
    for i in range(open_at, len(source)):
        if source[i] == "{":
            depth += 1
        elif source[i] == "}":
            depth -= 1
            if depth == 0:
                return source[open_at:i + 1]
    raise SystemExit("table end not found")


def split_cases(tokens):
    """The token ranges of the table's cases (each `{ name: ..., ... }`)."""
    depth = 0
    cases = []
    start = None
    for i, (_, text) in enumerate(tokens):
        if text in "{(" and len(text) == 1:
            depth += 1
            if depth == 2 and text == "{":
                start = i
        elif text in "})" and len(text) == 1:
            if depth == 2 and text == "}":
                cases.append(tokens[start:i + 1])
            depth -= 1
    return cases


CASE_FIELDS = {
    "name": ("named", "string"), "schema": ("ptr", S), "oldSchema": ("ptr", S),
    "obj": ("iface",), "oldObj": ("iface",), "valid": ("slice", ("named", "string")),
    "errors": ("map", ("named", "string"), ("named", "string")), "costBudget": ("iface",),
    "isRoot": ("iface",), "expectSkipped": ("iface",), "expectedCost": ("iface",),
}


def translate(case_tokens):
    p = Parser(case_tokens)
    p.expect("{")
    fields = {}
    name = None
    try:
        while not p.accept("}"):
            field = p.next()[1]
            p.expect(":")
            if field not in CASE_FIELDS:
                raise Untranslatable(f"case field {field}")
            fields[field] = p.element(CASE_FIELDS[field])
            if field == "name":
                name = fields[field]
            if not p.accept(","):
                p.expect("}")
                break
        if "oldSchema" in fields:
            raise Untranslatable("oldSchema (a different schema for the old object)")
        out = {"name": fields["name"], "schema": openapi(fields["schema"]),
               "obj": to_json(fields.get("obj"))}
        if "oldObj" in fields:
            out["oldObj"] = to_json(fields["oldObj"])
        for flag in ("isRoot", "expectSkipped"):
            if fields.get(flag):
                out[flag] = True
        for n in ("costBudget", "expectedCost"):
            if fields.get(n):
                out[n] = fields[n]
        out["valid"] = fields.get("valid") or []
        out["errors"] = fields.get("errors") or {}
        return out, None
    except (Untranslatable, KeyError, IndexError, TypeError, AttributeError) as e:
        return None, f"{name or '?'}: {e}"


def main():
    source = open(sys.argv[1], encoding="utf-8").read()
    tokens = tokenize(table_text(source))
    out = []
    for case_tokens in split_cases(tokens):
        case, why = translate(case_tokens)
        if case is None:
            print(f"untranslated: {why}", file=sys.stderr)
            continue
        out.append(case)
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    print()
    print(f"{len(out)} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
