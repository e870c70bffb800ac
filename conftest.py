"""Make the collection importable as ansible_collections.ascendops.cluster for every test."""

import os
import sys

_ROOT = os.path.dirname(os.path.abspath(__file__))
_COLLECTIONS = os.path.join(_ROOT, ".collections")
_LINK = os.path.join(_COLLECTIONS, "ansible_collections", "ascendops", "cluster")

if not os.path.lexists(_LINK):
    os.makedirs(os.path.dirname(_LINK), exist_ok=True)
    os.symlink(os.path.join("..", "..", ".."), _LINK)
if _COLLECTIONS not in sys.path:
    sys.path.insert(0, _COLLECTIONS)
