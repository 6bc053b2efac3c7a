export { MandateClient } from './client';
export { MandateApiError } from './errors';
export {
  DEFAULT_RETRY_POLICY,
  type MandateClientOptions,
  type Page,
  type Paged,
  type RequestOptions,
  type RetryPolicy,
} from './core';
export * from './generated';
export { isEventOf, isEventType, parseWebhookPayload } from './events';
