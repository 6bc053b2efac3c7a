import { Link } from 'react-router';
import { Button } from '@mantine/core';
import { ShieldQuestion } from 'lucide-react';
import type { Mandate } from '@mandate/client';
import { allowedAreas } from '../areas';
import { useAuth } from '../auth';

/** The playground's fields a link may fill (docs/DASHBOARD.md, "Areas"). */
export const PLAYGROUND_FIELDS = [
  'mandate_id',
  'action',
  'resource',
  'amount',
  'currency',
  'delegate_id',
] as const;

/**
 * The playground's address with a mandate's request filled in: its id and delegate, its first
 * action and resource, and its currency when its limit has one. The amount stays for the user.
 */
export function playgroundLink(m: Mandate): string {
  const q = new URLSearchParams({ mandate_id: m.id, delegate_id: m.delegate.id });
  const action = m.scope.actions[0];
  if (action) q.set('action', action);
  const resource = m.scope.resources?.[0];
  if (resource) q.set('resource', resource);
  const currency = m.scope.constraints?.currency;
  if (currency) q.set('currency', currency);
  return `/verify?${q.toString()}`;
}

/** "Verify this mandate", for whoever may open the playground. */
export function VerifyShortcut({ mandate }: { mandate: Mandate }) {
  const { permissions } = useAuth();
  if (!permissions || !allowedAreas(permissions).some((a) => a.id === 'verify')) return null;
  return (
    <Button
      component={Link}
      to={playgroundLink(mandate)}
      variant="light"
      leftSection={<ShieldQuestion size={16} aria-hidden />}
      data-testid="verify-this-mandate"
    >
      Verify this mandate
    </Button>
  );
}
