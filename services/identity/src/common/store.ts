export interface ListOptions {
  /** How many items to return at most (callers ask for limit + 1 to learn has_more). */
  limit: number;
  /** Only items with an id below this one (ids sort by creation, so this pages newest first). */
  before?: string;
}
