import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { TextInput } from '@mantine/core';
import { Search } from 'lucide-react';
import { destinationOf } from './id-search';

/**
 * The header's search box: paste any id and Enter opens the page that shows it, by its prefix
 * (docs/DASHBOARD.md, "Search"); an id of no known kind, or of a kind without a page, says so
 * under the box instead of going anywhere.
 */
export function GlobalSearch() {
  const navigate = useNavigate();
  const [value, setValue] = useState('');
  const [message, setMessage] = useState<string | null>(null);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const found = destinationOf(value);
    if ('to' in found) {
      setMessage(null);
      setValue('');
      void navigate(found.to);
    } else setMessage(found.message);
  };
  return (
    <form role="search" className="global-search" onSubmit={submit} aria-label="Go to an id">
      <TextInput
        id="global-search"
        type="search"
        size="xs"
        value={value}
        onChange={(e) => {
          setValue(e.currentTarget.value);
          setMessage(null);
        }}
        placeholder="Go to an id"
        aria-label="Go to an id (mandate, API key, event, webhook endpoint, role assignment)"
        aria-describedby={message ? 'global-search-message' : undefined}
        leftSection={<Search size={14} aria-hidden />}
        autoComplete="off"
        spellCheck={false}
      />
      {message ? (
        <p id="global-search-message" className="global-search-message" role="alert">
          {message}
        </p>
      ) : null}
    </form>
  );
}
