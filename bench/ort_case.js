// ONNX Runtime's side of the ONNX zoo benchmark (bench/run_onnx_zoo.py): loads MODEL.onnx with
// graph optimisation on and THREADS intra-op threads, runs it on random inputs of BATCH, and
// prints one JSON line: load_ms, first_ms, p50_ms, p90_ms, calls. Usage:
//   node ort_case.js ORT_NODE_MODULES MODEL.onnx BATCH THREADS SECONDS
const [modules, model, batch, threads, seconds] = process.argv.slice(2);
const ort = require(require('path').join(modules, 'onnxruntime-node'));

(async () => {
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, graphOptimizationLevel: 'all',
    executionMode: 'sequential'});
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const feeds = {};
  for (const name of session.inputNames) {
    const meta = session.inputMetadata ? session.inputMetadata.find((m) => m.name === name) : null;
    const dims = meta && meta.shape ? meta.shape.map((d, i) => (typeof d === 'number' ? d : i === 0 ? Number(batch) : 1))
                                    : null;
    if (!dims) throw new Error(`no shape for input ${name}`);
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; ++i) data[i] = Math.random() * 2 - 1;
    feeds[name] = new ort.Tensor('float32', data, dims);
  }
  let t = process.hrtime.bigint();
  await session.run(feeds);
  const firstMs = Number(process.hrtime.bigint() - t) / 1e6;
  for (let i = 0; i < 3; ++i) await session.run(feeds);
  const times = [];
  const end = Date.now() + Number(seconds) * 1000;
  while (Date.now() < end || times.length < 10) {
    t = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  times.sort((a, b) => a - b);
  const q = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))];
  console.log(JSON.stringify({load_ms: loadMs, first_ms: firstMs, p50_ms: q(0.5), p90_ms: q(0.9), calls: times.length}));
})().catch((e) => {
  console.error(String(e));
  process.exit(1);
});
