import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { Button, Group, Text } from '@mantine/core';
import { apiOf } from '../api';
import { useAuth } from '../auth';
import { useDashboardConfig, type OidcConfig } from '../config';
import type { Session } from '../session';
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
      <Button onClick={begin} loading={busy}>
        Sign in with {host}
      </Button>
      <ErrorMessage error={error} />
    </section>
  );
}

/**
 * A sign-in's steps: `attempt(step)` runs one and shows its error until the next attempt; `enter`
 * signs in with the session and opens `path`.
 */
function useSignInSteps() {
  const { signIn } = useAuth();
  const navigate = useNavigate();
  const [error, setError] = useState<unknown>(null);
  const attempt = async (step: () => Promise<void>) => {
    setError(null);
    try {
      await step();
    } catch (err) {
      setError(err);
    }
  };
  const enter = (session: Session, path: string) => {
    signIn(session);
    navigate(path);
  };
  return { error, attempt, enter };
}

/** Embedded mode only (npm start): pick a subject with a role in a tenant. */
function DevSignIn() {
  const { error, attempt, enter } = useSignInSteps();
  const [tenantId, setTenantId] = useState('');
  const [subjects, setSubjects] = useState<Subject[] | null>(null);

  const list = (e: FormEvent) => {
    e.preventDefault();
    void attempt(async () => {
      setSubjects(null);
      // The development sign-in's own endpoints (npm start only), not operations of the public API.
      const page = (await apiOf(null).request('GET', '/dashboard-dev/subjects', {
        query: { tenant_id: tenantId.trim() },
      })) as { data: Subject[] };
      setSubjects(page.data);
    });
  };
  const pick = (subjectId: string) =>
    attempt(async () => {
      const answer = (await apiOf(null).request('POST', '/dashboard-dev/sign-in', {
        body: { tenant_id: tenantId.trim(), subject_id: subjectId },
      })) as { token: string; tenant_id: string; subject_id: string };
      const session: Session = {
        kind: 'user',
        method: 'development',
        token: answer.token,
        tenantId: answer.tenant_id,
        subjectId: answer.subject_id,
      };
      enter(session, '/');
    });

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
              <Group gap="sm">
                <Button size="xs" variant="light" onClick={() => void pick(s.subject_id)}>
                  Sign in as {s.subject_id}
                </Button>
                <Text size="sm" c="dimmed">
                  {s.roles.join(', ')}
                </Text>
              </Group>
            </li>
          ))}
        </ul>
      ) : null}
      <ErrorMessage error={error} />
    </section>
  );
}

function OperatorSignIn() {
  const { error, attempt, enter } = useSignInSteps();
  const [token, setToken] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const session = { kind: 'operator' as const, token: token.trim() };
    void attempt(async () => {
      // The platform surface answers the operator token only: a 200 proves it.
      await apiOf(session).platform.listOnboardingRequests({ limit: 1 }).page();
      enter(session, '/operator');
    });
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
        <Button type="submit">Sign in as operator</Button>
      </form>
      <ErrorMessage error={error} />
    </section>
  );
}
