// ort_optimize.js: saves MODEL as ONNX Runtime's graph optimiser leaves it
// (all levels), the file a user gets from its optimizedModelFilePath option:
// a dynamically quantized MatMul fused into com.microsoft
// DynamicQuantizeMatMul or MatMulIntegerToFloat, among others.
//   NODE_PATH=build/ort/node_modules node tests/ort_optimize.js MODEL OUT
const ort = require('onnxruntime-node');

async function main() {
  const [, , model, out] = process.argv;
  if (!model || !out) {
    console.error('usage: ort_optimize.js MODEL OUT');
    process.exit(2);
  }
  await ort.InferenceSession.create(model, {graphOptimizationLevel: 'all', optimizedModelFilePath: out});
}

main().catch((e) => {
  console.error('ort_optimize.js: ' + e.message);
  process.exit(1);
});
