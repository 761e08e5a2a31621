// ort_run.js: runs an ONNX model with ONNX Runtime (npm onnxruntime-node) as
// the oracle of `cellc verify --oracle onnxruntime`, which writes this file
// (embedded in cellc) beside its data and runs it with NODE_PATH pointing at
// the directory that holds onnxruntime-node.
//
//   node ort_run.js MODEL SETDIR...
//
// Each SETDIR holds inputs.txt, one line per graph input in graph order:
//   name TAB dtype TAB dims (comma-separated, empty for a scalar) TAB file
// where dtype is the ONNX TensorProto code and file the raw little-endian
// data.  The outputs are written the same way: output_K.bin and outputs.txt,
// in the order of the session's outputs (the graph's).
// Exit status: 0 ok; 3 ONNX Runtime refused the model or failed to run it
// (its message on stderr); 1 anything else.
'use strict';
const fs = require('fs');
const path = require('path');

const TYPES = {
	1: ['float32', Float32Array], 11: ['float64', Float64Array],
	2: ['uint8', Uint8Array], 3: ['int8', Int8Array], 4: ['uint16', Uint16Array],
	5: ['int16', Int16Array], 6: ['int32', Int32Array], 7: ['int64', BigInt64Array],
	9: ['bool', Uint8Array], 12: ['uint32', Uint32Array], 13: ['uint64', BigUint64Array],
	10: ['float16', Uint16Array],
};
const CODES = {};
for (const [code, [name]] of Object.entries(TYPES))
	CODES[name] = Number(code);

function refuse(what, e) {
	process.stderr.write(what + ': ' + (e && e.message ? e.message : String(e)) + '\n');
	process.exit(3);
}

async function main() {
	const [model, ...sets] = process.argv.slice(2);
	if (!model || sets.length === 0) {
		process.stderr.write('usage: node ort_run.js MODEL SETDIR...\n');
		process.exit(1);
	}
	const ort = require('onnxruntime-node');
	let sess;
	try {
		// Basic graph optimisations only (constant folding, redundant
		// nodes): the extended ones rewrite the model's arithmetic, as
		// MatMulScaleFusion does, folding a MatMul's Div by a double
		// constant into a FusedMatMul whose alpha is a float attribute (a
		// float64 model then differs from its own semantics by 1e-8); an
		// oracle computes what the file says.
		sess = await ort.InferenceSession.create(model, {graphOptimizationLevel: 'basic'});
	} catch (e) {
		refuse('onnxruntime cannot load the model', e);
	}
	for (const dir of sets) {
		const feeds = {};
		const lines = fs.readFileSync(path.join(dir, 'inputs.txt'), 'utf8').split('\n');
		for (const line of lines) {
			if (!line)
				continue;
			const [name, dt, dims, file] = line.split('\t');
			const [tname, Arr] = TYPES[dt];
			const buf = fs.readFileSync(path.join(dir, file));
			const bytes = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length);
			const shape = dims ? dims.split(',').map(Number) : [];
			feeds[name] = new ort.Tensor(tname, new Arr(bytes), shape);
		}
		let res;
		try {
			res = await sess.run(feeds);
		} catch (e) {
			refuse('onnxruntime failed to run the model', e);
		}
		const out = [];
		sess.outputNames.forEach((name, k) => {
			const t = res[name];
			const code = CODES[t.type];
			if (code === undefined)
				refuse('onnxruntime output ' + name, 'element type ' + t.type + ' is not supported');
			const file = 'output_' + k + '.bin';
			const d = t.data;
			fs.writeFileSync(path.join(dir, file), Buffer.from(d.buffer, d.byteOffset, d.byteLength));
			out.push([name, code, t.dims.join(','), file].join('\t'));
		});
		fs.writeFileSync(path.join(dir, 'outputs.txt'), out.join('\n') + '\n');
	}
}

main().catch((e) => {
	process.stderr.write((e && e.stack) || String(e));
	process.stderr.write('\n');
	process.exit(1);
});
