import { Fragment, useEffect, useState, type FormEvent, type InputHTMLAttributes } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { Button, Checkbox, Group, Paper, Text, Textarea, Title } from '@mantine/core';
import { FileSignature } from 'lucide-react';
import type { CreateMandateRequest, CreatedIdentityVerification, Mandate } from '@mandate/client';
import { MandateApiError, apiOf } from '../api';
import type { Area } from '../areas';
import { useAreaAuth } from '../auth';
import { budgetText, constraintsText, minorPerMajor, relativeTime } from '../format';
import { QrCode } from '../qr';
import {
  CurrencyField,
  ErrorMessage,
  IdToken,
  SelectField,
  StateBadge,
  TextField,
  formatTime,
  localTimeToIso,
  useFields,
  Fact,
} from '../ui';
import { MandatePageHeader } from './MandatePageHeader';
import { NoAccess } from './NoAccess';
import type { Session } from '../session';

const PARTY_TYPES = ['person', 'organization', 'service', 'agent'] as const;
type PartyType = (typeof PARTY_TYPES)[number];
const INITIAL = {
  principal: '',
  principal_type: 'person',
  principal_name: '',
  delegate: '',
  delegate_type: 'agent',
  actions: '',
  resources: '',
  limit: '',
  currency: '',
  budget_amount: '',
  budget_period: 'none',
  budget_timezone: 'UTC',
  valid_from: '',
  expires_at: '',
  metadata: '',
};

/** A budget's periods (docs/API.md#budgets); "none" leaves the scope without one. */
const BUDGET_PERIODS = ['none', 'month', 'week', 'day', 'total'] as const;
type BudgetPeriod = Exclude<(typeof BUDGET_PERIODS)[number], 'none'>;
const PERIOD_TEXT: Record<string, string> = {
  none: 'No budget',
  month: 'Calendar month',
  week: 'ISO week (from Monday)',
  day: 'Calendar day',
  total: 'In total (never resets)',
};

/** One field of the form: a text input, a select where `options` are given, or the currency. */
type FieldSpec = {
  name: keyof typeof INITIAL;
  id: string;
  label: string;
  options?: readonly string[];
  /** An option's text (its value by default). */
  text?: (option: string) => string;
  currency?: true;
} & Pick<InputHTMLAttributes<HTMLInputElement>, 'placeholder' | 'required' | 'inputMode' | 'type'>;

/** The form's fields (but the metadata) under their headings, a row of fields each. */
const SECTIONS: { heading: string; rows: FieldSpec[][] }[] = [
  {
    heading: 'Who',
    rows: [
      [
        {
          name: 'principal',
          id: 'm-principal',
          label: 'Principal id',
          placeholder: 'user_alice',
          required: true,
        },
        { name: 'principal_type', id: 'm-principal-type', label: 'Principal type', options: PARTY_TYPES },
        { name: 'principal_name', id: 'm-principal-name', label: 'Principal name (optional)' },
      ],
      [
        {
          name: 'delegate',
          id: 'm-delegate',
          label: 'Delegate id',
          placeholder: 'agent_checkout',
          required: true,
        },
        { name: 'delegate_type', id: 'm-delegate-type', label: 'Delegate type', options: PARTY_TYPES },
      ],
    ],
  },
  {
    heading: 'What',
    rows: [
      [
        {
          name: 'actions',
          id: 'm-actions',
          label: 'Actions (comma-separated)',
          placeholder: 'payments:create, refunds:*',
          required: true,
        },
        {
          name: 'resources',
          id: 'm-resources',
          label: 'Resources (optional, comma-separated)',
          placeholder: 'merchant:acme',
        },
      ],
      [
        {
          name: 'limit',
          id: 'm-limit',
          label: 'Amount limit per call (major units)',
          inputMode: 'decimal',
          placeholder: '500.00',
        },
        { name: 'currency', id: 'm-currency', label: 'Currency', currency: true },
      ],
    ],
  },
  {
    heading: 'Budget (optional)',
    rows: [
      [
        {
          name: 'budget_amount',
          id: 'm-budget-amount',
          label: 'Budget per period (major units, in the currency above)',
          inputMode: 'decimal',
          placeholder: '2000.00',
        },
        {
          name: 'budget_period',
          id: 'm-budget-period',
          label: 'Budget period',
          options: BUDGET_PERIODS,
          text: (p) => PERIOD_TEXT[p] ?? p,
        },
        {
          name: 'budget_timezone',
          id: 'm-budget-timezone',
          label: 'Timezone of the periods (IANA)',
          placeholder: 'Europe/Berlin',
        },
      ],
    ],
  },
  {
    heading: 'When (UTC)',
    rows: [
      [
        { name: 'valid_from', id: 'm-valid-from', label: 'Valid from (optional)', type: 'datetime-local' },
        { name: 'expires_at', id: 'm-expires', label: 'Expires (optional)', type: 'datetime-local' },
      ],
    ],
  },
];

/** The wallet session is asked every two seconds: its answer lands within one poll. */
const POLL_MS = 2000;

const list = (text: string) =>
  text
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter(Boolean);

/** "key=value" lines (or comma-separated) as the metadata object; a line without "=" is refused. */
function metadataOf(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of list(text)) {
    const at = line.indexOf('=');
    if (at <= 0) throw new Error(`Metadata "${line}" is not key=value.`);
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

/** Whether the runtime knows `zone` as an IANA timezone (the API refuses an unknown one with a 400). */
function knownTimezone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** An amount typed in major units ("500.00", "500,5") in minor units; null when it is not one. */
function minorOf(text: string, per: number): number | null {
  const major = Number(text.trim().replace(',', '.'));
  return Number.isFinite(major) && major >= 0 ? Math.round(major * per) : null;
}

/**
 * The form's budget as scope.budget (docs/API.md#budgets): an amount above zero in the mandate's
 * currency, a period and a known timezone; nothing when the period is "none" and no amount is typed.
 */
function budgetOf(
  f: Record<string, string>,
  currency: string,
): { amount: number; period: BudgetPeriod; timezone: string } | undefined {
  const amount = f.budget_amount!.trim();
  if (f.budget_period === 'none') {
    if (amount) throw new Error('A budget amount needs its period (a month, a week, a day or in total).');
    return undefined;
  }
  const per = minorPerMajor(currency);
  if (!per) throw new Error('A budget needs its currency (a three-letter ISO code such as EUR).');
  const minor = amount ? minorOf(amount, per) : null;
  if (minor === null || minor <= 0) throw new Error('The budget amount must be a number above zero.');
  const timezone = f.budget_timezone!.trim() || 'UTC';
  if (!knownTimezone(timezone))
    throw new Error(`The budget's timezone "${timezone}" is not an IANA timezone (such as Europe/Berlin).`);
  return { amount: minor, period: f.budget_period as BudgetPeriod, timezone };
}

/** The form's values as POST /v1/mandates' body; `verificationId` names the wallet verification of the principal. */
function requestOf(f: Record<string, string>, verificationId?: string): CreateMandateRequest {
  const currency = f.currency!.trim().toUpperCase();
  let maxAmount: number | undefined;
  if (f.limit!.trim()) {
    const per = minorPerMajor(currency);
    if (!per) throw new Error('An amount limit needs its currency (a three-letter ISO code such as EUR).');
    const major = Number(f.limit!.trim().replace(',', '.'));
    if (!Number.isFinite(major) || major < 0) throw new Error('The amount limit is not a number.');
    maxAmount = Math.round(major * per);
  }
  const budget = budgetOf(f, currency);
  const resources = list(f.resources!);
  const metadata = metadataOf(f.metadata!);
  return {
    principal: {
      id: f.principal!.trim(),
      type: f.principal_type as PartyType,
      ...(f.principal_name!.trim() ? { name: f.principal_name!.trim() } : {}),
      ...(verificationId ? { verification_id: verificationId } : {}),
    },
    delegate: { id: f.delegate!.trim(), type: f.delegate_type as PartyType },
    scope: {
      actions: list(f.actions!),
      ...(resources.length ? { resources } : {}),
      ...(budget ? { budget } : {}),
      ...(maxAmount !== undefined || currency
        ? {
            constraints: {
              ...(maxAmount !== undefined ? { max_amount: maxAmount } : {}),
              ...(currency ? { currency } : {}),
            },
          }
        : {}),
    },
    ...(f.valid_from ? { valid_from: localTimeToIso(f.valid_from) } : {}),
    ...(f.expires_at ? { expires_at: localTimeToIso(f.expires_at) } : {}),
    ...(Object.keys(metadata).length ? { metadata } : {}),
  };
}

type Fields = ReturnType<typeof useFields<keyof typeof INITIAL>>;

/**
 * Waiting for the wallet: VERIFIED creates the mandate with the verification; FAILED or expiry ends
 * the wait.
 */
function useWalletWait(
  wallet: CreatedIdentityVerification | null,
  session: Session | null,
  end: (error: unknown) => void,
  create: (verificationId: string) => Promise<void>,
  setError: (error: unknown) => void,
) {
  useEffect(() => {
    if (!wallet) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      if (stopped) return;
      if (Date.parse(wallet.expires_at) <= Date.now())
        return end(new Error('The wallet did not answer before the request expired: start again.'));
      try {
        const v = await apiOf(session).identityVerifications.get(wallet.id);
        if (stopped) return;
        if (v.status === 'VERIFIED') return void create(wallet.id);
        if (v.status === 'FAILED')
          return end(new Error(`The wallet's answer was refused (${v.reason ?? 'no reason given'}).`));
      } catch (err) {
        if (!(err instanceof MandateApiError && err.status === 429)) return setError(err);
      }
      if (!stopped) timer = setTimeout(() => void poll(), POLL_MS);
    };
    timer = setTimeout(() => void poll(), POLL_MS);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
    // create reads the form as it is when the wallet answers; the wait is for this session only.
  }, [wallet]);
}

/** Creating the mandate from the form, first through a wallet session when the principal's identity is verified. */
function useCreateMandate(session: Session | null, f: Fields['values']) {
  const queryClient = useQueryClient();
  const [verify, setVerify] = useState(false);
  const [wallet, setWallet] = useState<CreatedIdentityVerification | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [created, setCreated] = useState<Mandate | null>(null);

  const create = async (verificationId?: string) => {
    setBusy(true);
    try {
      const m = await apiOf(session).mandates.create(requestOf(f, verificationId));
      setCreated(m);
      setWallet(null);
      void queryClient.invalidateQueries({ queryKey: ['mandates'] });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      requestOf(f); // the form's own checks, before a wallet session is opened for nothing
    } catch (err) {
      return setError(err);
    }
    if (!verify) return void create();
    try {
      setWallet(await apiOf(session).identityVerifications.create({ purpose: 'mandate' }));
    } catch (err) {
      setError(err);
    }
  };
  const endWait = (err: unknown) => {
    setWallet(null);
    setError(err);
  };
  useWalletWait(wallet, session, endWait, create, setError);
  return { verify, setVerify, wallet, setWallet, busy, error, created, setCreated, submit };
}

/** The form's field sections (SECTIONS), each a heading over rows of fields. */
function FieldSections({ field }: { field: Fields['field'] }) {
  return SECTIONS.map((section) => (
    <Fragment key={section.heading}>
      <h2>{section.heading}</h2>
      {section.rows.map((row) => (
        <div className="row" key={row[0]!.id}>
          {row.map(({ name, options, text, currency, ...input }) =>
            options ? (
              <SelectField key={input.id} {...input} {...field(name)} options={options} text={text} />
            ) : currency ? (
              <CurrencyField key={input.id} id={input.id} {...field(name)} />
            ) : (
              <TextField key={input.id} {...input} {...field(name)} />
            ),
          )}
        </div>
      ))}
    </Fragment>
  ));
}

/** The wallet session's request as a QR code and a link, while its answer is awaited. */
function WalletRequest({ wallet, onCancel }: { wallet: CreatedIdentityVerification; onCancel(): void }) {
  return (
    <Paper
      withBorder
      p="md"
      className="wallet-request"
      data-authorization-request={wallet.authorization_request}
    >
      <Title order={2} size="h4">
        Waiting for the principal&apos;s wallet
      </Title>
      <QrCode value={wallet.authorization_request} label="QR code of the wallet authorization request" />
      <p>
        The principal scans the code with their identity wallet, or on this device:{' '}
        <a href={wallet.authorization_request}>open the wallet</a>.
      </p>
      <code className="request-link">{wallet.authorization_request}</code>
      <Text size="sm" c="dimmed" aria-live="polite">
        Waiting for the answer… (expires {formatTime(wallet.expires_at)}, {relativeTime(wallet.expires_at)})
      </Text>
      <Button variant="default" mt="sm" onClick={onCancel}>
        Cancel
      </Button>
    </Paper>
  );
}

/**
 * POST /v1/mandates from a form: principal, delegate, actions, resources, an amount limit in major
 * units with its currency, the validity window (UTC) and metadata. With "verify the principal's
 * identity" it first opens a wallet session (POST /v1/identity-verifications), shows its QR code
 * and waits for the wallet's answer; the mandate then carries principal.verified.
 */
export function CreateMandatePage({ area }: { area: Area }) {
  const { session, canWrite } = useAreaAuth(area);
  const { values: f, field } = useFields(INITIAL);
  const { verify, setVerify, wallet, setWallet, busy, error, created, setCreated, submit } = useCreateMandate(
    session,
    f,
  );

  if (!canWrite) return <NoAccess area={{ ...area, read: area.write ?? area.read }} />;
  if (created) return <Created m={created} onAnother={() => setCreated(null)} />;
  return (
    <>
      <MandatePageHeader
        title="Create mandate"
        description="A signed delegation: the principal lets the delegate do these actions, within these limits, in this window."
      />
      <form className="card" onSubmit={(e) => void submit(e)} aria-label="New mandate">
        <FieldSections field={field} />
        <Textarea
          id="m-metadata"
          label="Metadata (optional, key=value a line)"
          value={f.metadata}
          onChange={(e) => field('metadata').onChange(e.currentTarget.value)}
          placeholder={'order=1234\nchannel=web'}
          autosize
          minRows={2}
          maw="44rem"
          mb="md"
        />
        <Checkbox
          id="m-verify"
          label="Verify the principal's identity with a wallet first (EU digital identity, OpenID4VP)"
          checked={verify}
          onChange={(e) => setVerify(e.currentTarget.checked)}
          mb="md"
        />
        <Group>
          <Button
            type="submit"
            loading={busy}
            disabled={!!wallet}
            leftSection={<FileSignature size={16} aria-hidden />}
          >
            {verify ? 'Verify identity and create' : 'Create mandate'}
          </Button>
          <Text size="sm" c="dimmed">
            Sends <code>POST /v1/mandates</code>
          </Text>
        </Group>
        <ErrorMessage error={error} />
      </form>
      {wallet ? <WalletRequest wallet={wallet} onCancel={() => setWallet(null)} /> : null}
    </>
  );
}

/** The created mandate: its id, state, signature and status-list slot. */
function Created({ m, onAnother }: { m: Mandate; onAnother(): void }) {
  return (
    <>
      <MandatePageHeader
        title="Mandate created"
        description="Signed and in force: verifications of it are answered from now."
      />
      <Paper withBorder p="md" mb="lg" data-testid="created-mandate">
        <dl className="facts">
          <Fact term="Mandate id">
            <IdToken id={m.id} full />
          </Fact>
          <Fact term="State">
            <StateBadge state={m.state} testId="created-state" />
          </Fact>
          <Fact term="Principal" testId="created-principal">
            {m.principal.id}
            {m.principal.name ? `, ${m.principal.name}` : ''}
            {m.principal.verified ? ` (identity verified, ${m.principal.verified.assurance})` : ''}
          </Fact>
          <Fact term="Delegate">{m.delegate.id}</Fact>
          <Fact term="Actions">{m.scope.actions.join(', ')}</Fact>
          <Fact term="Limit" testId="created-limit">
            {constraintsText(m.scope.constraints)}
          </Fact>
          <Fact term="Budget" testId="created-budget">
            {budgetText(m.scope)}
          </Fact>
          <Fact term="Signature">
            {m.signature.alg}, key <code>{m.signature.kid}</code>
            <pre className="snippet" data-testid="created-signature">
              {m.signature.jws}
            </pre>
          </Fact>
          <Fact term="Status list slot" testId="created-status-slot">
            {m.status ? (
              <>
                index {m.status.status_list.idx} of <code>{m.status.status_list.uri}</code>
              </>
            ) : (
              'None (verified online only)'
            )}
          </Fact>
        </dl>
      </Paper>
      <Group>
        <Button component={Link} to={`/mandates/${m.id}`}>
          Open the mandate
        </Button>
        <Button variant="default" onClick={onAnother}>
          Create another
        </Button>
      </Group>
    </>
  );
}
