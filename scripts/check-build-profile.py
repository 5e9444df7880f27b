#!/usr/bin/env python3
"""Checks the dev profile's per-package optimisation (docs/development.md#build-times).

Every proc macro built on Linux, and every crate only proc macros and build scripts use, must be named at
opt-level 0 in the workspace's `[profile.dev.package]`: `"*"` wins over `build-override`, so a
proc macro left out is compiled optimised, which costs minutes of a cold build and nothing
says so. examples/downstream-kube/Cargo.toml must repeat the same table, so that its build in
CI's shared target/ reuses those units. Exits non-zero with what to change.
"""
import json
import subprocess
import sys
import tomllib

PLATFORM = "x86_64-unknown-linux-gnu"


def profile_packages(path):
    with open(path, "rb") as f:
        return tomllib.load(f)["profile"]["dev"]["package"]


def build_time_only():
    """Names of the proc macros built for PLATFORM, and of the packages only they depend on."""
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--filter-platform", PLATFORM],
        check=True, capture_output=True, text=True,
    ).stdout
    meta = json.loads(out)
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    macros = {i for i in nodes
              if any("proc-macro" in t["kind"] for t in packages[i]["targets"])}
    # Packages reachable from something other than a proc macro are needed at run time.
    runtime, stack = set(), [i for i in meta["workspace_members"]]
    while stack:
        i = stack.pop()
        if i in runtime:
            continue
        runtime.add(i)
        for dep in nodes[i]["deps"]:
            kinds = {k["kind"] for k in dep["dep_kinds"]}
            if dep["pkg"] not in macros and kinds - {"build"}:
                stack.append(dep["pkg"])
    only = set(macros)
    stack = list(macros)
    while stack:
        for dep in nodes[stack.pop()]["deps"]:
            if dep["pkg"] not in only and dep["pkg"] not in runtime:
                only.add(dep["pkg"])
                stack.append(dep["pkg"])
    return {packages[i]["name"] for i in macros}, {packages[i]["name"] for i in only - macros}


def main():
    table = profile_packages("Cargo.toml")
    macros, helpers = build_time_only()
    missing = sorted(n for n in macros | helpers if table.get(n, {}).get("opt-level") != 0)
    failed = False
    if missing:
        print("Cargo.toml [profile.dev.package]: add at opt-level 0 (build-time only): "
              + ", ".join(missing), file=sys.stderr)
        failed = True
    downstream = profile_packages("examples/downstream-kube/Cargo.toml")
    if {k: v for k, v in downstream.items() if not k.startswith("kubemock")} != table:
        print("examples/downstream-kube/Cargo.toml [profile.dev.package] must equal the "
              "workspace's (its own kubemock-* entries aside)", file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
