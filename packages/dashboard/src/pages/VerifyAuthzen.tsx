import { useState } from 'react';
import { Button, Text, Textarea } from '@mantine/core';
import type {
  AuthzenEvaluationRequest,
  AuthzenEvaluationResponse,
  AuthzenEvaluationsRequest,
} from '@mandate/client';
import { apiOf } from '../api';
import { useAuth } from '../auth';
import { requestOfEvaluation, useReasonInWords, type AskedRequest } from '../reasons';
import { Reproduce } from '../snippet';
import { DataTable, column } from '../table';
import { ErrorMessage, Fact, FormCard, IdToken, SelectField, StateBadge, useFormMutation } from '../ui';

/**
 * The playground in AuthZEN's words (docs/API.md#authzen): the same form's fields as an evaluation —
 * the delegate as the subject, the mandate as the resource, amount, currency and minimum assurance
 * as the context — and a batch of actions over them with one of the three semantics.
 */
export type PlaygroundForm = Record<
  | 'mandate_id'
  | 'action'
  | 'amount'
  | 'currency'
  | 'resource'
  | 'delegate_id'
  | 'subject_type'
  | 'min_assurance',
  string
>;

/** The evaluation the form says: empty fields left out, the currency in capitals (as verify's body). */
export function authzenEvaluation(form: PlaygroundForm): AuthzenEvaluationRequest {
  const t = (k: keyof PlaygroundForm) => form[k].trim();
  const context = {
    ...(t('amount') ? { amount: Number(t('amount')) } : {}),
    ...(t('currency') ? { currency: t('currency').toUpperCase() } : {}),
    ...(t('min_assurance') ? { min_assurance: t('min_assurance') } : {}),
  };
  return {
    subject: { type: t('subject_type'), id: t('delegate_id') },
    action: { name: t('action') },
    resource: {
      type: 'mandate',
      id: t('mandate_id'),
      ...(t('resource') ? { properties: { resource: t('resource') } } : {}),
    },
    ...(Object.keys(context).length ? { context } : {}),
  };
}

const SEMANTICS = ['execute_all', 'deny_on_first_deny', 'permit_on_first_permit'] as const;
type Semantic = (typeof SEMANTICS)[number];
const SEMANTIC_WORDS: Record<Semantic, string> = {
  execute_all: 'execute_all: decide every item',
  deny_on_first_deny: 'deny_on_first_deny: stop at the first false',
  permit_on_first_permit: 'permit_on_first_permit: stop at the first true',
};

/** The batch: the form's evaluation as the defaults (its action only when named), one item per action. */
function batchBody(form: PlaygroundForm, actions: string, semantic: Semantic): AuthzenEvaluationsRequest {
  const { action, ...defaults } = authzenEvaluation(form);
  const names = actions
    .split('\n')
    .map((a) => a.trim())
    .filter(Boolean);
  return {
    ...defaults,
    ...(action.name ? { action } : {}),
    options: { evaluations_semantic: semantic },
    evaluations: names.map((name) => ({ action: { name } })),
  };
}

/** An answer's reason code, or its error's status for an item that could not be evaluated. */
const reasonOf = (e: AuthzenEvaluationResponse) =>
  'reason' in e.context ? e.context.reason : `error ${e.context.error.status}`;
/**
 * An answer in words: its reason told with the request and the mandate (docs/API.md#reasons-in-words),
 * or its error's message for an item that could not be evaluated.
 */
function useWordsOf(e: AuthzenEvaluationResponse, request: AskedRequest): string {
  const reason = 'reason' in e.context ? e.context.reason : '';
  const words = useReasonInWords(reason, { request, live: true });
  return 'reason' in e.context ? words : e.context.error.message;
}

function WordsOf({ answer, request }: { answer: AuthzenEvaluationResponse; request: AskedRequest }) {
  return <span className="reason-words">{useWordsOf(answer, request)}</span>;
}

/** One evaluation's answer: the decision as ALLOW/DENY and as AuthZEN's boolean, the reason, the context. */
export function AuthzenDecision({
  answer,
  asked,
}: {
  answer: AuthzenEvaluationResponse;
  asked: AuthzenEvaluationRequest;
}) {
  const c = answer.context;
  const words = useWordsOf(answer, requestOfEvaluation(asked));
  return (
    <section className="card" aria-labelledby="decision-title" aria-live="polite">
      <h2 id="decision-title">
        Decision: <StateBadge state={answer.decision ? 'ALLOW' : 'DENY'} testId="decision" />
      </h2>
      <Text fw={600} mb="xs" data-testid="reason-words" data-reason={reasonOf(answer)}>
        {words}
      </Text>
      <dl className="facts">
        <Fact term="AuthZEN decision">
          <code data-testid="authzen-decision">{String(answer.decision)}</code>
        </Fact>
        <Fact term="Reason code">
          <code data-testid="reason">{reasonOf(answer)}</code>
        </Fact>
        {'mandate_state' in c ? (
          <>
            <Fact term="Mandate state">
              <StateBadge state={c.mandate_state} />
            </Fact>
            <Fact term="Mandate version">{c.mandate_version}</Fact>
            <Fact term="Decision id" testId="decision-id">
              <IdToken id={c.decision_id} full />
            </Fact>
          </>
        ) : null}
      </dl>
    </section>
  );
}

type Row = { index: number; action: string; request: AskedRequest; answer: AuthzenEvaluationResponse };
const BATCH_COLUMNS = [
  column<Row>('Item', (r) => r.index + 1),
  column<Row>('Action', (r) => <code>{r.action}</code>),
  column<Row>('Decision', (r) => <StateBadge state={r.answer.decision ? 'ALLOW' : 'DENY'} />, {
    testId: (_r, i) => `batch-decision-${i}`,
  }),
  column<Row>('Reason', (r) => <code>{reasonOf(r.answer)}</code>, { testId: (_r, i) => `batch-reason-${i}` }),
  column<Row>('In words', (r) => <WordsOf answer={r.answer} request={r.request} />),
];

/** A batch item as the verify request it maps to: its own members, else the batch's defaults (docs/API.md#authzen). */
function itemRequest(body: AuthzenEvaluationsRequest | null, i: number): AskedRequest {
  const item = body?.evaluations?.[i] ?? {};
  const subject = item.subject ?? body?.subject;
  const action = item.action ?? body?.action;
  const resource = item.resource ?? body?.resource;
  const context = item.context ?? body?.context;
  return subject && action && resource
    ? requestOfEvaluation({ subject, action, resource, ...(context ? { context } : {}) })
    : {};
}

/** The batch's answers, one row each, in request order. */
function BatchAnswer({ rows, sent }: { rows: Row[]; sent: AuthzenEvaluationsRequest | null }) {
  return (
    <section className="card" aria-labelledby="batch-answer-title" aria-live="polite">
      <h2 id="batch-answer-title">Batch decisions</h2>
      <p data-testid="batch-count">
        {rows.length} of {sent?.evaluations?.length ?? 0} items answered ({semanticOf(sent)}).
      </p>
      <DataTable
        caption="Each item's decision, in request order"
        columns={BATCH_COLUMNS}
        rows={rows}
        rowKey={(r) => String(r.index)}
      />
    </section>
  );
}

/** Sends the batch built from the form, the actions and the semantic; the body sent is kept to reproduce. */
function useBatch(form: PlaygroundForm, actions: string, semantic: Semantic) {
  const { session } = useAuth();
  const [sent, setSent] = useState<AuthzenEvaluationsRequest | null>(null);
  const [batch, submit] = useFormMutation({
    mutationFn: async () => {
      const body = batchBody(form, actions, semantic);
      setSent(body);
      const answer = await apiOf(session).authzen.accessEvaluations(body);
      // A body with evaluations is always answered with a list (docs/API.md#authzen).
      return 'evaluations' in answer ? answer.evaluations : [answer];
    },
  });
  const rows: Row[] = (batch.data ?? []).map((answer, i) => ({
    index: i,
    action: sent?.evaluations?.[i]?.action?.name ?? '',
    request: itemRequest(sent, i),
    answer,
  }));
  return { sent, batch, submit, rows };
}

/** POST /access/v1/evaluations over the form's fields: one item per action listed, in the chosen semantic. */
export function AuthzenBatch({ form }: { form: PlaygroundForm }) {
  const [actions, setActions] = useState('');
  const [semantic, setSemantic] = useState<Semantic>('execute_all');
  const { sent, batch, submit, rows } = useBatch(form, actions, semantic);
  return (
    <>
      <FormCard id="batch-title" title="Batch: POST /access/v1/evaluations" onSubmit={submit}>
        <Text size="sm" mb="xs">
          The request above gives the defaults (subject, mandate, context); each action below is one item.
          Each item counts one request of your rate limits.
        </Text>
        <div className="row">
          <Textarea
            id="v-batch-actions"
            label="Batch items, one a line"
            description="Each line is an item's action name."
            value={actions}
            onChange={(e) => setActions(e.currentTarget.value)}
            placeholder={'payments:create\ntransfers:create'}
            autosize
            minRows={2}
            required
          />
          <SelectField
            id="v-semantic"
            label="Evaluations semantic"
            value={semantic}
            onChange={(s) => setSemantic(s as Semantic)}
            options={SEMANTICS}
            text={(s) => SEMANTIC_WORDS[s as Semantic]}
          />
        </div>
        <Button type="submit" loading={batch.isPending}>
          Send batch
        </Button>
        <ErrorMessage error={batch.error} />
      </FormCard>
      {batch.data ? <BatchAnswer rows={rows} sent={sent} /> : null}
      {sent ? (
        <Reproduce
          id="batch-reproduce-title"
          title="Reproduce this batch"
          path="/access/v1/evaluations"
          method="authzen.accessEvaluations"
          body={sent}
          testIds={{ curl: 'batch-curl', client: 'batch-client-call' }}
        />
      ) : null}
    </>
  );
}

const semanticOf = (body: AuthzenEvaluationsRequest | null) =>
  body?.options?.evaluations_semantic ?? 'execute_all';
