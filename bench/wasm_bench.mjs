// wasm_bench.mjs: Silero VAD per 512-sample chunk in Node, single thread, the
// module cellc generates (NAME.mjs and NAME.wasm: cellc compile --js, make
// TARGET=wasm32) against onnxruntime-web's WebAssembly backend (SIMD, one
// thread) on the same ONNX file, in one process, rounds alternating.
// bench/wasm_bench.py builds what it needs and runs it.
//
//   node wasm_bench.mjs MJS WEIGHTS ORT_DIST MODEL.onnx AUDIO.f32 ROUNDS PASSES
//
// Each pass streams the whole recording (its 512-sample chunks after 64
// samples of context, the state carried: cellc's instance keeps it, ONNX
// Runtime's is fed back from its outputs); a round times PASSES passes of
// each side.  Prints key=value lines: each side's median over the rounds of
// its median pass in microseconds per chunk, wall and process CPU time, and
// the largest difference of the two sides' probabilities.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [mjs, weights, ortDist, onnx, audio, rounds0, passes0] = process.argv.slice(2);
const ROUNDS = Number(rounds0), PASSES = Number(passes0), CHUNK = 512, CTX = 64;
const buf = readFileSync(audio);
const x = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
const n = Math.floor(x.length / CHUNK);

const { createModel } = await import(pathToFileURL(path.resolve(mjs)));
const model = await createModel(path.resolve(weights));
const ort = await import(pathToFileURL(path.join(path.resolve(ortDist), 'ort.wasm.bundle.min.mjs')));
ort.env.wasm.numThreads = 1;
ort.env.wasm.simd = true;
ort.env.wasm.wasmPaths = pathToFileURL(path.resolve(ortDist) + '/').href;
const sess = await ort.InferenceSession.create(readFileSync(onnx), {executionProviders: ['wasm'],
								    graphOptimizationLevel: 'all'});
const sr = new ort.Tensor('int64', BigInt64Array.from([16000n]), []);

// one pass of each side: the probabilities of every chunk
function cellcPass() {
	const input = new Float32Array(CTX + CHUNK), p = new Float32Array(n);
	model.reset();
	for (let c = 0; c < n; c++) {
		input.copyWithin(0, CHUNK);
		input.set(x.subarray(c * CHUNK, (c + 1) * CHUNK), CTX);
		p[c] = model.step([input])[0][0];
	}
	return p;
}

async function ortPass() {
	const input = new Float32Array(CTX + CHUNK), p = new Float32Array(n);
	let state = new ort.Tensor('float32', new Float32Array(2 * 128), [2, 1, 128]);
	for (let c = 0; c < n; c++) {
		input.copyWithin(0, CHUNK);
		input.set(x.subarray(c * CHUNK, (c + 1) * CHUNK), CTX);
		const out = await sess.run({input: new ort.Tensor('float32', input.slice(), [1, CTX + CHUNK]), state, sr});
		state = out.stateN;
		p[c] = out.output.data[0];
	}
	return p;
}

const median = (a) => a.slice().sort((u, v) => u - v)[a.length >> 1];

// PASSES passes of f: [median wall, median CPU] microseconds per chunk, and the last pass's output
async function time(f) {
	const wall = [], cpu = [];
	let out = null;
	for (let k = 0; k < PASSES; k++) {
		const t0 = performance.now(), c0 = process.cpuUsage();
		out = await f();
		const c = process.cpuUsage(c0);
		wall.push((performance.now() - t0) * 1000 / n);
		cpu.push((c.user + c.system) / n);
	}
	return [median(wall), median(cpu), out];
}

await time(cellcPass);  // untimed: the engines compile the hot code
await time(ortPass);
const cw = [], cc = [], ow = [], oc = [];
let pc = null, po = null;
for (let r = 0; r < ROUNDS; r++) {
	let w, c;
	[w, c, pc] = await time(cellcPass);
	cw.push(w), cc.push(c);
	[w, c, po] = await time(ortPass);
	ow.push(w), oc.push(c);
}
let diff = 0;
for (let c = 0; c < n; c++)
	diff = Math.max(diff, Math.abs(pc[c] - po[c]));
console.log('chunks=' + n);
console.log('cellc_us_per_chunk=' + median(cw).toFixed(1) + ' cellc_cpu_us_per_chunk=' + median(cc).toFixed(1));
console.log('ort_us_per_chunk=' + median(ow).toFixed(1) + ' ort_cpu_us_per_chunk=' + median(oc).toFixed(1));
console.log('max_prob_diff=' + diff.toExponential(2));
model.destroy();
