# Copyright: (c) 2026, ascendops engineering
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: docker_archive
version_added: "0.1.0"
short_description: Image ID, tags and labels of a container image archive on the controller, without a module run
description:
  - Reads C(manifest.json) of an image archive written by C(docker save) or C(podman save) on the
    controller, in the play's own process (what the C(docker_archive_info) module does with a module run
    delegated to localhost), and returns the image C(docker load) gives (its ID, C(sha256:) + the SHA-256
    of its config, its tags and labels).
  - What an archive holds is kept in a cache file keyed by the path and the file's identity (device,
    inode, size, modification and change time in nanoseconds), as lookup C(file_sha256) keeps hashes,
    so a re-run does not open an unchanged archive again; any write, copy or rename onto the path reads
    it again.
  - Never fails on the archive itself - a missing file or one that is not an image archive, or one that
    does not hold the wanted image, is said in C(error) (and C(exists)), so the task that uses it can
    refuse with its own message.
options:
  _terms:
    description: The archive's path on the controller (one).
    required: true
  image:
    description:
      - The image reference wanted (C(name:tag)); C(error) says so when the archive does not hold it.
      - Optional when the archive holds one image.
    type: str
  cache_file:
    description:
      - The cache file; empty keeps nothing across runs.
      - Default C($XDG_CACHE_HOME/ascendops/docker-archive.json) (C(~/.cache/ascendops/docker-archive.json)).
    type: str
"""

EXAMPLES = r"""
- name: Image ID of the trainer archive
  ansible.builtin.set_fact:
    trainer_archive: >-
      {{ lookup('ascendops.cluster.docker_archive', '/srv/images/ascendops-trainer.tar',
                image='localhost/ascendops-trainer:latest') }}
"""

RETURN = r"""
_raw:
  description: One dict (a list of one with query).
  type: list
  elements: dict
  contains:
    path:
      description: The absolute path.
      type: str
    exists:
      description: Whether the path is a regular file (a directory or a dangling link is not).
      type: bool
    id:
      description: Image ID of the wanted image (C(sha256:<hex>)); null with C(error).
      type: str
    repo_tags:
      description: Tags of the wanted image.
      type: list
    labels:
      description: Labels of the wanted image (its config's C(Labels)), e.g. C(ascendops.release).
      type: dict
    images:
      description: Every image in the archive (C(id), C(repo_tags), C(layers), C(labels)).
      type: list
    error:
      description: Why no image is returned (not a file, not an archive, the image not in it); null otherwise.
      type: str
    cached:
      description: Whether the archive's contents came from the cache.
      type: bool
"""

import json  # noqa: E402
import os  # noqa: E402

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402
from ansible_collections.ascendops.cluster.plugins.module_utils.docker_archive import (  # noqa: E402
    DockerArchiveError,
    choose_image,
    read_archive,
)
from ansible_collections.ascendops.cluster.plugins.module_utils.sha256_cache import (  # noqa: E402
    Sha256Cache,
    default_cache_file,
    lookup_terms,
)


def default_archive_cache_file(environ=None):
    """``$XDG_CACHE_HOME/ascendops/docker-archive.json``, beside file_sha256's cache."""
    return os.path.join(os.path.dirname(default_cache_file(environ)), "docker-archive.json")


def _archive_json(path):
    """What the archive holds, as the string the cache keeps (Sha256Cache keeps one string per file)."""
    return json.dumps(read_archive(path), sort_keys=True)


def archive_info(path, image=None, cache_file=None):
    """The lookup's answer for one archive (see RETURN); ``cache_file`` None or empty: nothing kept."""
    path = os.path.abspath(os.path.expanduser(path))
    out = {"path": path, "exists": os.path.isfile(path), "id": None, "repo_tags": [], "labels": {},
           "images": [], "error": None, "cached": False}
    if not out["exists"]:
        out["error"] = f"{path} is not a file on the controller."
        return out
    # The file's identity decides whether the kept contents are still this file's (file_sha256's rule).
    cache = Sha256Cache(cache_file, hasher=_archive_json)
    try:
        kept = cache.digest(path)
        images = json.loads(kept["sha256"])
        out["cached"] = kept["cached"]
    except DockerArchiveError as exc:
        out["error"] = str(exc)
        return out
    except OSError as exc:
        out["error"] = f"{path} cannot be read: {exc.strerror}."
        return out
    finally:
        cache.save()
    out["images"] = images
    try:
        chosen = choose_image(path, images, image)
    except DockerArchiveError as exc:
        out["error"] = str(exc)
        return out
    out.update(id=chosen["id"], repo_tags=chosen["repo_tags"], labels=chosen["labels"])
    return out


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        try:
            flat = lookup_terms("docker_archive", terms, kwargs, known=("image", "cache_file"))
        except ValueError as exc:
            raise AnsibleLookupError(str(exc)) from None
        if len(flat) != 1:
            raise AnsibleLookupError(f"docker_archive: give one archive path, got {len(flat)}")
        cache_file = kwargs.get("cache_file")
        cache_file = default_archive_cache_file() if cache_file is None else cache_file
        return [archive_info(str(flat[0]), kwargs.get("image") or None, cache_file)]
