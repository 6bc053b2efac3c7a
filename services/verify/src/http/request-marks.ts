import { markRequest, requestTimingInstalled } from '@mandate/shared/observability';
import { type EventPublisher } from '@mandate/shared/events';
import type { AppDeps } from '../deps';
import type { MandateReader } from '../mandates/mandate-reader';

/**
 * The benchmark's step marks inside a verify (`BENCH_MODE=open npm run bench:verify`, docs/PERFORMANCE.md):
 * "v.snapshot" when the mandate has been read, "v.decide" when the decision's event is handed to
 * the publisher. Hooked around the adapters, so the domain stays free of them; outside the
 * benchmark's probe the deps are returned as they are and nothing is wrapped.
 */
export function withRequestMarks(deps: AppDeps): AppDeps {
  if (!requestTimingInstalled()) return deps;
  return { ...deps, reader: markedReader(deps.reader), publisher: markedPublisher(deps.publisher) };
}

function markedReader(reader: MandateReader): MandateReader {
  const marked: MandateReader = {
    async get(ctx, mandateId) {
      const mandate = await reader.get(ctx, mandateId);
      markRequest(ctx.requestId, 'v.snapshot');
      return mandate;
    },
    check: () => reader.check(),
    close: () => reader.close(),
  };
  if (reader.budgetAvailable) marked.budgetAvailable = reader.budgetAvailable.bind(reader);
  return marked;
}

function markedPublisher(publisher: EventPublisher): EventPublisher {
  const marked: EventPublisher = {
    kind: publisher.kind,
    publish(events) {
      markRequest(events[0]?.request_id ?? undefined, 'v.decide');
      return publisher.publish(events);
    },
    close: () => publisher.close(),
  };
  if (publisher.accepting) marked.accepting = publisher.accepting.bind(publisher);
  return marked;
}
