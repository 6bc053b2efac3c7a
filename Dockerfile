# One image build for all five services; each compose service picks its target.
# syntax=docker/dockerfile:1

FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/shared/package.json packages/shared/
COPY packages/evidence-cli/package.json packages/evidence-cli/
COPY services/gateway/package.json services/gateway/
COPY services/mandates/package.json services/mandates/
COPY services/verify/package.json services/verify/
COPY services/audit/package.json services/audit/
COPY services/identity/package.json services/identity/
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim AS base
ENV NODE_ENV=production HOST=0.0.0.0
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY packages ./packages
COPY services ./services
# A named volume mounted here starts with this ownership, so the mandates service can keep its key.
RUN mkdir -p /keys /spool && chown node:node /keys /spool
USER node

FROM base AS gateway
EXPOSE 8080
CMD ["node", "--import", "tsx", "services/gateway/src/main.ts"]

FROM base AS mandates
EXPOSE 8081
CMD ["node", "--import", "tsx", "services/mandates/src/main.ts"]

FROM base AS verify
EXPOSE 8082
CMD ["node", "--import", "tsx", "services/verify/src/main.ts"]

FROM base AS identity
EXPOSE 8083
CMD ["node", "--import", "tsx", "services/identity/src/main.ts"]

FROM base AS audit
EXPOSE 8084
CMD ["node", "--import", "tsx", "services/audit/src/main.ts"]
