import { csvField, toCsv } from '../../packages/dashboard/src/csv';

// The dashboard's Export CSV (docs/DASHBOARD.md, "Design system").
describe("the dashboard's CSV export", () => {
  it('when items nest objects and lists, then each field is a dotted column, lists are joined, and every item has every column', () => {
    const csv = toCsv([
      { id: 'mdt_1', principal: { id: 'user_a', name: 'Alice' }, scope: { actions: ['a:1', 'a:2'] } },
      { id: 'mdt_2', principal: { id: 'user_b' }, expires_at: '2027-01-01T00:00:00Z' },
    ]);
    expect(csv.split('\r\n')).toEqual([
      'id,principal.id,principal.name,scope.actions,expires_at',
      'mdt_1,user_a,Alice,a:1; a:2,',
      'mdt_2,user_b,,,2027-01-01T00:00:00Z',
      '',
    ]);
  });

  it('when a value holds a comma, a quote or a line break, then it is quoted (RFC 4180); a value a spreadsheet would run as a formula stays text', () => {
    expect(
      ['a,b', 'say "hi"', 'two\nlines', '=HYPERLINK("x")', '+1', '-2', '@sum', 'plain'].map(csvField),
    ).toEqual([
      '"a,b"',
      '"say ""hi"""',
      '"two\nlines"',
      `"'=HYPERLINK(""x"")"`,
      "'+1",
      "'-2",
      "'@sum",
      'plain',
    ]);
  });

  it('when the export stops at its bound, then its last line says so', () => {
    expect(toCsv([{ id: 'x' }], true).split('\r\n')).toEqual([
      'id',
      'x',
      '(first 1 rows only: narrow the filters for the rest)',
      '',
    ]);
  });
});
