#!/usr/bin/env node
// `npm pack` / `npm publish` only: the packed package.json leaves out the `prepare` script.
// In this repository `prepare` builds dist/ at `npm ci`, so the package's own entry points
// (`serverless-task-scheduler/client`, as the README's snippets import them) resolve here as they
// do where the package is installed. In a user's project it would never run (npm runs `prepare`
// only for git and folder installs), yet npm 11 warns on every install of a package that has one
// ("install scripts not yet covered by allowScripts"). prepack strips it, postpack puts it back.
// Plain JavaScript: it runs on any Node.
import { readFileSync, writeFileSync } from 'node:fs';

const PREPARE = 'npm run build';
const path = new URL('../package.json', import.meta.url);
const pkg = JSON.parse(readFileSync(path, 'utf8'));
const action = process.argv[2];
if (action === 'strip') {
  delete pkg.scripts.prepare;
} else if (action === 'restore') {
  // Back in its place, right after `build`.
  pkg.scripts = Object.fromEntries(
    Object.entries(pkg.scripts)
      .filter(([name]) => name !== 'prepare')
      .flatMap((entry) => (entry[0] === 'build' ? [entry, ['prepare', PREPARE]] : [entry])),
  );
} else {
  console.error('usage: node bin/pack-manifest.mjs strip|restore');
  process.exit(2);
}
writeFileSync(path, `${JSON.stringify(pkg, null, 2)}\n`);
