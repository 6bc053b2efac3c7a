import type { ChangeEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Input } from '@mantine/core';
import type { IdentityVerificationSummary, JWKS } from '@mandate/client';
import { apiOf, oneOf } from '../api';
import { useAuth } from '../auth';
import {
  Empty,
  ErrorMessage,
  IdToken,
  Loaded,
  PageHeader,
  SelectField,
  StateBadge,
  StatusFilter,
  Time,
} from '../ui';
import { DataTable, column } from '../table';
import { PagedTable, usePagedList } from '../paged-list';
import { BundleCheckResults, useBundleCheck } from './Evidence';

type Jwk = JWKS['keys'][number];
type WalletSession = IdentityVerificationSummary;

const SESSION_STATUSES: readonly WalletSession['status'][] = ['PENDING', 'VERIFIED', 'FAILED'];
const SESSION_PURPOSES: readonly WalletSession['purpose'][] = ['mandate', 'sign_in'];

/**
 * The service's published signing keys (GET /v1/.well-known/jwks.json: the key that signs is
 * published first), the key seen on the tenant's latest mandates, and an evidence bundle checked
 * by upload with the offline checker's own code against those keys.
 */
export function TrustPage() {
  const { session, permissions } = useAuth();
  const tenantId = session?.kind === 'user' ? session.tenantId : '';
  const jwks = useQuery({
    queryKey: ['jwks'],
    queryFn: () => apiOf(null).mandates.getJwks(),
  });
  const canMandates = !!permissions?.includes('mandates:read');
  const recent = useQuery({
    queryKey: ['mandates', tenantId, 'recent-signatures'],
    queryFn: () => apiOf(session).mandates.list({ limit: 20 }).page(),
    enabled: canMandates,
  });
  const seen = new Set((recent.data?.data ?? []).map((m) => m.signature?.kid).filter(Boolean));

  return (
    <>
      <PageHeader title="Trust operations" />
      <section className="card" aria-labelledby="keys-title">
        <h2 id="keys-title">Published signing keys</h2>
        <Loaded query={jwks}>
          {({ keys }) => (
            <DataTable
              caption="GET /v1/.well-known/jwks.json: every key that checks a mandate signature"
              columns={[
                column<Jwk>('Key id (kid)', (k) => <IdToken id={k.kid} />),
                column<Jwk>('Algorithm', (k) => k.alg),
                column<Jwk>('Curve', (k) => k.crv),
                column<Jwk>(
                  'Role',
                  (_, i) => (i === 0 ? 'signs now' : 'published (checks older signatures)'),
                  {
                    testId: (_, i) => (i === 0 ? 'signs-now' : undefined),
                  },
                ),
                ...(canMandates
                  ? [column<Jwk>('On recent mandates', (k) => (seen.has(k.kid) ? 'yes' : 'no'))]
                  : []),
              ]}
              rows={keys}
              rowKey={(k) => k.kid}
              rowProps={(k) => ({ 'data-kid': k.kid })}
            />
          )}
        </Loaded>
        <ErrorMessage error={recent.error} />
      </section>
      <WalletSessions />
      <UploadCheck keys={jwks.data?.keys} />
    </>
  );
}

/** What a session's state means to a reader: a PENDING one past its expiry takes no answer any more. */
const sessionState = (s: WalletSession, now: number) =>
  s.status === 'PENDING' && Date.parse(s.expires_at) <= now
    ? 'expired (never answered)'
    : s.status === 'FAILED'
      ? `failed: ${s.reason ?? 'unknown'}`
      : s.status === 'VERIFIED'
        ? `verified${s.assurance ? ` (${s.assurance})` : ''}`
        : 'pending';

/** What a session was spent on: the mandate it verified, or the sign-in token it was exchanged for. */
function usedFor(consumedBy: string | null) {
  if (!consumedBy) return 'Not used yet';
  if (consumedBy.startsWith('mdt_')) return <IdToken id={consumedBy} to={`/mandates/${consumedBy}`} />;
  if (consumedBy === 'token') return 'A sign-in (exchanged for a token)';
  return consumedBy;
}

/** The sessions table's columns; a PENDING session past its expiry shows as EXPIRED (as of `now`). */
function sessionColumns(now: number) {
  return [
    column<WalletSession>('Session', (s) => <IdToken id={s.id} />),
    column<WalletSession>('Purpose', (s) => s.purpose.replace('_', '-')),
    column<WalletSession>('State', (s) => (
      <StateBadge state={s.status === 'PENDING' && Date.parse(s.expires_at) <= now ? 'EXPIRED' : s.status}>
        {sessionState(s, now)}
      </StateBadge>
    )),
    column<WalletSession>('Started', (s) => <Time iso={s.created_at} />),
    column<WalletSession>('Answered', (s) => <Time iso={s.answered_at} hint={false} />),
    column<WalletSession>('Issuer', (s) =>
      s.issuer ? (
        <span className="ellipsis" title={s.issuer}>
          {s.issuer}
        </span>
      ) : (
        '—'
      ),
    ),
    column<WalletSession>('Used for', (s) => usedFor(s.consumed_by)),
  ];
}

/** GET /v1/identity-verifications: the tenant's wallet sessions (never their claims). */
function WalletSessions() {
  const { session } = useAuth();
  const tenantId = session?.kind === 'user' ? session.tenantId : '';
  const sessions = usePagedList<WalletSession, 'status' | 'purpose'>({
    key: ['identity-verifications', tenantId],
    read: (api, query) =>
      api.identityVerifications.list({
        ...query,
        status: oneOf(SESSION_STATUSES, query.status),
        purpose: oneOf(SESSION_PURPOSES, query.purpose),
      }),
    filters: { status: '', purpose: '' },
  });
  const now = Date.now();
  return (
    <section className="card" aria-labelledby="sessions-title">
      <h2 id="sessions-title">Wallet verification sessions</h2>
      <div className="row">
        <StatusFilter id="session-status" {...sessions.field('status')} options={SESSION_STATUSES} any />
        <SelectField
          id="session-purpose"
          label="Purpose"
          {...sessions.field('purpose')}
          options={SESSION_PURPOSES}
          text={(p) => p.replace('_', '-')}
          any
        />
      </div>
      <PagedTable
        list={sessions}
        testId="wallet-sessions"
        caption="OpenID4VP sessions, newest first; the disclosed claims are never listed"
        columns={sessionColumns(now)}
        rowKey={(s) => s.id}
        rowProps={(s) => ({ 'data-session': s.id })}
        empty={
          <Empty title="No wallet verification sessions." call="POST /v1/identity-verifications">
            A session starts when a mandate is created with identity verification (Mandates, Create mandate)
            or a member signs in with a wallet.
          </Empty>
        }
      />
    </section>
  );
}

function UploadCheck({ keys }: { keys: Jwk[] | undefined }) {
  const bundle = useBundleCheck();
  const onFile = (e: ChangeEvent<HTMLInputElement>) => {
    const file = e.target.files?.[0];
    if (file && keys) void bundle.check(async () => ({ text: await file.text(), keys: keys as [] }));
    else bundle.forget();
  };
  return (
    <section className="card" aria-labelledby="upload-title">
      <h2 id="upload-title">Check an evidence bundle</h2>
      <p>
        Choose a bundle file (as downloaded from a mandate&apos;s page or{' '}
        <code>GET /v1/mandates/…/evidence</code>): it is checked in this browser — digest, both signatures,
        and that its keys are the published ones above. Nothing is uploaded to the service.
      </p>
      <Input.Wrapper id="bundle-file" label="Evidence bundle (JSON)" mb="sm">
        <Input
          id="bundle-file"
          type="file"
          accept="application/json,.json"
          disabled={!keys || bundle.busy}
          onChange={onFile}
        />
      </Input.Wrapper>
      <BundleCheckResults check={bundle} />
    </section>
  );
}
