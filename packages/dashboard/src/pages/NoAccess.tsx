import { Link } from 'react-router';
import { Alert, Title } from '@mantine/core';
import { Lock } from 'lucide-react';
import type { Area } from '../areas';
import { useAuth } from '../auth';

/** What a caller lacking an area's permission can do about it: which sign-in, or which role, opens it. */
export function NoAccess({ area }: { area: Area }) {
  const { session } = useAuth();
  const advice =
    area.read === 'platform:*' ? (
      <>
        The {area.label} is the platform operator&apos;s: no tenant role grants <code>platform:*</code>. Sign
        out and sign in with the operator token (the deployment&apos;s <code>OPERATOR_TOKEN</code>) to open
        it.
      </>
    ) : session?.kind === 'operator' ? (
      <>
        The platform operator holds no role inside a tenant, so {area.label} (which needs{' '}
        <code>{area.read}</code>) stays closed. Sign in as a member of the tenant instead: the operator
        console creates tenants with an admin subject.
      </>
    ) : (
      <>
        Your role does not include <code>{area.read}</code>, which {area.label} needs. An administrator of
        this tenant can give you a role that does (Access management, or{' '}
        <code>POST /v1/tenants/:id/role-assignments</code>).
      </>
    );
  return (
    <section aria-labelledby="no-access">
      <Title order={1} id="no-access" mb="md">
        No access
      </Title>
      <Alert
        color="gray"
        variant="light"
        icon={<Lock size={18} aria-hidden />}
        title="You are signed in, but this area is not open to you."
      >
        {advice}
      </Alert>
      <p>
        <Link to="/">Back to the start page</Link>
      </p>
    </section>
  );
}

export function NotFound() {
  return (
    <section aria-labelledby="not-found">
      <Title order={1} id="not-found" mb="md">
        Page not found
      </Title>
      <p>
        <Link to="/">Back to the start page</Link>
      </p>
    </section>
  );
}
