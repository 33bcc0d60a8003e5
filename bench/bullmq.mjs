// BullMQ on the workloads echomq-compare runs, one measurement per process,
// printed as the same JSON lines. Run by bench/compare on the same redis-server:
//   node bench/bullmq.mjs URL WORKLOAD [JOBS] [PAYLOAD] [RATE] [SECONDS] [CONCURRENCY]
//   node bench/bullmq.mjs redis://127.0.0.1:6390/ process-c10 20000 53
//   node bench/bullmq.mjs redis://127.0.0.1:6390/ versions
// As on EchoMQ's side: connections and workers are ready before the clock
// starts (`autorun: false`, `waitUntilReady`), completions are counted
// in-process (`completed` events), and the server's µs per job comes from
// INFO commandstats and INFO cpu over the same window.
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FlowProducer, Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';

const [url, workload, jobsArg = '20000', payloadArg = '53', rateArg = '1000', secondsArg = '2', concurrencyArg = '10'] =
  process.argv.slice(2);
const JOBS = Number(jobsArg);
const size = workload.endsWith('-1kb') ? 1024 : Number(payloadArg);
// A JSON string of `size` bytes, quotes included, as EchoMQ stores its payload verbatim.
const data = 'x'.repeat(size - 2);
const connection = () => new IORedis(url, { maxRetriesPerRequest: null });
const admin = connection();
let serial = 0;
const BULK = 100;
// The benchmark's own commands, left out of the server's cost (as on EchoMQ's side).
const BOOKKEEPING = new Set(['info', 'config', 'flushall', 'ping', 'client', 'hello', 'select']);

// `spent`: the server's µs a job, its commands' and its main thread's CPU.
const emit = (workload, value, unit, spent) =>
  console.log(JSON.stringify({
    system: 'bullmq', workload, value: Number(value.toFixed(2)), unit,
    ...(spent === undefined ? {} : {
      server_us: Number(spent.commands.toFixed(3)), server_cpu_us: Number(spent.cpu.toFixed(3)),
    }),
  }));

// The CPU the server's main thread has used, µs (INFO cpu, user and system).
async function serverCpu() {
  const info = await admin.info('cpu');
  const field = (name) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)[1]);
  return (field('used_cpu_user_main_thread') + field('used_cpu_sys_main_thread')) * 1e6;
}

let cpuAtStart = 0;
async function start() {
  await admin.config('RESETSTAT');
  cpuAtStart = await serverCpu();
  return performance.now();
}

// What the server spent on each of `jobs` since start(), as on EchoMQ's side.
async function spentSinceStart(jobs) {
  const info = await admin.info('commandstats');
  let usec = 0;
  for (const line of info.split('\n')) {
    const m = /^cmdstat_([^:]+):.*usec=(\d+)/.exec(line);
    if (m && !BOOKKEEPING.has(m[1].split('|')[0])) usec += Number(m[2]);
  }
  return { commands: usec / jobs, cpu: ((await serverCpu()) - cpuAtStart) / jobs };
}

async function readyQueue() {
  const queue = new Queue(`compare-${process.pid}-${++serial}`, { connection: connection() });
  await queue.waitUntilReady();
  return queue;
}

async function addBulk(queue, count) {
  for (let left = count; left > 0; left -= BULK) {
    const n = Math.min(BULK, left);
    await queue.addBulk(Array.from({ length: n }, () => ({ name: 'job', data })));
  }
}

async function add50(queue, count) {
  const per = Math.floor(count / 50);
  await Promise.all(Array.from({ length: 50 }, async () => {
    for (let i = 0; i < per; i++) await queue.add('job', data);
  }));
}

// A worker built and connected, not yet running: `run()` starts it when the clock does.
async function readyWorker(name, concurrency, handler = async () => {}) {
  const worker = new Worker(name, handler, { connection: connection(), concurrency, autorun: false });
  await worker.waitUntilReady();
  return worker;
}

// Resolves with when `count` jobs completed across `workers`.
function completions(workers, count) {
  return new Promise((resolve) => {
    let done = 0;
    for (const worker of workers) {
      worker.on('completed', () => {
        done += 1;
        if (done === count) resolve(performance.now());
      });
    }
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function throughput(jobs, measured) {
  const queue = await readyQueue();
  let started, ended, count = jobs;
  const closing = [queue];
  if (workload === 'add-50') {
    started = await start();
    await add50(queue, jobs);
  } else if (workload === 'add-bulk' || workload === 'add-bulk-1kb') {
    started = await start();
    await addBulk(queue, jobs);
  } else if (workload.startsWith('process-c')) {
    const concurrency = Number(workload.slice('process-c'.length).split('-')[0]);
    const work = workload.endsWith('-10ms') ? 10 : workload.endsWith('-1ms') ? 1 : 0;
    if (work === 10) count = Math.floor(jobs / 4);
    await addBulk(queue, count);
    const worker = await readyWorker(queue.name, concurrency, work ? () => sleep(work) : async () => {});
    closing.push(worker);
    const done = completions([worker], count);
    started = await start();
    worker.run();
    ended = await done;
  } else if (workload === 'queues-100' || workload === 'queues-1000') {
    // BullMQ's Worker works one queue: a worker at concurrency 1 a queue, in one process.
    const many = Number(workload.slice('queues-'.length));
    const queues = [queue];
    for (let i = 1; i < many; i++) queues.push(await readyQueue());
    const per = Math.max(1, Math.floor(jobs / many));
    count = per * many;
    for (const q of queues) await addBulk(q, per);
    const workers = [];
    for (const q of queues) workers.push(await readyWorker(q.name, 1));
    closing.push(...queues.slice(1), ...workers);
    const done = completions(workers, count);
    started = await start();
    for (const worker of workers) worker.run();
    ended = await done;
  } else if (workload === 'end-to-end') {
    const worker = await readyWorker(queue.name, 100);
    closing.push(worker);
    const done = completions([worker], jobs);
    started = await start();
    worker.run();
    await addBulk(queue, jobs);
    ended = await done;
  } else if (workload === 'flow-100') {
    // A parent and its 100 children a flow, in the same queue, added one
    // flow after the other while one worker of 100 slots works them.
    const flows = Math.max(1, Math.floor(jobs / 101));
    count = flows * 101;
    const worker = await readyWorker(queue.name, 100);
    const producer = new FlowProducer({ connection: connection() });
    closing.push(worker, producer);
    const done = completions([worker], count);
    started = await start();
    worker.run();
    for (let i = 0; i < flows; i++) {
      await producer.add({
        name: 'parent', queueName: queue.name, data,
        children: Array.from({ length: 100 }, () => ({ name: 'child', queueName: queue.name, data })),
      });
    }
    ended = await done;
  } else {
    throw new Error(`no workload ${workload}`);
  }
  ended ??= performance.now();
  const spent = await spentSinceStart(count);
  if (measured) emit(workload, count / ((ended - started) / 1000), 'jobs/s', spent);
  for (const c of closing) await c.close();
}

// Enqueue→handler-start latencies (ms), `rate` jobs a second on a fixed
// schedule (1 ms ticks, each job its own `add`, none waiting for the one before).
async function latency() {
  const rate = Number(rateArg), seconds = Number(secondsArg), concurrency = Number(concurrencyArg);
  const count = Math.floor(rate * seconds);
  const queue = await readyQueue();
  const seen = [];
  let lastStart = 0;
  const worker = await readyWorker(queue.name, concurrency, async (job) => {
    lastStart = performance.now();
    seen.push(lastStart - job.data.t);
  });
  worker.run();
  await sleep(300);
  const started = performance.now();
  const adds = [];
  let sent = 0;
  while (sent < count) {
    const due = Math.min(count, Math.floor(((performance.now() - started) / 1000) * rate) + 1);
    // One job a tick is one add; more go as one addBulk, as end-to-end's producer sends them.
    if (due - sent === 1) adds.push(queue.add('job', { t: performance.now() }));
    else if (due > sent) {
      adds.push(queue.addBulk(Array.from({ length: due - sent }, () => ({ name: 'job', data: { t: performance.now() } }))));
    }
    sent = due;
    await sleep(1);
  }
  const achieved = count / ((performance.now() - started) / 1000);
  await Promise.all(adds);
  const deadline = performance.now() + 60_000;
  while (seen.length < count && performance.now() < deadline) await sleep(5);
  seen.sort((a, b) => a - b);
  const at = (q) => seen[Math.min(seen.length - 1, Math.floor(seen.length * q))];
  emit('latency-p50', at(0.5), 'ms');
  emit('latency-p99', at(0.99), 'ms');
  emit('latency-p99.9', at(0.999), 'ms');
  emit('latency-rate', achieved, 'jobs/s');
  // The rate the jobs started at, first send to last start: below the rate
  // sent when the worker fell behind.
  emit('latency-started', seen.length / ((lastStart - started) / 1000), 'jobs/s');
  await worker.close();
  await queue.close();
}

// `used_memory` growth per pending job; the jobs stay for the breakdown.
async function memory() {
  const used = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))[1]);
  const queue = await readyQueue();
  const before = await used();
  await addBulk(queue, JOBS);
  emit('bytes-per-pending-job', ((await used()) - before) / JOBS, 'bytes');
  await queue.close();
}

// Seconds from a worker's crash to its jobs done by another: the jobs
// fetched under a 5 s lock by a worker that then vanished (never completed,
// never extended), and a fresh worker (the same lock; its stalled-job check
// every 5 s, as often as the lock lasts) started at once.
async function recovery() {
  const count = Math.min(JOBS, 1000), lockDuration = 5000;
  const queue = await readyQueue();
  await addBulk(queue, count);
  const crashed = new Worker(queue.name, null, { connection: connection(), autorun: false, lockDuration });
  await crashed.waitUntilReady();
  for (let i = 0; i < count; i++) await crashed.getNextJob('crashed', { block: false });
  const at = performance.now();
  const worker = new Worker(queue.name, async () => {},
    { connection: connection(), concurrency: 100, autorun: false, lockDuration, stalledInterval: lockDuration });
  await worker.waitUntilReady();
  const done = completions([worker], count);
  worker.run();
  const ended = await done;
  emit('recovery', (ended - at) / 1000, 's');
  await worker.close();
  await crashed.close(true);
  await queue.close();
}

// process-4x25: four worker processes at concurrency 25 on one queue, as on
// EchoMQ's side (bench/src/compare/processes.rs): each child warms on a queue
// of its own, starts at 'go', stops at 'stop' and reports its count, its start
// and its last completion (µs since the Unix epoch); the parent only decides
// when to say 'stop' and reports the children's window.
const PROCESSES = 4, PER_PROCESS = 25;
const wallUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

// Each message of `source` (a child process, or this process's parent), in order.
function inbox(source) {
  const waiting = [], arrived = [];
  source.on('message', (m) => (waiting.length ? waiting.shift()(m) : arrived.push(m)));
  return () => (arrived.length ? Promise.resolve(arrived.shift()) : new Promise((r) => waiting.push(r)));
}

async function workerChild(name) {
  // A parent gone (a failed run) takes its children with it.
  process.on('disconnect', () => process.exit(1));
  const next = inbox(process);
  const share = Math.floor(JOBS / PROCESSES);
  const warm = await readyQueue();
  await addBulk(warm, share);
  const warming = await readyWorker(warm.name, PER_PROCESS);
  const warmed = completions([warming], share);
  warming.run();
  await warmed;
  await warming.close();
  await warm.close();
  const worker = await readyWorker(name, PER_PROCESS);
  let count = 0, last = 0;
  worker.on('completed', () => { count += 1; last = wallUs(); });
  process.send('ready');
  if ((await next()) !== 'go') throw new Error('expected go');
  const first = wallUs();
  worker.run();
  if ((await next()) !== 'stop') throw new Error('expected stop');
  await worker.close();
  // Sent before this process exits: its callback runs once the message went.
  await new Promise((sent) => process.send({ count, first, last: last || first }, sent));
}

async function processes() {
  const queue = await readyQueue();
  await addBulk(queue, JOBS);
  const file = fileURLToPath(import.meta.url);
  const children = Array.from({ length: PROCESSES },
    () => fork(file, [url, 'worker-child', jobsArg, payloadArg, queue.name]));
  const inboxes = children.map(inbox);
  for (const next of inboxes) if ((await next()) !== 'ready') throw new Error('expected ready');
  await start();
  for (const child of children) child.send('go');
  const deadline = performance.now() + 600_000;
  for (;;) {
    const counts = await queue.getJobCounts('wait', 'active', 'prioritized');
    if (counts.wait + counts.active + counts.prioritized === 0) break;
    if (performance.now() > deadline) throw new Error(`the worker processes stalled: ${JSON.stringify(counts)}`);
    await sleep(10);
  }
  const reports = [];
  for (let i = 0; i < PROCESSES; i++) {
    children[i].send('stop');
    reports.push(await inboxes[i]());
  }
  const spent = await spentSinceStart(JOBS);
  const done = reports.reduce((n, r) => n + r.count, 0);
  if (done !== JOBS) throw new Error(`${done} of ${JOBS} jobs finished: ${JSON.stringify(reports)}`);
  const first = Math.min(...reports.map((r) => r.first)), last = Math.max(...reports.map((r) => r.last));
  emit('process-4x25', done / ((last - first) / 1e6), 'jobs/s', spent);
  await queue.close();
}

function versions() {
  const version = (name) =>
    JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url))).version;
  console.log(JSON.stringify({ bullmq: version('bullmq'), ioredis: version('ioredis'), node: process.versions.node }));
}

if (workload === 'versions') versions();
else if (workload === 'latency') await latency();
else if (workload === 'memory') await memory();
else if (workload === 'recovery') await recovery();
else if (workload === 'process-4x25') await processes();
// A child of process-4x25; the queue's name comes after the payload's size.
else if (workload === 'worker-child') await workerChild(process.argv[6]);
else {
  // The whole workload once first, untimed, in this same process (the JIT
  // warms; EchoMQ's side does the same), then the measurement. A tenth was
  // not enough: BullMQ's first c=100 measurement in a process read 17.0k
  // against 22.2-23.8k for the next three (BENCHMARKS.md).
  await throughput(JOBS, false);
  await admin.flushall();
  await throughput(JOBS, true);
}
await admin.quit();
process.exit(0);
