import { useEffect, useRef, useState, type FormEvent, type InputHTMLAttributes, type ReactNode } from 'react';
import { useMutation, type UseMutationOptions, type UseQueryResult } from '@tanstack/react-query';
import {
  Alert,
  Button,
  Code,
  Drawer,
  Group,
  Modal,
  NativeSelect,
  Paper,
  Skeleton,
  Text,
  TextInput,
  Title,
  VisuallyHidden,
} from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { CircleAlert, CircleCheck, Copy, KeyRound } from 'lucide-react';
import type { MandateClient } from '@mandate/client';
import { apiOf } from './api';
import { useAuth } from './auth';
import { errorInWords } from './errors';

export { formatTime, Time, IdToken, StateBadge, formatMoney } from './format';

/** An error in words (errors.ts): the sentence, the API's message, and its code underneath. */
export function ErrorMessage({ error }: { error: unknown }) {
  if (!error) return null;
  const { sentence, detail, code } = errorInWords(error);
  return (
    <Alert
      role="alert"
      color="red"
      variant="light"
      icon={<CircleAlert size={18} aria-hidden />}
      title={sentence}
      className="error"
      my="sm"
    >
      {detail && detail !== sentence ? <Text size="sm">{detail}</Text> : null}
      {code ? (
        <Text size="xs" c="dimmed" mt={4} data-testid="error-code">
          {code}
        </Text>
      ) : null}
    </Alert>
  );
}

/**
 * A finished action said in a Mantine notification (top right, gone after a few seconds; a screen
 * reader hears it as an alert). `testId` marks it for the browser tests.
 */
export function notifyDone(message: string, testId?: string) {
  notifications.show({
    message,
    color: 'green',
    icon: <CircleCheck size={18} aria-hidden />,
    autoClose: 4000,
    closeButtonProps: { 'aria-label': 'Close the notification' },
    ...(testId ? { 'data-testid': testId } : {}),
  });
}

/**
 * What loads, as grey lines where it will be (docs/DASHBOARD.md, "Design system"): the page keeps
 * its height instead of jumping when the data comes; "Loading…" is said to screen readers.
 */
export function Loading({ lines = 3 }: { lines?: number }) {
  return (
    <div className="loading" role="status" aria-busy="true" data-testid="loading">
      <VisuallyHidden>Loading…</VisuallyHidden>
      {Array.from({ length: lines }, (_, i) => (
        <Skeleton key={i} height={14} radius="sm" mb="sm" width={i === lines - 1 ? '60%' : '100%'} />
      ))}
    </div>
  );
}

/** A query's states: "Loading…" until it answers, its error, then what `children` shows of its data. */
export function Loaded<D>({ query, children }: { query: UseQueryResult<D>; children(data: D): ReactNode }) {
  return (
    <>
      {query.isPending ? <Loading /> : null}
      <ErrorMessage error={query.error} />
      {/* An error stands alone: never beside an empty state ("No mandates…") that it contradicts. */}
      {query.data && !query.isError ? children(query.data) : null}
    </>
  );
}

/** One term of a facts list (`<dl className="facts">`) and its value. */
export function Fact({ term, testId, children }: { term: string; testId?: string; children: ReactNode }) {
  return (
    <>
      <dt>{term}</dt>
      <dd data-testid={testId}>{children}</dd>
    </>
  );
}

/** A page's title, what the page is for (`description`), and its actions on the right. */
export function PageHeader({
  title,
  description,
  children,
}: {
  title: string;
  description?: ReactNode;
  children?: ReactNode;
}) {
  return (
    <div className="page-header">
      <div>
        <Title order={1}>{title}</Title>
        {description ? (
          <Text size="sm" c="dimmed">
            {description}
          </Text>
        ) : null}
      </div>
      {children ? <Group gap="sm">{children}</Group> : null}
    </div>
  );
}

/**
 * What an empty list means and what to do next: `children` says it, `call` is the API call that
 * fills the list (shown beside it, so an integrator sees the way too).
 */
export function Empty({ title, children, call }: { title: string; children?: ReactNode; call?: string }) {
  return (
    <div className="empty" data-testid="empty">
      <Text fw={600}>{title}</Text>
      {children ? <Text size="sm">{children}</Text> : null}
      {call ? (
        <Text size="sm" c="dimmed">
          Through the API: <Code>{call}</Code>
        </Text>
      ) : null}
    </div>
  );
}

/** A secret the API returns once: shown here, copyable, never stored; gone on reload. */
export function SecretOnce({ label, secret, onDone }: { label: string; secret: string; onDone(): void }) {
  const [copied, setCopied] = useState<'no' | 'yes' | 'failed'>('no');
  const copy = () => {
    navigator.clipboard
      .writeText(secret)
      .then(() => setCopied('yes'))
      .catch(() => setCopied('failed'));
  };
  return (
    <Paper withBorder p="md" mb="lg" className="secret" component="section" aria-labelledby="secret-title">
      <Group gap="xs" mb="xs">
        <KeyRound size={18} aria-hidden />
        <Title order={2} size="h4" id="secret-title">
          {label}
        </Title>
      </Group>
      <p className="warning" role="note">
        <strong>Shown only once.</strong> Copy the secret now and store it safely: it cannot be shown again,
        not even after a reload of this page.
      </p>
      <code data-testid="secret">{secret}</code>
      <Group gap="sm">
        <Button leftSection={<Copy size={16} aria-hidden />} onClick={copy}>
          Copy secret
        </Button>
        <Button variant="default" onClick={onDone}>
          I have stored it
        </Button>
        <span aria-live="polite">
          {copied === 'yes' ? 'Copied.' : copied === 'failed' ? 'Copy failed: select the text instead.' : ''}
        </span>
      </Group>
    </Paper>
  );
}

/**
 * What a change to a list of credentials (API keys, webhook endpoints) ends with: the new secret it
 * returned shown once above the list (SecretOnce), or else its notification; then `refresh`.
 * `view` is what to render, nothing once the user has stored the secret.
 */
export function useSecretOnce(refresh: () => unknown) {
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  return {
    done(outcome: { label: string; value: string } | string) {
      if (typeof outcome === 'string') notifyDone(outcome);
      else setSecret(outcome);
      void refresh();
    },
    view: secret ? (
      <SecretOnce label={secret.label} secret={secret.value} onDone={() => setSecret(null)} />
    ) : null,
  };
}

/**
 * A button acting on one row of a table: `subject` names the row for a screen reader (hidden on
 * screen), so that each row's "Revoke" says which one it revokes. `danger` for what cannot be undone.
 */
export function RowAction({
  subject,
  onClick,
  disabled,
  loading,
  danger = false,
  children,
}: {
  subject: ReactNode;
  onClick(): void;
  disabled?: boolean;
  loading?: boolean;
  danger?: boolean;
  children: ReactNode;
}) {
  return (
    <Button
      size="xs"
      variant="light"
      {...(danger ? { color: 'red' } : {})}
      disabled={disabled}
      loading={loading}
      onClick={onClick}
    >
      {children} <span className="sr-only">{subject}</span>
    </Button>
  );
}

/** One operation a row offers: `op` is what it runs, `label` what its button says. */
export interface RowOp<Op extends string> {
  op: Op;
  label: string;
  danger?: boolean;
}

/** A row's operations as RowActions, in order, all disabled while one runs (`busy`). */
export function RowActions<Op extends string>({
  subject,
  ops,
  busy,
  onAction,
}: {
  subject: ReactNode;
  ops: readonly RowOp<Op>[];
  busy: boolean;
  onAction(op: Op): void;
}) {
  return ops.map(({ op, label, danger }) => (
    <RowAction key={op} subject={subject} danger={danger} disabled={busy} onClick={() => onAction(op)}>
      {label}
    </RowAction>
  ));
}

/** Previous/next over cursor pages: `cursors` is the stack of cursors that led to the current page. */
export function usePager() {
  const [cursors, setCursors] = useState<string[]>([]);
  return {
    cursor: cursors[cursors.length - 1],
    page: cursors.length + 1,
    next: (c: string) => setCursors((s) => [...s, c]),
    prev: () => setCursors((s) => s.slice(0, -1)),
    reset: () => setCursors([]),
  };
}

/** Previous/next, only where there is another page (a one-page list shows none). */
export function Pager({
  pager,
  nextCursor,
}: {
  pager: ReturnType<typeof usePager>;
  nextCursor: string | null | undefined;
}) {
  if (pager.page === 1 && !nextCursor) return null;
  return (
    <nav className="pager" aria-label="Pages">
      <Button variant="default" size="xs" disabled={pager.page === 1} onClick={pager.prev}>
        Previous
      </Button>
      <Text size="sm">Page {pager.page}</Text>
      <Button
        variant="default"
        size="xs"
        disabled={!nextCursor}
        onClick={() => nextCursor && pager.next(nextCursor)}
      >
        Next
      </Button>
    </nav>
  );
}

/** A form's one mutation: `submit` (its onSubmit) runs it instead of loading a page. */
export function useFormMutation<T>(options: UseMutationOptions<T, Error, void>) {
  const mutation = useMutation(options);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    mutation.mutate();
  };
  return [mutation, submit] as const;
}

/** A labelled select of one of `options`; `onChange` gets the chosen value. */
export function SelectField({
  id,
  label,
  value,
  onChange,
  options,
  text = (o) => o,
  any = false,
  disabled,
}: {
  id: string;
  label: ReactNode;
  value: string;
  onChange(value: string): void;
  options: readonly string[];
  /** An option's text (its value by default). */
  text?: (option: string) => string;
  /** Offer "Any" (the empty value) first: a filter that may be left open. */
  any?: boolean;
  disabled?: boolean;
}) {
  return (
    <NativeSelect
      className="field"
      id={id}
      label={label}
      value={value}
      disabled={disabled}
      onChange={(e) => onChange(e.currentTarget.value)}
      data={[
        ...(any ? [{ value: '', label: 'Any' }] : []),
        ...options.map((o) => ({ value: o, label: text(o) })),
      ]}
    />
  );
}

/** A list's filter on its rows' status: the API's upper-case values, offered in lower case. */
export function StatusFilter({
  id,
  value,
  onChange,
  options,
  any,
}: {
  id: string;
  value: string;
  onChange(value: string): void;
  options: readonly string[];
  any?: boolean;
}) {
  return (
    <SelectField
      id={id}
      label="Status"
      value={value}
      onChange={onChange}
      options={options}
      text={(s) => s.toLowerCase()}
      any={any}
    />
  );
}

/** `field(name)`: one of `values`, as the value and change a TextField or SelectField takes. */
export const fieldsOf =
  <F extends string>(values: Record<F, string>, change: (name: F, value: string) => void) =>
  (name: F) => ({ value: values[name], onChange: (value: string) => change(name, value) });

/**
 * A form's (or a list's filters') text values kept in one state object, their fields (fieldsOf);
 * `onChange` runs after every change.
 */
export function useFields<F extends string>(initial: Record<F, string>, onChange?: () => void) {
  const [values, setValues] = useState(initial);
  const field = fieldsOf(values, (name, value) => {
    setValues((v) => ({ ...v, [name]: value }));
    onChange?.();
  });
  /** `names` back to their initial values. */
  const reset = (names: readonly F[]) =>
    setValues((v) => ({ ...v, ...Object.fromEntries(names.map((n) => [n, initial[n]])) }));
  return { values, field, reset };
}

/**
 * A form that creates something from its fields (useFields): submit has `send` ask the API, as the
 * signed-in caller, with their values; once created, `onCreated` gets the result and those values, and the fields in `clear` empty (a
 * name is not reused; a choice such as a role stays for the next).
 */
export function useCreateForm<F extends string, T>({
  initial,
  clear,
  send,
  onCreated,
}: {
  initial: Record<F, string>;
  clear: readonly NoInfer<F>[];
  send(api: MandateClient, values: Record<F, string>): Promise<T>;
  onCreated(created: T, values: Record<F, string>): void;
}) {
  const { session } = useAuth();
  const { values, field, reset } = useFields(initial);
  const [create, submit] = useFormMutation({
    mutationFn: () => send(apiOf(session), values),
    onSuccess: (created) => {
      onCreated(created, values);
      reset(clear);
    },
  });
  return { field, create, submit };
}

/** A labelled input (label above it, so the two never part); `onChange` gets its new value. */
export function TextField({
  id,
  label,
  onChange,
  description,
  className,
  ...input
}: {
  id: string;
  label: ReactNode;
  value: string;
  onChange(value: string): void;
  description?: ReactNode;
} & Omit<InputHTMLAttributes<HTMLInputElement>, 'id' | 'value' | 'onChange' | 'size'>) {
  return (
    <TextInput
      className={className ? `field ${className}` : 'field'}
      id={id}
      label={label}
      description={description}
      onChange={(e) => onChange(e.currentTarget.value)}
      {...input}
    />
  );
}

/** A currency as the API takes it: its three-letter ISO 4217 code. */
export function CurrencyField({
  id,
  value,
  onChange,
}: {
  id: string;
  value: string;
  onChange(value: string): void;
}) {
  return (
    <TextField id={id} label="Currency" value={value} onChange={onChange} placeholder="EUR" maxLength={3} />
  );
}

/** A one-line form that asks for a tenant id; `children` is its button's text. */
export function TenantForm({
  id,
  value,
  onChange,
  onSubmit,
  children,
}: {
  id: string;
  value: string;
  onChange(value: string): void;
  onSubmit(e: FormEvent): void;
  children: ReactNode;
}) {
  return (
    <form onSubmit={onSubmit} className="row">
      <TextField id={id} label="Tenant id" value={value} onChange={onChange} placeholder="tnt_…" required />
      <Button type="submit">{children}</Button>
    </form>
  );
}

/** A `datetime-local` value, read as UTC (the dashboard's one time zone), as the instant the API expects; '' stays ''. */
export const localTimeToIso = (value: string) => (value ? new Date(`${value}Z`).toISOString() : '');

/** A form in a card, named by its heading. */
export function FormCard({
  id,
  title,
  onSubmit,
  children,
}: {
  id: string;
  title: string;
  onSubmit(e: FormEvent): void;
  children: ReactNode;
}) {
  return (
    <form className="card" onSubmit={onSubmit} aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </form>
  );
}

/**
 * Mantine's dialog (a Modal, or a Drawer from the right) with its title and close button. Its
 * header is a <div>: Mantine's <header> would be a second banner landmark beside the page's own.
 * Closing returns the focus to the element that had it when the dialog opened (its opener): Mantine's
 * own return reads the focus after its autofocus moved it inside. The page's scroll is locked by a
 * class on <body>, not Mantine's lock, whose injected <style> the CSP (style-src 'self') refuses.
 */
export function Dialog({
  opened,
  onClose,
  title,
  children,
  drawer = false,
  size = 'md',
}: {
  opened: boolean;
  onClose(): void;
  title: ReactNode;
  children: ReactNode;
  drawer?: boolean;
  size?: string;
}) {
  const opener = useRef<HTMLElement | null>(null);
  const wasOpened = useRef(false);
  // Read while rendering the opening, before any effect or autofocus moves the focus.
  if (opened && !wasOpened.current && typeof document !== 'undefined')
    opener.current = document.activeElement as HTMLElement | null;
  wasOpened.current = opened;
  useEffect(() => {
    if (!opened) return;
    document.body.classList.add('dialog-open');
    return () => {
      document.body.classList.remove('dialog-open');
      const back = opener.current;
      // Only when the focus was lost: on the body, or still in the closing dialog (its exit transition).
      window.setTimeout(() => {
        const now = document.activeElement;
        const lost = !now || now === document.body || !now.isConnected || !!now.closest('[role="dialog"]');
        if (back?.isConnected && lost) back.focus();
      }, 20);
    };
  }, [opened]);
  const header = { component: 'div' } as object;
  // The two share their parts' names and props; only the Drawer takes a side.
  const Parts = (drawer ? Drawer : Modal) as typeof Modal;
  const side = (drawer ? { position: 'right' } : {}) as object;
  return (
    <Parts.Root
      opened={opened}
      onClose={onClose}
      size={size}
      lockScroll={false}
      returnFocus={false}
      {...side}
    >
      <Parts.Overlay />
      <Parts.Content>
        <Parts.Header {...header}>
          <Parts.Title fw={700}>{title}</Parts.Title>
          <Parts.CloseButton aria-label="Close" />
        </Parts.Header>
        <Parts.Body>{children}</Parts.Body>
      </Parts.Content>
    </Parts.Root>
  );
}
