#!/bin/bash
# Moses' decoding speed and memory with and without the joint model inside the decoder (BilingualNPLM, its
# defaults: premultiply, a 1,000,000-entry cache), one thread, on the first N sentences of a test set:
#   benchmarks/bilm_decoder_speed.sh TUNED_INI BILM.nplm TEST_SOURCE [N]      (moses from $MOSES_BIN or PATH)
# Prints, for each, the wall time and peak memory (GNU time) and the sentences per second of decoding proper
# (Moses' "Translation took X seconds total" lines: loading excluded).
set -euo pipefail
INI=$1 NPLM=$2 SOURCE=$3 N=${4:-100}
MOSES=${MOSES_BIN:+$MOSES_BIN/}moses
WORK=$(mktemp -d)
head -n "$N" "$SOURCE" > "$WORK/input"
cp "$INI" "$WORK/base.ini"
mosesrnn moses-ini "$WORK/base.ini" --bilm "$NPLM" -o "$WORK/bilm.ini" 2>/dev/null
for cfg in base bilm; do
  /usr/bin/time -f "$cfg: %e s wall, %M KB peak" "$MOSES" -f "$WORK/$cfg.ini" -input-file "$WORK/input" -threads 1 \
    > "$WORK/$cfg.out" 2> "$WORK/$cfg.log" || { tail -5 "$WORK/$cfg.log"; exit 1; }
  tail -1 "$WORK/$cfg.log"
  python3 -c "import re,sys; t=[float(m) for m in re.findall(r'Translation took ([0-9.]+) seconds total', open(sys.argv[1]).read())]; print(f'{sys.argv[2]}: {len(t)} sentences, {len(t)/sum(t):.1f} sentences/s decoding')" "$WORK/$cfg.log" "$cfg"
done
rm -rf "$WORK"
