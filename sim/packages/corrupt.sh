#!/usr/bin/env bash
# SIMULATION ONLY - damages a simulated Ascend .run package the way a bad download does: flips
# bytes inside the compressed payload (the header stays intact), so its sha256 no longer matches
# SHA256SUMS and `FILE --check` fails with "Error in SHA256 checksums" (exit 2).
#   usage: sim/packages/corrupt.sh FILE
set -euo pipefail
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: $0 FILE" >&2; exit 2; }
file=$1
skip=$(head -n 40 "$file" | sed -n 's/^skip="\([0-9]*\)"$/\1/p')
[ -n "$skip" ] || { echo "corrupt.sh: $file is not a makeself archive" >&2; exit 1; }
offset=$(head -n "$skip" "$file" | wc -c)
size=$(wc -c < "$file")
[ "$size" -gt $((offset + 64)) ] || { echo "corrupt.sh: $file has no payload to corrupt" >&2; exit 1; }
pos=$(( offset + (size - offset) / 2 ))
python3 - "$file" "$pos" <<'PY'
import sys
path, pos = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    f.seek(pos)
    data = f.read(16)
    f.seek(pos)
    f.write(bytes(b ^ 0xFF for b in data))
PY
echo "corrupted $file (16 bytes at offset $pos)"
