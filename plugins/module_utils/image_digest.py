# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Has a registry tag moved away from the image a node holds under it? Read-only, nothing is pulled.

Both digests come from the container engine's own API on its socket (what the docker CLI talks to):

- the local one from ``GET /images/<name:tag>/json``: ``RepoDigests``, the ``<repository>@<digest>`` of each
  manifest the engine pulled the image by (``docker image inspect --format '{{json .RepoDigests}}'``). An image
  pulled by a multi-arch tag records the digest of the index (manifest list), not of its platform manifest; an
  image loaded from a ``docker save`` archive, or built on the node, records none.
- the registry's one from ``GET /distribution/<name:tag>/json`` (Engine API 1.30, Docker 17.06; what ``docker
  service create`` resolves a tag with): the engine asks the registry for the tag's manifest (a HEAD/GET of the
  manifest, no layer) and answers ``{"Descriptor": {"mediaType": ..., "digest": "sha256:...", "size": n},
  "Platforms": [...]}``; for a multi-arch tag the descriptor is the index's, the digest a pull by that tag records.

Why the engine API rather than a CLI: ``docker buildx imagetools inspect`` needs the buildx plugin (absent from
openEuler's docker-engine 18.09 and optional beside Debian/Ubuntu's docker.io), ``docker manifest inspect``
prints a manifest list rebuilt from its entries (the index's own digest is not in it) and needs the experimental
CLI before Docker 20.10, and skopeo is rarely installed. The engine's query uses the engine's registry settings
(mirrors, proxy, insecure registries, CA files) like its pulls; credentials travel in the request's
``X-Registry-Auth`` header (never written to the node).

``compare()`` decides from the two: ``same``, ``moved`` (drift), or ``unknown`` when the local image records no
digest of that repository (loaded from an archive: nothing to compare, not drift).
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import socket
from urllib.parse import quote

DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
_DIGEST = re.compile(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$")
# What a run does about a moved tag (the role's settings; docs/releases.md).
FIX = ("to deploy the new image pin its digest (image.digest in the release, or container_runtime_image_digest) and "
       "run site.yml, or run once with -e container_runtime_registry_pull=always (the launch stage then restarts the "
       "job on it); to keep the running image pin the node's digest")


class EngineError(Exception):
    """The engine could not answer (its socket), or answered with an error (the registry's, relayed)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, socket_path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._socket_path = socket_path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._socket_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def socket_path(docker_host):
    """The socket of ``unix:///path`` (DOCKER_HOST's form); ValueError for any other scheme."""
    if not docker_host.startswith("unix://") or len(docker_host) <= len("unix://"):
        raise ValueError(f"docker_host {docker_host!r}: only a local socket, unix:///path, is supported")
    return docker_host[len("unix://"):]


def engine_get(docker_host, path, headers=None, timeout=30):
    """GET ``path`` from the engine: ``(status, parsed JSON or None, text)``. EngineError when it cannot be asked."""
    conn = _UnixHTTPConnection(socket_path(docker_host), timeout)
    try:
        conn.request("GET", path, headers=dict(headers or {}))
        resp = conn.getresponse()
        body = resp.read()
    except socket.timeout:
        raise EngineError(f"no answer from the engine ({docker_host}) within {timeout} s") from None
    except (OSError, http.client.HTTPException) as exc:
        raise EngineError(f"the engine at {docker_host} cannot be reached: {exc}") from None
    finally:
        conn.close()
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text) if text.strip() else None
    except ValueError:
        data = None
    return resp.status, data, text


def _error_text(status, data, text):
    message = data.get("message") if isinstance(data, dict) else None
    return " ".join(str(message or text or f"HTTP {status}").split())[:400]


def registry_auth(username, password, registry):
    """The ``X-Registry-Auth`` header value (base64url JSON, as the docker CLI sends it); None when anonymous."""
    if not username:
        return None
    doc = json.dumps({"username": username, "password": password, "serveraddress": registry})
    return base64.urlsafe_b64encode(doc.encode()).decode()


def _quote(ref):
    return quote(ref, safe="/:@")


def repository(ref):
    """The repository of an image reference as the engine lists it in RepoDigests: without tag or digest, and
    without the ``docker.io/library/`` / ``docker.io/`` prefix Docker Hub names drop."""
    name = ref.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    for prefix in ("docker.io/library/", "index.docker.io/library/", "docker.io/", "index.docker.io/"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def local_digests(image, repo_digests):
    """The digests of ``image``'s repository among an image's RepoDigests (sorted, unique)."""
    repo = repository(image)
    found = set()
    for entry in repo_digests or []:
        if not isinstance(entry, str) or "@" not in entry:
            continue
        name, digest = entry.rsplit("@", 1)
        if repository(name) == repo and _DIGEST.match(digest):
            found.add(digest)
    return sorted(found)


def parse_image_inspect(data):
    """RepoDigests of a ``GET /images/<ref>/json`` answer (one image object)."""
    if not isinstance(data, dict):
        raise EngineError("the engine's image inspect answer is not an image object")
    digests = data.get("RepoDigests")
    return [d for d in digests if isinstance(d, str)] if isinstance(digests, list) else []


def parse_distribution(data):
    """The tag's digest from a ``GET /distribution/<ref>/json`` answer (``Descriptor.digest``; the index's for a
    multi-arch tag). Key case is not relied on (early engines wrote ``Digest``)."""
    if not isinstance(data, dict):
        raise EngineError("the registry answer has no descriptor")
    descriptor = next((v for k, v in data.items() if k.lower() == "descriptor"), None)
    if not isinstance(descriptor, dict):
        raise EngineError("the registry answer has no descriptor")
    digest = next((v for k, v in descriptor.items() if k.lower() == "digest"), None)
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        raise EngineError(f"the registry answer's descriptor has no digest (got {digest!r})")
    return digest


def compare(local, remote):
    """``same`` when the registry's digest is one the image was pulled by, ``unknown`` when the image records
    none (loaded from an archive or built here: cannot tell), else ``moved``."""
    if not local:
        return "unknown"
    return "same" if remote in local else "moved"


def read_local(docker_host, image, timeout=30):
    """RepoDigests of the image the node holds under ``image``; None when it holds none."""
    status, data, text = engine_get(docker_host, f"/images/{_quote(image)}/json", timeout=timeout)
    if status == 404:
        return None
    if status != 200:
        raise EngineError(f"image inspect of {image}: {_error_text(status, data, text)}", status)
    return parse_image_inspect(data)


def read_remote(docker_host, image, auth=None, timeout=30):
    """The registry's digest of ``image``'s tag, through the engine (never pulls)."""
    headers = {"X-Registry-Auth": auth} if auth else {}
    status, data, text = engine_get(docker_host, f"/distribution/{_quote(image)}/json", headers, timeout)
    if status != 200:
        raise EngineError(_error_text(status, data, text), status)
    return parse_distribution(data)


class TagDrift:
    """The docker_tag_drift module's work (the module: argument spec + ``TagDrift(module).run()``)."""

    def __init__(self, module):
        self.module = module
        self.p = module.params

    def run(self):
        p, check = self.p, self.module.check_mode
        image, host, timeout = p["image"], p["docker_host"], p["timeout"]
        node = p["node"] or "this node"
        try:
            socket_path(host)
        except ValueError as exc:
            self.module.fail_json(msg=str(exc))
        result = {"changed": False, "image": image, "local_digests": [], "remote_digest": None}
        try:
            repo_digests = read_local(host, image, timeout)
        except EngineError as exc:
            return self._cannot_tell(result, f"{node}: the engine cannot show {image} ({exc}); whether its tag "
                                             "moved upstream is not checked")
        if repo_digests is None:
            return self.module.exit_json(state="absent", msg=f"{node}: holds no image {image}: nothing to compare",
                                         **result)
        result["local_digests"] = local = local_digests(image, repo_digests)
        if not local:
            # No registry query: there is nothing to compare it with.
            return self.module.exit_json(state="unknown", msg=(
                f"{node}: {image} records no digest of {repository(image)} (loaded from an archive or built on the "
                "node): cannot tell whether its tag moved upstream"), **result)
        try:
            remote = read_remote(host, image, registry_auth(p["username"], p["password"], p["registry"]), timeout)
        except EngineError as exc:
            return self._cannot_tell(result, f"{node}: the registry's digest of {image} cannot be read ({exc}); "
                                             "whether its tag moved upstream is not checked")
        result["remote_digest"] = remote
        state = compare(local, remote)
        if state == "same":
            return self.module.exit_json(state=state, msg=f"{node}: {image} is the registry's {remote}", **result)
        before = "".join(f"{image}: {d}\n" for d in local)
        msg = (f"{node}: the tag {image} moved upstream: the node runs {', '.join(local)}, the registry now has "
               f"{remote}. Not pulled (a moved tag is reported, never applied): {FIX}.")
        if not check:
            self.module.warn(msg)
        diff = {"before": before, "after": f"{image}: {remote}\n"}
        return self.module.exit_json(state=state, msg=msg, diff=diff, **dict(result, changed=check))

    def _cannot_tell(self, result, msg):
        self.module.warn(msg)
        return self.module.exit_json(state="unreachable", msg=msg, **result)
