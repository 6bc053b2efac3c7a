import path from 'node:path';
import madge from 'madge';

const ROOT = path.resolve(__dirname, '../..');

/**
 * No import circles in services and packages: a module that imports what imports it back (an
 * http file taking Deps from the app.ts that mounts it, a route table whose schemas import it) is
 * one room where two were meant. Each service's Deps live in src/deps.ts for that reason.
 */
describe('import circles', () => {
  it('when madge reads services and packages, then it finds no circular import', async () => {
    const graph = await madge(
      ['services', 'packages'].map((dir) => path.join(ROOT, dir)),
      {
        baseDir: ROOT,
        fileExtensions: ['ts', 'tsx'],
        excludeRegExp: [/node_modules/, /[\\/]dist[\\/]/],
      },
    );
    expect(graph.circular()).toEqual([]);
  }, 60_000);
});
