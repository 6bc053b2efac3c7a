import { ID_KINDS, destinationOf } from '../../packages/dashboard/src/id-search';

// The header's "Go to id" (docs/DASHBOARD.md, "Search"): the prefix alone decides the page.
describe("the dashboard's Go to id", () => {
  it.each([
    ['mdt_01jabc', '/mandates/mdt_01jabc'],
    ['  KEY_01JABC ', '/api-keys?key=key_01jabc'],
    ['evt_01jabc', '/audit?event=evt_01jabc'],
    ['whe_01jabc', '/webhooks?endpoint=whe_01jabc'],
    ['ras_01jabc', '/access?assignment=ras_01jabc'],
  ])('when %j is pasted, then it opens %s', (input, to) => {
    expect(destinationOf(input)).toEqual({ to });
  });

  it.each([
    ['', 'Paste an id'],
    ['zzz_01jabc', '"zzz_01jabc" is not an id this dashboard opens. Ids start with mdt_… (mandate)'],
    ['mdt_', 'is not an id this dashboard opens'],
    ['mdt_../../api-keys', '"mdt_../../api-keys" is not a valid mandate id.'],
    ['whd_01jabc', 'A webhook delivery is listed under its endpoint'],
  ])('when %j is pasted, then nothing opens and the message says why', (input, says) => {
    expect(destinationOf(input)).toEqual({ message: expect.stringContaining(says) });
  });

  it('when the kinds are listed, then each prefix is one kind', () => {
    const prefixes = ID_KINDS.map((k) => k.prefix);
    expect(new Set(prefixes).size).toBe(prefixes.length);
  });
});
