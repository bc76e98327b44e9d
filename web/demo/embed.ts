// A deterministic stand-in embedding for the parameter-free demo: each token is
// the sum of hashed vectors of its character trigrams, scaled to norm √dim.
// Tokens that share spelling get similar vectors, so they attend to each other.

/** Words and single punctuation marks, in order. */
export function tokenize(text: string): string[] {
  return text.match(/[\p{L}\p{N}']+|[^\s\p{L}\p{N}]/gu) ?? [];
}

function hash(s: string, seed: number): number {
  let h = 2166136261 ^ seed;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** [tokens.length, dim] row-major. */
export function embed(tokens: string[], dim: number): Float32Array {
  const out = new Float32Array(tokens.length * dim);
  tokens.forEach((token, i) => {
    const padded = `^${token.toLowerCase()}$`;
    const row = out.subarray(i * dim, (i + 1) * dim);
    for (let c = 0; c + 3 <= padded.length || c === 0; c++) {
      const gram = padded.slice(c, c + 3);
      for (let j = 0; j < dim; j++) row[j] += (hash(gram, j) / 2 ** 32) * 2 - 1;
      if (c + 3 >= padded.length) break;
    }
    let norm = 0;
    for (const v of row) norm += v * v;
    const s = Math.sqrt(dim) / (Math.sqrt(norm) || 1);
    for (let j = 0; j < dim; j++) row[j] *= s;
  });
  return out;
}
