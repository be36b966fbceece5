#!/usr/bin/env bash
# Fix NPLM's hidden-layer choice in a Moses built --with-nplm, and rebuild what reads it:
#   moses_integration/fix-nplm.sh [PREFIX]     # PREFIX as given to build-moses.sh (default ~/moses)
#
# The bug (rsennrich/nplm src/neuralNetwork.h): neuralNetwork builds its propagator from a default model,
# before the file is read, and the propagator decides then whether to skip the second hidden layer, from
# that model's num_hidden, which the default constructor leaves uninitialised. The choice is never made
# again, so it depends on whatever the heap held: in a fresh process (testNeuralLM) it is usually 0, and a
# two-hidden-layer file is evaluated with one layer; in Moses, with a KenLM loaded before, it is usually
# not, and a one-hidden-layer file (NPLM's num_hidden 0 form, what `lm export` and `bilm export` write, what
# Moses' own NPLM scripts write) is evaluated through an empty second layer: every n-gram's score then
# depends on its predicted word alone. Moses' NeuralLM and BilingualNPLM both read NPLM this way.
# nplm-skip-hidden.patch decides again once the file is read. Safe to rerun (an applied patch is kept);
# rebuilding takes a few minutes (only what includes the header is compiled again).
set -euo pipefail
PREFIX=${1:-$HOME/moses}
HERE=$(cd "$(dirname "$0")" && pwd)
NPLM=$PREFIX/nplm MOSES=$PREFIX/mosesdecoder
[[ -f $NPLM/src/neuralNetwork.h && -x $MOSES/bjam ]] || { echo "no NPLM and Moses sources under $PREFIX" >&2; exit 1; }
if grep -q 'prop.skip_hidden = (m->num_hidden == 0);' "$NPLM/src/neuralNetwork.h"; then
  echo "NPLM in $NPLM already has the fix"
else
  patch -p1 -d "$NPLM" < "$HERE/nplm-skip-hidden.patch"
fi
JOBS=$(nproc)
rm -f "$NPLM"/src/*.o "$NPLM"/src/libnplm.{a,so} "$NPLM/src/testNeuralLM"  # NPLM's Makefile ignores headers
make -C "$NPLM/src" -j"$JOBS" libnplm.a libnplm.so testNeuralLM BOOST=/usr EIGEN=/usr/include/eigen3 \
  > "$PREFIX/nplm-fix.log" 2>&1 || { echo "NPLM build failed: see $PREFIX/nplm-fix.log" >&2; exit 1; }
mkdir -p "$NPLM/lib" "$NPLM/bin"
cp "$NPLM"/src/libnplm.{a,so} "$NPLM/lib/"; cp "$NPLM/src/testNeuralLM" "$NPLM/bin/"
(cd "$MOSES" && ./bjam -j"$JOBS" --with-boost=/usr --with-cmph=/usr --with-xmlrpc-c=/usr --with-nplm="$NPLM" -q) \
  > "$PREFIX/moses-fix.log" 2>&1 || { echo "Moses build failed: see $PREFIX/moses-fix.log" >&2; exit 1; }
echo "fixed: $NPLM (testNeuralLM, libnplm) and $MOSES/bin/moses rebuilt"
