// Where a browser keeps Hub downloads. Small files go to the Cache API. Weights, in a Web Worker, go to the Origin
// Private File System as they arrive (a synchronous access handle writes them to a file on disk) and are read back a
// tensor at a time from the file's File (FileReaderSync), so that a GGUF of gigabytes is never whole in the page's
// memory. (A Blob gathered in memory is no place for them: Chromium loses large Blobs built piece by piece, which then
// cannot be read.) Where there is no such file system (a page's main thread, a browser without it), or it is full (a
// private window keeps it in memory, and small), the weights are held in memory, as small files are; a page's main
// thread keeps them in the Cache API, and reads those a worker kept in the file system whole.
import { createHasher } from './digest.js';
import { filePieces, type FilePieces } from './file-pieces.js';
import { type HubStorage, memorySpool, type Spool } from './hub.js';

/** What lib.dom leaves out: the worker-only synchronous handle on an Origin Private File System file. */
interface SyncAccessHandle {
  write(bytes: Uint8Array, options: { at: number }): number;
  read(into: Uint8Array, options: { at: number }): number;
  flush(): void;
  close(): void;
}
type WeightFile = FileSystemFileHandle & {
  createSyncAccessHandle(): Promise<SyncAccessHandle>;
  move(name: string): Promise<void>;
};

const CACHE = 'attnscope-hub-v1';
const FOLDER = 'attnscope-hub';

function openCache(): Promise<Cache | undefined> {
  return typeof caches === 'undefined' ? Promise.resolve(undefined) : caches.open(CACHE).catch(() => undefined);
}

/** The folder of kept weights, where this context can write files synchronously (a worker); else undefined. */
async function weightsFolder(): Promise<FileSystemDirectoryHandle | undefined> {
  const handle = (globalThis as { FileSystemFileHandle?: { prototype: object } }).FileSystemFileHandle;
  const readsInPieces = 'FileReaderSync' in globalThis;
  if (!handle || !('createSyncAccessHandle' in handle.prototype) || !readsInPieces) return undefined;
  try {
    return await (await navigator.storage.getDirectory()).getDirectoryHandle(FOLDER, { create: true });
  } catch {
    return undefined; // no file system for this origin (storage blocked)
  }
}

/**
 * A weight file a worker kept in the folder, read whole (a page's main thread reads no file in pieces), a slice at a
 * time into one buffer: a File of over 2 GiB Chromium will not read at once. Undefined when not kept.
 */
async function readKept(url: string): Promise<Uint8Array | undefined> {
  try {
    const folder = await (await navigator.storage.getDirectory()).getDirectoryHandle(FOLDER);
    const file = await (await folder.getFileHandle(nameOf(url))).getFile();
    const bytes = new Uint8Array(file.size);
    for (let at = 0; at < file.size; at += 2 ** 26)
      bytes.set(new Uint8Array(await file.slice(at, at + 2 ** 26).arrayBuffer()), at);
    return bytes;
  } catch {
    return undefined; // no such file, or no file system here
  }
}

/** A kept file's name: its URL's SHA-256. */
function nameOf(url: string): string {
  const hash = createHasher('sha256');
  hash.update(new TextEncoder().encode(url));
  return hash.hex();
}

/** A file of the folder read in pieces; `remove`: deleted once closed (a download not kept). */
async function readBack(folder: FileSystemDirectoryHandle, handle: FileSystemFileHandle, remove: boolean) {
  const pieces = filePieces(await handle.getFile())!;
  return {
    ...pieces,
    close: () => void (remove && folder.removeEntry(handle.name).catch(() => undefined)),
  } satisfies FilePieces;
}

/**
 * A weight file's download written to the folder as it arrives, under a name of its own until it is complete and
 * checked: then, kept, renamed to its URL's name (replacing an older copy). When the folder takes no more (a full
 * disk, a private window's small quota), what it holds and the rest go to memory.
 */
async function fileSpool(folder: FileSystemDirectoryHandle, url: string, keep: boolean): Promise<Spool> {
  const partial = `${nameOf(url)}.${Math.random().toString(36).slice(2)}.partial`;
  let handle: WeightFile;
  let access: SyncAccessHandle;
  try {
    handle = (await folder.getFileHandle(partial, { create: true })) as WeightFile;
    access = await handle.createSyncAccessHandle();
  } catch {
    return memorySpool();
  }
  let size = 0;
  let memory: Spool | undefined;
  const drop = () => {
    try {
      access.close();
    } catch {
      // closed already
    }
    return folder.removeEntry(partial).catch(() => undefined);
  };
  return {
    async write(chunk) {
      if (memory) return memory.write(chunk);
      let wrote = -1;
      try {
        wrote = access.write(chunk, { at: size });
      } catch {
        // QuotaExceededError: below, as a short write
      }
      if (wrote === chunk.length) {
        size += wrote;
        return;
      }
      memory = memorySpool();
      for (let at = 0; at < size; at += 2 ** 24) {
        const piece = new Uint8Array(Math.min(2 ** 24, size - at));
        access.read(piece, { at });
        await memory.write(piece);
      }
      await memory.write(chunk);
      await drop();
    },
    async finish() {
      if (memory) return memory.finish();
      try {
        access.flush();
        access.close();
      } catch (err) {
        await drop();
        throw err;
      }
      if (keep)
        try {
          await handle.move(nameOf(url));
        } catch {
          keep = false; // read from where it is, and removed after
        }
      return readBack(folder, handle, !keep);
    },
    async discard() {
      await memory?.discard();
      await drop(); // also when going over to memory failed midway
    },
  };
}

/**
 * Weights kept in the Cache API (by earlier versions, or by a page's main thread, which has no synchronous file
 * access) moved to the folder as they are read: no new download, and the cache's copy, of as many bytes, freed once
 * the folder holds them. Undefined when not cached, or when the cached copy cannot be read (then it is deleted: it
 * would only take room).
 */
async function fromCache(folder: FileSystemDirectoryHandle, url: string): Promise<Uint8Array | FilePieces | undefined> {
  const cache = await openCache();
  const body = (await cache?.match(url).catch(() => undefined))?.body;
  if (!cache || !body) return undefined;
  const reader = body.getReader();
  const spool = await fileSpool(folder, url, true);
  let moved: Uint8Array | FilePieces;
  try {
    for (let read = await reader.read(); !read.done; read = await reader.read()) await spool.write(read.value);
    moved = await spool.finish();
  } catch {
    await reader.cancel().catch(() => undefined);
    await spool.discard();
    await cache.delete(url).catch(() => undefined);
    return undefined; // downloaded again
  }
  const kept = await folder.getFileHandle(nameOf(url)).then(
    () => true,
    () => false,
  );
  if (kept) await cache.delete(url).catch(() => undefined);
  return moved;
}

export const browserStorage: HubStorage = {
  async get(url) {
    const response = await (await openCache())?.match(url);
    return response ? new Uint8Array(await response.arrayBuffer()) : undefined;
  },
  async getWeights(url) {
    const folder = await weightsFolder();
    if (!folder) return (await readKept(url)) ?? this.get(url);
    let kept: FileSystemFileHandle;
    try {
      kept = await folder.getFileHandle(nameOf(url));
    } catch {
      return fromCache(folder, url); // not kept here: perhaps in the Cache API
    }
    // A copy in the Cache API as well (left by an earlier version) only takes room: every context reads this one.
    await (await openCache())?.delete(url).catch(() => undefined);
    return readBack(folder, kept, false).catch(() => undefined); // gone meanwhile: downloaded again
  },
  async put(url, bytes) {
    // A cache that cannot be written (no storage left; bytes over 2 GiB, which a Response cannot hold) only costs a
    // download next time.
    try {
      await (await openCache())?.put(url, new Response(bytes as Uint8Array<ArrayBuffer>));
    } catch {
      // not kept
    }
  },
  async spool(url, keep) {
    const folder = await weightsFolder();
    if (folder) return fileSpool(folder, url, keep);
    const memory = memorySpool();
    return {
      ...memory,
      finish: async () => {
        const bytes = (await memory.finish()) as Uint8Array;
        if (keep) await this.put(url, bytes);
        return bytes;
      },
    };
  },
  hasher: createHasher,
};
