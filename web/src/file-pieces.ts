// A weight file the engine reads a tensor at a time, synchronously, as it reads a Uint8Array (cpp/bindings/
// model_files.cpp's JsFileBytes takes `byteLength` and `subarray`): a File in a Web Worker, read a piece at a time by
// FileReaderSync, or a file on disk in Node (node.ts), so that a GGUF of gigabytes, dropped on a page, named by its
// path or downloaded from the Hub, is never whole in memory beside the heap it loads into.
import type { GgufHead } from './gguf-heap.js';

/** A file's size, and its bytes [from, to) read when asked for: undefined when they can no longer be read. */
export interface FilePieces {
  readonly byteLength: number;
  subarray(from: number, to: number): Uint8Array | undefined;
  /** Lets go of what the reading holds (a file descriptor), once the model has loaded. */
  close?(): void;
}

/** The files a model's weights come in, which are read in pieces where the platform can. */
export const WEIGHTS_FILE = /\.(safetensors|gguf)$/;

/** Lets go of a file read in pieces, once loaded or not to be used (bytes need nothing). */
export function release(file: Uint8Array | FilePieces | undefined): void {
  if (file && !(file instanceof Uint8Array)) file.close?.();
}

/** Lets go of every file of a model's that is read in pieces. */
export function releaseAll(files: Record<string, Uint8Array | FilePieces>): void {
  Object.values(files).forEach(release);
}

interface SyncReader {
  readAsArrayBuffer(blob: Blob): ArrayBuffer;
}

/** A Blob read in pieces, where this context reads Blobs synchronously (a worker); else undefined. */
export function filePieces(blob: Blob): FilePieces | undefined {
  const Reader = (globalThis as { FileReaderSync?: new () => SyncReader }).FileReaderSync;
  if (!Reader) return undefined;
  const reader = new Reader();
  return {
    byteLength: blob.size,
    subarray: (from, to) => {
      try {
        return new Uint8Array(reader.readAsArrayBuffer(blob.slice(from, to)));
      } catch {
        return undefined; // the file changed or went away since it was chosen: the engine says so, naming it
      }
    },
  };
}

/** A file read in pieces as a GGUF's head (gguf-heap.ts), for the heap its weights take. */
export const piecesHead = (name: string, pieces: FilePieces): GgufHead => ({
  name,
  size: pieces.byteLength,
  read: async (end) => {
    const head = pieces.subarray(0, end);
    if (!head) throw new Error(`loadModel: ${name} could not be read (it was changed or removed)`);
    return head;
  },
});
