# vllm-edge-router on Node, as a container.
#   docker build -t vllm-edge-router .
#   docker run --rm -p 30000:30000 vllm-edge-router --host 0.0.0.0 --worker-urls http://engine-1:8000 http://engine-2:8000
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
RUN node scripts/build.mjs

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
USER node
EXPOSE 30000 29000
ENTRYPOINT ["node", "dist/node/main.js"]
CMD ["--host", "0.0.0.0"]
