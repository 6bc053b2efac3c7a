import { Link } from 'react-router';
import type { Area } from '../areas';

export function NoAccess({ area }: { area: Area }) {
  return (
    <section aria-labelledby="no-access">
      <h1 id="no-access">No access</h1>
      <p>
        You are signed in, but your role does not include <code>{area.read}</code>, which {area.label} needs.
        Ask a tenant administrator for a role that grants it.
      </p>
      <p>
        <Link to="/">Back to the start page</Link>
      </p>
    </section>
  );
}

export function NotFound() {
  return (
    <section aria-labelledby="not-found">
      <h1 id="not-found">Page not found</h1>
      <p>
        <Link to="/">Back to the start page</Link>
      </p>
    </section>
  );
}
