// BullMQ on the workloads echomq-compare runs, printed as the same JSON lines
// (medians of the rounds). Run by bench/compare on the same redis-server:
//   node bench/bullmq.mjs redis://127.0.0.1:6390/ 20000 3 53
import { Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';

const [url, jobsArg = '20000', roundsArg = '3', payloadArg = '53'] = process.argv.slice(2);
const jobs = Number(jobsArg), rounds = Number(roundsArg);
// A JSON string of payload bytes, quotes included, as EchoMQ stores its payload verbatim.
const data = 'x'.repeat(Number(payloadArg) - 2);
const connection = () => new IORedis(url, { maxRetriesPerRequest: null });
const admin = connection();
let serial = 0;

const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
const emit = (workload, value, unit) =>
  console.log(JSON.stringify({ system: 'bullmq', workload, value: Number(value.toFixed(2)), unit }));

async function addBulk(queue, count) {
  for (let left = count; left > 0; left -= 100) {
    const n = Math.min(100, left);
    await queue.addBulk(Array.from({ length: n }, () => ({ name: 'job', data })));
  }
}

async function add50(queue, count) {
  const per = Math.floor(count / 50);
  await Promise.all(Array.from({ length: 50 }, async () => {
    for (let i = 0; i < per; i++) await queue.add('job', data);
  }));
}

// A no-op worker at `concurrency` until `count` jobs completed; resolves with
// when they were (the worker's close after that is not the workload's time).
function work(name, count, concurrency) {
  return new Promise((resolve) => {
    let done = 0;
    const worker = new Worker(name, async () => {}, { connection: connection(), concurrency });
    worker.on('completed', () => {
      done += 1;
      if (done === count) {
        const at = performance.now();
        worker.close().then(() => resolve(at));
      }
    });
  });
}

async function throughput(workload) {
  const name = `compare-${++serial}`;
  const queue = new Queue(name, { connection: connection() });
  let started, ended;
  if (workload === 'add-50') {
    started = performance.now();
    await add50(queue, jobs);
  } else if (workload === 'add-bulk') {
    started = performance.now();
    await addBulk(queue, jobs);
  } else if (workload.startsWith('process-c')) {
    await addBulk(queue, jobs);
    started = performance.now();
    ended = await work(name, jobs, Number(workload.slice('process-c'.length)));
  } else if (workload === 'end-to-end') {
    started = performance.now();
    const done = work(name, jobs, 100);
    await addBulk(queue, jobs);
    ended = await done;
  }
  const seconds = ((ended ?? performance.now()) - started) / 1000;
  await queue.close();
  return jobs / seconds;
}

async function latency(count, rate) {
  const name = `compare-${++serial}`;
  const queue = new Queue(name, { connection: connection() });
  const seen = [];
  await new Promise((resolve) => {
    const worker = new Worker(name, async (job) => { seen.push(performance.now() - job.data.t); },
      { connection: connection(), concurrency: 10 });
    worker.on('completed', () => { if (seen.length === count) worker.close().then(resolve); });
    setTimeout(async () => {
      for (let i = 0; i < count; i++) {
        await queue.add('job', { t: performance.now() });
        await new Promise((r) => setTimeout(r, 1000 / rate));
      }
    }, 300);
  });
  await queue.close();
  return seen.sort((a, b) => a - b);
}

async function usedMemory() {
  const info = await admin.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)[1]);
}

for (const workload of ['add-50', 'add-bulk', 'process-c1', 'process-c10', 'process-c100', 'end-to-end']) {
  const values = [];
  for (let r = 0; r < rounds; r++) {
    values.push(await throughput(workload));
    await admin.flushall();
  }
  emit(workload, median(values), 'jobs/s');
}
const seen = await latency(Math.min(2000, jobs), 1000);
const at = (q) => seen[Math.min(seen.length - 1, Math.floor(seen.length * q))];
emit('latency-p50', at(0.5), 'ms');
emit('latency-p99', at(0.99), 'ms');
emit('latency-p99.9', at(0.999), 'ms');
await admin.flushall();
const count = Math.min(10000, jobs);
const before = await usedMemory();
const queue = new Queue(`compare-${++serial}`, { connection: connection() });
await addBulk(queue, count);
emit('bytes-per-pending-job', ((await usedMemory()) - before) / count, 'bytes');
await queue.close();
await admin.flushall();
await admin.quit();
process.exit(0);
