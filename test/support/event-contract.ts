/**
 * jest setupFilesAfterEnv, in every test file: each event a producer builds (buildEvent) is held to
 * its type's data schema (docs/DECISIONS.md, "Event data schemas"), so a producer emitting data off
 * it fails the test that ran it, whichever service, route or background job built the event. The
 * services parse no event data at run time; this is where the schemas meet real producers. Events
 * built after a file's last test fail that file.
 */
// The modules themselves, not @mandate/shared: every test file loads this, most need no more.
import { eventDataIssues } from '../../packages/shared/src/events/event-data';
import { watchBuiltEvents } from '../../packages/shared/src/events/events';

const offSchema: string[] = [];

watchBuiltEvents((event) => {
  const issues = eventDataIssues(event.type, event.data);
  if (issues.length > 0) offSchema.push(`${event.type} ${event.id}: ${issues.join('; ')}`);
});

const noneOffSchema = () =>
  expect({ eventsOffTheirSchema: offSchema.splice(0) }).toEqual({ eventsOffTheirSchema: [] });
afterEach(noneOffSchema);
afterAll(noneOffSchema);
