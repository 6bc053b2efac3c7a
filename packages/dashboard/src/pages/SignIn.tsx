import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { call } from '../api';
import { useAuth } from '../auth';
import { useDashboardConfig, type OidcConfig } from '../config';
import { beginOidcSignIn } from '../oidc';
import { ErrorMessage, TenantForm, TextField } from '../ui';
import { WalletSignIn } from './WalletSignIn';

interface Subject {
  subject_id: string;
  roles: string[];
}

export function SignIn() {
  const config = useDashboardConfig();
  return (
    <main className="sign-in" id="main">
      <h1>Sign in to the Mandate service</h1>
      {config.data?.oidc ? <OidcSignIn oidc={config.data.oidc} /> : null}
      {config.data?.walletSignIn ? <WalletSignIn /> : null}
      {config.data?.devSignIn ? <DevSignIn /> : null}
      <OperatorSignIn />
    </main>
  );
}

/** Authorization code + PKCE at the configured issuer; back at /dashboard/callback (OidcCallback). */
function OidcSignIn({ oidc }: { oidc: OidcConfig }) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const host = new URL(oidc.issuer).host;
  const begin = () => {
    setError(null);
    setBusy(true);
    beginOidcSignIn(oidc).catch((err: unknown) => {
      setBusy(false);
      setError(err);
    });
  };
  return (
    <section className="card" aria-labelledby="oidc-title">
      <h2 id="oidc-title">Single sign-on</h2>
      <p>Sign in with your organisation's account; then name the tenant you work in.</p>
      <button type="button" onClick={begin} disabled={busy}>
        Sign in with {host}
      </button>
      <ErrorMessage error={error} />
    </section>
  );
}

/** Embedded mode only (npm start): pick a subject with a role in a tenant. */
function DevSignIn() {
  const { signIn } = useAuth();
  const navigate = useNavigate();
  const [tenantId, setTenantId] = useState('');
  const [subjects, setSubjects] = useState<Subject[] | null>(null);
  const [error, setError] = useState<unknown>(null);

  const list = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    setSubjects(null);
    try {
      const page = await call<{ data: Subject[] }>(
        null,
        'GET',
        `/dashboard-dev/subjects?tenant_id=${encodeURIComponent(tenantId.trim())}`,
      );
      setSubjects(page.data);
    } catch (err) {
      setError(err);
    }
  };
  const pick = async (subjectId: string) => {
    setError(null);
    try {
      const answer = await call<{ token: string; tenant_id: string; subject_id: string }>(
        null,
        'POST',
        '/dashboard-dev/sign-in',
        { tenant_id: tenantId.trim(), subject_id: subjectId },
      );
      signIn({
        kind: 'user',
        method: 'development',
        token: answer.token,
        tenantId: answer.tenant_id,
        subjectId: answer.subject_id,
      });
      navigate('/');
    } catch (err) {
      setError(err);
    }
  };

  return (
    <section className="card dev" aria-labelledby="dev-title">
      <h2 id="dev-title">Development sign-in</h2>
      <p className="warning" role="note">
        Embedded mode only (<code>npm start</code>): sign in as any subject that holds a role in a tenant,
        without a password. A deployed gateway never offers this.
      </p>
      <TenantForm id="dev-tenant" value={tenantId} onChange={setTenantId} onSubmit={list}>
        List subjects
      </TenantForm>
      {subjects && subjects.length === 0 ? <p>No subject has an active role in this tenant.</p> : null}
      {subjects && subjects.length > 0 ? (
        <ul className="subjects" aria-label="Subjects of the tenant">
          {subjects.map((s) => (
            <li key={s.subject_id}>
              <button type="button" onClick={() => void pick(s.subject_id)}>
                Sign in as {s.subject_id}
              </button>{' '}
              <span className="muted">{s.roles.join(', ')}</span>
            </li>
          ))}
        </ul>
      ) : null}
      <ErrorMessage error={error} />
    </section>
  );
}

function OperatorSignIn() {
  const { signIn } = useAuth();
  const navigate = useNavigate();
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    const session = { kind: 'operator' as const, token: token.trim() };
    try {
      // The platform surface answers the operator token only: a 200 proves it.
      await call(session, 'GET', '/v1/platform/onboarding-requests?limit=1');
      signIn(session);
      navigate('/operator');
    } catch (err) {
      setError(err);
    }
  };
  return (
    <section className="card" aria-labelledby="operator-title">
      <h2 id="operator-title">Operator console</h2>
      <p>For the platform operator: sign in with the operator token (OPERATOR_TOKEN).</p>
      <form onSubmit={submit} className="row">
        <TextField
          id="operator-token"
          label="Operator token"
          type="password"
          autoComplete="off"
          value={token}
          onChange={setToken}
          required
        />
        <button type="submit">Sign in as operator</button>
      </form>
      <ErrorMessage error={error} />
    </section>
  );
}
