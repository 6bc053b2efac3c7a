import { useEffect, useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import type { CreatedIdentityVerification } from '@mandate/client';
import { MandateApiError, apiOf } from '../api';
import { useAuth } from '../auth';
import { memberSession } from '../member-sign-in';
import { QrCode } from '../qr';
import { ErrorMessage, TenantForm, formatTime } from '../ui';
import { relativeTime } from '../format';

type Started = CreatedIdentityVerification;

/** Polls share the per-IP onboarding bucket (2 a second): one every two seconds leaves room for the wallet's answer. */
const POLL_MS = 2000;

/**
 * Polls the started sign-in session until the wallet has answered: VERIFIED is exchanged for the
 * member's session, FAILED or expiry is the outcome.
 */
function useSignInWait(
  started: Started | null,
  tenantId: string,
  setOutcome: (outcome: string) => void,
  setError: (error: unknown) => void,
) {
  const { signIn } = useAuth();
  const navigate = useNavigate();
  useEffect(() => {
    if (!started) return;
    // A sign-in session always carries its poll token; without one there is nothing to poll with.
    if (!started.poll_token) return setError(new Error('The sign-in session came without its poll token.'));
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const body = { poll_token: started.poll_token };
    const finish = async () => {
      const token = await apiOf(null).identityVerifications.exchangeSignInToken(started.id, body);
      try {
        const session = await memberSession(token.access_token, tenantId.trim(), 'wallet');
        if (stopped) return;
        signIn(session);
        navigate('/', { replace: true });
      } catch (err) {
        if (!(err instanceof MandateApiError && err.status === 404)) throw err;
        setOutcome(
          `Verified as ${token.subject_id}, but this identity holds no role in tenant ${tenantId.trim()}: ask one of its admins to assign one to ${token.subject_id}, then sign in again.`,
        );
      }
    };
    const poll = async () => {
      if (stopped) return;
      if (Date.parse(started.expires_at) <= Date.now())
        return setOutcome('EXPIRED: the request expired. Start again.');
      try {
        const polled = await apiOf(null).identityVerifications.pollSignInVerification(started.id, body);
        if (stopped) return;
        if (polled.status === 'VERIFIED') return await finish();
        if (polled.status === 'FAILED')
          return setOutcome(`FAILED: ${polled.reason ?? 'the wallet answer was refused'}. Start again.`);
      } catch (err) {
        // Too many requests: wait and ask again; anything else ends the sign-in.
        if (!(err instanceof MandateApiError && err.status === 429)) {
          if (!stopped) setError(err);
          return;
        }
      }
      if (!stopped) timer = setTimeout(() => void poll(), POLL_MS);
    };
    timer = setTimeout(() => void poll(), POLL_MS);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
    // tenantId is deliberately not a dependency: the session was started for the tenant typed then.
  }, [started, signIn, navigate]);
}

/** The sign-in session's authorization request as a QR code and a link, while the wallet's answer is awaited. */
function SignInRequest({ started }: { started: Started }) {
  return (
    <div className="wallet-request" data-authorization-request={started.authorization_request}>
      <QrCode value={started.authorization_request} label="QR code of the wallet authorization request" />
      <p>
        On this device: <a href={started.authorization_request}>open the wallet</a>, or copy the request:
      </p>
      <code className="request-link">{started.authorization_request}</code>
      <p aria-live="polite" className="muted">
        Waiting for the wallet… (expires {formatTime(started.expires_at)}, {relativeTime(started.expires_at)})
      </p>
    </div>
  );
}

/**
 * Wallet sign-in (docs/WALLET.md): a sign-in session for the tenant, its authorization request as a
 * QR code and a link, polled with the poll token (in the body, never a URL) until the wallet has
 * answered; a VERIFIED session is exchanged once for a 15-minute token of the `wallet:` subject.
 */
export function WalletSignIn() {
  const [tenantId, setTenantId] = useState('');
  const [started, setStarted] = useState<Started | null>(null);
  const [outcome, setOutcome] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);

  const start = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    setOutcome(null);
    setStarted(null);
    try {
      setStarted(
        await apiOf(null).identityVerifications.createSignInVerification({ tenant_id: tenantId.trim() }),
      );
    } catch (err) {
      setError(err);
    }
  };
  useSignInWait(started, tenantId, setOutcome, setError);

  const waiting = started && !outcome && !error;
  return (
    <section className="card" aria-labelledby="wallet-title">
      <h2 id="wallet-title">Sign in with your identity wallet</h2>
      <p>
        Scan the code with an EU digital identity wallet that holds your PID; your role in the tenant decides
        what you see.
      </p>
      <TenantForm id="wallet-tenant" value={tenantId} onChange={setTenantId} onSubmit={start}>
        {started ? 'Start again' : 'Show QR code'}
      </TenantForm>
      {started && waiting ? <SignInRequest started={started} /> : null}
      {outcome ? (
        <p role="alert" className="error">
          {outcome}
        </p>
      ) : null}
      <ErrorMessage error={error} />
    </section>
  );
}
