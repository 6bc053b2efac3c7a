import type { ReactNode } from 'react';
import { Alert, Button, Group, Text } from '@mantine/core';
import { TriangleAlert } from 'lucide-react';
import { Dialog, ErrorMessage } from './ui';

/**
 * The confirmation every irreversible action asks for (docs/DASHBOARD.md, "Design system"): a
 * dialog titled with the action, a sentence stating its impact (what stops working, and for whom),
 * whatever the action needs to be decided (`children`, e.g. a grace period), Cancel, and the
 * action's own button. Nothing runs before that button; a failure is shown in the dialog, which
 * stays open. Closing returns focus to the button that opened it (Mantine's returnFocus).
 */
export function ConfirmDialog({
  opened,
  title,
  impact,
  confirm,
  danger = true,
  pending,
  error,
  onConfirm,
  onClose,
  children,
}: {
  opened: boolean;
  title: string;
  impact: ReactNode;
  confirm: string;
  danger?: boolean;
  pending: boolean;
  error: unknown;
  onConfirm(): void;
  onClose(): void;
  children?: ReactNode;
}) {
  return (
    <Dialog opened={opened} onClose={onClose} title={title}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          onConfirm();
        }}
      >
        <Alert
          color={danger ? 'red' : 'yellow'}
          variant="light"
          icon={<TriangleAlert size={18} aria-hidden />}
          mb="sm"
        >
          <Text size="sm" data-testid="confirm-impact">
            {impact}
          </Text>
        </Alert>
        {children}
        <ErrorMessage error={error} />
        <Group justify="flex-end" mt="md">
          <Button variant="default" onClick={onClose} data-autofocus>
            Cancel
          </Button>
          <Button type="submit" color={danger ? 'red' : undefined} loading={pending}>
            {confirm}
          </Button>
        </Group>
      </form>
    </Dialog>
  );
}
