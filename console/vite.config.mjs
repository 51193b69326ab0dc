// The web console's build (`npm run build` runs it through scripts/build.mjs): a static bundle
// in dist/console that the api serves at /console. Vite's own Oxc transform compiles the TSX
// (automatic JSX runtime); no React plugin, since the console has no dev server with Fast Refresh.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  root: here('.'),
  base: '/console/',
  publicDir: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: here('../dist/console'),
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    // Nothing inlined as data: URLs beyond small images; scripts and styles stay files (the CSP allows 'self' only).
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 1024,
    rolldownOptions: {
      // React Flow marks its modules "use client" (for server-rendering frameworks); meaningless in a static bundle.
      onLog(level, log, handler) {
        if (log.code === 'MODULE_LEVEL_DIRECTIVE') return;
        handler(level, log);
      },
    },
  },
});
