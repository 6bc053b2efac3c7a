import { useEffect, useState, type ReactNode } from 'react';
import { NavLink, Navigate, Route, Routes, useLocation } from 'react-router';
import { Badge, Burger, Button } from '@mantine/core';
import {
  BadgeCheck,
  Building2,
  CreditCard,
  FileSignature,
  GitCompareArrows,
  KeyRound,
  Landmark,
  LogOut,
  PanelsTopLeft,
  ScrollText,
  ShieldCheck,
  ShieldQuestion,
  Users,
  Webhook,
  type LucideIcon,
} from 'lucide-react';
import { OPERATOR_AREAS, TENANT_AREAS, allowedAreas, type Area } from './areas';
import { useAuth } from './auth';
import { GlobalSearch } from './global-search';
import { AccessPage } from './pages/Access';
import { ApiKeysPage } from './pages/ApiKeys';
import { AuditPage } from './pages/Audit';
import { GovernancePage } from './pages/Governance';
import { BillingPage } from './pages/Billing';
import { DriftPage } from './pages/Drift';
import { CreateMandatePage } from './pages/CreateMandate';
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
        <Route path="/mandates/new" element={<Guard area={area('mandates')} page={CreateMandatePage} />} />
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
      <p>
        Your role opens none of the dashboard&apos;s areas. Ask an administrator of this tenant to assign you
        a role (Access management, or <code>POST /v1/tenants/:id/role-assignments</code>).
      </p>
    </section>
  );
}

/** Each area's icon in the navigation. */
const ICONS: Record<string, LucideIcon> = {
  'api-keys': KeyRound,
  mandates: FileSignature,
  verify: ShieldQuestion,
  audit: ScrollText,
  access: Users,
  widget: PanelsTopLeft,
  billing: CreditCard,
  governance: Landmark,
  drift: GitCompareArrows,
  trust: BadgeCheck,
  webhooks: Webhook,
  operator: Building2,
};

/** The product's mark and name, as the header shows them. */
export function ProductMark() {
  return (
    <span className="brand">
      <span className="brand-mark" aria-hidden>
        <ShieldCheck size={20} />
      </span>
      Mandate <span className="brand-sub">Console</span>
    </span>
  );
}

/** The first stop of the keyboard: past the header and the areas to the page itself. */
function SkipLink() {
  return (
    <a
      className="skip-link"
      href="#main"
      onClick={(e) => {
        e.preventDefault();
        document.getElementById('main')?.focus();
      }}
    >
      Skip to content
    </a>
  );
}

/** Who is signed in, and a badge for a development or wallet sign-in. */
function Who({ who }: { who: string }) {
  const { session } = useAuth();
  return (
    <span className="who" data-testid="who">
      <span className="who-name" title={who}>
        {who}
      </span>
      {session?.kind === 'user' && session.method === 'development' ? (
        <Badge color="yellow" variant="light" radius="sm">
          Development sign-in
        </Badge>
      ) : null}
      {session?.kind === 'user' && session.method === 'wallet' ? (
        <Badge color="blue" variant="light" radius="sm">
          Wallet sign-in
        </Badge>
      ) : null}
    </span>
  );
}

/** The areas the caller may open, each with its icon. */
function AreasNav({ open, who, areas }: { open: boolean; who: string; areas: Area[] }) {
  return (
    <nav className={open ? 'side open' : 'side'} id="areas-nav" aria-label="Areas">
      <p className="side-who">{who}</p>
      <ul>
        {areas.map((a) => {
          const Icon = ICONS[a.id] ?? ScrollText;
          return (
            <li key={a.id}>
              <NavLink to={a.path} data-area={a.id}>
                <Icon size={18} aria-hidden />
                {a.label}
              </NavLink>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}

function Shell({ children }: { children: ReactNode }) {
  const { session, me, permissions, signOut } = useAuth();
  const [open, setOpen] = useState(false);
  const location = useLocation();
  // A choice in the small screens' menu closes it.
  useEffect(() => setOpen(false), [location.pathname]);
  const areas = session?.kind === 'operator' ? OPERATOR_AREAS : permissions ? allowedAreas(permissions) : [];
  const who =
    session?.kind === 'operator'
      ? 'Platform operator'
      : `${me?.subject_id ?? session?.subjectId ?? ''} · ${session?.kind === 'user' ? session.tenantId : ''}`;
  return (
    <div className="shell">
      <SkipLink />
      <header className="top">
        <Burger
          className="burger"
          opened={open}
          onClick={() => setOpen((o) => !o)}
          size="sm"
          aria-label={open ? 'Close the navigation' : 'Open the navigation'}
          aria-expanded={open}
          aria-controls="areas-nav"
        />
        <ProductMark />
        {session?.kind === 'user' ? <GlobalSearch /> : null}
        <Who who={who} />
        <Button
          className="sign-out"
          variant="default"
          size="xs"
          leftSection={<LogOut size={14} aria-hidden />}
          onClick={signOut}
        >
          Sign out
        </Button>
      </header>
      <AreasNav open={open} who={who} areas={areas} />
      <main className="content" id="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}
