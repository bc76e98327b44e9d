// Language models: a SmolLM2-135M-shaped decoder (30 layers, d 576, 9 query heads over 3 key/value
// heads, SwiGLU 1536, a tied 49,152-token head), random BF16 weights (bench/workloads.mjs):
//   5. prefill, every layer's maps and every position's next tokens: AttnScope against
//      onnxruntime-web on an ONNX graph of the same weights (float32, as ORT-web has no BF16
//      kernels), and llama.cpp native (BF16, no maps, last position's logits only) as the ceiling;
//   6. decode with the KV cache, against this machine's memory bandwidth and llama.cpp;
//   7. typing: one token appended to 128, reusing the previous run's keys and values, against a fresh run;
//   7b. the Why pane at 128: one score and one logit taken apart after the run, each under 100 ms on one thread.
import { faster, fmt, ratio, speedup, target, vsOrt } from './harness.mjs';
import { ATTNSCOPE_BUILDS as VARIANTS, EngineProcess, nodeEngine, prepareLlm } from './processes.mjs';
import { median } from './stats.mjs';
import { LLM, LLM_DECODE_CONTEXT, LLM_PREFILL_N, LLM_SHAPE as S } from './workloads.mjs';

const REFERENCE = 'AttnScope wasm ×1';
const DECODED = 16; // tokens per decode run, after the first

/** Bytes of weights a decoding step reads: every matrix once, and the tied embedding again as the head. */
function weightBytes() {
  const hd = S.d / S.heads;
  const layer = S.d * hd * (2 * S.heads + 2 * S.kvHeads) + 3 * S.d * S.ffn;
  return 2 * (S.layers * layer + S.vocab * S.d);
}

/**
 * Bytes of keys and values a decoding step reads after `context` tokens: every layer's, float32 in
 * AttnScope (`bytes` 4), F16 in llama.cpp's default cache (2).
 */
function cacheBytes(context, bytes) {
  return S.layers * S.kvHeads * (S.d / S.heads) * 2 * context * bytes;
}

/** Sections 5-7 and their targets (see `attention` for the arguments). */
export const languageModel = (args) => llmSections(args, ['prefill', 'decode', 'typing', 'explain']);
/** Section 5 alone: `npm run bench -- prefill`. */
export const llmPrefill = (args) => llmSections(args, ['prefill']);
/** Section 6 alone: `npm run bench -- decode`. */
export const llmDecode = (args) => llmSections(args, ['decode']);
/** Section 7 alone: `npm run bench -- typing`. */
export const llmTyping = (args) => llmSections(args, ['typing']);
/** Section 7b alone: `npm run bench -- explain`. */
export const llmExplain = (args) => llmSections(args, ['explain']);

async function llmSections({ engines, measure }, parts) {
  prepareLlm();
  const llama = [1, 2].map((t) => new EngineProcess(`llama.cpp ×${t}`, ...nodeEngine('llamacpp.mjs', t)));
  const all = [...engines, ...llama];
  const ours = VARIANTS.flatMap(({ name }) => [1, 2].map((t) => `AttnScope ${name} ×${t}`));
  const attnscope = engines.filter((e) => ours.includes(e.name));
  const shown = [...ours, 'ORT-web ×1', 'ORT-web ×2', 'llama.cpp ×1', 'llama.cpp ×2'];

  // 5. Prefill
  const prefill = {};
  for (const n of parts.includes('prefill') ? LLM_PREFILL_N : [])
    prefill[n] = await measure(
      `LLM prefill n=${n}`,
      { work: 'llm-prefill', n },
      { rounds: n >= 512 ? 3 : 5, warmup: 1 },
      all,
      REFERENCE,
    );
  if (parts.includes('prefill')) {
    console.log(`\n5. ${LLM}-shaped decoder (BF16), prefill with every layer's maps and next tokens (median ms)`);
    console.table(
      LLM_PREFILL_N.map((n) => {
        const r = prefill[n];
        return {
          n,
          ...Object.fromEntries(shown.map((name) => [name, fmt(r[name]?.ms)])),
          ...vsOrt(r, VARIANTS),
        };
      }),
    );
  }

  // 6. Decode, with this machine's memory bandwidth measured in the same rounds, after each ×1 engine's run.
  const bandwidthAlongside = (e) =>
    e.name.startsWith('AttnScope') && e.name.endsWith('×1') ? e.ask({ op: 'bandwidth' }) : undefined;
  const decode = {};
  for (const context of parts.includes('decode') ? LLM_DECODE_CONTEXT : [])
    decode[context] = await measure(
      `LLM decode context=${context}`,
      { work: 'llm-decode', context, tokens: DECODED },
      { rounds: 3, warmup: 1, alongside: bandwidthAlongside },
      [...attnscope, ...llama],
      REFERENCE,
    );
  const bytes = weightBytes();
  const samples = Object.values(decode).flatMap((r) => Object.values(r).flatMap((x) => x.alongside));
  const bandwidth = { copied: median(samples.map((s) => s.copied)), read: median(samples.map((s) => s.read)) };
  const limit = bandwidth.read / bytes; // tokens per second if each step only read the weights, at read speed
  const copyLimit = bandwidth.copied / bytes;
  const perSecond = (x) => (x ? 1000 / x.ms : undefined);
  const share = (x, of) => `${((perSecond(x) / of) * 100).toFixed(0)}%`;
  // The same bound counting the keys and values each step also reads (float32 here, F16 in llama.cpp).
  const withCache = (name, context) =>
    bandwidth.read / (bytes + cacheBytes(context, name.startsWith('llama.cpp') ? 2 : 4));
  if (parts.includes('decode')) {
    console.log(
      `\n6. Decode with the KV cache, tokens per second (median of ${DECODED} steps per run); ${(bytes / 2 ** 20).toFixed(0)} MiB ` +
        `of weights per step. Read bandwidth ${(bandwidth.read / 1e9).toFixed(1)} GB/s (memcmp), so at most ` +
        `${limit.toFixed(1)} tokens/s; copy bandwidth ${(bandwidth.copied / 1e9).toFixed(1)} GB/s copied (memcpy), ` +
        `${copyLimit.toFixed(1)} tokens/s. "+ KV": the read limit counting the keys and values read too.`,
    );
    console.table(
      LLM_DECODE_CONTEXT.map((context) => {
        const r = decode[context];
        return {
          context,
          ...Object.fromEntries(
            [...ours, 'llama.cpp ×1', 'llama.cpp ×2'].map((name) => [name, perSecond(r[name])?.toFixed(1) ?? '—']),
          ),
          ...Object.fromEntries(
            [...VARIANTS.map(({ name }) => `AttnScope ${name} ×1`), 'llama.cpp ×1'].flatMap((name) => [
              [`${name.replace('AttnScope ', '')} % of read limit`, share(r[name], limit)],
              [`${name.replace('AttnScope ', '')} % + KV`, share(r[name], withCache(name, context))],
              [`${name.replace('AttnScope ', '')} % of copy limit`, share(r[name], copyLimit)],
            ]),
          ),
          ...Object.fromEntries(
            VARIANTS.map(({ name }) => [
              `${name} ×1 vs llama.cpp ×1`,
              ratio(r[`AttnScope ${name} ×1`], r['llama.cpp ×1']),
            ]),
          ),
        };
      }),
    );
  }

  // 7. Typing at the end
  if (parts.includes('typing')) {
    const typing = await measure(
      'LLM typing n=128',
      { work: 'llm-append', n: 128 },
      { rounds: 7 },
      attnscope,
      REFERENCE,
    );
    const fresh = await measure(
      'LLM fresh n=129',
      { work: 'llm-prefill', n: 129 },
      { rounds: 7 },
      attnscope,
      REFERENCE,
    );
    console.log(
      '\n7. Typing: one token appended to 128 (the prefix reused) against a fresh run on the 129 (median ms)',
    );
    console.table(
      ours.map((name) => ({
        engine: name,
        appended: fmt(typing[name]?.ms),
        fresh: fmt(fresh[name]?.ms),
        'fresh / appended': ratio(typing[name], fresh[name]),
      })),
    );
  }

  // 7b. The Why pane
  const explained = {};
  for (const what of parts.includes('explain') ? ['score', 'logit'] : [])
    explained[what] = await measure(
      `LLM explain ${what} n=128`,
      { work: `llm-explain-${what}`, n: 128 },
      { rounds: 7 },
      attnscope,
      REFERENCE,
    );
  if (parts.includes('explain')) {
    console.log('\n7b. The Why pane at n = 128: one score, one next-token logit taken apart after the run (median ms)');
    console.table(
      ours.map((name) => ({
        engine: name,
        score: fmt(explained.score[name]?.ms),
        logit: fmt(explained.logit[name]?.ms),
      })),
    );
  }

  for (const { name, build } of VARIANTS) {
    console.log(`\nLLM targets, AttnScope's ${build} builds ("${name}"):`);
    for (const what of Object.keys(explained)) {
      const ms = explained[what][`AttnScope ${name} ×1`]?.ms;
      target(`explain ${what} at n=128: ${name} ×1 within 100 ms (${fmt(ms)} ms)`, ms <= 100);
    }
    for (const n of Object.keys(prefill))
      for (const t of [1, 2])
        faster(
          `prefill n=${n}: ${name} ×${t} vs ORT-web ×${t}`,
          prefill[n][`AttnScope ${name} ×${t}`],
          prefill[n][`ORT-web ×${t}`],
          1.5,
        );
    for (const context of Object.keys(decode)) {
      const r = decode[context];
      // The read limit (memcmp) is the stricter bound; the issue's own is copy bandwidth (memcpy, bytes copied
      // per second) / weight bytes, which a read-only pass can exceed.
      for (const [kind, of] of [
        ['read', limit],
        ['copy', copyLimit],
      ]) {
        const reached = perSecond(r[`AttnScope ${name} ×1`]) / of;
        target(
          `decode at ${context}: ${name} ×1 ≥ 70% of ${kind} bandwidth / weight bytes (${(reached * 100).toFixed(0)}%)`,
          reached >= 0.7,
        );
      }
      const vs = speedup(r[`AttnScope ${name} ×1`], r['llama.cpp ×1']);
      target(
        `decode at ${context}: ${name} ×1 ≥ 80% of llama.cpp ×1's tokens/s (${(vs * 100).toFixed(0)}%)`,
        vs >= 0.8,
      );
    }
  }
  for (const e of llama) e.quit();
}
