import { useState } from 'react';
import { call } from '../api';
import { useAuth } from '../auth';
import { ErrorMessage, PageHeader, FormCard, useFormMutation } from '../ui';

interface Decision {
  decision: 'ALLOW' | 'DENY';
  reason: string;
  mandate_id: string;
  mandate_state: string;
  mandate_version: number;
}

/** POST /v1/verify from a form: the decision and its reason, exactly as an integrator would get them. */
export function VerifyPage() {
  const { session } = useAuth();
  const [form, setForm] = useState({ mandate_id: '', action: '', amount: '', currency: '', resource: '' });
  const set = (k: keyof typeof form) => (e: { target: { value: string } }) =>
    setForm((f) => ({ ...f, [k]: e.target.value }));
  const [verify, submit] = useFormMutation({
    mutationFn: () =>
      call<Decision>(session, 'POST', '/v1/verify', {
        mandate_id: form.mandate_id.trim(),
        action: form.action.trim(),
        ...(form.amount.trim() ? { amount: Number(form.amount) } : {}),
        ...(form.currency.trim() ? { currency: form.currency.trim().toUpperCase() } : {}),
        ...(form.resource.trim() ? { resource: form.resource.trim() } : {}),
      }),
  });
  const d = verify.data;
  return (
    <>
      <PageHeader title="Verification playground" />
      <p>
        Asks <code>POST /v1/verify</code> whether a delegate may do an action now, as your integration would.
        Each call is recorded in the audit log (VERIFICATION_PERFORMED).
      </p>
      <FormCard id="verify-title" title="Request" onSubmit={submit}>
        <div className="row">
          <label htmlFor="v-mandate">Mandate id</label>
          <input id="v-mandate" value={form.mandate_id} onChange={set('mandate_id')} required />
          <label htmlFor="v-action">Action</label>
          <input
            id="v-action"
            value={form.action}
            onChange={set('action')}
            placeholder="payments:create"
            required
          />
        </div>
        <div className="row">
          <label htmlFor="v-amount">Amount (minor units)</label>
          <input
            id="v-amount"
            inputMode="numeric"
            pattern="[0-9]*"
            value={form.amount}
            onChange={set('amount')}
          />
          <label htmlFor="v-currency">Currency</label>
          <input
            id="v-currency"
            value={form.currency}
            onChange={set('currency')}
            placeholder="EUR"
            maxLength={3}
          />
          <label htmlFor="v-resource">Resource</label>
          <input id="v-resource" value={form.resource} onChange={set('resource')} />
        </div>
        <button type="submit" disabled={verify.isPending}>
          Verify
        </button>
        <ErrorMessage error={verify.error} />
      </FormCard>
      {d ? (
        <section aria-labelledby="decision-title" aria-live="polite">
          <h2 id="decision-title">
            Decision: <span data-testid="decision">{d.decision}</span>
          </h2>
          <dl className="facts">
            <dt>Reason</dt>
            <dd data-testid="reason">{d.reason}</dd>
            <dt>Mandate state</dt>
            <dd>{d.mandate_state}</dd>
            <dt>Mandate version</dt>
            <dd>{d.mandate_version}</dd>
          </dl>
        </section>
      ) : null}
    </>
  );
}
