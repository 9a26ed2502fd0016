# The Fargate worker: the same runtime code as the Lambda worker, run as a long-lived program
# that long-polls the worker-fargate queue. Node 24 strips TypeScript types natively: no build.
FROM node:24-slim

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first so code changes reuse this layer. Install scripts stay on: sharp (photo
# resize example) checks its prebuilt binary for this image's platform.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY lambda ./lambda

# The image's unprivileged user; the code only writes to /tmp.
USER node

# ECS sends SIGTERM and waits stopTimeout (120 s) before SIGKILL: node receives it directly.
CMD ["node", "lambda/handlers/fargate-worker.ts"]
