# The Fargate worker image: the worker alone. Its build context is NOT the repository but the
# directory lib/fargate-worker-image.ts writes (at `cdk synth`, or `node bin/fargate-image.ts
# DIR`): index.mjs, the esbuild bundle of runtime/handlers/fargate-worker.ts with the AWS SDK and
# every pure-JS dependency inside, its source map, and node_modules with only the native
# packages task types load on demand (sharp), already for the image's platform.
FROM node:24-slim

ENV NODE_ENV=production
# Stack traces point at the TypeScript sources.
ENV NODE_OPTIONS=--enable-source-maps
WORKDIR /app

COPY --chown=root:root . .

# The image's unprivileged user; the code only writes to /tmp.
USER node

# ECS sends SIGTERM and waits stopTimeout (120 s) before SIGKILL: node receives it directly.
CMD ["node", "index.mjs"]
