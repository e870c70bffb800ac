"""A stand-in for the Docker Engine API on a unix socket: the two read routes docker_tag_drift asks
(``GET /images/<ref>/json``, ``GET /distribution/<ref>/json``) answered from dicts, and the reads
community.docker's docker_image_info makes (``GET /version`` when its client starts, ``GET /images/json`` with a
``reference`` filter, ``GET /images/<id>/json``; its paths carry the API version, ``/v1.41/...``), every request
recorded, any other route (a pull is ``POST /images/create``) answered 404 and recorded, so a test can prove none
was made.

The answers are the engine's own shapes (Engine API 1.41-1.45, docker 20.10-27; the ``Descriptor`` of a multi-arch
tag is the index's). Used by the module_utils, module and playbook tests.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socketserver
import tempfile
import threading
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote

# Digests as a registry prints them (64 hex digits).
OLD = "sha256:3f1c2a7d9b0e4c5a8f6b2d1e0c9a7b5d3e1f2a4c6b8d0e2f4a6c8e0b2d4f6a8c"
NEW = "sha256:9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d"
PLATFORM = "sha256:5b0c8e9f1a2d3c4b5a6f7e8d9c0b1a2f3e4d5c6b7a8f9e0d1c2b3a4f5e6d7c8b"
IMAGE_ID = "sha256:1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b"
IMAGE = "registry.example.com:5000/ascendops/trainer:910b-cann8.2.rc1"
REPO = "registry.example.com:5000/ascendops/trainer"


def image_inspect(repo_digests, repo_tags=(IMAGE,)):
    """``GET /images/<ref>/json`` (what ``docker image inspect`` prints, as one object, abridged)."""
    return {"Id": IMAGE_ID, "RepoTags": list(repo_tags), "RepoDigests": repo_digests, "Parent": "",
            "Created": "2026-11-02T08:14:31.512993027Z", "Architecture": "arm64", "Os": "linux",
            "Size": 9876543210, "RootFS": {"Type": "layers", "Layers": [PLATFORM]}}


def distribution_index(digest):
    """``GET /distribution/<ref>/json`` for a multi-arch tag: the OCI index's descriptor and its platforms."""
    return {"Descriptor": {"mediaType": "application/vnd.oci.image.index.v1+json", "digest": digest, "size": 1609},
            "Platforms": [{"architecture": "amd64", "os": "linux"},
                          {"architecture": "arm64", "os": "linux", "variant": "v8"}]}


def distribution_manifest(digest):
    """``GET /distribution/<ref>/json`` for a single-arch tag: the image manifest's descriptor."""
    return {"Descriptor": {"mediaType": "application/vnd.docker.distribution.manifest.v2+json", "digest": digest,
                           "size": 2196},
            "Platforms": [{"architecture": "arm64", "os": "linux"}]}


class FakeEngine:
    """``with FakeEngine(images={ref: body}, distribution={ref: (status, body)}) as eng:`` -> eng.host."""

    def __init__(self, images=None, distribution=None):
        self.images = dict(images or {})
        self.distribution = dict(distribution or {})
        self.requests = []
        self._dir = tempfile.mkdtemp(prefix="eng")  # short: a socket path has at most 107 bytes
        self.path = os.path.join(self._dir, "docker.sock")
        self.host = "unix://" + self.path
        self._server = None

    def _by_reference(self, name):
        """``GET /images/json?filters={"reference": [name]}``: summaries of the images under that repository."""
        out = []
        for body in {b["Id"]: b for b in self.images.values()}.values():
            refs = list(body.get("RepoTags") or []) + list(body.get("RepoDigests") or [])
            if any(re.split(r"[@]|:(?=[^:/]*$)", ref)[0] == name for ref in refs):
                out.append({k: body.get(k) for k in ("Id", "RepoTags", "RepoDigests", "Created", "Size")})
        return out

    def answer(self, method, path, query=None):
        if method == "GET" and path == "/version":
            return 200, {"Version": "24.0.7", "ApiVersion": "1.43", "MinAPIVersion": "1.12", "Os": "linux",
                         "Arch": "arm64"}
        if method == "GET" and path == "/images/json":
            filters = json.loads((query or {}).get("filters", ["{}"])[0] or "{}")
            names = filters.get("reference") or []
            return 200, [img for name in names for img in self._by_reference(name)]
        if method == "GET" and path.startswith("/images/") and path.endswith("/json"):
            ref = path[len("/images/"):-len("/json")]
            if ref in self.images:
                return 200, self.images[ref]
            by_id = [b for b in self.images.values() if b.get("Id") in (ref, "sha256:" + ref)]
            if by_id:
                return 200, by_id[0]
            return 404, {"message": f"No such image: {ref}"}
        if method == "GET" and path.startswith("/distribution/") and path.endswith("/json"):
            ref = path[len("/distribution/"):-len("/json")]
            return self.distribution.get(ref, (404, {"message": f"manifest unknown: {ref}"}))
        return 404, {"message": "page not found"}

    def __enter__(self):
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                raw, _sep, query = self.path.partition("?")
                # community.docker asks /v1.43/<route>; docker_tag_drift the unversioned route
                path = re.sub(r"^/v[0-9]+\.[0-9]+(?=/)", "", unquote(raw))
                engine.requests.append((self.command, path, dict(self.headers)))
                status, body = engine.answer(self.command, path, parse_qs(query))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_HEAD = do_DELETE = _serve  # noqa: N815

            def log_message(self, *args):  # client_address is empty on a unix socket
                pass

        self._server = socketserver.ThreadingUnixStreamServer(self.path, Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
        shutil.rmtree(self._dir, ignore_errors=True)
