import type { NavigateOptions, To } from 'react-router';

// The dashboard runs in <BrowserRouter> (declarative mode), where navigate() returns nothing;
// react-router types it `void | Promise<void>` for every mode, which would make each call look
// like a promise left floating. react-router's own documentation suggests this narrowing.
declare module 'react-router' {
  interface NavigateFunction {
    (to: To, options?: NavigateOptions): void;
    (delta: number): void;
  }
}
