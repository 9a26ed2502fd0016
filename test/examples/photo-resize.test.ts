import { PutObjectCommand } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../runtime/core/errors.ts';
import { photoResize, thumbnailKey } from '../../runtime/task-types/examples/photo-resize.ts';
import { samplePhoto } from '../../runtime/task-types/examples/seed-data.ts';
import { defaultRegistry } from '../../runtime/task-types/index.ts';
import { type ExampleEnv, listKeys, makeContext, readObject, startExampleEnv } from './helpers.ts';

const TYPE = 'examples.photo-resize';
let env: ExampleEnv;

beforeAll(async () => {
  env = await startExampleEnv();
});
afterAll(async () => {
  await env?.emulators.stop();
});

type Result = {
  bucket: string;
  photos: number;
  thumbnailsWritten: number;
  thumbnailsUpToDate: number;
  skippedCount: number;
  skipped: { key: string; reason: string }[];
};

async function upload(key: string, body: Uint8Array | string, contentType = 'image/png'): Promise<void> {
  await env.emulators.clients.s3.send(
    new PutObjectCommand({ Bucket: env.bucket, Key: key, Body: body, ContentType: contentType }),
  );
}

function parse(payload: unknown) {
  return defaultRegistry().parsePayload(TYPE, payload) as Parameters<typeof photoResize.handler>[0];
}

const red = { r: 200, g: 30, b: 30 };
const blue = { r: 30, g: 30, b: 200 };

describe('examples.photo-resize', () => {
  it('writes a thumbnail per photo and width, with the right pixel width and format, skipping non-photos', async () => {
    // Prepare
    await upload('uploads/day1/a.png', await samplePhoto(1000, 600, red));
    await upload('uploads/day1/sub/b.png', await samplePhoto(640, 480, blue));
    const jpeg = await sharp({ create: { width: 900, height: 900, channels: 3, background: blue } })
      .jpeg()
      .toBuffer();
    await upload('uploads/day1/c.jpg', jpeg, 'image/jpeg');
    // Narrower than the largest size: never enlarged.
    await upload('uploads/day1/tiny.png', await samplePhoto(100, 50, red));
    await upload('uploads/day1/readme.txt', 'not a photo', 'text/plain');
    // Other prefixes are not touched.
    await upload('uploads/day2/other.png', await samplePhoto(300, 300, red));
    const { ctx, heartbeats } = makeContext(env.services, { type: TYPE });

    // Act
    const result = (await photoResize.handler(parse({ prefix: 'uploads/day1/', sizes: [320, 64] }), ctx)) as Result;

    // Assess
    expect(result).toMatchObject({ bucket: env.bucket, photos: 4, thumbnailsWritten: 8, thumbnailsUpToDate: 0 });
    expect(result.skipped).toEqual([{ key: 'uploads/day1/readme.txt', reason: 'not an image sharp can read' }]);
    expect(heartbeats()).toBe(4);
    const expected: [string, number, number, string][] = [
      ['uploads/day1/a.png', 64, 64, 'png'],
      ['uploads/day1/a.png', 320, 320, 'png'],
      ['uploads/day1/sub/b.png', 64, 64, 'png'],
      ['uploads/day1/sub/b.png', 320, 320, 'png'],
      ['uploads/day1/c.jpg', 64, 64, 'jpeg'],
      ['uploads/day1/c.jpg', 320, 320, 'jpeg'],
      ['uploads/day1/tiny.png', 64, 64, 'png'],
      ['uploads/day1/tiny.png', 320, 100, 'png'],
    ];
    for (const [key, size, width, format] of expected) {
      const metadata = await sharp(await readObject(env, thumbnailKey(size, key))).metadata();
      expect({ key, size, width: metadata.width, format: metadata.format }).toEqual({ key, size, width, format });
    }
    // Aspect ratio kept: 1000x600 at width 320 is 192 high.
    expect((await sharp(await readObject(env, 'thumbnails/320/uploads/day1/a.png')).metadata()).height).toBe(192);
    const written = (await listKeys(env, 'thumbnails/')).filter((key) => key.includes('/uploads/day'));
    expect(written).toEqual(expected.map(([key, size]) => thumbnailKey(size, key)).sort());
  });

  it('is idempotent: a rerun overwrites the same keys with the same images', async () => {
    await upload('uploads/rerun/p.png', await samplePhoto(800, 400, red));
    await upload('uploads/rerun/q.png', await samplePhoto(500, 500, blue));
    const payload = parse({ prefix: 'uploads/rerun/', sizes: [200] });

    const first = (await photoResize.handler(payload, makeContext(env.services, { type: TYPE }).ctx)) as Result;
    const keysAfterFirst = await listKeys(env, 'thumbnails/200/uploads/rerun/');
    const bytesAfterFirst = await Promise.all(keysAfterFirst.map((key) => readObject(env, key)));
    const second = (await photoResize.handler(payload, makeContext(env.services, { type: TYPE }).ctx)) as Result;
    const keysAfterSecond = await listKeys(env, 'thumbnails/200/uploads/rerun/');
    const bytesAfterSecond = await Promise.all(keysAfterSecond.map((key) => readObject(env, key)));

    expect(second).toEqual(first);
    expect(second.thumbnailsWritten).toBe(2);
    expect(keysAfterSecond).toEqual(['thumbnails/200/uploads/rerun/p.png', 'thumbnails/200/uploads/rerun/q.png']);
    expect(bytesAfterSecond.map((bytes) => Buffer.from(bytes).toString('base64'))).toEqual(
      bytesAfterFirst.map((bytes) => Buffer.from(bytes).toString('base64')),
    );
  });

  it('with skipUnchanged, rewrites only the thumbnails of photos whose content changed', async () => {
    await upload('uploads/skip/p.png', await samplePhoto(800, 400, red));
    await upload('uploads/skip/q.png', await samplePhoto(500, 500, blue));
    const payload = parse({ prefix: 'uploads/skip/', sizes: [100, 50], skipUnchanged: true });
    const first = (await photoResize.handler(payload, makeContext(env.services, { type: TYPE }).ctx)) as Result;
    expect(first).toMatchObject({ photos: 2, thumbnailsWritten: 4, thumbnailsUpToDate: 0 });

    const second = (await photoResize.handler(payload, makeContext(env.services, { type: TYPE }).ctx)) as Result;
    expect(second).toMatchObject({ photos: 2, thumbnailsWritten: 0, thumbnailsUpToDate: 4 });

    // Replace p.png with a taller picture: only its two thumbnails are redone.
    await upload('uploads/skip/p.png', await samplePhoto(400, 800, blue));
    const third = (await photoResize.handler(payload, makeContext(env.services, { type: TYPE }).ctx)) as Result;
    expect(third).toMatchObject({ photos: 2, thumbnailsWritten: 2, thumbnailsUpToDate: 2 });
    const metadata = await sharp(await readObject(env, 'thumbnails/100/uploads/skip/p.png')).metadata();
    expect({ width: metadata.width, height: metadata.height }).toEqual({ width: 100, height: 200 });
  });

  it('honours the abort signal: stops between photos and writes nothing more', async () => {
    for (const name of ['1.png', '2.png', '3.png'])
      await upload(`uploads/abort/${name}`, await samplePhoto(300, 200, red));
    const test = makeContext(env.services, {
      type: TYPE,
      // Cancelled while the first photo's heartbeat is sent.
      onHeartbeat: () => test.controller.abort(new Error('task cancelled')),
    });

    await expect(photoResize.handler(parse({ prefix: 'uploads/abort/', sizes: [120] }), test.ctx)).rejects.toThrow(
      'task cancelled',
    );

    expect(test.heartbeats()).toBe(1);
    expect(await listKeys(env, 'thumbnails/120/uploads/abort/')).toEqual(['thumbnails/120/uploads/abort/1.png']);
  });

  it('does no work when already aborted', async () => {
    await upload('uploads/pre-aborted/1.png', await samplePhoto(300, 200, red));
    const test = makeContext(env.services, { type: TYPE });
    test.controller.abort(new Error('lease lost'));
    await expect(
      photoResize.handler(parse({ prefix: 'uploads/pre-aborted/', sizes: [120] }), test.ctx),
    ).rejects.toThrow();
    expect(await listKeys(env, 'thumbnails/120/uploads/pre-aborted/')).toEqual([]);
  });

  it('stops when a heartbeat is refused (the attempt was superseded)', async () => {
    for (const name of ['1.png', '2.png']) await upload(`uploads/stale/${name}`, await samplePhoto(300, 200, red));
    const { ctx } = makeContext(env.services, {
      type: TYPE,
      onHeartbeat: () => {
        throw new Error('stale attempt');
      },
    });
    await expect(photoResize.handler(parse({ prefix: 'uploads/stale/', sizes: [80] }), ctx)).rejects.toThrow(
      'stale attempt',
    );
    expect(await listKeys(env, 'thumbnails/80/uploads/stale/')).toHaveLength(1);
  });

  it('refuses a prefix under thumbnails/, empty sizes and absurd widths', () => {
    expect(() => parse({ prefix: 'thumbnails/200/', sizes: [100] })).toThrow(ValidationError);
    expect(() => parse({ prefix: 'uploads/', sizes: [] })).toThrow(ValidationError);
    expect(() => parse({ prefix: 'uploads/', sizes: [100_000] })).toThrow(ValidationError);
    expect(parse({ prefix: 'uploads/', sizes: [320, 64, 320] }).sizes).toEqual([64, 320]);
  });
});
