import { Fragment, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Button, Checkbox, Group, Text } from '@mantine/core';
import { EVENT_TYPES, type WebhookDelivery, type WebhookEndpoint, type WebhookReplay } from '@mandate/client';
import { EVENT_TYPE_DESCRIPTIONS } from '@mandate/shared/browser';
import { apiOf } from '../api';
import { useAuth } from '../auth';
import { ConfirmDialog } from '../confirm';
import { CopyIcon } from '../format';
import { ErrorMessage, formatTime, localTimeToIso, notifyDone, TextField } from '../ui';

/**
 * The webhook debugging tools of the Webhooks page (docs/WEBHOOKS.md, "Debugging a receiver"):
 * bodies as text, the endpoint's success rate, the replay of failed deliveries, and the event-type
 * picker whose descriptions come from the one catalogue (EVENT_TYPE_DESCRIPTIONS).
 */

/**
 * A body as stored: plain text in a <pre> (React escapes it, so an HTML answer is never rendered),
 * a few lines high and scrollable, with a button that copies it whole.
 */
export function BodyText({ label, text }: { label: string; text: string | null }) {
  if (text === null || text === '') return <Text size="xs" c="dimmed">{`${label}: empty`}</Text>;
  return (
    <figure className="body-text">
      <Group gap={4} justify="space-between" wrap="nowrap">
        <figcaption>{label}</figcaption>
        <CopyIcon value={text} what={`the ${label.toLowerCase()}`} />
      </Group>
      {/* Focusable: a scrolled region must be reachable by keyboard. */}
      <pre data-testid="body-text" tabIndex={0} aria-label={label}>
        {text}
      </pre>
    </figure>
  );
}

type Attempt = WebhookDelivery['attempts'][number];

/** The request every attempt sent and each attempt's answer, folded so the table stays dense. */
export function DeliveryBodies({ delivery }: { delivery: WebhookDelivery }) {
  return (
    <details className="bodies">
      <summary>
        Request and responses <span className="sr-only">of {delivery.event_id}</span>
      </summary>
      {delivery.request_body === null ? (
        // The API leaves it out for a role without events:read (docs/WEBHOOKS.md, "Debugging a receiver").
        <Text size="xs" c="dimmed">
          Request body: shown to roles that may read the audit log (events:read).
        </Text>
      ) : (
        <BodyText label="Request body" text={delivery.request_body} />
      )}
      {delivery.attempts.map((a: Attempt, i) => (
        <BodyText
          key={a.attempted_at + i}
          label={`Response ${i + 1} (${formatTime(a.attempted_at)}, ${a.status_code ?? a.error ?? 'no answer'})`}
          text={a.response_body}
        />
      ))}
    </details>
  );
}

const percent = (rate: number | null) => (rate === null ? 'no attempts' : `${(rate * 100).toFixed(1)} %`);

/** One endpoint's stats, shared by its table cell and its deliveries' header (one request). */
function useEndpointStats(endpointId: string) {
  const { session } = useAuth();
  return useQuery({
    queryKey: ['webhook-endpoints', 'stats', endpointId],
    queryFn: () => apiOf(session).webhooks.getWebhookEndpointStats(endpointId),
  });
}

/** The endpoints table's line: the last 24 hours' rate, the 7 days' on hover. */
export function SuccessRate({ endpointId }: { endpointId: string }) {
  const stats = useEndpointStats(endpointId);
  if (!stats.data) return null;
  const { last_24h: day, last_7d: week } = stats.data;
  return (
    <Text
      size="xs"
      c="dimmed"
      data-testid="success-rate"
      title={`Last 7 days: ${percent(week.success_rate)} (${week.succeeded} of ${week.attempts} attempts)`}
    >
      24 h success rate: {percent(day.success_rate)}
    </Text>
  );
}

/** The endpoint's success rate over 24 hours and 7 days (GET …/stats). */
export function EndpointStats({ endpointId }: { endpointId: string }) {
  const stats = useEndpointStats(endpointId);
  if (stats.error) return <ErrorMessage error={stats.error} />;
  if (!stats.data) return null;
  const windows = [
    ['Last 24 hours', stats.data.last_24h],
    ['Last 7 days', stats.data.last_7d],
  ] as const;
  return (
    <dl className="facts" data-testid="endpoint-stats">
      {windows.map(([term, w]) => (
        <Fragment key={term}>
          <dt>{term}</dt>
          <dd>
            {percent(w.success_rate)} succeeded ({w.succeeded} of {w.attempts} attempts)
          </dd>
        </Fragment>
      ))}
    </dl>
  );
}

/** A day ago, as a datetime-local value in UTC (the dashboard's one time zone). */
const dayAgo = () => new Date(Date.now() - 24 * 3_600_000).toISOString().slice(0, 16);

/**
 * "Replay failed deliveries since …": a dry run counts them first, and the confirmation states
 * that number (docs/WEBHOOKS.md, "Replaying failed deliveries"); nothing is sent before Confirm.
 */
export function ReplayFailed({ endpoint }: { endpoint: WebhookEndpoint }) {
  const { session } = useAuth();
  const queryClient = useQueryClient();
  const [since, setSince] = useState(dayAgo);
  const [counted, setCounted] = useState<WebhookReplay | null>(null);
  const replay = (dry_run: boolean) =>
    apiOf(session).webhooks.replayWebhookDeliveries(endpoint.id, { since: localTimeToIso(since), dry_run });
  const count = useMutation({
    mutationFn: () => replay(true),
    onSuccess: (res) =>
      res.replayed === 0
        ? notifyDone(`No failed deliveries to ${endpoint.url} since ${formatTime(res.since)}.`)
        : setCounted(res),
  });
  const run = useMutation({
    mutationFn: () => replay(false),
    onSuccess: (res) => {
      setCounted(null);
      notifyDone(`${res.replayed} failed deliveries replayed: they are sent again now.`);
      void queryClient.invalidateQueries({ queryKey: ['webhook-endpoints'] });
    },
  });
  return (
    <Group align="end" gap="sm" mb="sm">
      <TextField
        id="replay-since"
        label="Failed since (UTC)"
        type="datetime-local"
        value={since}
        onChange={setSince}
      />
      <Button variant="default" loading={count.isPending} disabled={!since} onClick={() => count.mutate()}>
        Replay failed…
      </Button>
      <ErrorMessage error={count.error} />
      <ConfirmDialog
        opened={!!counted}
        title="Replay failed deliveries"
        confirm={`Replay ${counted?.replayed ?? 0}`}
        danger={false}
        pending={run.isPending}
        error={run.error}
        onClose={() => setCounted(null)}
        onConfirm={() => run.mutate()}
        impact={counted ? <ReplayImpact endpoint={endpoint} counted={counted} /> : null}
      />
    </Group>
  );
}

function ReplayImpact({ endpoint, counted }: { endpoint: WebhookEndpoint; counted: WebhookReplay }) {
  return (
    <>
      {counted.has_more ? `The first ${counted.replayed} of more than ${counted.replayed}` : counted.replayed}{' '}
      failed deliveries to {endpoint.url} created since {formatTime(counted.since)} will be sent again now,
      each with its own webhook-id, on a fresh retry schedule.
      {counted.has_more ? ' Replay again afterwards for the rest.' : ''}
    </>
  );
}

/**
 * The event types an endpoint takes: all (`*`) or a set, each with what it means from the one
 * catalogue (EVENT_TYPE_DESCRIPTIONS, shared with the OpenAPI document's webhooks).
 */
export function EventTypePicker({ value, onChange }: { value: string[]; onChange(types: string[]): void }) {
  const all = value.includes('*');
  const toggle = (type: string, on: boolean) =>
    onChange(on ? [...value, type] : value.filter((t) => t !== type));
  return (
    <fieldset className="event-types" data-testid="event-type-picker">
      <legend>Event types</legend>
      <Checkbox
        label="All event types (*)"
        description="Every type, including those added later"
        checked={all}
        onChange={(e) => onChange(e.currentTarget.checked ? ['*'] : [])}
        mb="xs"
      />
      {/* Focusable: scrolled, and every checkbox in it is disabled while all types are picked. */}
      <div className="event-type-list" tabIndex={0} role="group" aria-label="Each event type">
        {EVENT_TYPES.map((type) => (
          <Checkbox
            key={type}
            label={<code>{type}</code>}
            description={EVENT_TYPE_DESCRIPTIONS[type]}
            checked={all || value.includes(type)}
            disabled={all}
            onChange={(e) => toggle(type, e.currentTarget.checked)}
          />
        ))}
      </div>
    </fieldset>
  );
}
