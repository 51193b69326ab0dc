# One image for every Flostra role; FLOSTRA_ROLES picks the processes (see docker-compose.yml).
FROM node:20-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && mkdir -p .flostra && chown node:node .flostra
ENV NODE_ENV=production
USER node
EXPOSE 3000
# A 64 MB young generation: fewer objects of in-flight executions survive into the old one (README, Configuration).
CMD ["node", "--min-semi-space-size=64", "--max-semi-space-size=64", "dist/src/main.js"]
