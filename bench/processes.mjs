// The benchmark's engines as processes (bench/engines/*.mjs, bench/native.cpp), each spoken
// to one JSON line at a time, and what they need: the native build and the workloads.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

import { median } from './stats.mjs';
import { speechAudio, writeLlm, writeSeq2seq, writeSpeech, writeVision, writeWorkloads } from './workloads.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const dir = `${root}build/bench`;
export const nativeDir = `${root}build/bench-native`;
/** Where the embedded default model's files are (after npm run build). */
export const defaultModelDir = `${root}dist/models/default/`;

/** Builds the native engine (-march=native) and writes the workloads; returns where they are. */
export function prepare() {
  console.log('Building the native engine (-march=native) and writing the workloads…');
  execFileSync(
    'cmake',
    [
      '-S',
      root,
      '-B',
      nativeDir,
      '-DCMAKE_BUILD_TYPE=Release',
      '-DCMAKE_CXX_FLAGS=-march=native',
      '-DATTNSCOPE_TESTS=OFF',
      '-DATTNSCOPE_BENCH=ON',
    ],
    { stdio: 'ignore' },
  );
  execFileSync('cmake', ['--build', nativeDir, '-j2', '--target', 'attnscope_bench', 'wake_placement'], {
    stdio: 'ignore',
  });
  writeWorkloads(dir);
}

/** Writes the language model's files (once: about 1.2 GB in build/bench/llm). */
export function prepareLlm() {
  console.log("Writing the language model rows' weights, GGUF and ONNX graph (once)…");
  writeLlm(dir);
}

/**
 * Writes section 14's GGUF files (once: 2.1 GB in build/bench/gguf): Llama-3.2-1B's shape in Q8_0 and in llama.cpp's
 * Q4_K_M mix, random blocks. Returns their paths by type.
 */
export async function prepareGguf() {
  const { T } = await import('../tests/llm/gguf.mjs');
  const { q4KM, realShapeGguf } = await import('../tests/llm/real-gguf.mjs');
  const out = join(dir, 'gguf');
  mkdirSync(out, { recursive: true });
  const files = {};
  for (const [type, typeOf, fileType] of [
    ['Q8_0', () => 'Q8_0', 7],
    ['Q4_K_M', q4KM(16), 15],
  ]) {
    files[type] = join(out, `Llama-3.2-1B-${type}.gguf`);
    if (existsSync(files[type])) continue;
    console.log(`Writing ${files[type]} (once)…`);
    writeFileSync(
      files[type],
      realShapeGguf('Llama-3.2-1B', typeOf, [['general.file_type', T.UINT32, fileType]]).bytes,
    );
  }
  return files;
}

/** Writes the translation model's files (once: about 860 MB in build/bench/seq2seq). */
export function prepareSeq2seq() {
  console.log("Writing the translation rows' weights and ONNX graphs (once)…");
  writeSeq2seq(dir);
}

/**
 * Writes the speech model's files (once: about 490 MB in build/bench/speech), and the log-mel features of
 * speechAudio() that both engines read, as AttnScope computes them: the timing leaves their computation out
 * (transformers.js computes them in JavaScript before its encoder runs).
 */
export async function prepareSpeech() {
  console.log("Writing the speech row's weights, graphs and features (once)…");
  const out = writeSpeech(dir);
  const file = join(out, 'features.f32');
  if (existsSync(file)) return;
  const { createEngine } = await import('../dist/node.js');
  const engine = await createEngine({ threads: 1 });
  const names = [
    'config.json',
    'preprocessor_config.json',
    'generation_config.json',
    'tokenizer.json',
    'model.safetensors',
  ];
  const model = await engine.loadModel({ files: Object.fromEntries(names.map((n) => [n, join(out, n)])) });
  const { features } = model.run({ audio: speechAudio(), target: [50258] });
  writeFileSync(file, new Uint8Array(features.data.buffer, features.data.byteOffset, features.data.byteLength));
  engine.dispose();
}

/** Writes the vision models' files (once: about 870 MB in build/bench/vision). */
export function prepareVision() {
  console.log("Writing the vision rows' weights, inputs and ONNX graphs (once)…");
  writeVision(dir);
}

/** One engine process, spoken to one JSON line at a time. */
export class EngineProcess {
  constructor(name, command, args) {
    this.name = name;
    this.process = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    this.waiting = [];
    let buffer = '';
    this.process.stdout.setEncoding('utf8');
    this.process.stdout.on('data', (chunk) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        this.waiting.shift()?.(JSON.parse(line));
      }
    });
  }
  ask(request) {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.process.stdin.write(`${JSON.stringify(request)}\n`);
    });
  }
  /** Asks the engine to quit; resolves once its process has exited. */
  quit() {
    const exited = new Promise((resolve) =>
      this.process.exitCode !== null || this.process.signalCode !== null
        ? resolve()
        : this.process.once('exit', resolve),
    );
    this.process.stdin.write('{"op":"quit"}\n');
    return exited;
  }
  /** The contents of /proc/…/task/<thread>/`file` for each of the engine's threads (Linux). */
  *threadFiles(file) {
    for (const task of readdirSync(`/proc/${this.process.pid}/task`)) {
      let text;
      try {
        text = readFileSync(`/proc/${this.process.pid}/task/${task}/${file}`, 'utf8');
      } catch {
        continue; // the thread ended between the listing and the read
      }
      yield text;
    }
  }
  /**
   * CPU time and run-queue wait, in ms, summed over the engine's threads (from schedstat). A
   * running thread's figures lag until its next tick or switch: read them while it sleeps.
   */
  schedStats() {
    let cpu = 0,
      wait = 0;
    for (const text of this.threadFiles('schedstat')) {
      const [run, queued] = text.split(' ');
      cpu += Number(run) / 1e6;
      wait += Number(queued) / 1e6;
    }
    return { cpu, wait };
  }
  /**
   * Runs the work set up `calls` times, awaiting `before()` ahead of each call, each call
   * marked in `trace` (a CpuTrace) when given. Returns the median ms, every call's ms in
   * order (`runs`), and `cost`: the mean per call of the CPU ms of all the engine's threads
   * and of the ms they waited for a CPU, as "cpu / wait" (read once every thread is asleep).
   */
  async timedCalls(calls, before, trace = null) {
    const runs = [];
    const start = this.schedStats();
    for (let i = 0; i < calls; i++) {
      await before();
      trace?.begin();
      runs.push((await this.ask({ op: 'run' })).ms);
      trace?.end();
    }
    await this.settle(); // every thread asleep: its figures are up to date
    const end = this.schedStats();
    const perCall = (x) => (x / calls).toFixed(1);
    return {
      ms: median(runs),
      runs,
      cost: `${perCall(end.cpu - start.cpu)} / ${perCall(end.wait - start.wait)}`,
    };
  }
  /** How many of the engine's threads are running or ready to run right now (state R in stat). */
  runningThreads() {
    let running = 0;
    for (const stat of this.threadFiles('stat')) if (stat[stat.lastIndexOf(')') + 2] === 'R') running++;
    return running;
  }
  /**
   * Waits until none of the engine's threads is running. A pool's workers may spin a while
   * after a call (ONNX Runtime Web's do), and on two cores a spinning neighbour takes the next
   * engine's second thread. The threads' CPU time would not tell: the kernel adds a running
   * thread's time only at its next tick or switch, so a spinning thread can look idle for a few
   * ms. The thread state (R) is current. ORT-web's workers also pause now and then while
   * spinning, so quiet means 10 polls in a row with no thread running.
   */
  async settle() {
    for (let waited = 0, quiet = 0; quiet < 10 && waited < 500; waited++) {
      await sleep(1);
      quiet = this.runningThreads() === 0 ? quiet + 1 : 0;
    }
  }
}

// Every Node engine runs with relaxed SIMD switched on (Node 20 has it behind a flag; Node 22
// and browsers by default). Neither peer ships a relaxed-SIMD build; AttnScope runs both of its.
/** The command and arguments of a Node engine: bench/engines/<file> <args...> <workload dir>. */
export const nodeEngine = (file, ...args) => [
  process.execPath,
  ['--experimental-wasm-relaxed-simd', `${root}bench/engines/${file}`, ...args.map(String), dir],
];

/** AttnScope's two kinds of wasm build, as the tables name them: SIMD128 ("wasm") and relaxed SIMD. */
export const ATTNSCOPE_BUILDS = [
  { name: 'wasm', build: 'simd' },
  { name: 'relaxed', build: 'relaxed-simd' },
];

/**
 * For `measure`'s `alongside`: the micro-kernel's GFLOPS right after each of AttnScope's one-thread calls
 * (bench/kernel_peak.cpp), the peak that GEMM and attention rows are held to, measured in the same rounds.
 */
export const peakAlongside = (e) =>
  ATTNSCOPE_BUILDS.some(({ name }) => e.name === `AttnScope ${name} ×1`)
    ? e.ask({ op: 'peak' }).then((r) => r.gflops)
    : undefined;

/** AttnScope wasm, each kind of build on each of `threadCounts`: `AttnScope wasm ×1`, ... */
export const attnscopeEngines = (threadCounts = [1, 2]) =>
  ATTNSCOPE_BUILDS.flatMap(({ name, build }) =>
    threadCounts.map((t) => new EngineProcess(`AttnScope ${name} ×${t}`, ...nodeEngine('attnscope.mjs', t, build))),
  );

/** AttnScope native (-march=native) on 1 and 2 threads: `native ×1`, `native ×2`. */
export const nativeEngines = () =>
  [1, 2].map((t) => new EngineProcess(`native ×${t}`, `${nativeDir}/attnscope_bench`, [String(t), dir]));
