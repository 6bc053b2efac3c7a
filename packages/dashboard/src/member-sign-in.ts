import { apiOf } from './api';
import type { Session, SignInMethod } from './session';

/**
 * A JWT caller names its tenant in X-Tenant-Id: GET /v1/me with it proves the token and that the
 * subject holds a role there (404 when it does not), and names the subject.
 */
export async function memberSession(token: string, tenantId: string, method: SignInMethod): Promise<Session> {
  const probe: Session = { kind: 'user', method, token, tenantId, subjectId: '' };
  const me = await apiOf(probe).getMe();
  return { ...probe, tenantId: me.tenant_id, subjectId: me.subject_id ?? '' };
}
