import type { ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { useSearchParams } from 'react-router';
import { CloseButton, Group, Paper, Text, Title } from '@mantine/core';
import type { MandateClient } from '@mandate/client';
import { apiOf } from './api';
import { useAuth } from './auth';
import { ErrorMessage, Loading } from './ui';

/** Whether the API answered 404 (the client's error carries the status). */
export const isNotFound = (error: unknown) => (error as { status?: number } | null)?.status === 404;

/**
 * One item a page opens from its URL (`?key=key_…`: the header's "Go to id", docs/DASHBOARD.md,
 * "Search"), read by `read`; `close` takes the parameter out again. In the URL, so a reload or
 * Back shows it again.
 */
export function useLinkedItem<T>(name: string, read: (api: MandateClient, id: string) => Promise<T>) {
  const { session } = useAuth();
  const [params, setParams] = useSearchParams();
  const id = params.get(name);
  const query = useQuery({
    queryKey: ['linked', name, id],
    queryFn: () => read(apiOf(session), id!),
    enabled: id !== null,
    // Another tenant's or a mistyped id is a 404: asking again changes nothing.
    retry: (count, error) => !isNotFound(error) && count < 2,
  });
  const open = (next: string | null) =>
    setParams((now) => {
      const search = new URLSearchParams(now);
      if (next === null) search.delete(name);
      else search.set(name, next);
      return search;
    });
  return { id, query, open, close: () => open(null) };
}

export type LinkedItem<T> = ReturnType<typeof useLinkedItem<T>>;

/** The linked item as a panel above the page's list: its facts (`children`), or that this tenant has none by that id. */
export function LinkedItemPanel<T>({
  linked,
  label,
  children,
}: {
  linked: LinkedItem<T>;
  label: string;
  children(item: T): ReactNode;
}) {
  if (linked.id === null) return null;
  const { query } = linked;
  return (
    <Paper component="section" withBorder p="md" my="md" data-testid="linked-item" aria-label={label}>
      <Group justify="space-between" wrap="nowrap" mb="xs">
        <Title order={2} size="h4" className="ellipsis">
          {label} <code>{linked.id}</code>
        </Title>
        <CloseButton aria-label={`Close ${label.toLowerCase()}`} onClick={linked.close} />
      </Group>
      {query.isPending ? <Loading /> : null}
      {isNotFound(query.error) ? (
        <Text role="alert">
          This tenant has no {label.toLowerCase()} <code>{linked.id}</code>.
        </Text>
      ) : (
        <ErrorMessage error={query.error} />
      )}
      {query.data ? children(query.data) : null}
    </Paper>
  );
}
