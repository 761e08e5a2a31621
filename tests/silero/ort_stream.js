// ort_stream.js: runs a Silero VAD ONNX model with ONNX Runtime CPU (npm
// onnxruntime-node) chunk by chunk over an audio file, the state carried from
// each call's outputs into the next call's inputs, as the VAD libraries do.
//
//   NODE_PATH=build/ort/node_modules node ort_stream.js MODEL AUDIO.f32 SR CHUNK CONTEXT OUT.f32 IN=OUT:SHAPE...
//
// AUDIO.f32: raw float32 samples.  Each call's `input` [1, CONTEXT + CHUNK]
// holds the last CONTEXT samples of the previous call's input (zeros at the
// start; Silero v5 and v6 want 64 at 16 kHz, 32 at 8 kHz) and the next CHUNK
// samples; `sr` is SR (int64 scalar; not fed to a model without that input,
// such as silero_vad_half.onnx); every IN=OUT:SHAPE names a state input
// of that shape (dims joined by 'x', e.g. 2x1x64), zeros at the start, and
// the output the next call reads it from.  A tail
// shorter than CHUNK is dropped.  OUT.f32 gets per call: output 0 (the speech
// probability) and then every pair's OUT, as float32.  Prints `chunks=N`.
// With BENCH=REPS in the environment, times REPS passes over the audio
// instead and prints `ort_us_per_chunk=MEDIAN` (median pass / chunks).
'use strict';
const fs = require('fs');

async function main() {
	const [model, audio, sr, chunk, context, out, ...pairs] = process.argv.slice(2);
	const ort = require('onnxruntime-node');
	const sess = await ort.InferenceSession.create(model, {
		intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
		graphOptimizationLevel: 'all',
	});
	const buf = fs.readFileSync(audio);
	const x = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
	const N = Number(chunk), C = Number(context);
	const shapes = {};
	const st = pairs.map((p) => {
		const m = /^([^=]+)=([^:]+):([0-9x]+)$/.exec(p);
		if (!m)
			throw new Error('want IN=OUT:SHAPE, got ' + p);
		shapes[m[1]] = m[3].split('x').map(Number);
		return [m[1], m[2]];
	});
	const nchunks = Math.floor(x.length / N);
	const hasSr = sess.inputNames.includes('sr');
	const run = async (record) => {
		const rec = [];
		let state = {};
		for (const [i] of st) {
			const n = shapes[i].reduce((a, b) => a * b, 1);
			state[i] = new ort.Tensor('float32', new Float32Array(n), shapes[i]);
		}
		const inp = new Float32Array(C + N);
		for (let k = 0; k < nchunks; k++) {
			inp.copyWithin(0, N, N + C);    // the last C samples of the previous input
			if (k === 0)
				inp.fill(0, 0, C);
			inp.set(x.subarray(k * N, (k + 1) * N), C);
			const feeds = { input: new ort.Tensor('float32', inp.slice(), [1, C + N]) };
			if (hasSr)
				feeds.sr = new ort.Tensor('int64', BigInt64Array.from([BigInt(sr)]), []);
			for (const [i] of st)
				feeds[i] = state[i];
			const r = await sess.run(feeds);
			const next = {};
			for (const [i, o] of st)
				next[i] = new ort.Tensor('float32', r[o].data.slice(), shapes[i]);
			state = next;
			if (record) {
				rec.push(r[sess.outputNames[0]].data[0]);
				for (const [, o] of st)
					for (const v of r[o].data)
						rec.push(v);
			}
		}
		return rec;
	};
	if (process.env.BENCH) {
		await run(false);
		const t = [];
		for (let i = 0; i < Number(process.env.BENCH); i++) {
			const t0 = process.hrtime.bigint();
			await run(false);
			t.push(Number(process.hrtime.bigint() - t0) / 1e3 / nchunks);
		}
		t.sort((a, b) => a - b);
		console.log('ort_us_per_chunk=' + t[Math.floor(t.length / 2)].toFixed(2) + ' chunks=' + nchunks);
		return;
	}
	const rec = await run(true);
	fs.writeFileSync(out, Buffer.from(new Float32Array(rec).buffer));
	console.log('chunks=' + nchunks);
}

main().catch((e) => { console.error('ort_error=' + String(e.message || e).split('\n')[0]); process.exit(3); });
