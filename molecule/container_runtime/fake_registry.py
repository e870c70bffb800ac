#!/usr/bin/env python3
"""TEST ONLY: a minimal Docker registry (HTTP, Basic auth) that serves one image from a docker-save archive.

No registry image can be pulled here, so the credentials test of the container_runtime scenario runs
this instead: ``docker login`` must pass Basic auth with the right user and password, ``docker pull``
gets the archive's image (schema2 manifest, gzip layers). The password itself is never given to it:
only its SHA-256 (``--password-sha256``). Every request is appended to ``--record`` as a JSON line
(method, path, user, whether the password matched); the password is never written.

    fake_registry.py --archive IMG.tar --repository ascendops/tiny --tag 1 --user U --password-sha256 HEX \
        --port 5000 --record /root/registry.jsonl
"""

import argparse
import base64
import gzip
import hashlib
import http.server
import json
import re
import tarfile

SCHEMA2 = "application/vnd.docker.distribution.manifest.v2+json"
CONFIG_TYPE = "application/vnd.docker.container.image.v1+json"
LAYER_TYPE = "application/vnd.docker.image.rootfs.diff.tar.gzip"


def load_image(archive):
    """(manifest bytes, {digest: blob bytes}) for the single image of a docker-save archive."""
    blobs = {}
    with tarfile.open(archive) as tar:
        entry = json.load(tar.extractfile("manifest.json"))[0]
        config = tar.extractfile(entry["Config"]).read()
        layers = []
        for name in entry["Layers"]:
            data = gzip.compress(tar.extractfile(name).read(), mtime=0)
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            blobs[digest] = data
            layers.append({"mediaType": LAYER_TYPE, "size": len(data), "digest": digest})
    config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
    blobs[config_digest] = config
    manifest = json.dumps({"schemaVersion": 2, "mediaType": SCHEMA2,
                           "config": {"mediaType": CONFIG_TYPE, "size": len(config), "digest": config_digest},
                           "layers": layers}).encode()
    return manifest, blobs


def make_handler(args, manifest, blobs):
    manifest_digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    route = re.compile(r"^/v2/(?P<name>.+)/(?P<kind>manifests|blobs)/(?P<ref>[^/]+)$")

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):  # quiet
            pass

        def _auth(self):
            header = self.headers.get("Authorization", "")
            user, ok = None, False
            if header.startswith("Basic "):
                try:
                    user, _, password = base64.b64decode(header[6:]).decode().partition(":")
                    ok = user == args.user and hashlib.sha256(password.encode()).hexdigest() == args.password_sha256
                except ValueError:
                    pass
            with open(args.record, "a", encoding="utf-8") as f:
                f.write(json.dumps({"method": self.command, "path": self.path, "user": user,
                                    "password_ok": ok}) + "\n")
            return ok

        def _send(self, code, body=b"", headers=None):
            self.send_response(code)
            self.send_header("Docker-Distribution-API-Version", "registry/2.0")
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _handle(self):
            if not self._auth():
                self._send(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}',
                           {"WWW-Authenticate": 'Basic realm="ascendops-test"', "Content-Type": "application/json"})
                return
            if self.path == "/v2/":
                self._send(200, b"{}", {"Content-Type": "application/json"})
                return
            m = route.match(self.path)
            if m and m["name"] == args.repository and m["kind"] == "manifests" and m["ref"] in (args.tag,
                                                                                                  manifest_digest):
                self._send(200, manifest, {"Content-Type": SCHEMA2, "Docker-Content-Digest": manifest_digest})
            elif m and m["name"] == args.repository and m["kind"] == "blobs" and m["ref"] in blobs:
                self._send(200, blobs[m["ref"]], {"Content-Type": "application/octet-stream",
                                                  "Docker-Content-Digest": m["ref"]})
            else:
                self._send(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN","message":"unknown"}]}',
                           {"Content-Type": "application/json"})

        do_GET = _handle
        do_HEAD = _handle

    return Handler


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for opt in ("--archive", "--repository", "--tag", "--user", "--password-sha256", "--record"):
        p.add_argument(opt, required=True)
    p.add_argument("--port", type=int, default=5000)
    args = p.parse_args()
    manifest, blobs = load_image(args.archive)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(args, manifest, blobs))
    server.serve_forever()


if __name__ == "__main__":
    main()
