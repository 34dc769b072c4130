// ONNX Runtime runs MODEL.onnx once on given inputs, for bench/ort_qdq.py (calibration) and
// bench/run_onnx_zoo.py (output checks): INPUTS.json names each input's raw little-endian
// float32 file and shape; prints one JSON object, per output either its values (`values`) or
// its finite extremes (`ranges`). Graph optimisation off for `ranges` (every value kept).
//   node ort_run.js ORT_NODE_MODULES MODEL.onnx INPUTS.json values|ranges
const fs = require('fs');
const [modules, model, inputsJson, mode] = process.argv.slice(2);
const ort = require(require('path').join(modules, 'onnxruntime-node'));

(async () => {
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 2, interOpNumThreads: 1, graphOptimizationLevel: mode === 'ranges' ? 'disabled' : 'all'});
  const feeds = {};
  for (const [name, spec] of Object.entries(JSON.parse(fs.readFileSync(inputsJson, 'utf8')))) {
    const bytes = fs.readFileSync(spec.file);
    const data = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    feeds[name] = new ort.Tensor('float32', Float32Array.from(data), spec.shape);
  }
  const outputs = await session.run(feeds);
  const result = {};
  for (const [name, t] of Object.entries(outputs)) {
    if (mode === 'values') {
      result[name] = {shape: t.dims, values: Array.from(t.data, Number)};
      continue;
    }
    if (t.type !== 'float32') continue;
    let lo = Infinity, hi = -Infinity;
    for (const v of t.data)
      if (Number.isFinite(v)) {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
    if (lo <= hi) result[name] = [lo, hi];
  }
  console.log(JSON.stringify(result));
})().catch((e) => {
  console.error(String(e));
  process.exit(1);
});
