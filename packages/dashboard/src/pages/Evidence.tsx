import { useState } from 'react';
import { ApiError } from '../api';
import { useAuth } from '../auth';
import type { CheckResult } from '../evidence/check';
import { ErrorMessage } from '../ui';

/**
 * GET /v1/mandates/{id}/evidence: download the bundle as a file, and check it here with the
 * offline checker's own code (packages/evidence-cli) against the service's published keys.
 */
export function Evidence({ mandateId }: { mandateId: string }) {
  const { session } = useAuth();
  const [results, setResults] = useState<CheckResult[] | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  const fetchText = async (path: string, auth: boolean) => {
    const headers: Record<string, string> = {};
    if (auth && session) headers.Authorization = `Bearer ${session.token}`;
    if (auth && session?.kind === 'user') headers['X-Tenant-Id'] = session.tenantId;
    const res = await fetch(path, { headers });
    const text = await res.text();
    if (!res.ok) {
      let message = `HTTP ${res.status}`;
      try {
        message = (JSON.parse(text) as { message?: string }).message ?? message;
      } catch {
        // not an envelope
      }
      throw new ApiError(res.status, 'ERROR', message);
    }
    return text;
  };

  const run = async () => {
    setBusy(true);
    setError(null);
    setResults(null);
    try {
      const bundle = await fetchText(`/v1/mandates/${encodeURIComponent(mandateId)}/evidence`, true);
      const blob = new Blob([bundle], { type: 'application/json' });
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = `${mandateId}.evidence.json`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      const jwks = JSON.parse(await fetchText('/v1/.well-known/jwks.json', false)) as { keys: [] };
      const { verifyBundleText } = await import('../evidence/check');
      setResults(await verifyBundleText(bundle, { trustedKeys: jwks.keys }));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="card" aria-labelledby="evidence-title">
      <h2 id="evidence-title">Evidence</h2>
      <p>
        Downloads the signed evidence bundle (the mandate and every event of it) and checks it in this
        browser: digest, both signatures, and that the keys are the service&apos;s published ones.
      </p>
      <button type="button" onClick={() => void run()} disabled={busy}>
        Download and check evidence
      </button>
      <ErrorMessage error={error} />
      {results ? <CheckList results={results} /> : null}
    </section>
  );
}

/** The checker's verdict and each check, OK or FAIL, named (also Trust operations' upload check). */
export function CheckList({ results }: { results: CheckResult[] }) {
  const failed = results.filter((r) => !r.ok).map((r) => r.check);
  return (
    <>
      <p data-testid="evidence-verdict" className={failed.length ? 'error' : undefined}>
        {failed.length ? 'The bundle does NOT check out.' : 'The bundle checks out.'}
      </p>
      {failed.length ? <p data-testid="evidence-failed">Failed: {failed.join(', ')}.</p> : null}
      <ul className="checks">
        {results.map((r) => (
          <li key={r.check}>
            <strong>{r.ok ? 'OK' : 'FAIL'}</strong> {r.check}: {r.detail}
          </li>
        ))}
      </ul>
    </>
  );
}
