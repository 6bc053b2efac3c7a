import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { PageHeader } from '../ui';

/** The header of a page about one mandate (creating it, created, its detail), with the way back to the list. */
export function MandatePageHeader({ title, description }: { title: string; description?: ReactNode }) {
  return (
    <PageHeader title={title} description={description}>
      <Link to="/mandates">All mandates</Link>
    </PageHeader>
  );
}
