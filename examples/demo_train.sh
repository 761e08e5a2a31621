#!/bin/sh
# demo_train.sh: what `make demo-train` runs after building cellc (the
# Makefile installs Debian's dataset-fashion-mnist first; this script
# installs nothing).
#
# Trains examples/fashion_lstm.cell and examples/fashion_momentum_lstm.cell
# on Fashion-MNIST read row by row (28 steps of 28 pixels, scaled to [0, 1])
# with the training program cellc emits beside each model
# (`cellc compile --train`, `make NAME_train`), evaluates on the 10000 test
# images after every epoch and prints each model's test accuracy and time.
# Everything lands in build/demo-train/NAME/: the epoch log (epoch.csv), the
# per-step log (steps.csv), the checkpoint, ||dL/dh_t|| of the last batch of
# each epoch (grad_norms.csv) and the plots (loss.svg, grad_norms.svg).
#
# Environment (defaults in brackets):
#   FASHION_MNIST  directory of the IDX files, gzipped or not
#                  [/usr/share/datasets/fashion-mnist, Debian's package]
#   DEMO_EPOCHS    epochs per model [3]     DEMO_BATCH  batch size [128]
#   DEMO_LR        Adam learning rate [0.001]
#   DEMO_PIXELS=1  also the permuted pixel-by-pixel task (784 steps of one
#                  pixel, a fixed permutation) with the momentum LSTM, for
#                  DEMO_PIXEL_STEPS optimiser steps [500] (28 times slower
#                  per example than rows)
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
cellc="$top/build/cellc"
out="$top/build/demo-train"
src=${FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
epochs=${DEMO_EPOCHS:-3}
batch=${DEMO_BATCH:-128}
lr=${DEMO_LR:-0.001}

mkdir -p "$out/data"
# The IDX files, uncompressed once (Debian ships them gzipped).
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
	if [ -s "$out/data/$f" ]; then
		continue
	elif [ -f "$src/$f" ]; then
		cp "$src/$f" "$out/data/$f"
	elif [ -f "$src/$f.gz" ]; then
		gzip -dc "$src/$f.gz" > "$out/data/$f.tmp" && mv "$out/data/$f.tmp" "$out/data/$f"
	else
		echo "demo_train.sh: no $src/$f(.gz): install dataset-fashion-mnist or set FASHION_MNIST" >&2
		exit 2
	fi
done
data="--train-data $out/data/train-images-idx3-ubyte --train-labels $out/data/train-labels-idx1-ubyte \
--test-data $out/data/t10k-images-idx3-ubyte --test-labels $out/data/t10k-labels-idx1-ubyte --scale"

# train NAME MODEL.cell INPUT-OPTIONS EXTRA-OPTIONS: compile, build, run.
train() {
	name=$1 model=$2 input=$3 extra=$4
	dir="$out/$name"
	rm -rf "$dir"
	echo
	echo "== cellc compile $model --train --loss ce -o build/demo-train/$name"
	"$cellc" compile "$model" -o "$dir" --name "$name" --train --loss ce
	make -s -C "$dir" CELLRT="$top" "${name}_train"
	echo "== ${name}_train $input --optimizer adam --lr $lr --batch $batch $extra"
	# shellcheck disable=SC2086 # the option strings are word lists
	"$dir/${name}_train" $data $input --optimizer adam --lr "$lr" --batch "$batch" --seed 1 \
		--clip 1.0 --log "$dir/steps.csv" --epoch-log "$dir/epoch.csv" \
		--checkpoint "$dir/checkpoint.weights" --grad-norms "$dir/grad_norms.csv" --plot "$dir" $extra
	echo "-- $name: epoch log (epoch,train_loss,test_loss,test_acc,seconds)"
	cat "$dir/epoch.csv"
}

train fashion_lstm "$top/examples/fashion_lstm.cell" "--input rows" "--epochs $epochs"
train fashion_momentum_lstm "$top/examples/fashion_momentum_lstm.cell" "--input rows" "--epochs $epochs"

if [ "${DEMO_PIXELS:-0}" = 1 ]; then
	# the same momentum LSTM reading one pixel per step
	sed 's/f32\[seq, batch, 28\]/f32[seq, batch, 1]/; s/model fashion_momentum_lstm/model pixels_momentum_lstm/' \
		"$top/examples/fashion_momentum_lstm.cell" > "$out/pixels_momentum_lstm.cell"
	train pixels_momentum_lstm "$out/pixels_momentum_lstm.cell" "--input pixels --permute 7" \
		"--epochs 1 --max-steps ${DEMO_PIXEL_STEPS:-500}"
fi

echo
echo "== test accuracy after the last epoch (last line of each epoch log)"
for name in fashion_lstm fashion_momentum_lstm pixels_momentum_lstm; do
	[ -f "$out/$name/epoch.csv" ] || continue
	tail -n 1 "$out/$name/epoch.csv" | awk -F, -v n="$name" \
		'{ printf "%-24s test accuracy %s after epoch %s (%s s)\n", n, $4, $1, $5 }'
done
