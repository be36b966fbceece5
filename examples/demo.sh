#!/usr/bin/env bash
# The main job end to end on the bundled example data (a slice of a real en->fr Moses system):
# shortlists -> train a small RNN Encoder-Decoder -> score the phrase table -> moses.ini ->
# the Moses commands (binarize, MERT) it would run next. Run it through `make demo`.
# Training is shown on the slice (a minute: it learns little there); scoring and translating use the
# model shipped in examples/model/, trained 20 minutes on the whole Tatoeba table (its README says how).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=demo-output
rm -rf "$OUT" && mkdir -p "$OUT"
TABLE=examples/phrase-table.gz
MODEL=examples/model/tatoeba-small.pt

echo "== 1. shortlists (the paper's 15,000 most frequent words per language)"
mosesrnn vocab "$TABLE" -o "$OUT/vocab" --size 15000

echo "== 2. train the RNN Encoder-Decoder (small preset, a short run)"
mosesrnn train "$TABLE" -o "$OUT/model" --vocab "$OUT/vocab" --preset small \
    --max-updates 400 --valid-every 200 --valid-share 0.05 --threads 1  # 1 thread: robust on a busy machine
echo "the loss curve (train and validation NLL, validation vs unigram perplexity): $OUT/model/loss.png"
echo "   400 updates on 6,229 lines learn little. Perplexity of the test set's French, this run's model:"
mosesrnn perplexity -m "$OUT/model/best.pt" examples/test.tok.en examples/test.tok.fr
echo "   and the shipped model's (trained 20 minutes on the whole table; examples/model/README.md):"
mosesrnn perplexity -m "$MODEL" examples/test.tok.en examples/test.tok.fr

echo "== 3. score with the shipped model: append exp(log p(target|source)) and e^(unknown words) to every line"
mosesrnn score "$TABLE" -m "$MODEL" --features rnn,unk -o "$OUT/phrase-table.rnn.gz"
echo "first lines of the scored table:"
python -c "import gzip,sys; [sys.stdout.write(l) for _, l in zip(range(3), gzip.open('$OUT/phrase-table.rnn.gz','rt'))]"

echo "== 4. moses.ini: point TranslationModel0 at the scored table, two more features and weights"
echo "   (every path absolute, as mert-moses.pl needs: it decodes inside its working directory)"
mosesrnn moses-ini examples/moses.ini --absolute-paths --relative-to examples -o "$OUT/moses.abs.ini"
mosesrnn moses-ini examples/moses.ini --table "$PWD/$OUT/phrase-table.rnn.gz" --absolute-paths \
    --relative-to examples -o "$OUT/moses.rnn.ini"
diff examples/moses.ini "$OUT/moses.rnn.ini" || true

echo "== 5. the Moses commands that come next (Moses is not needed for this demo; on your system,"
echo "   with its language model and reordering table, they run as printed)"
mosesrnn binarize "$PWD/$OUT/phrase-table.rnn.gz" --format compact --dry-run
echo "   BLEU: the text is tokenised and lowercased already (Moses' tokenizer), so --tokenize none"
echo "   tune: Moses' MERT three times for the system and the baseline, the baseline's 100-best lists"
echo "   re-tuned as the control (what a second tuning pass adds by itself), and the report with its"
echo "   significance (README's Table 1 route; with a CSLM: --rescore cslm --rescore-baseline cslm --lm LM)"
mosesrnn tune "$PWD/examples/dev.tok.en" "$PWD/examples/dev.tok.fr" "$PWD/$OUT/moses.rnn.ini" \
    --baseline "$PWD/$OUT/moses.abs.ini" --test-src "$PWD/examples/test.tok.en" \
    --test-ref "$PWD/examples/test.tok.fr" --runs 3 --rescore-baseline \
    --work-dir "$PWD/$OUT/tune" --dry-run

echo "== 6. the same from Python: examples/api_example.py"
python examples/api_example.py "$MODEL"
echo "== done: see $OUT/ (model/best.pt, model/loss.png, phrase-table.rnn.gz and its .json, moses.rnn.ini)"
