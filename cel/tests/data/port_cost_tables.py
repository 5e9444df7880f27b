#!/usr/bin/env python3
"""Ports the estimated costs of upstream's CEL library cost tests (k8s.io/apiserver v0.32.0,
pkg/cel/library/cost_test.go) to cost_cases.json: each case keeps upstream's expression and
its expected estimate {min, max}, under upstream's testCostEstimator (a string or bytes
whose size is unknown is 0..12). Run: port_cost_tables.py UPSTREAM_LIBRARY_DIR >
cost_cases.json. Runtime costs are not ported (kubemock's interpreter counts differently,
docs/webhooks-and-cel.md#cel), except the authorizer library's (TestAuthzLibrary), which keep
`runtime` and `authorizer: true` (the test declares `authorizer`, evaluated with an
always-allow authorizer, as upstream's testCost does). Two-variable comprehensions are left
out and named on stderr."""
import json, re, sys

src = open(sys.argv[1] + "/cost_test.go").read()
STRING = r'`[^`]*`|"(?:[^"\\]|\\.)*"'


def go_string(s):
    return s[1:-1] if s.startswith("`") else json.loads(s)


def func_of(pos):
    return re.findall(r"func (Test\w+)", src[:pos])[-1]


def body(name):
    start = src.index("func " + name + "(")
    end = src.index("\nfunc ", start + 1)
    return src[start:end]


consts = {m.group(1): go_string(m.group(2))
          for m in re.finditer(r"(\w+Literal)\s*=\s*(" + STRING + ")", src)}
consts["timestampListLiteral"] = (
    "[timestamp('2011-01-01T00:00:00.000+01:00'), timestamp('2011-01-02T00:00:00.000+01:00'), "
    "timestamp('2011-01-03T00:00:00.000+01:00'), timestamp('2011-01-04T00:00:00.000+01:00'), "
    "timestamp('2011-01-05T00:00:00.000+01:00')]")
cases, skipped = [], []
EST = r"checker\.CostEstimate\{Min:\s*(\d+),\s*Max:\s*(\d+)\}"


def add(test, expr, lo, hi, runtime=None):
    if test == "TestTwoVariableComprehensionCost":
        skipped.append(expr)
        return
    case = {"test": test, "expr": expr, "min": int(lo), "max": int(hi)}
    if test == "TestAuthzLibrary":
        case["authorizer"] = True
        case["runtime"] = int(runtime)
    cases.append(case)


# Struct tables: expr (or op) then the estimate.
for m in re.finditer(r"(?:expr|op):\s*(" + STRING + r"),\s*\n\s*expectE(?:st|s)imatedCost:\s*" + EST + r",?(?:\s*\n\s*expectRuntimeCost:\s*(\d+))?", src):
    add(func_of(m.start()), go_string(m.group(1)), m.group(2), m.group(3), m.group(4))

# Lists and indexOf: each literal with each operation.
for test in ("TestListsCost", "TestIndexOfCost"):
    for group in re.finditer(r"opts:\s*\[\]string\{([^}]*)\},(.*?)(?=opts:|\Z)", body(test), re.S):
        opts = [go_string(o) for o in re.findall(STRING, group.group(1))]
        for c in re.finditer(r"comparableLiteral:\s*(\w+),(?:\s*param:\s*(" + STRING + r"),)?\s*\n?\s*expectedEstimatedCost:\s*" + EST, group.group(2)):
            for op in opts:
                op = op.replace("%s", go_string(c.group(2))) if c.group(2) else op
                add(test, consts[c.group(1)] + op, c.group(3), c.group(4))

# URLs: one receiver with each operation.
for group in re.finditer(r"ops:\s*\[\]string\{([^}]*)\},\s*\n\s*expectEsimatedCost:\s*" + EST, body("TestURLsCost")):
    for op in re.findall(STRING, group.group(1)):
        add("TestURLsCost", "url('https:://kubernetes.io/')" + go_string(op), group.group(2), group.group(3))

# IP and CIDR: a base cost per receiver, each operation's estimate a function of it.
for test in ("TestIPCost", "TestCIDRCost"):
    b = body(test)
    bases = {m.group(1): (go_string(m.group(2)),) for m in re.finditer(r"(ipv[46]) := (" + STRING + ")", b)}
    for m in re.finditer(r"(ipv[46])BaseEstimatedCost := " + EST, b):
        bases[m.group(1)] += (int(m.group(2)), int(m.group(3)))
    blocks = re.split(r"(ipv4Cases|ipv6Cases) := append\(cases", b)
    sections = [("both", blocks[0])] + [(blocks[i], blocks[i + 1]) for i in range(1, len(blocks), 2)]
    for which, text in sections:
        for m in re.finditer(r"ops:\s*\[\]string\{([^}]*)\},(.*?)expectRuntimeCost", text, re.S):
            ops = [go_string(o) for o in re.findall(STRING, m.group(1))]
            fn = m.group(2)
            for v in ("ipv4", "ipv6") if which == "both" else (which[:4],):
                expr0, lo, hi = bases[v]
                if "return c }" in fn:
                    e = (lo, hi)
                elif (d := re.search(r"Min: c\.Min \+ (\d+), Max: c\.Max \+ (\d+)", fn)):
                    e = (lo + int(d.group(1)), hi + int(d.group(2)))
                elif (d := re.search(r"c\.Add\((ipv[46])BaseEstimatedCost\)\.Add\(" + EST + r"\)", fn)):
                    o = bases[d.group(1)]
                    e = (lo + o[1] + int(d.group(2)), hi + o[2] + int(d.group(3)))
                else:
                    skipped.append(test + ": " + fn.strip()[:60])
                    continue
                for op in ops:
                    add(test, expr0 + op, *e)

print(json.dumps(cases, indent=1))
for s in skipped:
    print("skipped:", s, file=sys.stderr)
