#!/usr/bin/env python3
"""Ports the function list of upstream's TestLibraryCompatibility (k8s.io/apiserver v0.32.0,
pkg/cel/library/library_compatibility_test.go) to library_functions.json: the names every
Kubernetes CEL library declares, by the Kubernetes version upstream says introduced them.

Run: port_library_functions.py path/to/library_compatibility_test.go > library_functions.json

The lines of the `knownFunctions := sets.New(...)` call are read as they are written: a
`// Kubernetes <1.NN>:` comment starts a version, the quoted names after it belong to it.
Anything else in the call stops the script (nothing is guessed)."""
import json
import re
import sys

text = open(sys.argv[1], encoding="utf-8").read()
start = text.index("knownFunctions := sets.New(")
body = text[start + len("knownFunctions := sets.New("):text.index("\n\t)", start)]
versions = {}
current = None
for line in body.splitlines():
    line = line.strip()
    if not line:
        continue
    m = re.fullmatch(r"// Kubernetes <?([0-9.?]+)>?:", line)
    if m:
        current = m.group(1)
        versions.setdefault(current, [])
        continue
    if line.startswith("//"):
        continue
    names = re.findall(r'"([^"]*)"', line)
    rest = re.sub(r'"[^"]*"|[,\s]', "", line)
    if rest or current is None:
        sys.exit(f"unexpected line in knownFunctions: {line!r}")
    versions[current].extend(names)
json.dump({"source": "k8s.io/apiserver v0.32.0 pkg/cel/library/library_compatibility_test.go",
           "known_functions": {v: n for v, n in versions.items() if n}},
          sys.stdout, indent=1)
print()
