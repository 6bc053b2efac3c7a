import { useState } from 'react';
import { Button } from '@mantine/core';
import type { JWKS } from '@mandate/client';
import { apiOf } from '../api';
import { useAuth } from '../auth';
import type { CheckResult } from '../evidence/check';
import { ErrorMessage } from '../ui';

/**
 * GET /v1/mandates/{id}/evidence: download the bundle as a file, and check it here with the
 * offline checker's own code (packages/evidence-cli) against the service's published keys.
 */
export function Evidence({ mandateId }: { mandateId: string }) {
  const { session } = useAuth();
  const bundle = useBundleCheck();

  const downloadAndCheck = () =>
    bundle.check(async () => {
      // As text: the checker reads the bundle's own bytes (a duplicate member fails), not a re-serialised copy.
      const text = (await apiOf(session).request(
        'GET',
        `/v1/mandates/${encodeURIComponent(mandateId)}/evidence`,
        { as: 'text' },
      )) as string;
      const blob = new Blob([text], { type: 'application/json' });
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = `${mandateId}.evidence.json`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      const jwks = await apiOf(null).mandates.getJwks();
      return { text, keys: jwks.keys };
    });

  return (
    <section className="card" aria-labelledby="evidence-title">
      <h2 id="evidence-title">Evidence</h2>
      <p>
        Downloads the signed evidence bundle (the mandate and every event of it) and checks it in this
        browser: digest, both signatures, and that the keys are the service&apos;s published ones.
      </p>
      <Button onClick={() => void downloadAndCheck()} loading={bundle.busy}>
        Download and check evidence
      </Button>
      <BundleCheckResults check={bundle} />
    </section>
  );
}

/**
 * Checking an evidence bundle in this browser with the offline checker's own code (loaded on first
 * use): `check(load)` forgets the last check, then checks the bundle `load` gives against its keys.
 */
export function useBundleCheck() {
  const [results, setResults] = useState<CheckResult[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const forget = () => {
    setResults(null);
    setError(null);
  };
  const check = async (load: () => Promise<{ text: string; keys: JWKS['keys'] }>) => {
    forget();
    setBusy(true);
    try {
      const { text, keys } = await load();
      const { verifyBundleText } = await import('../evidence/check');
      setResults(await verifyBundleText(text, { trustedKeys: keys }));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return { results, error, busy, check, forget };
}

/** A bundle check's error, or its results. */
export function BundleCheckResults({ check }: { check: ReturnType<typeof useBundleCheck> }) {
  return (
    <>
      <ErrorMessage error={check.error} />
      {check.results ? <CheckList results={check.results} /> : null}
    </>
  );
}

/** The checker's verdict and each check, OK or FAIL, named. */
function CheckList({ results }: { results: CheckResult[] }) {
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
