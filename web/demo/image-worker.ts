// Decodes (and scales) images in a worker of their own, so that no part of it runs on the page's thread: the
// browser decodes a Blob off-thread already, but scaling a decoded 100-megapixel image down may not be. The page
// posts a Blob or an ImageBitmap with createImageBitmap's options; the bitmap comes back transferred (no copy), with
// a second one of the same pixels for the compute worker (made here: making it on the page's thread copies them there).
export type DecodeRequest = { id: number; source: Blob | ImageBitmap; options: ImageBitmapOptions };
export type DecodeReply = { id: number; bitmap: ImageBitmap; copy: ImageBitmap } | { id: number; error: string };

self.onmessage = async ({ data }: MessageEvent<DecodeRequest>) => {
  const { id, source, options } = data;
  try {
    const bitmap = await createImageBitmap(source, options);
    if (source instanceof ImageBitmap) source.close();
    const copy = await createImageBitmap(bitmap);
    postMessage({ id, bitmap, copy } satisfies DecodeReply, { transfer: [bitmap, copy] });
  } catch (err) {
    postMessage({ id, error: err instanceof Error ? err.message : String(err) } satisfies DecodeReply);
  }
};
