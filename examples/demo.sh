#!/bin/sh
# demo.sh: what `make demo` runs after building cellc.
#
# Compiles examples/lstm_classifier.onnx (an nn.LSTM classifier exported from
# PyTorch by make_lstm_classifier.py) to C in build/demo, builds the generated
# code with demo_main.c, runs it on the bundled input and prints its output
# next to PyTorch's.  Then `cellc verify` checks the same model against the
# bundled ONNX test data.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
out="$top/build/demo"
cellc="$top/build/cellc"
rm -rf "$out"
mkdir -p "$out"

echo "== cellc compile examples/lstm_classifier.onnx -o build/demo"
"$cellc" compile "$top/examples/lstm_classifier.onnx" -o "$out" --name lstm_classifier
ls -l "$out"

echo
echo "== building the generated code with examples/demo_main.c"
make -s -C "$out" CELLRT="$top"
cc -std=c11 -O2 -Wall -Wextra -Werror -I"$out" -I"$top/runtime" -I"$top/examples" \
	-o "$out/demo" "$top/examples/demo_main.c" "$out/lstm_classifier.o" \
	"$top/build/libcellrt.a" -lopenblas -lm -fopenmp

echo
echo "== running it"
(cd "$out" && ./demo lstm_classifier.weights)

echo
echo "== cellc verify against the bundled PyTorch output"
"$cellc" verify "$top/examples/lstm_classifier.onnx" --data "$top/examples/lstm_classifier"
