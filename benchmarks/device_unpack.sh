#!/usr/bin/env bash
# Here, after the device calls: put back together what benchmarks/device_fetch.sh sent in parts.
#
#   bash benchmarks/device_unpack.sh DEST FOLDER...
#
# FOLDER...: where each call's files landed (the device tool's files_at); one of them holds MANIFEST.txt. Every
# part is checked against its sha256, then the gzipped tar is unpacked into DEST (the report, the logs, models/).
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,7p' "$0" >&2; exit 2; }
DEST=$1; shift
MANIFEST=$(find "$@" -maxdepth 1 -name MANIFEST.txt | head -1)
[ -n "$MANIFEST" ] || { echo "device_unpack: no MANIFEST.txt in $*" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for folder in "$@"; do find "$folder" -maxdepth 1 -name 'part-*' -exec cp -n {} "$WORK/" \; ; done
grep -v '^#' "$MANIFEST" > "$WORK/sums"
missing=$(cd "$WORK" && awk '{print $2}' sums | while read -r part; do [ -f "$part" ] || echo "$part"; done)
[ -z "$missing" ] || { echo "device_unpack: missing $(echo $missing): fetch them with device_fetch.sh" >&2; exit 2; }
(cd "$WORK" && sha256sum --quiet -c sums) || { echo "device_unpack: a part differs from MANIFEST.txt" >&2; exit 2; }
mkdir -p "$DEST"
cat $(awk -v w="$WORK" '{print w "/" $2}' "$WORK/sums") | gzip -dc | tar -x -C "$DEST"
echo "device_unpack: $(wc -l < "$WORK/sums") parts into $DEST: $(ls "$DEST" | tr '\n' ' ')"
