// A weight file the engine reads a tensor at a time, synchronously, as it reads a Uint8Array (cpp/bindings/
// model_files.cpp's JsFileBytes takes `byteLength` and `subarray`): a File in a Web Worker, read a piece at a time by
// FileReaderSync, so that a GGUF of gigabytes dropped on a page is never whole in memory beside the heap it loads into.

/** A file's size, and its bytes [from, to) read when asked for: undefined when they can no longer be read. */
export interface FilePieces {
  readonly byteLength: number;
  subarray(from: number, to: number): Uint8Array | undefined;
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
