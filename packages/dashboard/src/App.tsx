import type { ReactNode } from 'react';
import { NavLink, Navigate, Route, Routes } from 'react-router';
import { OPERATOR_AREAS, TENANT_AREAS, allowedAreas, type Area } from './areas';
import { useAuth } from './auth';
import { AccessPage } from './pages/Access';
import { ApiKeysPage } from './pages/ApiKeys';
import { AuditPage } from './pages/Audit';
import { GovernancePage } from './pages/Governance';
import { BillingPage } from './pages/Billing';
import { DriftPage } from './pages/Drift';
import { MandateDetail, MandatesPage } from './pages/Mandates';
import { NoAccess, NotFound } from './pages/NoAccess';
import { OidcCallback } from './pages/OidcCallback';
import { OperatorPage } from './pages/Operator';
import { SignIn } from './pages/SignIn';
import { TrustPage } from './pages/Trust';
import { VerifyPage } from './pages/Verify';
import { WebhooksPage } from './pages/Webhooks';
import { WidgetPage } from './pages/Widget';
import { ErrorMessage, Loading } from './ui';

const area = (id: string) => [...TENANT_AREAS, ...OPERATOR_AREAS].find((a) => a.id === id)!;

type Page = (p: { area: Area }) => ReactNode;

/** Each area's page, at the area's path (a mandate's own page is the mandates area's too). */
const PAGES: Record<string, Page> = {
  'api-keys': ApiKeysPage,
  mandates: MandatesPage,
  verify: VerifyPage,
  audit: AuditPage,
  access: AccessPage,
  widget: WidgetPage,
  billing: BillingPage,
  governance: GovernancePage,
  drift: DriftPage,
  trust: TrustPage,
  webhooks: WebhooksPage,
  operator: OperatorPage,
};

export function App() {
  const { session } = useAuth();
  if (!session) {
    return (
      <Routes>
        <Route path="/sign-in" element={<SignIn />} />
        <Route path="/callback" element={<OidcCallback />} />
        <Route path="*" element={<Navigate to="/sign-in" replace />} />
      </Routes>
    );
  }
  return (
    <Shell>
      <Routes>
        <Route path="/" element={<Home />} />
        <Route path="/sign-in" element={<Navigate to="/" replace />} />
        <Route path="/callback" element={<Navigate to="/" replace />} />
        {Object.entries(PAGES).map(([id, page]) => (
          <Route key={id} path={area(id).path} element={<Guard area={area(id)} page={page} />} />
        ))}
        <Route path="/mandates/:id" element={<Guard area={area('mandates')} page={MandateDetail} />} />
        <Route path="*" element={<NotFound />} />
      </Routes>
    </Shell>
  );
}

/** Opens an area's page only for a caller holding its read permission; otherwise "No access". */
function Guard({ area, page: Page }: { area: Area; page: Page }) {
  const { permissions, meError } = useAuth();
  if (meError) return <ErrorMessage error={meError} />;
  if (!permissions) return <Loading />;
  if (!permissions.includes(area.read)) return <NoAccess area={area} />;
  return <Page area={area} />;
}

function Home() {
  const { session, permissions } = useAuth();
  if (!permissions) return <Loading />;
  const areas = session?.kind === 'operator' ? OPERATOR_AREAS : allowedAreas(permissions);
  if (areas.length > 0) return <Navigate to={areas[0]!.path} replace />;
  return (
    <section>
      <h1>Welcome</h1>
      <p>Your role opens none of the dashboard's areas.</p>
    </section>
  );
}

function Shell({ children }: { children: ReactNode }) {
  const { session, me, permissions, signOut } = useAuth();
  const areas = session?.kind === 'operator' ? OPERATOR_AREAS : permissions ? allowedAreas(permissions) : [];
  const who =
    session?.kind === 'operator'
      ? 'Platform operator'
      : `${me?.subject_id ?? session?.subjectId ?? ''} · ${session?.kind === 'user' ? session.tenantId : ''}`;
  return (
    <div className="shell">
      <header className="top">
        <span className="brand">Mandate service</span>
        <span className="who" data-testid="who">
          {who}
          {session?.kind === 'user' && session.method === 'development' ? (
            <span className="badge">Development sign-in</span>
          ) : null}
          {session?.kind === 'user' && session.method === 'wallet' ? (
            <span className="badge">Wallet sign-in</span>
          ) : null}
        </span>
        <button type="button" className="secondary" onClick={signOut}>
          Sign out
        </button>
      </header>
      <nav className="side" aria-label="Areas">
        <ul>
          {areas.map((a) => (
            <li key={a.id}>
              <NavLink to={a.path} data-area={a.id}>
                {a.label}
              </NavLink>
            </li>
          ))}
        </ul>
      </nav>
      <main className="content" id="main">
        {children}
      </main>
    </div>
  );
}
