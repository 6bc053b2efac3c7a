import { readFileSync } from 'node:fs';
import path from 'node:path';
import { EVENT_TYPES } from '@mandate/shared/events';

const API = path.resolve(__dirname, '../../docs/API.md');

// docs/API.md, "Events", names every type an integrator can receive; each type's data members are
// in its schema, which the OpenAPI document's webhooks hold (test/contracts/openapi.test.ts).
describe('the event types in docs/API.md', () => {
  it('when the Events section is read, then it names every event type the product emits', () => {
    const text = readFileSync(API, 'utf8');
    const section = text.slice(text.indexOf('\n## Events\n'), text.indexOf('\n## Webhooks\n'));
    expect(EVENT_TYPES.filter((type) => !section.includes(`\`${type}\``))).toEqual([]);
  });
});
