import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/**
 * The dashboard is served by the gateway under /dashboard/ (no server of its own): every asset
 * URL carries that base, file names carry a content hash (cached for a year), index.html does not.
 * No inline script or style, so the gateway's Content-Security-Policy can say script-src 'self'.
 */
export default defineConfig({
  base: '/dashboard/',
  oxc: { jsx: { runtime: 'automatic' } },
  // The evidence check runs packages/evidence-cli's checker in the browser (src/evidence); the API
  // client and the decision module (the reasons in words) are built from their sources (their
  // package.json names the published build).
  resolve: {
    alias: {
      '@mandate/client': fileURLToPath(new URL('../client/src/index.ts', import.meta.url)),
      '@mandate/verifier/decide': fileURLToPath(new URL('../verifier/src/decide.ts', import.meta.url)),
      'node:crypto': fileURLToPath(new URL('./src/evidence/node-crypto.ts', import.meta.url)),
    },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    // One chunk for the initial load is the design (its gzipped size is held by test/browser/bundle-size.test.ts).
    chunkSizeWarningLimit: 1500,
    rolldownOptions: {
      // react-router's "use client" marks a React Server Components boundary; a client-only bundle ignores it.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
});
