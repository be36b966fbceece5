#!/usr/bin/env bash
# README's Table 1 and the pruning ladder on the shared Tatoeba en->fr system, with the commands a user runs,
# in one tuning (mosesrnn tune: three MERT runs per system, the report with its significance):
#   baseline       the system as it is; baseline-rescored: its 100-best lists rescored with the CSLM (+CSLM)
#   system         the rnn and unk columns in the table; rescored: its 100-best lists with the CSLM (+CSLM+RNN)
#   and the control of each rescored stage (retuned, baseline-retuned: the same lists re-tuned, no feature)
#   rnn-topK       the table pruned to each source's K best targets by the RNN (mosesrnn prune)
#   pef-topK       ... by p(e|f), what a user prunes by today
#   table-limitK   ... by Moses itself at load time (table-limit=K, its weighted score)
# every pruned system with the rnn and unk columns, as the system. Then Moses' peak memory loading each
# system, and the tables' sizes; `mosesrnn mert-report WORK/tune --against system` compares the pruned
# systems with the full one.
#
#   benchmarks/moses_ladder.sh RNN_MODEL CSLM_MODEL WORK [RUNS] [THREADS] [K...]   (K: default none)
#
# DEV_LINES=N tunes on the first N dev sentences only (fewer CPU hours, a noisier MERT); the test set is whole.
#
# Needs a Moses build ($MOSES_BIN, $MOSES_SCRIPTS: mosesdecoder/bin and mosesdecoder/scripts) and the
# project's shared data beside the repository. The phrase table is first filtered to the phrases the
# dev and test sentences can use (Moses' own filter-model-given-input.pl), which changes no translation
# of those sentences (and no per-source pruning) and spares scoring the rest. Rerun to continue.
set -euo pipefail
RNN=$(realpath "$1"); LM=$(realpath "$2"); WORK=$3; RUNS=${4:-3}; THREADS=${5:-2}
shift $(( $# < 5 ? $# : 5 )); SIZES=${*:-}
DATA=$(realpath "$(dirname "$0")/../../shared/data/tatoeba-moses-en-fr")
: "${MOSES_BIN:?set MOSES_BIN to mosesdecoder/bin}" "${MOSES_SCRIPTS:?set MOSES_SCRIPTS to mosesdecoder/scripts}"
mkdir -p "$WORK" && cd "$WORK"

mosesrnn moses-ini "$DATA/system/moses.ini" --absolute-paths --relative-to "$DATA/system" -o system.abs.ini
if [ ! -f filtered/moses.ini ]; then
  cat "$DATA/dev.tok.en" "$DATA/test.tok.en" > devtest.en
  "$MOSES_SCRIPTS/training/filter-model-given-input.pl" filtered.tmp system.abs.ini devtest.en > filter.log 2>&1
  mv filtered.tmp filtered
fi
sed "s#$PWD/filtered.tmp/#$PWD/filtered/#" filtered/moses.ini > baseline.ini  # absolute paths, filtered/
SCORED=$PWD/table.rnn-unk.gz
[ -f "$SCORED" ] || mosesrnn score filtered/phrase-table.0-0.1.1.gz -m "$RNN" --features rnn,unk --threads "$THREADS" \
    -o "$SCORED"
mosesrnn moses-ini baseline.ini --table "$SCORED" -o system.ini
ALSO=()
for K in $SIZES; do
  mosesrnn prune "$SCORED" --top "$K" -o "$PWD/rnn-top$K.gz" -q
  mosesrnn prune "$SCORED" --top "$K" --column 2 -o "$PWD/pef-top$K.gz" -q
  mosesrnn moses-ini baseline.ini --table "$PWD/rnn-top$K.gz" -o "rnn-top$K.ini"
  mosesrnn moses-ini baseline.ini --table "$PWD/pef-top$K.gz" -o "pef-top$K.ini"
  sed "s/table-limit=[0-9]*/table-limit=$K/" system.ini > "table-limit$K.ini"
  ALSO+=(--also "rnn-top$K" "rnn-top$K.ini" --also "pef-top$K" "pef-top$K.ini" --also "table-limit$K" "table-limit$K.ini")
done
DEV_SRC=$DATA/dev.tok.en DEV_REF=$DATA/dev.tok.fr
if [ -n "${DEV_LINES:-}" ]; then
  head -n "$DEV_LINES" "$DEV_SRC" > dev.en && head -n "$DEV_LINES" "$DEV_REF" > dev.fr
  DEV_SRC=$PWD/dev.en DEV_REF=$PWD/dev.fr
fi
mosesrnn tune "$DEV_SRC" "$DEV_REF" system.ini --baseline baseline.ini \
    --test-src "$DATA/test.tok.en" --test-ref "$DATA/test.tok.fr" --runs "$RUNS" --threads "$THREADS" \
    --rescore cslm --rescore-baseline cslm --lm "$LM" --work-dir tune ${ALSO[@]+"${ALSO[@]}"}
if [ -n "$SIZES" ]; then
  head -200 "$DATA/test.tok.en" > memory-probe.en
  : > memory.txt
  for ini in baseline.ini system.ini rnn-top*.ini pef-top*.ini table-limit*.ini; do
    /usr/bin/time -o time.txt -f "%M KB peak, %e s" "$MOSES_BIN/moses" -f "$ini" -threads 1 \
        -input-file memory-probe.en > /dev/null 2>&1
    echo "$ini: $(cat time.txt)" >> memory.txt
  done
  for table in "$SCORED" rnn-top*.gz pef-top*.gz; do echo "$table: $(zcat "$table" | wc -l) lines"; done > sizes.txt
  mosesrnn mert-report tune --against system | head -20
  cat sizes.txt memory.txt
fi
