# vllm-edge-router on Node, as a container (no simulated engines: give it your engines).
#   docker build -t vllm-edge-router .
#   docker run --rm -p 30000:30000 -p 29000:29000 vllm-edge-router \
#     --worker-urls http://engine-1:8000 http://engine-2:8000
# Arguments after the image name are router flags, appended to the entrypoint (tini, then the
# router). The listen addresses come from the environment (VLLM_ROUTER_HOST and
# VLLM_ROUTER_PROMETHEUS_HOST: 0.0.0.0 here), not from flags, so flags given at `docker run` keep
# them. tini is PID 1: SIGTERM (docker stop, Kubernetes) reaches the router, which turns /readiness
# 503, drains, and exits 0 (everything finished) or 1 (requests cut). Give `docker stop -t` /
# terminationGracePeriodSeconds more than the drain delay plus the grace period (5 s + 30 s).
# The health check asks port VLLM_ROUTER_PORT (default 30000): set the port with that variable.

# Build stage: every dependency, then the bundle (dist/node/main.js).
FROM node:22-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

# Runtime stage: production dependencies only, the bundle and package.json.
FROM node:22-slim
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
  VLLM_ROUTER_HOST=0.0.0.0 \
  VLLM_ROUTER_PROMETHEUS_HOST=0.0.0.0
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
USER node
EXPOSE 30000 29000
# slim has no curl: Node's fetch asks /liveness (the router process answers; engines not needed).
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.VLLM_ROUTER_PORT || 30000) + '/liveness').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The program is part of the entrypoint: with it in CMD, `docker run IMAGE --worker-urls ...` would
# replace it. CMD holds default router flags: none.
ENTRYPOINT ["tini", "--", "node", "dist/node/main.js"]
CMD []
