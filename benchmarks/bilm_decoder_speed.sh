#!/bin/bash
# Moses' decoding speed and memory with and without the joint model inside the decoder (BilingualNPLM), on the
# first N sentences of a test set with T threads, for the feature's settings that trade memory for speed:
#   benchmarks/bilm_decoder_speed.sh TUNED_INI BILM.nplm TEST_SOURCE [N] [T]    (moses from $MOSES_BIN or PATH)
# Rows: the system; + BilingualNPLM with Moses' defaults (premultiply, a 1,000,000-entry n-gram cache per
# thread); without premultiplying; without the cache; a 10,000,000-entry cache. Each prints its wall time and
# peak memory (GNU time) and the sentences per second of decoding proper (Moses' "Translation took X seconds
# total" lines, loading excluded, summed over the threads' sentences: per-thread speed).
set -euo pipefail
INI=$1 NPLM=$2 SOURCE=$3 N=${4:-100} THREADS=${5:-1}
MOSES=${MOSES_BIN:+$MOSES_BIN/}moses
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
head -n "$N" "$SOURCE" > "$WORK/input"
cp "$INI" "$WORK/base.ini"
mosesrnn moses-ini "$WORK/base.ini" --bilm "$NPLM" -o "$WORK/bilm.ini" 2>/dev/null
variant() {  # NAME SETTINGS: bilm.ini with SETTINGS appended to its BilingualNPLM line
  sed "/^BilingualNPLM /s/\$/ $2/" "$WORK/bilm.ini" > "$WORK/$1.ini"
}
variant bilm-no-premultiply premultiply=false
variant bilm-no-cache cache_size=0
variant bilm-cache-10M cache_size=10000000
for cfg in base bilm bilm-no-premultiply bilm-no-cache bilm-cache-10M; do
  /usr/bin/time -f "$cfg: %e s wall, %M KB peak" "$MOSES" -f "$WORK/$cfg.ini" -input-file "$WORK/input" \
    -threads "$THREADS" > "$WORK/$cfg.out" 2> "$WORK/$cfg.log" || { tail -5 "$WORK/$cfg.log"; exit 1; }
  tail -1 "$WORK/$cfg.log"
  python3 -c "import re,sys; t=[float(m) for m in re.findall(r'Translation took ([0-9.]+) seconds total', open(sys.argv[1]).read())]; print(f'{sys.argv[2]}: {len(t)} sentences, {len(t)/sum(t):.1f} sentences/s decoding')" "$WORK/$cfg.log" "$cfg"
  if [[ $cfg != base ]] && ! cmp -s "$WORK/bilm.out" "$WORK/$cfg.out"; then
    echo "$cfg: translations differ from bilm's"
  fi
done
