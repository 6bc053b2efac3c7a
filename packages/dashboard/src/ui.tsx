import { useState, type FormEvent, type InputHTMLAttributes, type ReactNode } from 'react';
import { useMutation, type UseMutationOptions, type UseQueryResult } from '@tanstack/react-query';
import { MandateApiError } from './api';

export function ErrorMessage({ error }: { error: unknown }) {
  if (!error) return null;
  const text =
    error instanceof MandateApiError
      ? `${error.status} ${error.error}: ${error.message}`
      : error instanceof Error
        ? error.message
        : String(error);
  return (
    <p role="alert" className="error">
      {text}
    </p>
  );
}

export function Loading() {
  return <p aria-live="polite">Loading…</p>;
}

/** A query's states: "Loading…" until it answers, its error, then what `children` shows of its data. */
export function Loaded<D>({ query, children }: { query: UseQueryResult<D>; children(data: D): ReactNode }) {
  return (
    <>
      {query.isPending ? <Loading /> : null}
      <ErrorMessage error={query.error} />
      {query.data ? children(query.data) : null}
    </>
  );
}

export function PageHeader({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="page-header">
      <h1>{title}</h1>
      {children}
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
    <section className="secret" aria-labelledby="secret-title">
      <h2 id="secret-title">{label}</h2>
      <p className="warning" role="note">
        <strong>Shown only once.</strong> Copy the secret now and store it safely: it cannot be shown again,
        not even after a reload of this page.
      </p>
      <code data-testid="secret">{secret}</code>
      <div className="row">
        <button type="button" onClick={copy}>
          Copy secret
        </button>
        <button type="button" className="secondary" onClick={onDone}>
          I have stored it
        </button>
        <span aria-live="polite">
          {copied === 'yes' ? 'Copied.' : copied === 'failed' ? 'Copy failed: select the text instead.' : ''}
        </span>
      </div>
    </section>
  );
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

export function Pager({
  pager,
  nextCursor,
}: {
  pager: ReturnType<typeof usePager>;
  nextCursor: string | null | undefined;
}) {
  return (
    <nav className="pager" aria-label="Pages">
      <button type="button" className="secondary" disabled={pager.page === 1} onClick={pager.prev}>
        Previous
      </button>
      <span>Page {pager.page}</span>
      <button
        type="button"
        className="secondary"
        disabled={!nextCursor}
        onClick={() => nextCursor && pager.next(nextCursor)}
      >
        Next
      </button>
    </nav>
  );
}

export const formatTime = (iso: string | null | undefined) =>
  iso ? new Date(iso).toISOString().replace('T', ' ').slice(0, 19) + 'Z' : '—';

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
}) {
  return (
    <>
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value)}>
        {any ? <option value="">Any</option> : null}
        {options.map((o) => (
          <option key={o} value={o}>
            {text(o)}
          </option>
        ))}
      </select>
    </>
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
  return { values, field };
}

/** A labelled input; `onChange` gets its new value. */
export function TextField({
  id,
  label,
  onChange,
  ...input
}: { id: string; label: ReactNode; value: string; onChange(value: string): void } & Omit<
  InputHTMLAttributes<HTMLInputElement>,
  'id' | 'value' | 'onChange'
>) {
  return (
    <>
      <label htmlFor={id}>{label}</label>
      <input id={id} onChange={(e) => onChange(e.target.value)} {...input} />
    </>
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
      <button type="submit">{children}</button>
    </form>
  );
}

/** A `datetime-local` value (the browser's local time) as the instant the API expects; '' stays ''. */
export const localTimeToIso = (value: string) => (value ? new Date(value).toISOString() : '');

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
