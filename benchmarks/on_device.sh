#!/usr/bin/env bash
# The device check as a bare GPU host runs it: from the repository's root, with python3 and the carried bundle/
# (`make gpu-bundle` here, then `carry: ["bundle"]`). Nothing is installed but the bundle's wheels, into a scratch
# site; the project runs from the tree (PYTHONPATH), not installed.
#
#   bash benchmarks/on_device.sh OUTDIR [options]
#
#   --budget S        phase 1's budget: benchmarks/gpu_check.py on the bundle's data [240]
#   --train           phase 2 too (issue 53): train the models of TRAINING below on the GPU and keep them, each
#                     model's best.pt, loss.png and logs under OUTDIR/models/NAME/, a summary in OUTDIR/training.md
#   --train-only      phase 2 alone
#   --train-budget S  phase 2's budget: a trainer still running then is stopped [180]
#   --train-jobs N    trainers at once on the one GPU (they are launch-bound: each keeps its speed) [6]
#   --device D        cuda, or cpu for a rehearsal [cuda]
#   --quick           gpu_check's CI sizes (a rehearsal)
#   --copy-to DIR     pack OUTDIR (tar, gzip, 15-MiB parts beside it, OUTDIR.parts/) and copy to DIR (the device
#                     tool's $OUT) the report, the logs and as many parts as fit in one call's 8 files and 64 MiB;
#                     the rest: bash benchmarks/device_fetch.sh OUTDIR "$OUT" NEXT..., while the machine is warm
#
# Here, the parts of every call together: bash benchmarks/device_unpack.sh DEST FOLDER... (checks their sha256).
set -uo pipefail

usage() { sed -n '2,22p' "$0" >&2; exit 2; }
[ $# -ge 1 ] && [ "${1#-}" = "$1" ] || usage
OUTDIR=$1; shift
BUDGET=240 TRAIN=0 CHECK=1 TRAIN_BUDGET=180 JOBS=6 DEVICE=cuda QUICK="" COPY_TO=""
while [ $# -gt 0 ]; do
    case $1 in
        --budget) BUDGET=$2; shift 2 ;;
        --train) TRAIN=1; shift ;;
        --train-only) TRAIN=1 CHECK=0; shift ;;
        --train-budget) TRAIN_BUDGET=$2; shift 2 ;;
        --train-jobs) JOBS=$2; shift 2 ;;
        --device) DEVICE=$2; shift 2 ;;
        --quick) QUICK=--quick; shift ;;
        --copy-to) COPY_TO=$2; shift 2 ;;
        *) usage ;;
    esac
done

PY=${PYTHON:-python3}
DATA=bundle/data/tatoeba-moses-en-fr
SITE=${SITE:-/tmp/mosesrnn-site}
STARTED=$(date +%s)
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
log() { echo "on_device: $(( $(date +%s) - STARTED )) s: $*" | tee -a "$OUTDIR/on_device.log" >&2; }

if [ ! -f "$DATA/phrase-table.gz" ] || [ ! -f bundle/COMMIT ]; then
    echo "on_device: no bundle here ($PWD/$DATA): build it with \`make gpu-bundle\` beside ../shared, and carry it" \
         "(carry: [\"bundle\"])" | tee -a "$OUTDIR/on_device.log" >&2
    exit 2
fi

# -- the bundle's wheels into a scratch site; the project from the tree --------------------------------------------
mkdir -p "$SITE"
shopt -s nullglob
WHEELS=(bundle/wheels/*.whl)
if [ ${#WHEELS[@]} -gt 0 ]; then
    if "$PY" -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check --target "$SITE" \
            "${WHEELS[@]}" >> "$OUTDIR/on_device.log" 2>&1; then
        log "installed ${WHEELS[*]##*/} into $SITE"
    else  # a wheel for another Python (a rehearsal): the check runs on, gzip through zlib
        log "could not install ${WHEELS[*]##*/} (on_device.log says why): gzip through the standard library's zlib"
    fi
else
    log "no wheels in bundle/wheels: gzip through the standard library's zlib"
fi
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
"$PY" - <<'EOF' 2>&1 | tee -a "$OUTDIR/on_device.log" >&2
import os, platform, sys
import torch
import mosesrnn
from mosesrnn.io.gzip_stream import backend_name
print(f"on_device: python {platform.python_version()} ({sys.executable}); torch {torch.__version__}; "
      f"cuda {'available: ' + torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'not available'}; "
      f"gzip through {backend_name()}; mosesrnn from {os.path.dirname(mosesrnn.__file__)}; {os.cpu_count()} CPUs")
EOF
COMMIT=$(head -1 bundle/COMMIT)
STATUS=0

# -- phase 1: the device check -------------------------------------------------------------------------------------
if [ "$CHECK" = 1 ]; then
    log "phase 1: benchmarks/gpu_check.py --device $DEVICE --budget $BUDGET $QUICK (bundle built at $COMMIT)"
    timeout --kill-after=30 $(( BUDGET + 180 )) "$PY" benchmarks/gpu_check.py --device "$DEVICE" --budget "$BUDGET" \
        --data "$DATA" --commit "$COMMIT, from bundle/COMMIT" --out "$OUTDIR/gpu-report.md" $QUICK \
        > "$OUTDIR/gpu_check.stdout" 2> "$OUTDIR/gpu_check.stderr"
    STATUS=$?
    tail -3 "$OUTDIR/gpu_check.stderr" >&2
    log "phase 1 ended with status $STATUS"
fi

# -- phase 2: models trained on the GPU, kept (issue 53) -----------------------------------------------------------
# NAME|mosesrnn words (the data folder is $DATA; each also gets --device, --threads, -o and --restart): the one place
# that lists them. --quick (a rehearsal) trains 5 s each. Each validates on a share of its own training text, never
# on the dev set, on which `tune --select-on half` chooses (issue 59).
LONG=100s SHORT=80s
[ -n "$QUICK" ] && LONG=5s SHORT=5s
TRAIN_TEXT="$DATA/train.tok.en.gz $DATA/train.tok.fr.gz $DATA/train.align.gdfa.gz"
CORPUS="--corpus $DATA/train.tok.en.gz $DATA/train.tok.fr.gz"
# The attention encoder-decoder's sizes: docs/models.md (9.7M parameters, 12,000 words a side, a 39 MB best.pt).
ATTENTION="--encoder attention --preset small --vocab-size 12000 --embed-dim 128 --hidden-dim 448 --maxout-units 256
    --output-rank 128 --batch-size 128 --valid-share 0.015 --valid-every 500"
TRAINING=(
    "bilm-s2t|bilm train $TRAIN_TEXT --preset moses --max-time $LONG"
    "bilm-t2s|bilm train $TRAIN_TEXT --preset moses --max-time $LONG --direction target-to-source"
    "bilm-r2l|bilm train $TRAIN_TEXT --preset moses --max-time $LONG --right-to-left"
    "cslm|lm train $DATA/train.tok.fr.gz --valid-share 0.01 --preset moses --max-time $SHORT"
    "att-en-fr|train $CORPUS $ATTENTION --max-time $LONG"
    "att-fr-en|train $CORPUS $ATTENTION --max-time $LONG --direction target-to-source"
)

train_one() {  # NAME WORDS...: train into a scratch folder, keep best.pt, loss.png, train.jsonl and the log
    local name=$1; shift
    local work=$OUTDIR.work/$name kept=$OUTDIR/models/$name
    local threads=$(( $(nproc) / JOBS )); [ "$threads" -ge 1 ] || threads=1
    mkdir -p "$work" "$kept"
    local started=$(date +%s)
    # shellcheck disable=SC2086
    timeout --kill-after=20 "$TRAIN_LEFT" "$PY" -m mosesrnn "$@" --device "$DEVICE" --threads "$threads" \
        -o "$work" --restart > "$kept/train.log" 2>&1
    local status=$?
    for file in best.pt loss.png train.jsonl; do [ -f "$work/$file" ] && cp "$work/$file" "$kept/"; done
    echo "$status $(( $(date +%s) - started ))" > "$kept/status"
    echo "python3 -m mosesrnn $* --device $DEVICE --threads $threads -o $work --restart" > "$kept/command"
}

if [ "$TRAIN" = 1 ]; then
    log "phase 2: ${#TRAINING[@]} trainers, $JOBS at once, within $TRAIN_BUDGET s"
    PHASE2_STARTED=$(date +%s) running=0
    for entry in "${TRAINING[@]}"; do
        name=${entry%%|*}
        TRAIN_LEFT=$(( TRAIN_BUDGET - ($(date +%s) - PHASE2_STARTED) ))
        if [ "$TRAIN_LEFT" -lt 20 ]; then log "phase 2: $name skipped: $TRAIN_LEFT s of the budget left"; continue; fi
        # shellcheck disable=SC2086
        train_one "$name" ${entry#*|} &
        running=$(( running + 1 ))
        if [ "$running" -ge "$JOBS" ]; then wait -n; running=$(( running - 1 )); fi
    done
    wait
    "$PY" benchmarks/device_training.py "$OUTDIR/models" > "$OUTDIR/training.md" 2>> "$OUTDIR/on_device.log" \
        || { log "phase 2: benchmarks/device_training.py failed (on_device.log says why)"; STATUS=1; }
    cat "$OUTDIR/training.md" >&2
    # a trainer that ended in an error and kept no model failed (one stopped at the budget keeps its best.pt)
    FAILED=()
    for entry in "${TRAINING[@]}"; do
        name=${entry%%|*} kept=$OUTDIR/models/${entry%%|*}
        [ -f "$kept/status" ] || continue  # skipped, said above
        read -r code _ < "$kept/status"
        [ "$code" = 0 ] || [ -f "$kept/best.pt" ] || FAILED+=("$name")
    done
    if [ ${#FAILED[@]} -gt 0 ]; then
        log "phase 2: ${#FAILED[@]} of ${#TRAINING[@]} trainers failed: ${FAILED[*]} (their train.log under $OUTDIR/models/)"
        [ "$STATUS" != 0 ] || STATUS=1
    fi
    log "phase 2 ended"
fi

# -- what comes back ---------------------------------------------------------------------------------------------
if [ -n "$COPY_TO" ]; then
    bash benchmarks/device_fetch.sh --pack "$OUTDIR" "$COPY_TO"
fi
log "done"
exit "$STATUS"
