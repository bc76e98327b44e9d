// SHA-256 and SHA-1 (FIPS 180-4) over bytes that arrive in pieces: how a browser checks a Hub download of gigabytes
// against the checksum the Hub lists without holding it whole (crypto.subtle.digest takes one buffer). Node uses its
// own (node:crypto's createHash); tests/js/digest.test.ts checks these against it.

/** A checksum fed a piece at a time; `hex` ends it. */
export interface Hasher {
  update(bytes: Uint8Array): void;
  hex(): string;
}

/** The first `count` primes. */
function primes(count: number): number[] {
  const found: number[] = [];
  for (let n = 2; found.length < count; n++) if (found.every((p) => n % p)) found.push(n);
  return found;
}
/** The first 32 bits of a number's fractional part. */
const fraction32 = (x: number) => ((x - Math.floor(x)) * 2 ** 32) >>> 0;

// SHA-256's constants: the fractional parts of the cube roots of the first 64 primes (K), and of the square roots of
// the first 8 (the initial state).
const K256 = Int32Array.from(primes(64), (p) => fraction32(Math.cbrt(p)));
const H256 = Int32Array.from(primes(8), (p) => fraction32(Math.sqrt(p)));

const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));
const rotl = (x: number, n: number) => (x << n) | (x >>> (32 - n));

/**
 * The Merkle-Damgård frame both hashes share: 64-byte blocks, each read as 16 big-endian words into `w` and folded
 * into the state by `compress`; the last block padded with 0x80, zeros and the message's length in bits.
 */
abstract class BlockHash implements Hasher {
  protected readonly w: Int32Array;
  private readonly block = new Uint8Array(64);
  private filled = 0;
  private length = 0; // bytes so far

  constructor(
    protected readonly state: Int32Array,
    schedule: number,
  ) {
    this.w = new Int32Array(schedule);
  }

  protected abstract compress(): void;

  private load(bytes: Uint8Array, at: number): void {
    const w = this.w;
    for (let i = 0; i < 16; i++, at += 4)
      w[i] = (bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!;
    this.compress();
  }

  update(bytes: Uint8Array): void {
    this.length += bytes.length;
    let at = 0;
    if (this.filled) {
      at = Math.min(64 - this.filled, bytes.length);
      this.block.set(bytes.subarray(0, at), this.filled);
      this.filled += at;
      if (this.filled < 64) return;
      this.load(this.block, 0);
      this.filled = 0;
    }
    for (; at + 64 <= bytes.length; at += 64) this.load(bytes, at);
    this.block.set(bytes.subarray(at));
    this.filled = bytes.length - at;
  }

  hex(): string {
    const bits = this.length * 8;
    const tail = new Uint8Array((this.filled < 56 ? 64 : 128) - this.filled);
    tail[0] = 0x80;
    const end = new DataView(tail.buffer, tail.length - 8);
    end.setUint32(0, Math.floor(bits / 2 ** 32));
    end.setUint32(4, bits >>> 0);
    this.update(tail);
    return Array.from(this.state, (x) => (x >>> 0).toString(16).padStart(8, '0')).join('');
  }
}

class Sha256 extends BlockHash {
  constructor() {
    super(H256.slice(), 64);
  }

  protected compress(): void {
    const { w, state: s } = this;
    const k = K256;
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15]!;
      const b = w[i - 2]!;
      const s0 = rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3);
      const s1 = rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10);
      w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) | 0;
    }
    // Plain locals: destructuring an array runs the iterator protocol in every block.
    let a = s[0]!,
      b = s[1]!,
      c = s[2]!,
      d = s[3]!,
      e = s[4]!,
      f = s[5]!,
      g = s[6]!,
      h = s[7]!;
    for (let i = 0; i < 64; i++) {
      const t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i]! + w[i]!) | 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    s[0] = (s[0]! + a) | 0;
    s[1] = (s[1]! + b) | 0;
    s[2] = (s[2]! + c) | 0;
    s[3] = (s[3]! + d) | 0;
    s[4] = (s[4]! + e) | 0;
    s[5] = (s[5]! + f) | 0;
    s[6] = (s[6]! + g) | 0;
    s[7] = (s[7]! + h) | 0;
  }
}

class Sha1 extends BlockHash {
  constructor() {
    super(Int32Array.of(0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0), 80);
  }

  protected compress(): void {
    const { w, state: s } = this;
    for (let i = 16; i < 80; i++) w[i] = rotl(w[i - 3]! ^ w[i - 8]! ^ w[i - 14]! ^ w[i - 16]!, 1);
    let a = s[0]!,
      b = s[1]!,
      c = s[2]!,
      d = s[3]!,
      e = s[4]!;
    for (let i = 0; i < 80; i++) {
      const f = i < 20 ? (b & c) | (~b & d) : i < 40 || i >= 60 ? b ^ c ^ d : (b & c) | (b & d) | (c & d);
      const k = i < 20 ? 0x5a827999 : i < 40 ? 0x6ed9eba1 : i < 60 ? 0x8f1bbcdc : 0xca62c1d6 | 0;
      const t = (rotl(a, 5) + f + e + k + w[i]!) | 0;
      e = d;
      d = c;
      c = rotl(b, 30);
      b = a;
      a = t;
    }
    s[0] = (s[0]! + a) | 0;
    s[1] = (s[1]! + b) | 0;
    s[2] = (s[2]! + c) | 0;
    s[3] = (s[3]! + d) | 0;
    s[4] = (s[4]! + e) | 0;
  }
}

/** A SHA-256 or SHA-1 fed in pieces. */
export const createHasher = (algorithm: 'sha256' | 'sha1'): Hasher =>
  algorithm === 'sha256' ? new Sha256() : new Sha1();
