#!/usr/bin/env bash
# What comes back from a GPU host: a device call returns at most 8 files of 16 MiB, 64 MiB together, from $OUT. So
# OUTDIR (the device check's report, logs and trained models) travels as a gzipped tar cut into 15-MiB parts:
#
#   bash benchmarks/device_fetch.sh --pack OUTDIR DEST   # pack OUTDIR into OUTDIR.parts/ (part-00, part-01, ...,
#                                                        # MANIFEST.txt) and copy to DEST the report, the logs, the
#                                                        # manifest and the first parts that fit (on_device.sh
#                                                        # --copy-to does this)
#   bash benchmarks/device_fetch.sh OUTDIR DEST N...     # copy parts N... (at most 4 a call) to DEST: the next call,
#                                                        # on the machine still warm (it goes back 30 s after a call)
#
# Here, once every part is in: bash benchmarks/device_unpack.sh DEST FOLDER... (each call's files_at folder).
set -euo pipefail
PART=$((15 * 1024 * 1024)) LIMIT=$((63 * 1024 * 1024)) FILES=8

copy_parts() {  # DEST FIRST...: copy the parts named to DEST while they fit; print what is left
    local dest=$1; shift
    local bytes=$(du -cb "$dest" 2>/dev/null | tail -1 | cut -f1) files=$(find "$dest" -type f | wc -l) copied=()
    for number in "$@"; do
        local part=$PARTS/$(printf 'part-%02d' "$((10#$number))")
        [ -f "$part" ] || { echo "device_fetch: no $part" >&2; exit 2; }
        local size=$(stat -c %s "$part")
        if [ $((files + 1)) -gt $FILES ] || [ $((bytes + size)) -gt $LIMIT ]; then break; fi
        cp "$part" "$dest/"; files=$((files + 1)) bytes=$((bytes + size)) copied+=("$((10#$number))")
    done
    local total=$(find "$PARTS" -name 'part-*' | wc -l) last=${copied[${#copied[@]}-1]:--1} rest=()
    for ((n = last + 1; n < total; n++)); do rest+=("$n"); done
    echo "device_fetch: copied parts ${copied[*]:-none} of $total to $dest ($((bytes / 1024 / 1024)) MiB, $files files)"
    if [ ${#rest[@]} -gt 0 ]; then
        echo "device_fetch: left: parts ${rest[*]}; next call: bash benchmarks/device_fetch.sh $OUTDIR \"\$OUT\" ${rest[*]:0:4}"
    else
        echo "device_fetch: every part is out; here: bash benchmarks/device_unpack.sh DEST FOLDER... (each call's files)"
    fi
}

if [ "${1:-}" = --pack ]; then
    [ $# -eq 3 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
    OUTDIR=${2%/} DEST=$3 PARTS=${2%/}.parts
    rm -rf "$PARTS"; mkdir -p "$PARTS" "$DEST"
    tar -C "$OUTDIR" -cf - . | gzip -1 | split -b $PART -d -a 2 - "$PARTS/part-"
    ( cd "$PARTS" && {
        echo "# $(ls part-* | wc -l) parts of a gzipped tar of $OUTDIR ($(du -sh "$OUTDIR" | cut -f1)); sha256 each:"
        sha256sum part-*
        echo "# reassemble: bash benchmarks/device_unpack.sh DEST FOLDER..."; } > MANIFEST.txt )
    for file in gpu-report.md training.md on_device.log; do
        [ -f "$OUTDIR/$file" ] && cp "$OUTDIR/$file" "$DEST/"
    done
    cp "$PARTS/MANIFEST.txt" "$DEST/"
    copy_parts "$DEST" $(seq 0 $(( $(find "$PARTS" -name 'part-*' | wc -l) - 1 )))
else
    [ $# -ge 3 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
    OUTDIR=${1%/} DEST=$2 PARTS=${1%/}.parts; shift 2
    mkdir -p "$DEST"
    copy_parts "$DEST" "$@"
fi
