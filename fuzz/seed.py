#!/usr/bin/env python3
"""Builds the fuzz targets' starting corpora in fuzz/corpus/<target>/ (not checked in).

Two sources: the small hand-written seeds checked in under fuzz/seeds/<target>/ (selectors and
patches from the project's tests), and the Kubernetes reference objects of
shared/protobuf/fixtures (read where they are, never copied into the repository): every .pb
file as a protobuf body, each JSON object of a kind in resources.txt as a create body, as the
current object under each patch seed, and as an applied configuration.

Input layout (src/lib.rs): header bytes (resource index into resources.txt, options), then
parts separated by 0xFF.

Usage: seed.py [FIXTURES_DIR]  (default: ../../shared/protobuf/fixtures from this file, as CI
lays out shared/ beside the checkout; /work/shared/protobuf/fixtures on a developer machine).
Without the fixtures it says so and seeds from the checked-in seeds only.
"""

import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SEP = b"\xff"
TARGETS = ["selector", "json_patch", "merge_patch", "strategic_patch", "apply", "protobuf", "decode"]
PATCH_TARGETS = ["json_patch", "merge_patch", "strategic_patch"]


def resources():
    """(group, version, kind) -> index, as src/lib.rs reads resources.txt."""
    index = {}
    with open(os.path.join(HERE, "resources.txt")) as f:
        lines = [line.split() for line in f if line.strip() and not line.startswith("#")]
    for i, (group, version, _plural, kind) in enumerate(lines):
        index[(group, version, kind)] = i
    return index


def fixture_objects(fixtures, index):
    """(resource index, name, compact JSON bytes, .pb bytes or None) of each fixture of a kind
    in resources.txt."""
    out = []
    for name in sorted(os.listdir(fixtures)):
        if not name.endswith(".json"):
            continue
        stem = name[: -len(".json")]
        group, version, kind = stem.rsplit(".", 2)
        i = index.get((group, version, kind))
        if i is None:
            continue
        with open(os.path.join(fixtures, name), "rb") as f:
            obj = json.load(f)
        pb_path = os.path.join(fixtures, stem + ".pb")
        pb = open(pb_path, "rb").read() if os.path.exists(pb_path) else None
        out.append((i, stem, obj, pb))
    return out


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def main():
    default = os.path.join(HERE, "..", "..", "shared", "protobuf", "fixtures")
    if not os.path.isdir(default):
        default = "/work/shared/protobuf/fixtures"
    fixtures = sys.argv[1] if len(sys.argv) > 1 else default
    corpus = os.path.join(HERE, "corpus")
    seeds = {}
    for target in TARGETS:
        d = os.path.join(HERE, "seeds", target)
        seeds[target] = [open(os.path.join(d, n), "rb").read() for n in sorted(os.listdir(d))]
        os.makedirs(os.path.join(corpus, target), exist_ok=True)

    def write(target, name, data):
        with open(os.path.join(corpus, target, name), "wb") as f:
            f.write(data)

    for target in TARGETS:
        for n, data in enumerate(seeds[target]):
            write(target, f"seed-{n}", data)

    if not os.path.isdir(fixtures):
        print(f"seed.py: no fixtures at {fixtures}: checked-in seeds only", file=sys.stderr)
        return
    objects = fixture_objects(fixtures, resources())
    for name in sorted(os.listdir(fixtures)):
        if name.endswith(".pb"):
            shutil.copyfile(os.path.join(fixtures, name), os.path.join(corpus, "protobuf", name))
    for i, stem, obj, pb in objects:
        body = compact(obj)
        write("decode", f"{stem}.json", bytes([i, 0]) + body)
        if pb is not None:
            write("decode", f"{stem}.pb", bytes([i, 2]) + pb)
        # The fixture as stored: no resourceVersion, no managedFields for an apply.
        stored = dict(obj)
        metadata = dict(stored.get("metadata", {}))
        metadata.pop("resourceVersion", None)
        metadata.pop("managedFields", None)
        stored["metadata"] = metadata
        for target in PATCH_TARGETS:
            for n, seed in enumerate(seeds[target]):
                patch = seed[2:].split(SEP, 1)[-1]
                write(target, f"{stem}-{n}", bytes([i, seed[1]]) + compact(stored) + SEP + patch)
        for n, seed in enumerate(seeds["apply"]):
            config_b = seed[2:].split(SEP, 1)[-1]
            write("apply", f"{stem}-{n}", bytes([i, seed[1]]) + compact(stored) + SEP + config_b)
        for n, seed in enumerate(seeds["selector"]):
            label, field = (seed[1:].split(SEP) + [b"", b""])[:2]
            write("selector", f"{stem}-{n}", bytes([i]) + label + SEP + field + SEP + body)
    counts = {t: len(os.listdir(os.path.join(corpus, t))) for t in TARGETS}
    print("seed.py: corpus sizes:", counts, file=sys.stderr)


if __name__ == "__main__":
    main()
