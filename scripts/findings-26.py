#!/usr/bin/env python3
"""Reproduces reliability findings 1-6 (issue 26) against a kubemock binary and prints what
each costs: status codes, seconds, the server's peak RSS. Run it on two binaries (before and
after a change) in one go to compare them on the same machine:

    scripts/findings-26.py target/release/kubemock /path/to/old/kubemock

Each binary gets a fresh `kubemock serve --port 0 --no-controllers` per finding. The named
regression tests (conformance/tests/reliability.rs) check the behaviour; this script only
measures it. Standard library only.
"""

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


class Server:
    def __init__(self, binary):
        self.process = subprocess.Popen(
            [binary, "serve", "--port", "0", "--no-controllers"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        line = self.process.stdout.readline().strip()
        prefix = "kubemock: serving on "
        if not line.startswith(prefix):
            raise SystemExit(f"{binary}: unexpected first line {line!r}")
        self.url = line[len(prefix):]

    def request(self, method, path, body=None, content_type="application/json",
                accept="application/json", timeout=120):
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        req.add_header("Accept", accept)
        started = time.monotonic()
        try:
            with urllib.request.urlopen(req, timeout=timeout) as answer:
                payload, status = answer.read(), answer.status
        except urllib.error.HTTPError as err:
            payload, status = err.read(), err.code
        return status, payload, time.monotonic() - started

    def peak_rss_mib(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def gadget_definition(group):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"gadgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "gadgets", "kind": "Gadget"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {
                                       "type": "object",
                                       "x-kubernetes-preserve-unknown-fields": True}}}]}}


def wait_served(server, path):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.request("GET", path)[0] == 200:
            return
        time.sleep(0.05)
    raise SystemExit(f"{path} never served")


def configmap(name, data=None, **metadata):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, **metadata}, "data": data or {}}


CMS = "/api/v1/namespaces/default/configmaps"


def finding_1(server):
    group = "f1.example.com"
    server.request("POST", CRDS, gadget_definition(group))
    server.request("POST", CMS, configmap("after"))
    status, _, seconds = server.request(
        "PATCH", f"{CRDS}/gadgets.{group}", {}, "application/merge-patch+json")
    return f"empty merge PATCH of a CRD: {status} in {seconds:.3f} s"


def finding_2(server):
    depth = 40_000
    body = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\ndata: "
            + "{b: " * depth + "x" + "}" * depth + "\n").encode()
    readyz = []

    def probe():
        time.sleep(0.05)
        readyz.append(server.request("GET", "/readyz")[2])

    thread = threading.Thread(target=probe)
    thread.start()
    status, _, seconds = server.request("POST", CMS, body, "application/yaml")
    thread.join()
    return (f"YAML nested {depth} deep: {status} in {seconds:.3f} s; "
            f"/readyz meanwhile {readyz[0] * 1000:.1f} ms")


def finding_3(server):
    answers = []
    for rv in ["abc", "0", "-1"]:
        status = server.request("POST", CMS, configmap(f"rv{len(answers)}",
                                                       resourceVersion=rv))[0]
        answers.append(f"{rv!r}: {status}")
    return "create with resourceVersion " + ", ".join(answers)


def finding_4(server):
    cases = [
        ("labels object", CMS, configmap("l", labels={"a": {"k": 1}})),
        ("annotations string", CMS, configmap("a", annotations="str")),
        ("finalizers string", CMS, configmap("f", finalizers="x")),
        ("data number", CMS, configmap("d", {"a": 7})),
        ("replicas string", "/apis/apps/v1/namespaces/default/deployments",
         {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "r"},
          "spec": {"replicas": "3", "selector": {"matchLabels": {"a": "b"}},
                   "template": {"metadata": {"labels": {"a": "b"}},
                                "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
    ]
    answers = [f"{name} {server.request('POST', path, body)[0]}"
               for name, path, body in cases]
    listed = server.request("GET", CMS, accept="application/vnd.kubernetes.protobuf")
    return "wrong types: " + ", ".join(answers) + f"; protobuf list after: {listed[0]}"


def finding_5(server):
    group = "f5.example.com"
    server.request("POST", CRDS, gadget_definition(group))
    gadgets = f"/apis/{group}/v1/namespaces/default/gadgets"
    wait_served(server, gadgets)
    server.request("POST", gadgets, {"apiVersion": f"{group}/v1", "kind": "Gadget",
                                     "metadata": {"name": "g"}, "spec": {"a": {"b": 1}}})
    path, ops = "/spec", []
    for _ in range(130):
        path += "/d"
        ops.append({"op": "add", "path": path, "value": {}})
    status = server.request("PATCH", f"{gadgets}/g", ops, "application/json-patch+json")[0]
    table = server.request("GET", f"/apis/{group}/v1/gadgets",
                           accept="application/json;as=Table;v=v1;g=meta.k8s.io")[0]
    deleted = server.request("DELETE", f"{gadgets}/g")[0]
    return (f"JSON patch nesting 130 deep: {status}; Table list after: {table}; "
            f"DELETE: {deleted}")


def finding_6(server):
    server.request("POST", CMS, configmap("grow", {"seed": "x" * 2048}))
    ops = [{"op": "copy", "from": "/data", "path": f"/data/k{i}"} for i in range(28)]
    try:
        status, _, seconds = server.request(
            "PATCH", f"{CMS}/grow", ops, "application/json-patch+json")
    except OSError as err:
        alive = server.process.poll() is None
        return f"28 doubling copies on 2 KiB: no answer ({err}); server alive: {alive}"
    return (f"28 doubling copies on 2 KiB: {status} in {seconds:.3f} s, "
            f"server peak RSS {server.peak_rss_mib():.0f} MiB")


FINDINGS = [finding_1, finding_2, finding_3, finding_4, finding_5, finding_6]


def main():
    binaries = sys.argv[1:]
    if not binaries:
        raise SystemExit(__doc__)
    for finding in FINDINGS:
        for binary in binaries:
            server = Server(binary)
            try:
                result = finding(server)
            except Exception as err:  # a finding may well break the old binary
                result = f"failed: {err}"
            finally:
                server.stop()
            print(f"{finding.__name__} [{binary}]: {result}", flush=True)


if __name__ == "__main__":
    main()
