/**
 * A headless Chromium for the browser tests, with nothing installed by hand: CHROMIUM_PATH when
 * set, else the system's /usr/bin/chromium, else the Chromium that `npm ci` brought in the
 * devDependency @sparticuz/chromium (a brotli-packed headless shell for Linux x64, shipped inside
 * the npm tarball), unpacked once under node_modules/.cache. That binary needs NSS, NSPR and
 * expat; the package carries those too (built for Amazon Linux 2023), so they are put on its
 * LD_LIBRARY_PATH rather than asked of the host.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { arch, platform } from 'node:os';
import { dirname, join, resolve } from 'node:path';

export interface ChromiumBinary {
  readonly executablePath: string;
  /** Extra environment for the browser process. */
  readonly env: Readonly<Record<string, string>>;
  readonly source: string;
}

const SYSTEM_CHROMIUM = '/usr/bin/chromium';

export async function findChromium(): Promise<ChromiumBinary> {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`CHROMIUM_PATH=${fromEnv} does not exist.`);
    return { executablePath: fromEnv, env: {}, source: 'CHROMIUM_PATH' };
  }
  if (existsSync(SYSTEM_CHROMIUM)) return { executablePath: SYSTEM_CHROMIUM, env: {}, source: SYSTEM_CHROMIUM };
  if (platform() !== 'linux' || arch() !== 'x64') {
    throw new Error(
      `No Chromium: @sparticuz/chromium ships one for Linux x64 only (this is ${platform()} ${arch()}); set CHROMIUM_PATH to a Chrome or Chromium binary.`,
    );
  }
  return unpackSparticuzChromium();
}

async function unpackSparticuzChromium(): Promise<ChromiumBinary> {
  const require = createRequire(import.meta.url);
  let entry: string;
  try {
    entry = require.resolve('@sparticuz/chromium');
  } catch {
    throw new Error('No Chromium: the devDependency @sparticuz/chromium is not installed; run `npm ci`.');
  }
  // build/index.js → the package root (its package.json is not exported).
  const root = dirname(dirname(entry));
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  const packed = join(root, 'bin');
  const target = resolve('node_modules', '.cache', `sparticuz-chromium-${version}`);
  if (!existsSync(join(target, 'chromium'))) {
    // Unpack beside the target and rename into place, so parallel test processes never see half a binary.
    await mkdir(dirname(target), { recursive: true });
    const staging = await mkdtemp(`${target}.partial-`);
    await inflateInto(staging, packed);
    await writeFile(join(staging, 'fonts.conf'), fontConfig(target));
    await rename(staging, target).catch(async (error: NodeJS.ErrnoException) => {
      await rm(staging, { recursive: true, force: true });
      if (!existsSync(join(target, 'chromium'))) throw error;
    });
  }
  return {
    executablePath: join(target, 'chromium'),
    env: {
      LD_LIBRARY_PATH: [join(target, 'al2023', 'lib'), process.env.LD_LIBRARY_PATH].filter(Boolean).join(':'),
      FONTCONFIG_PATH: target,
    },
    source: `@sparticuz/chromium ${version}`,
  };
}

/** The package's `inflate` writes into os.tmpdir() as read when it is called: point that at `directory`. */
async function inflateInto(directory: string, packed: string): Promise<void> {
  const { inflate } = await import('@sparticuz/chromium');
  const previous = process.env.TMPDIR;
  process.env.TMPDIR = directory;
  let pending: Promise<string>[];
  try {
    pending = ['chromium.br', 'fonts.tar.br', 'al2023.tar.br'].map((file) => inflate(join(packed, file)));
  } finally {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
  }
  await Promise.all(pending);
}

/** The package's own fonts.conf names Lambda's paths (/tmp/fonts): name where they are here, and the system's. */
function fontConfig(target: string): string {
  return `<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <dir>/usr/share/fonts</dir>
  <dir>${join(target, 'fonts')}</dir>
  <cachedir>${join(target, 'fonts-cache')}</cachedir>
</fontconfig>
`;
}
