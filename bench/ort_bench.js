// ort_bench.js: times an ONNX model with ONNX Runtime CPU (npm onnxruntime-node).
//
//   NODE_PATH=build/ort/node_modules node ort_bench.js MODEL T I REPS THREADS B...
//
// One session per run: intraOpNumThreads = THREADS, interOpNumThreads = 1,
// sequential execution, all graph optimisations (ONNX Runtime's defaults
// otherwise), shared by every batch size B (creating it can take seconds for
// a traced export).  The input x [T, B, I] holds fixed pseudo-random values
// in [-1, 1); untimed runs warm up for 0.3 s (at least one), then REPS timed
// runs of session.run.
// Prints `B=.. ort_ms=MEDIAN min_ms=.. cpu_ms=.. reps=.. load_s=..` per B
// (cpu_ms: the process's CPU time per run, all threads; load_s:
// creating the session, which includes ONNX Runtime's graph optimisation),
// or `ort_error=MESSAGE` and exit status 3 when ONNX Runtime refuses the
// model or fails to run it.  With ORT_BENCH_OUT=PREFIX in the environment,
// output 0 of the last run at batch B is written to PREFIX_B.bin (raw
// float32) for bench/run.py's agreement check.
'use strict';

// untimed runs for this long first (at least one), as bench/time_cellc.c does
const WARMUP_S = 0.3;

function median(v) {
	const s = [...v].sort((a, b) => a - b);
	const n = s.length;
	return n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

async function main() {
	const [model, T, I, reps, threads, ...batches] = process.argv.slice(2);
	const ort = require('onnxruntime-node');
	const t0 = process.hrtime.bigint();
	let sess;
	try {
		sess = await ort.InferenceSession.create(model, {
			intraOpNumThreads: Number(threads), interOpNumThreads: 1,
			executionMode: 'sequential', graphOptimizationLevel: 'all',
		});
	} catch (e) {
		console.log('ort_error=' + String(e.message || e).split('\n')[0]);
		process.exit(3);
	}
	const loadS = Number(process.hrtime.bigint() - t0) / 1e9;
	for (const B of batches) {
		const n = Number(T) * Number(B) * Number(I);
		const x = new Float32Array(n);
		let seed = 7 >>> 0;
		for (let i = 0; i < n; i++) {
			seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
			x[i] = (seed >>> 8) / 8388608 - 1;
		}
		const feeds = {};
		feeds[sess.inputNames[0]] = new ort.Tensor('float32', x, [Number(T), Number(B), Number(I)]);
		const times = [], cpu = [];
		let res;
		const w0 = process.hrtime.bigint();
		for (let r = -1; r < Number(reps); r++) {
			if (r === 0 && Number(process.hrtime.bigint() - w0) / 1e9 < WARMUP_S)
				r = -1;
			const s = process.hrtime.bigint(), c = process.cpuUsage();
			try {
				res = await sess.run(feeds);
			} catch (e) {
				console.log('ort_error=' + String(e.message || e).split('\n')[0]);
				process.exit(3);
			}
			if (r >= 0) {
				times.push(Number(process.hrtime.bigint() - s) / 1e6);
				const u = process.cpuUsage(c);
				cpu.push((u.user + u.system) / 1e3);
			}
		}
		if (process.env.ORT_BENCH_OUT) {
			const d = res[sess.outputNames[0]].data;
			require('fs').writeFileSync(process.env.ORT_BENCH_OUT + '_' + B + '.bin',
				Buffer.from(d.buffer, d.byteOffset, d.byteLength));
		}
		console.log('B=' + B + ' ort_ms=' + median(times).toFixed(4) + ' min_ms=' +
			Math.min(...times).toFixed(4) + ' cpu_ms=' + median(cpu).toFixed(4) + ' reps=' + reps +
			' load_s=' + loadS.toFixed(3));
	}
}

main();
