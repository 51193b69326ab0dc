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
CMD ["node", "dist/src/main.js"]
