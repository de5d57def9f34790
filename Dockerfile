# Images built from the project (docker-compose.yml picks the command of the default one):
#   default target   the api and the worker
#   --target runtime the sandbox runtime that the docker provider starts (a sandbox spec names it)
# NODE_IMAGE is any Debian bookworm image with Node 20, npm and a `node` user (uid 1000); the tests
# build one locally (scripts/docker/images.ts), since they reach no registry.
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund --loglevel=error
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY worker ./worker
COPY scripts ./scripts
COPY bench ./bench
RUN npm run build && npm prune --omit=dev --omit=optional --no-audit --no-fund --loglevel=error

# The agent's sandbox: the runtime as an unprivileged user, git for the repositories it clones, the
# workspace a volume of its own (the provider mounts one at /workspace; it starts out owned by `node`).
FROM ${NODE_IMAGE} AS runtime
RUN command -v git >/dev/null || (apt-get update && apt-get install -y --no-install-recommends git ca-certificates && rm -rf /var/lib/apt/lists/*)
ENV NODE_ENV=production
WORKDIR /opt/agent-runtime
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir -p /workspace && chown node:node /workspace
USER node
WORKDIR /workspace
EXPOSE 8000
CMD ["node", "/opt/agent-runtime/dist/src/runtime/main.js"]

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 8000
CMD ["node", "dist/src/api/main.js"]
