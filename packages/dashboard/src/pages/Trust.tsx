import type { ChangeEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import type { IdentityVerificationSummary, JWKS } from '@mandate/client';
import { apiOf, oneOf } from '../api';
import { useAuth } from '../auth';
import { ErrorMessage, Loaded, PageHeader, SelectField, formatTime } from '../ui';
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
                column<Jwk>('Key id (kid)', (k) => <code>{k.kid}</code>),
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
        <SelectField
          id="session-status"
          label="Status"
          {...sessions.field('status')}
          options={SESSION_STATUSES}
          text={(s) => s.toLowerCase()}
          any
        />
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
        columns={[
          column<WalletSession>('Session', (s) => <code>{s.id}</code>),
          column<WalletSession>('Purpose', (s) => s.purpose.replace('_', '-')),
          column<WalletSession>('State', (s) => sessionState(s, now)),
          column<WalletSession>('Started', (s) => formatTime(s.created_at)),
          column<WalletSession>('Answered', (s) => formatTime(s.answered_at)),
          column<WalletSession>('Issuer', (s) => s.issuer ?? '—'),
          column<WalletSession>('Used by', (s) => s.consumed_by ?? '—'),
        ]}
        rowKey={(s) => s.id}
        rowProps={(s) => ({ 'data-session': s.id })}
        empty="No wallet verification sessions."
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
      <label htmlFor="bundle-file">Evidence bundle (JSON)</label>{' '}
      <input
        id="bundle-file"
        type="file"
        accept="application/json,.json"
        disabled={!keys || bundle.busy}
        onChange={onFile}
      />
      <BundleCheckResults check={bundle} />
    </section>
  );
}
