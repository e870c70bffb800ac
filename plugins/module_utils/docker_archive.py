# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Image archives written by ``docker save`` / ``podman save`` (what ``docker load`` reads).

The archive is a tar (optionally gzip/bzip2/xz compressed) with a ``manifest.json``:
``[{"Config": "<hex>.json" | "blobs/sha256/<hex>", "RepoTags": ["name:tag"], "Layers": [...]}]``.
The image ID Docker gives the loaded image is ``sha256:`` + the SHA-256 of the config file's
bytes; it is computed here from those bytes rather than trusted from the file name.
"""

from __future__ import annotations

import hashlib
import json
import tarfile


class DockerArchiveError(Exception):
    """Not an image archive Docker can load."""


def _member_bytes(tar, name, path):
    try:
        member = tar.getmember(name)
    except KeyError:
        member = None
    handle = tar.extractfile(member) if member is not None else None
    if handle is None:
        raise DockerArchiveError(f"{path} has no {name}: not a docker/podman image archive (docker save format).")
    with handle:
        return handle.read()


def read_archive(path):
    """The images of an archive: ``[{"id": "sha256:...", "repo_tags": [...], "layers": n, "labels": {...}}]``
    (``labels``: the image config's ``config.Labels``, e.g. the ``ascendops.release`` the image was built from)."""
    try:
        tar = tarfile.open(path, mode="r:*")  # noqa: SIM115 (closed by the with below)
    except (OSError, tarfile.TarError) as exc:
        raise DockerArchiveError(f"{path} cannot be read as a tar archive: {exc}") from exc
    with tar:
        try:
            manifest = json.loads(_member_bytes(tar, "manifest.json", path))
        except ValueError as exc:
            raise DockerArchiveError(f"{path}: manifest.json is not valid JSON ({exc}).") from exc
        if not isinstance(manifest, list) or not manifest:
            raise DockerArchiveError(f"{path}: manifest.json lists no image.")
        images = []
        for entry in manifest:
            if not isinstance(entry, dict) or not entry.get("Config"):
                raise DockerArchiveError(f"{path}: a manifest.json entry has no Config.")
            config = _member_bytes(tar, entry["Config"], path)
            try:
                labels = (json.loads(config).get("config") or {}).get("Labels") or {}
            except (ValueError, AttributeError):
                labels = {}
            images.append({
                "id": "sha256:" + hashlib.sha256(config).hexdigest(),
                "repo_tags": list(entry.get("RepoTags") or []),
                "layers": len(entry.get("Layers") or []),
                "labels": dict(labels) if isinstance(labels, dict) else {},
            })
    return images


def normalize_reference(ref):
    """``name[:tag]`` as Docker lists it in RepoTags: the tag defaults to ``latest``;
    ``docker.io/library/`` and ``docker.io/`` prefixes are dropped."""
    name, digest = (ref.split("@", 1) + [None])[:2]
    last = name.rsplit("/", 1)[-1]
    if ":" not in last and not digest:
        name += ":latest"
    for prefix in ("docker.io/library/", "docker.io/"):
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    return name if not digest else f"{name}@{digest}"


def choose_image(path, images, image=None):
    """The image of ``images`` (read_archive's list for ``path``) that ``image`` names, or the only one
    when ``image`` is empty. Raises DockerArchiveError saying what the archive holds instead."""
    if image:
        want = normalize_reference(image)
        matches = [i for i in images if want in [normalize_reference(t) for t in i["repo_tags"]]]
        if not matches:
            held = ", ".join(sorted(t for i in images for t in i["repo_tags"])) or "untagged images only"
            raise DockerArchiveError(
                f"{path} does not hold the image {image} (it holds: {held}). Build the archive "
                "with that tag, or set the image name to one it holds.")
        return matches[0]
    if len(images) != 1:
        raise DockerArchiveError(f"{path} holds {len(images)} images; name the one wanted (image).")
    return images[0]


class DockerArchiveInfo:
    """The docker_archive_info module's work: read the archive, find the wanted image."""

    def __init__(self, module):
        self.module = module

    def run(self):
        p = self.module.params
        try:
            images = read_archive(p["path"])
        except DockerArchiveError as exc:
            self.module.fail_json(msg=str(exc), path=p["path"])
        result = dict(changed=False, path=p["path"], images=images, id=None, repo_tags=[], labels={})
        try:
            chosen = choose_image(p["path"], images, p["image"])
        except DockerArchiveError as exc:
            self.module.fail_json(msg=str(exc), **result)
        result.update(id=chosen["id"], repo_tags=chosen["repo_tags"], labels=chosen["labels"])
        self.module.exit_json(**result)
