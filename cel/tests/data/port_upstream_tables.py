#!/usr/bin/env python3
"""Ports the case tables of upstream's CEL library tests (k8s.io/apiserver v0.32.0,
pkg/cel/library/{ip,cidr,quantity,format}_test.go) to library_cases.json: each case keeps
upstream's expression and expectation, the expected value written as a CEL expression that
must equal the result. Run: port_upstream_tables.py UPSTREAM_LIBRARY_DIR > library_cases.json.
Cases whose expectation this script cannot translate are listed on stderr, not guessed."""
import json, re, sys

VALUES = {
    "trueVal": "true", "falseVal": "false", "types.True": "true", "types.False": "false",
    "int4": "4", "int6": "6",
    "apiservercel.IP{Addr: ipv4Addr}": 'ip("192.168.0.1")',
    "apiservercel.IP{Addr: ipv6Addr}": 'ip("2001:db8::68")',
    "apiservercel.CIDR{Prefix: ipv4CIDR}": 'cidr("192.168.0.0/24")',
    "apiservercel.CIDR{Prefix: ipv6CIDR}": 'cidr("2001:db8::/32")',
    "apiservercel.CIDR{Prefix: netip.PrefixFrom(ipv4Addr, 24)}": 'cidr("192.168.0.1/24")',
    "apiservercel.CIDR{Prefix: netip.PrefixFrom(ipv6Addr, 32)}": 'cidr("2001:db8::68/32")',
    "types.OptionalNone": "optional.none()",
    "oneMi": 'quantity("1Mi")',
    "apiservercel.Quantity{Quantity: &twelveMi}": 'quantity("12Mi")',
}

STRING = r"\"(?:[^\"\\]|\\.)*\"|`[^`]*`"

def go_string(s):
    s = re.match(STRING, s.strip()).group(0)
    if s.startswith("`"):
        return s[1:-1]
    return json.loads(s)

# cidr_test.go names its own addresses under the same variable names.
CIDR_VALUES = {
    "apiservercel.IP{Addr: ipv4Addr}": 'ip("192.168.0.0")',
    "apiservercel.IP{Addr: ipv6Addr}": 'ip("2001:db8::")',
    "apiservercel.CIDR{Prefix: netip.PrefixFrom(ipv4Addr, 24)}": 'cidr("192.168.0.0/24")',
    "apiservercel.CIDR{Prefix: netip.PrefixFrom(ipv6Addr, 32)}": 'cidr("2001:db8::/32")',
}

def value(v, file):
    v = v.strip().rstrip(",")
    if file == "cidr_test.go" and v in CIDR_VALUES:
        return CIDR_VALUES[v]
    if v in VALUES:
        return VALUES[v]
    m = re.fullmatch(r"types\.(Int|Double|Bool)\((.*)\)", v)
    if m:
        return m.group(2)
    m = re.fullmatch(r"types\.String\((\".*\")\)", v)
    if m:
        return m.group(1)
    m = re.fullmatch(r"types\.OptionalOf\(types\.NewStringList\(types\.DefaultTypeAdapter, \[\]string\{(.*)\}\)\)", v, re.S)
    if m:
        items = [json.dumps(go_string(x)) for x in re.findall(STRING, m.group(1))]
        return "optional.of([" + ", ".join(items) + "])"
    return None

def cases(path):
    text = open(path).read()
    for block in re.finditer(r"\{\s*\n\s*name:\s*(\".*?\"),\s*\n(.*?)\n\s*\},?\s*\n", text, re.S):
        name = json.loads(block.group(1))
        body = block.group(2)
        fields = {}
        for m in re.finditer(r"^\s*(\w+):\s*(.*?)(?=^\s*\w+:\s|\Z)", body, re.S | re.M):
            lines = [l for l in m.group(2).splitlines() if not l.strip().startswith("//")]
            fields[m.group(1)] = "\n".join(lines).strip().rstrip(",")
        if "expr" not in fields:
            continue
        if fields["expr"].startswith("fmt.Sprintf"):
            # format_test.go's loop over every named format: expanded below.
            continue
        case = {"file": path.split("/")[-1], "name": name, "expr": go_string(fields["expr"])}
        result = fields.get("expectResult") or fields.get("expectValue")
        rt = fields.get("expectRuntimeErr") or fields.get("expectedRuntimeErr")
        rtp = fields.get("expectRuntimeErrPattern")
        ce = fields.get("expectCompileErrs") or fields.get("expectedCompileErr")
        if ce:
            case["compile_errors"] = [go_string(s) for s in re.findall(STRING, ce)]
        elif rt and case["file"] in ("quantity_test.go", "format_test.go"):
            # Both run through testQuantity, which matches the error as a regexp.
            case["runtime_error_pattern"] = go_string(rt)
        elif rt:
            case["runtime_error"] = go_string(rt)
        elif rtp:
            case["runtime_error_pattern"] = go_string(rtp)
        elif result:
            v = value(result, case["file"])
            if v is None:
                print(f"untranslated: {case['file']} {name}: {result}", file=sys.stderr)
                continue
            case["result"] = v
        else:
            print(f"no expectation: {case['file']} {name}", file=sys.stderr)
            continue
        yield case

out = []
for f in ["ip_test.go", "cidr_test.go", "quantity_test.go", "format_test.go"]:
    out.extend(cases(sys.argv[1] + "/" + f))
# format_test.go runs these two for each key of library.ConstantFormats.
for key in ["dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName",
            "dns1123LabelPrefix", "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue",
            "uri", "uuid", "byte", "date", "datetime"]:
    out.append({"file": "format_test.go", "name": f"lookup_{key}", "expr": f'format.named("{key}").hasValue()', "result": "true"})
    out.append({"file": "format_test.go", "name": f"lookup_value_{key}", "expr": f'format.named("{key}").value() == format.{key}()', "result": "true"})
KEYS = ["dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName",
        "dns1123LabelPrefix", "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue",
        "uri", "uuid", "byte", "date", "datetime"]
for lhs in KEYS:
    for rhs in KEYS:
        out.append({"file": "format_test.go", "name": f"equality_{lhs}_{rhs}", "expr": f"format.{lhs}() == format.{rhs}()", "result": "true" if lhs == rhs else "false"})
json.dump(out, sys.stdout, indent=1)
print()
