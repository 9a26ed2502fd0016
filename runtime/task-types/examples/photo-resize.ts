/**
 * Resize every photo under a prefix (e.g. the day's `uploads/2026-11-29/`) to each requested
 * width with sharp, writing `thumbnails/{width}/{originalKey}` in the same format.
 *
 * Idempotent: output keys depend only on the input key and width, and sharp's output is a
 * function of the input bytes, so a rerun (or a retry that stopped halfway) overwrites the same
 * objects with the same images. With `skipUnchanged` a rerun instead skips each thumbnail
 * whose recorded source ETag matches the photo's current ETag: content, not clocks, decides
 * (a LastModified comparison would break on same-second overwrites and on copies).
 */
import {
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  paginateListObjectsV2,
  type S3Client,
} from '@aws-sdk/client-s3';
import { z } from 'zod';
import { NonRetryableError } from '../../core/errors.ts';
import { EXAMPLE_BUCKET } from '../../infra/example-resources.ts';
import { defineTaskType } from '../define.ts';
import { loadSharp, SHARP_MISSING } from './sharp.ts';
import { exampleStores } from './stores.ts';

export const THUMBNAILS_PREFIX = 'thumbnails/';

export const thumbnailKey = (width: number, originalKey: string): string =>
  `${THUMBNAILS_PREFIX}${width}/${originalKey}`;

/** Formats sharp both reads and writes; a thumbnail keeps its photo's format (and extension). */
const WRITABLE_FORMATS = new Set(['jpeg', 'png', 'webp', 'gif', 'avif', 'tiff']);

/** Listed in the result at most, so the task result stays far below DynamoDB's item limit. */
const MAX_LISTED_SKIPS = 20;

export const photoResize = defineTaskType({
  type: 'examples.photo-resize',
  description:
    'Resizes every photo under `prefix` to each width in `sizes` (never enlarging), writing thumbnails/{width}/{originalKey}; a rerun overwrites.',
  payload: z.strictObject({
    /** Defaults to the example data bucket. */
    bucket: z.string().min(3).max(63).optional(),
    prefix: z
      .string()
      .min(1)
      .max(900)
      // Thumbnails live in the same bucket: resizing them again would multiply objects on every run.
      .refine((prefix) => !prefix.startsWith(THUMBNAILS_PREFIX), `must not be under ${THUMBNAILS_PREFIX}`),
    sizes: z
      .array(z.number().int().min(16).max(4096))
      .min(1)
      .max(8)
      .transform((sizes) => [...new Set(sizes)].sort((a, b) => a - b)),
    skipUnchanged: z.boolean().default(false),
  }),
  // Decoding large photos wants memory more than CPU; one photo at a time keeps it bounded.
  defaults: { runtime: 'lambda', timeoutSeconds: 840, resources: { vcpu: 1, memoryMiB: 2048 } },
  async handler({ bucket: requestedBucket, prefix, sizes, skipUnchanged }, ctx) {
    const { aws, names } = exampleStores(ctx, [EXAMPLE_BUCKET.id]);
    // Loaded on demand: sharp is native, and only the processes that resize need to carry it.
    const sharp = await loadSharp();
    if (!sharp) throw new NonRetryableError(SHARP_MISSING);
    const bucket = requestedBucket ?? names[EXAMPLE_BUCKET.id];
    const send = { abortSignal: ctx.signal };
    let photos = 0;
    let thumbnailsWritten = 0;
    let thumbnailsUpToDate = 0;
    const skipped: { key: string; reason: string }[] = [];
    let skippedCount = 0;
    const skip = (key: string, reason: string) => {
      skippedCount += 1;
      if (skipped.length < MAX_LISTED_SKIPS) skipped.push({ key, reason });
      ctx.logger.warn('photo skipped', { key, reason });
    };

    for await (const page of paginateListObjectsV2({ client: aws.s3 }, { Bucket: bucket, Prefix: prefix }, send)) {
      for (const listed of page.Contents ?? []) {
        const key = listed.Key;
        // Folder markers and empty uploads are not photos.
        if (!key || key.endsWith('/') || !listed.Size) continue;
        ctx.signal.throwIfAborted();

        const object = await aws.s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }), send);
        const sourceEtag = object.ETag ?? '';
        const bytes = await object.Body?.transformToByteArray();
        if (!bytes) {
          skip(key, 'empty body');
          continue;
        }
        let format: string | undefined;
        try {
          format = (await sharp(bytes).metadata()).format;
        } catch {
          skip(key, 'not an image sharp can read');
          continue;
        }
        if (!format || !WRITABLE_FORMATS.has(format)) {
          skip(key, `unsupported format ${format ?? 'unknown'}`);
          continue;
        }

        for (const width of sizes) {
          const outputKey = thumbnailKey(width, key);
          if (skipUnchanged && (await thumbnailIsCurrent(aws.s3, bucket, outputKey, sourceEtag, width, ctx.signal))) {
            thumbnailsUpToDate += 1;
            continue;
          }
          // rotate() applies the EXIF orientation, so phone photos are not sideways.
          const { data, info } = await sharp(bytes)
            .rotate()
            .resize({ width, withoutEnlargement: true })
            .toBuffer({ resolveWithObject: true });
          await aws.s3.send(
            new PutObjectCommand({
              Bucket: bucket,
              Key: outputKey,
              Body: data,
              ContentType: `image/${info.format}`,
              Metadata: { 'source-etag': sourceEtag, 'requested-width': String(width) },
            }),
            send,
          );
          thumbnailsWritten += 1;
        }
        photos += 1;
        // Between photos: extends the lease, and rejects if this attempt has been superseded.
        await ctx.heartbeat();
      }
    }

    ctx.logger.info('photos resized', { bucket, prefix, photos, thumbnailsWritten, thumbnailsUpToDate });
    return { bucket, prefix, sizes, photos, thumbnailsWritten, thumbnailsUpToDate, skippedCount, skipped };
  },
});

async function thumbnailIsCurrent(
  s3: S3Client,
  bucket: string,
  key: string,
  sourceEtag: string,
  width: number,
  signal: AbortSignal,
): Promise<boolean> {
  try {
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: signal });
    return head.Metadata?.['source-etag'] === sourceEtag && head.Metadata?.['requested-width'] === String(width);
  } catch (error) {
    if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
    throw error;
  }
}
