# One image for every Flostra role; FLOSTRA_ROLES picks the processes (see docker-compose.yml).

# Build stage: dev dependencies (TypeScript, type packages) and the production build only
# (tsconfig.build.json: src/ and projections/, no tests, no benchmarks).
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json tsconfig.sdk.json ./
COPY scripts ./scripts
COPY src ./src
COPY projections ./projections
COPY console ./console
RUN npm run build

# Runtime stage: production dependencies and the compiled code, nothing else.
FROM node:20-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/projections ./dist/projections
COPY --from=build /app/dist/console ./dist/console
RUN mkdir -p .flostra && chown node:node .flostra
USER node
EXPOSE 3000
# A 64 MB young generation: fewer objects of in-flight executions survive into the old one (README, Configuration).
CMD ["node", "--min-semi-space-size=64", "--max-semi-space-size=64", "dist/src/main.js"]
