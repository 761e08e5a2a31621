// check_kit.mjs: the checks of a model's JavaScript API (cellc compile --js,
// templates/model.mjs.in) on a kit that tests/test_wasm.py writes, the same
// in Node (run_node.mjs) and in Chromium (kit.html).
//
// A kit (kit.json, its tensors raw little-endian files beside it):
//   module, wasm, weights   URLs of NAME.mjs, NAME.wasm, NAME.weights
//   atol, rtol              |got - ref| <= atol + rtol |ref|
//   sets                    golden sets: {name, inputs, outputs}, each tensor
//                           {file, dtype, dims}; goldens from PyTorch or ONNX
//                           Runtime, never from cellc
//   step                    {inputs, outputs}: the time axis of each (null:
//                           none); model.step fed one step at a time (an
//                           input without the axis whole at every step)
//                           must give the goldens, as the testbench's step
//                           check does (per-step outputs stacked along the
//                           axis, the others after the last step); null:
//                           no step check
//   stream                  a --carry model (Silero VAD): {audio, chunk,
//                           context, ref, state, state_atol, state_rtol}, raw
//                           float32 audio, and ONNX Runtime's outputs of each
//                           call with the state carried (ort_stream.js: the
//                           probability, then the `state` floats of every
//                           carried state), which model.step's and
//                           model.state()'s must match
// check(createModel, kit, base) returns [{name, ok, detail}].

const TYPED = {1: Float32Array, 6: Int32Array, 7: BigInt64Array, 9: Uint8Array, 11: Float64Array};

async function bytes(url) {
	const r = await fetch(url);
	if (!r.ok)
		throw new Error(url + ': HTTP ' + r.status);
	return new Uint8Array(await r.arrayBuffer());
}

async function tensor(base, t) {
	const b = await bytes(new URL(t.file, base));
	const a = new TYPED[t.dtype](b.buffer, b.byteOffset, b.byteLength / TYPED[t.dtype].BYTES_PER_ELEMENT);
	a.dims = t.dims;
	return a;
}

// the largest excess over the tolerance and where: [ok, detail]
function within(got, ref, atol, rtol, what) {
	if (got.length !== ref.length)
		return [false, what + ': ' + got.length + ' values, golden ' + ref.length];
	let worst = 0, at = -1;
	for (let i = 0; i < ref.length; i++) {
		const g = Number(got[i]), r = Number(ref[i]);
		const e = Math.abs(g - r) / (atol + rtol * Math.abs(r));
		if (!(e <= worst)) {
			worst = e;
			at = i;
		}
	}
	return [worst <= 1, what + ': worst ' + worst.toPrecision(3) + ' of the tolerance' +
		(worst > 1 ? ' at ' + at + ' (' + got[at] + ' vs ' + ref[at] + ')' : '')];
}

// the time steps of t along axis: views of one step each (copied)
function steps(t, axis) {
	const d = t.dims, T = d[axis];
	const inner = d.slice(axis + 1).reduce((x, y) => x * y, 1), outer = d.slice(0, axis).reduce((x, y) => x * y, 1);
	return Array.from({length: T}, (_, s) => {
		const a = new t.constructor(outer * inner);
		for (let o = 0; o < outer; o++)
			a.set(t.subarray((o * T + s) * inner, (o * T + s + 1) * inner), o * inner);
		a.dims = d.map((x, i) => (i === axis ? 1 : x));
		return a;
	});
}

// the steps' outputs (each of length 1 on axis) put together along it
function stack(parts, axis) {
	const d = parts[0].dims.slice(), T = parts.length;
	d[axis] = T;
	const inner = d.slice(axis + 1).reduce((x, y) => x * y, 1), outer = d.slice(0, axis).reduce((x, y) => x * y, 1);
	const a = new parts[0].constructor(outer * T * inner);
	parts.forEach((p, s) => {
		for (let o = 0; o < outer; o++)
			a.set(p.subarray(o * inner, (o + 1) * inner), (o * T + s) * inner);
	});
	a.dims = d;
	return a;
}

export async function check(createModel, kit, base) {
	const res = [];
	const add = (name, ok, detail) => res.push({name, ok, detail});
	const url = (u) => new URL(u, base).href;
	let model;
	try {
		model = await createModel(url(kit.weights), {wasm: url(kit.wasm)});
		add('create', true, model.info.inputs.length + ' inputs, ' + model.info.outputs.length + ' outputs');
	} catch (e) {
		add('create', false, String(e && e.message || e));
		return res;
	}
	for (const set of kit.sets) {
		const ins = await Promise.all(set.inputs.map((t) => tensor(base, t)));
		const refs = await Promise.all(set.outputs.map((t) => tensor(base, t)));
		try {
			const outs = model.run(ins);   // dims bound from the inputs' shapes
			refs.forEach((r, k) => {
				const [ok, d] = within(outs[k], r, kit.atol, kit.rtol, model.info.outputs[k].name);
				const dims = JSON.stringify(outs[k].dims) === JSON.stringify(r.dims);
				add('run/' + set.name + '/' + k, ok && dims, d + (dims ? '' : '; dims ' + JSON.stringify(outs[k].dims) +
										 ', golden ' + JSON.stringify(r.dims)));
			});
		} catch (e) {
			add('run/' + set.name, false, String(e && e.message || e));
		}
		if (!kit.step)
			continue;
		// the same set one step at a time, from the initial state
		try {
			model.reset();
			const ax = kit.step.inputs, ox = kit.step.outputs;
			const T = ins[ax.findIndex((a) => a !== null)].dims[ax.find((a) => a !== null)];
			const per = ins.map((t, k) => (ax[k] === null ? null : steps(t, ax[k])));
			const got = refs.map(() => []);
			for (let s = 0; s < T; s++)
				model.step(ins.map((t, k) => (per[k] ? per[k][s] : t))).forEach((o, k) => got[k].push(o));
			refs.forEach((r, k) => {
				const [ok, d] = within(ox[k] === null ? got[k][T - 1] : stack(got[k], ox[k]), r, kit.atol, kit.rtol,
						       model.info.outputs[k].name);
				add('step/' + set.name + '/' + k, ok, T + ' steps, ' + d);
			});
		} catch (e) {
			add('step/' + set.name, false, String(e && e.message || e));
		}
	}
	if (kit.stream) {
		// a --carry model: one step per chunk, the state kept by the instance
		try {
			const s = kit.stream, audio = new Float32Array((await bytes(url(s.audio))).buffer);
			const ref = new Float32Array((await bytes(url(s.ref))).buffer), per = 1 + s.state;
			const n = Math.floor(audio.length / s.chunk), x = new Float32Array(s.context + s.chunk);
			model.reset();
			const state0 = model.state();
			const probs = new Float32Array(n), states = new Float32Array(n * s.state);
			for (let c = 0; c < n; c++) {
				x.copyWithin(0, s.chunk);       // the previous chunk's last samples
				x.set(audio.subarray(c * s.chunk, (c + 1) * s.chunk), s.context);
				probs[c] = model.step([x])[0][0];
				let o = c * s.state;    // every carried state, in order
				for (const a of model.state()) {
					states.set(a, o);
					o += a.length;
				}
			}
			const rp = Float32Array.from({length: n}, (_, c) => ref[c * per]);
			const rs = Float32Array.from({length: n * s.state}, (_, i) => ref[Math.floor(i / s.state) * per + 1 + i % s.state]);
			const [ok1, d1] = within(probs, rp, kit.atol, kit.rtol, 'probability');
			const [ok2, d2] = within(states, rs, s.state_atol, s.state_rtol, 'state');
			add('stream', ok1 && ok2 && state0 === null && ref.length === n * per,
			    n + ' chunks: ' + d1 + ', ' + d2 + (state0 === null ? '' : '; state() before the first step was not null'));
		} catch (e) {
			add('stream', false, String(e && e.message || e));
		}
	}
	// refusals name what is wrong
	try {
		const t = model.info.inputs[0];
		model.run([new TYPED[t.dtype](3)].concat(model.info.inputs.slice(1).map(() => [])));
		add('refuse/length', false, 'an input of 3 values was taken');
	} catch (e) {
		const m = String(e && e.message || e);
		add('refuse/length', m.includes(model.info.inputs[0].name) && m.includes('holds 3 values'), m);
	}
	try {
		model.run([], {no_such_dim: 2});
		add('refuse/dim', false, 'a dim of another name was taken');
	} catch (e) {
		const m = String(e && e.message || e);
		add('refuse/dim', m.includes('no_such_dim'), m);
	}
	try {
		const w = await bytes(url(kit.weights));
		w[w.length - 1] ^= 0x55;        // a byte of the last tensor: the checksum fails
		await createModel(w, {wasm: url(kit.wasm)});
		add('refuse/weights', false, 'corrupted weights were taken');
	} catch (e) {
		const m = String(e && e.message || e);
		add('refuse/weights', /checksum|corrupt/i.test(m), m);
	}
	model.destroy();
	return res;
}
