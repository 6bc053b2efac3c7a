import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { MantineProvider, createTheme } from '@mantine/core';
import { Notifications } from '@mantine/notifications';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { BrowserRouter } from 'react-router';
import { App } from './App';
import { MandateApiError } from './api';
import { AuthProvider } from './auth';
import './mantine';
import './styles.css';

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A 4xx will not change by asking again.
      retry: (count, err) => !(err instanceof MandateApiError && err.status < 500) && count < 2,
      refetchOnWindowFocus: false,
    },
  },
});

/**
 * The one theme: indigo as the product colour (its CSS variables are set in styles.css, since the
 * provider writes none: see below), the system font, light or dark as the system asks.
 */
const theme = createTheme({
  primaryColor: 'indigo',
  primaryShade: 7,
  defaultRadius: 'md',
  respectReducedMotion: true,
  fontFamily: "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif",
  headings: { fontFamily: "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif" },
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    {/* No <style> tags from Mantine (the CSP says style-src 'self'): its variables and classes come from the static CSS. */}
    <MantineProvider
      theme={theme}
      defaultColorScheme="auto"
      withCssVariables={false}
      withGlobalClasses={false}
    >
      <Notifications position="top-right" />
      <QueryClientProvider client={queryClient}>
        <BrowserRouter basename="/dashboard">
          <AuthProvider>
            <App />
          </AuthProvider>
        </BrowserRouter>
      </QueryClientProvider>
    </MantineProvider>
  </StrictMode>,
);
