import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { MandateApiError } from '../api';
import { useAuth } from '../auth';
import { useDashboardConfig } from '../config';
import { memberSession } from '../member-sign-in';
import { completeOidcSignIn, oidcToken, subjectOf } from '../oidc';
import { ErrorMessage, Loading, TenantForm } from '../ui';

/**
 * The provider's `code` and `state` taken off the address bar once and exchanged for the access
 * token (kept for the tenant choice); the dashboard's configuration, which names the provider.
 */
function useOidcExchange(setToken: (token: string) => void, setError: (error: unknown) => void) {
  const config = useDashboardConfig();
  const navigate = useNavigate();
  const exchanged = useRef(false);
  useEffect(() => {
    if (!config.data || exchanged.current) return;
    exchanged.current = true;
    const returned = new URL(location.href);
    if (returned.search) navigate('/callback', { replace: true });
    const oidc = config.data.oidc;
    if (!oidc) return setError(new Error('This gateway offers no OIDC sign-in.'));
    if (!returned.search) {
      if (!oidcToken.load()) setError(new Error('Nothing to finish here: start the sign-in again.'));
      return;
    }
    oidcToken.clear();
    completeOidcSignIn(oidc, returned).then(
      (accessToken) => {
        oidcToken.save(accessToken);
        setToken(accessToken);
      },
      (err: unknown) => setError(err),
    );
  }, [config.data, navigate]);
  return config;
}

/** Who signed in where, and the form asking which tenant they work in. */
function TenantChoice({
  token,
  host,
  tenant,
}: {
  token: string;
  /** The provider's host, as its issuer names it. */
  host: string;
  tenant: { value: string; onChange(value: string): void; onSubmit(e: FormEvent): Promise<void> };
}) {
  const subject = subjectOf(token);
  return (
    <>
      <p>
        Signed in at {host}
        {subject ? (
          <>
            {' '}
            as <code>{subject}</code>
          </>
        ) : null}
        . Which tenant do you work in?
      </p>
      <TenantForm id="oidc-tenant" {...tenant}>
        Continue
      </TenantForm>
    </>
  );
}

/**
 * /dashboard/callback: the provider sends the browser back here with `code` and `state`. They leave
 * the address bar at once (replaced, not in history); the code is exchanged for the access token,
 * then the subject names the tenant it works in (a JWT caller's X-Tenant-Id).
 */
export function OidcCallback() {
  const navigate = useNavigate();
  const { signIn } = useAuth();
  const [token, setToken] = useState<string | null>(oidcToken.load);
  const [error, setError] = useState<unknown>(null);
  const [tenantId, setTenantId] = useState('');
  const config = useOidcExchange(setToken, setError);

  const choose = async (e: FormEvent) => {
    e.preventDefault();
    if (!token) return;
    setError(null);
    try {
      const session = await memberSession(token, tenantId.trim(), 'oidc');
      oidcToken.clear();
      signIn(session);
      navigate('/', { replace: true });
    } catch (err) {
      setError(
        err instanceof MandateApiError && err.status === 404
          ? new Error(`You hold no role in tenant ${tenantId.trim()}: ask one of its admins for one.`)
          : err,
      );
    }
  };

  return (
    <main className="sign-in" id="main">
      <h1>Sign in to the Mandate service</h1>
      <section className="card" aria-labelledby="callback-title">
        <h2 id="callback-title">Single sign-on</h2>
        {token ? (
          <TenantChoice
            token={token}
            host={config.data?.oidc ? new URL(config.data.oidc.issuer).host : 'the provider'}
            tenant={{ value: tenantId, onChange: setTenantId, onSubmit: choose }}
          />
        ) : error ? null : (
          <Loading />
        )}
        <ErrorMessage error={error} />
        <p>
          <Link
            to="/sign-in"
            onClick={() => {
              oidcToken.clear();
            }}
          >
            Back to the sign-in page
          </Link>
        </p>
      </section>
    </main>
  );
}
