#!/usr/bin/env node
// Runs before `npm start`, `npm test` and the other scripts, on whatever `node` npm found first.
// `npm ci` installs the project's own Node (devDependency `node`, from the npm registry) onto the
// scripts' PATH; this says in one line what to do when that did not happen (install scripts
// skipped, --omit=dev, a platform the `node` package does not cover) instead of the bare
// `node: bad option: --experimental-strip-types`. Plain JavaScript: it must run on any Node.
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const [wantMajor, wantMinor] = pkg.engines.node
  .replace(/^>=\s*/, '')
  .split('.')
  .map(Number);
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < wantMajor || (major === wantMajor && minor < wantMinor)) {
  console.error(
    `This project needs Node ${pkg.engines.node} (it targets 24) but \`node\` here is v${process.versions.node} ` +
      `(${process.execPath}): run \`npm ci\` (it installs Node ${pkg.devDependencies.node} from the npm registry; ` +
      'not with --ignore-scripts or --omit=dev), or install Node 24 from https://nodejs.org.',
  );
  process.exit(1);
}
