# syntax=docker/dockerfile:1
# One image build for all five services; each compose service picks its target.
# The images run the JavaScript `npm run build` compiled (dist/<service>/main.js) on Node 22 LTS,
# with production dependencies only: no TypeScript, no transpiler at run time.

# The workspace manifests and the lockfile: what both installs below start from.
FROM node:22-bookworm-slim AS manifests
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/shared/package.json packages/shared/
COPY packages/evidence-cli/package.json packages/evidence-cli/
COPY packages/verifier/package.json packages/verifier/
COPY services/gateway/package.json services/gateway/
COPY services/mandates/package.json services/mandates/
COPY services/verify/package.json services/verify/
COPY services/audit/package.json services/audit/
COPY services/identity/package.json services/identity/
COPY packages/dashboard/package.json packages/dashboard/
COPY packages/client/package.json packages/client/
COPY packages/test-wallet/package.json packages/test-wallet/
# npm ci's postinstall; it builds nothing here (no dashboard sources in this stage, no Vite in deps).
COPY scripts/build-dashboard.mjs scripts/

# Every dependency, dev ones included: the build needs esbuild and tsx.
FROM manifests AS build
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY packages ./packages
COPY services ./services
RUN npm run build
# The dashboard's static files, next to the bundles: the gateway serves dist/dashboard at /dashboard/.
RUN node scripts/build-dashboard.mjs --force && cp -r packages/dashboard/dist dist/dashboard

# The production dependencies the bundles `require` (the workspace packages are compiled into them).
FROM manifests AS deps
# The workspace links would point at sources the runtime image does not hold.
RUN npm ci --omit=dev --no-audit --no-fund && rm -rf node_modules/@mandate

FROM node:22-bookworm-slim AS base
ENV NODE_ENV=production HOST=0.0.0.0
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# A named volume mounted here starts with this ownership, so the mandates service can keep its key.
RUN mkdir -p /keys /spool && chown node:node /keys /spool
USER node

FROM base AS gateway
EXPOSE 8080
# V8 flags as scripts/services.ts SERVICE_V8_FLAGS gives them (docs/DECISIONS.md, "What may outlive a request").
CMD ["node", "--no-allocation-site-pretenuring", "--enable-source-maps", "dist/gateway/main.js"]

FROM base AS mandates
EXPOSE 8081
CMD ["node", "--enable-source-maps", "dist/mandates/main.js"]

FROM base AS verify
EXPOSE 8082
# V8 flags as scripts/services.ts SERVICE_V8_FLAGS gives them (docs/DECISIONS.md, "What may outlive a request").
CMD ["node", "--no-allocation-site-pretenuring", "--enable-source-maps", "dist/verify/main.js"]

FROM base AS identity
EXPOSE 8083
CMD ["node", "--enable-source-maps", "dist/identity/main.js"]

FROM base AS audit
EXPOSE 8084
CMD ["node", "--enable-source-maps", "dist/audit/main.js"]
