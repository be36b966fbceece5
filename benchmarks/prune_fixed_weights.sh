#!/usr/bin/env bash
# What pruning the phrase table costs at the tuned weights of the full system, without re-tuning:
# for each size K, the table pruned to each source's K best targets by the RNN (mosesrnn prune), by
# p(e|f), by the decoder's own weighted sum (prune --weights), and by Moses itself at load time
# (table-limit=K); each decoded on the test set with the full system's tuned weights. Prints lines
# kept, Moses' peak memory and time, and test BLEU (sacreBLEU, tok none, as `mosesrnn tune`).
# A screen, not the verdict: the verdict re-tunes each pruned system three times (moses_ladder.sh's K).
#
#   benchmarks/prune_fixed_weights.sh TUNED_INI SCORED_TABLE WORK K...
#
# TUNED_INI: a tuned moses.ini whose phrase table is SCORED_TABLE (e.g. WORK/tune/system-run1/moses.ini
# of moses_ladder.sh). Needs $MOSES_BIN (mosesdecoder/bin) and the shared data beside the repository.
set -euo pipefail
INI=$(realpath "$1"); SCORED=$(realpath "$2"); WORK=$3; shift 3
DATA=$(realpath "$(dirname "$0")/../../shared/data/tatoeba-moses-en-fr")
: "${MOSES_BIN:?set MOSES_BIN to mosesdecoder/bin}"
mkdir -p "$WORK" && cd "$WORK"

decode() {  # NAME INI: decode the test set, print the row
  /usr/bin/time -o "$1.time" -f "%M %e" "$MOSES_BIN/moses" -f "$2" -threads 1 -input-file "$DATA/test.tok.en" \
      > "$1.out" 2> "$1.log"
  read -r kb seconds < "$1.time"
  bleu=$(sacrebleu "$DATA/test.tok.fr" -i "$1.out" -tok none -b 2> "$1.bleu.log")  # its tokenisation warnings
  awk -v name="$1" -v lines="$3" -v kb="$kb" -v s="$seconds" -v n="$(wc -l < "$DATA/test.tok.en")" -v bleu="$bleu" \
      'BEGIN { printf "| %s | %s | %d MB | %.1f | %s |\n", name, lines, kb / 1024, n / s, bleu }'
}

echo "| system | table lines | Moses peak memory | sentences/s | test BLEU |"
echo "|---|---|---|---|---|"
decode full "$INI" "$(zcat "$SCORED" | wc -l)"
for K in "$@"; do
  mosesrnn prune "$SCORED" --top "$K" -o "rnn-top$K.gz" -q
  mosesrnn prune "$SCORED" --top "$K" --column 2 -o "pef-top$K.gz" -q
  mosesrnn prune "$SCORED" --top "$K" --weights "$INI" -o "decoder-top$K.gz" -q
  for method in rnn pef decoder; do
    mosesrnn moses-ini "$INI" --table "$PWD/$method-top$K.gz" -o "$method-top$K.ini"
    decode "$method-top$K" "$method-top$K.ini" "$(zcat "$method-top$K.gz" | wc -l)"
  done
  sed "s/table-limit=[0-9]*/table-limit=$K/" "$INI" > "table-limit$K.ini"
  decode "table-limit$K" "table-limit$K.ini" "(all, $K per source loaded)"
done
