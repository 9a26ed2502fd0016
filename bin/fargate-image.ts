/**
 * Write the Fargate worker's Docker build context (what `cdk synth` stages as the image asset)
 * and print its size: `node bin/fargate-image.ts DIR [linux/arm64|linux/amd64]`, then
 * `docker build --platform linux/arm64 DIR`.
 */
import * as path from 'node:path';
import { buildFargateWorkerContext, type ImagePlatform } from '../lib/fargate-worker-image.ts';
import { runtimeCode } from '../lib/runtime-code.ts';

const [outArg, platformArg = 'linux/arm64'] = process.argv.slice(2);
if (!outArg || !['linux/arm64', 'linux/amd64'].includes(platformArg)) {
  console.error('usage: node bin/fargate-image.ts DIR [linux/arm64|linux/amd64]');
  process.exit(2);
}
const outDir = path.resolve(outArg);
const bytes = buildFargateWorkerContext({
  code: runtimeCode({ projectRoot: path.resolve(import.meta.dirname, '..') }),
  outDir,
  platform: platformArg as ImagePlatform,
});
console.log(`Fargate worker build context ${outDir}: ${(bytes / 1e6).toFixed(1)} MB (${platformArg})`);
