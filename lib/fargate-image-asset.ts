import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Names, Stack, Stage } from 'aws-cdk-lib';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import type { Construct } from 'constructs';
import { buildFargateWorkerContext } from './fargate-worker-image.ts';
import type { RuntimeSettings } from './runtime-function.ts';

/**
 * A Fargate image of one runtime program (the worker, the scheduler service), built at deploy
 * time from the build context written here under the app's output directory. When the stack is
 * not being bundled (`cdk synth` of other stacks, the stack tests) the context holds only the
 * Dockerfile, as NodejsFunction skips esbuild then too.
 */
export function fargateImageAsset(
  scope: Construct,
  options: {
    readonly runtime: RuntimeSettings;
    readonly architecture: ecs.CpuArchitecture;
    readonly entry?: string;
    readonly nativeModules?: boolean;
  },
): { readonly image: ecs.ContainerImage; readonly bytes: number } {
  const { runtime, architecture } = options;
  const dir = path.join(Stage.of(scope)?.outdir ?? os.tmpdir(), `fargate-worker-context-${Names.uniqueId(scope)}`);
  let bytes = 0;
  if (!Stack.of(scope).bundlingRequired) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    copyFileSync(runtime.code.dockerfile, path.join(dir, 'Dockerfile'));
  } else {
    bytes = buildFargateWorkerContext({
      code: runtime.code,
      taskModulesInject: runtime.taskModulesInject,
      outDir: dir,
      platform: architecture === ecs.CpuArchitecture.ARM64 ? 'linux/arm64' : 'linux/amd64',
      ...(options.entry ? { entry: options.entry } : {}),
      ...(options.nativeModules === undefined ? {} : { nativeModules: options.nativeModules }),
    });
  }
  const image = ecs.ContainerImage.fromAsset(dir, {
    platform: architecture === ecs.CpuArchitecture.ARM64 ? Platform.LINUX_ARM64 : Platform.LINUX_AMD64,
  });
  return { image, bytes };
}
